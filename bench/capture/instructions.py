#!/usr/bin/env python3
"""The flight recorder's cost in instructions executed (issue 15's aim: capture on costs at
most 15% more CPU): a load-independent figure, where CPU seconds on this shared machine are not.

DESIGN
  Each case runs `clink run` under valgrind's callgrind (instrumented: one run is exact and
  repeatable, whatever the machine's load) and takes the instructions it collected, across
  all threads. The pipelines are bench/capture/bench.py's (the datagen bid columns, so no
  decoding and no broker): q0 (every column through a projection) and window (TUMBLE 10 s,
  COUNT(*) and SUM(price) per auction over 10,000 keys), into a blackhole, each with
  --checkpoint-dir. Three modes:
    off       no --capture-dir
    on        --capture-dir with the default bound (--capture-records 10,000)
    on-all    --capture-dir --capture-records N: every row of every operator recorded, the
              most the recorder can cost per row (a checkpoint interval that holds fewer rows
              than the bound records them all, as here)
  The checkpoint interval is longer than the run, so every case has the same intervals (the
  final checkpoint's, and the final epoch) whatever callgrind's slowdown does to the wall
  clock: checkpoints taken on a timer would make the count depend on the machine. What the
  count leaves out: the interval files' fsyncs and renames cost system time callgrind does not
  see (one .cap per operator subtask and interval, one sink.json per sink subtask).
  Prints the instructions per case and the ratio of each capture mode to off.

Usage: bench/capture/instructions.py CLINK [--rows N] [--only q0,window]
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402


def instructions(clink, sql, extra):
    d = Path(tempfile.mkdtemp(prefix="clink-capture-instr."))
    try:
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", clink, "run",
                "-e", sql, "--checkpoint-dir", str(d / "ckpt"), "--checkpoint-interval-ms",
                "86400000"]
        argv += [a.replace("@DIR@", str(d)) for a in extra]
        p = subprocess.run(argv, capture_output=True, text=True)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode != 0 or not m:
            sys.exit("%s failed under callgrind (%d):\n%s" % (clink, p.returncode, p.stderr[-3000:]))
        w = re.search(r"\[job\] finished: (\d+) records read, (\d+) written", p.stderr)
        caps = sum(f.stat().st_size for f in (d / "cap").rglob("*.cap")) if (d / "cap").exists() else 0
        return int(m.group(1)), int(w.group(2)) if w else -1, caps
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("clink")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--only", default="q0,window")
    args = ap.parse_args()
    modes = {"off": [], "on": ["--capture-dir", "@DIR@/cap"],
             "on-all": ["--capture-dir", "@DIR@/cap", "--capture-records", str(args.rows)]}
    for shape in args.only.split(","):
        sql = bench.script(shape, "blackhole", args.rows, args, None)
        got = {m: instructions(args.clink, sql, extra) for m, extra in modes.items()}
        written = {v[1] for v in got.values()}
        if len(written) != 1:
            sys.exit("%s: the modes wrote different row counts: %s" % (shape, got))
        off = got["off"][0]
        for m, (n, w, caps) in got.items():
            print("%-7s %-7s %14d instructions  %6.1f per row  x%.4f of off  (.cap %d bytes)"
                  % (shape, m, n, n / args.rows, n / off, caps), flush=True)


if __name__ == "__main__":
    main()
