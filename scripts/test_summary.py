#!/usr/bin/env python3
"""Summarises a verbose ctest log (ctest -V) by label: how many test cases ran and passed in
each of unit / sql / integration (cmocka's "[  PASSED  ] N test(s)", pytest's "N passed" and
the golden runner's "N passed, M failed" lines), plus the failures. Usage: test_summary.py LOG BUILD_DIR"""
import re
import subprocess
import sys
from collections import defaultdict

log, build = sys.argv[1], sys.argv[2]
label_of_name = {}
for label in ("unit", "sql", "integration", "cli"):
    out = subprocess.run(["ctest", "-N", "-L", label], cwd=build, capture_output=True, text=True).stdout
    for m in re.finditer(r"Test\s+#\d+:\s+(\S+)", out):
        label_of_name[m.group(1)] = label
# the numbers in a run's output are that run's own: map them through "Start N: name"
label_of = {}
for line in open(log, errors="replace"):
    if (m := re.search(r"Start\s+(\d+): (\S+)", line)):
        label_of[m.group(1)] = label_of_name.get(m.group(2), "other")
passed, failed = defaultdict(int), defaultdict(int)
for line in open(log, errors="replace"):
    m = re.match(r"(\d+): (.*)", line)
    if not m:
        continue
    num, text = m.groups()
    label = label_of.get(num, "other")
    if (c := re.search(r"\[  PASSED  \] (\d+) test", text)):
        passed[label] += int(c.group(1))
    elif (c := re.search(r"\[  FAILED  \] (\d+) test", text)):
        failed[label] += int(c.group(1))
    elif (c := re.search(r"(?:^|=+ )(\d+) passed(?:, (\d+) failed)?", text)):
        passed[label] += int(c.group(1))
        failed[label] += int(c.group(2) or 0)
        if (f := re.search(r"(\d+) failed", text)) and not c.group(2):
            failed[label] += int(f.group(1))
print("test cases by label:")
for label in ("unit", "sql", "integration", "cli", "other"):
    if passed[label] or failed[label]:
        print(f"  {label:12} {passed[label]} passed, {failed[label]} failed")
print(f"{sum(passed.values())} passed, {sum(failed.values())} failed")
