#!/usr/bin/env python3
"""Golden SQL tests: every tests/sql/**/*.sql runs through `clink run`, and its output is
compared with the file beside it:

  NAME.expected      stdout, as a multiset of lines (order-insensitive: parallel runs
                     interleave) unless the .sql has a `-- ordered` line
  NAME.err           for scripts that must fail: the exact stderr, and exit status 1

A script may carry directives in comments on its first lines:
  -- args: --parallelism 4         extra arguments to clink run
  -- ordered                       compare stdout line by line
  -- also-parallelism: 4           also run at this parallelism; same expected output

Run from anywhere: run_golden.py CLINK_BINARY [NAME_FILTER]. Set UPDATE=1 to rewrite the
expected files from what clink printed (then read the diff before committing it).
"""
import os
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def directives(text):
    d = {"args": [], "ordered": False, "also": []}
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        body = line[2:].strip()
        if body.startswith("args:"):
            d["args"] += shlex.split(body[5:])
        elif body == "ordered":
            d["ordered"] = True
        elif body.startswith("also-parallelism:"):
            d["also"] += [int(x) for x in body.split(":", 1)[1].split()]
    return d


def run(clink, sql_path, args):
    env = dict(os.environ, CLINK_LOG_LEVEL="warn")
    return subprocess.run([clink, "run", *args, sql_path.name], cwd=sql_path.parent,
                          capture_output=True, text=True, timeout=120, env=env)


def main():
    clink = os.path.abspath(sys.argv[1])
    filt = sys.argv[2] if len(sys.argv) > 2 else ""
    update = os.environ.get("UPDATE") == "1"
    passed = failed = 0
    for sql in sorted(HERE.rglob("*.sql")):
        name = str(sql.relative_to(HERE))
        if filt not in name:
            continue
        d = directives(sql.read_text())
        exp_out, exp_err = sql.with_suffix(".expected"), sql.with_suffix(".err")
        runs = [d["args"]] + [d["args"] + ["--parallelism", str(p)] for p in d["also"]]
        problems = []
        for args in runs:
            r = run(clink, sql, args)
            label = " ".join(args) or "default"
            if exp_err.exists() or (update and r.returncode != 0):
                if update:
                    exp_err.write_text(r.stderr)
                    continue
                if r.returncode != 1:
                    problems.append(f"[{label}] exit status {r.returncode}, expected 1")
                if r.stderr != exp_err.read_text():
                    problems.append(f"[{label}] stderr differs:\n--- expected\n{exp_err.read_text()}--- got\n{r.stderr}")
                continue
            if r.returncode != 0:
                problems.append(f"[{label}] exit status {r.returncode}\nstderr:\n{r.stderr}")
                continue
            if update and args is runs[0]:
                exp_out.write_text(r.stdout)
                continue
            want = exp_out.read_text().splitlines() if exp_out.exists() else []
            got = r.stdout.splitlines()
            if not d["ordered"]:
                want, got = sorted(want), sorted(got)
            if want != got:
                missing = [l for l in want if l not in got][:10]
                extra = [l for l in got if l not in want][:10]
                problems.append(f"[{label}] stdout differs ({len(got)} lines, expected {len(want)})\n"
                                f"  missing: {missing}\n  unexpected: {extra}")
        if problems:
            failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print("   " + p.replace("\n", "\n   "))
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
