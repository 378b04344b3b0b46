#!/usr/bin/env python3
"""Instructions per run of two clink binaries on the same engine cases: a load-independent A/B.

DESIGN
  CPU seconds on this 2-core machine move by up to 40% between minutes (docs/benchmarks.md), so
  a change whose cost is a few percent cannot be seen in them. Instructions executed can: this
  runs each binary under valgrind's callgrind (instrumented, so one run per binary is exact and
  repeatable) on the datagen cases of bench.py — filter+project (q0's shape) and a TUMBLE
  aggregation, both with an event-time column and a watermark lag — and prints the totals and
  the ratio NEW / BASE. No service, no network; about a minute per case at 300,000 rows.

Usage: bench/engine/instructions.py BASE_CLINK NEW_CLINK [--rows N]
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402


def instructions(clink, sql):
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                        clink, "run", "-e", sql], capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.exit("%s failed under callgrind (%d):\n%s" % (clink, p.returncode, p.stderr[-2000:]))
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rows", type=int, default=300000)
    args = ap.parse_args()
    cases = {"datagen-filter": bench.datagen_source(args.rows) + bench.FILTER_SINK,
             "datagen-tumble": bench.datagen_source(args.rows) + bench.TUMBLE_SINK}
    for name, sql in cases.items():
        a, b = instructions(args.base, sql), instructions(args.new, sql)
        print("%-16s base %14d  new %14d  new/base %.4f" % (name, a, b, b / a), flush=True)


if __name__ == "__main__":
    main()
