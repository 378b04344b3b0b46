#!/usr/bin/env python3
"""Checkpoint costs, measured (issue 5):

1. Throughput with 1-second checkpoints against none: datagen -> TUMBLE per key -> blackhole,
   5M rows, 200k keys per window; CPU-seconds and wall time of the clink process, median of 3.
2. Time from a rerun to its first output after a SIGKILL, with a large open-window state: one
   pipeline holds N groups in a window that never closes (its state is what the rerun must
   restore); a second pipeline in the same job prints a row per 10 ms. The job is killed after
   a few checkpoints; we time from starting the rerun to the first row it prints, and read how
   long the subtask holding the state took to restore it (the pipelines restore in parallel,
   so the printing one does not wait for the big one). (The key
   sequence wraps at N, and event time grows 1 ms a row, so the one-day window stays open.)

3. (--trace) The protocol trace's cost when on (CLINK_PROTOCOL_TRACE_DIR, docs/protocol.md):
   the throughput job of 1. with 1-second checkpoints, and a checkpoint-bound one (1 ms
   interval: checkpoints back to back, 16 keys, parallelism 2, 10M rows), each with and without the
   trace, alternating, median of 5: CPU-seconds, wall time, checkpoints completed and the
   time per checkpoint (wall / checkpoints), and the trace's events and bytes; and the cost
   of one event off and on (bench/checkpoint/trace_emit.c, built with cc).

Usage: run.py [--trace] [CLINK_BINARY]   (default build/src/cli/clink; use the release build)
Bounded: a few minutes on 2 cores; loopback only; temporary directories are removed.
"""
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRACE = "--trace" in sys.argv[1:]
_args = [a for a in sys.argv[1:] if a != "--trace"]
CLINK = os.path.abspath(_args[0] if _args else REPO / "build/src/cli/clink")

THROUGHPUT = """
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (connector = 'datagen', rows = '5000000',
  'fields.k.kind' = 'random', 'fields.k.start' = '1', 'fields.k.end' = '200000',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '0', 'fields.ts.step' = '1',
  'fields.v.kind' = 'random', 'fields.v.start' = '0', 'fields.v.end' = '1000',
  event_time_column = 'ts', watermark_lag_ms = '100');
CREATE TABLE sink (k BIGINT, window_start BIGINT, n BIGINT, s BIGINT) WITH (connector = 'blackhole');
INSERT INTO sink SELECT k, window_start, COUNT(*) AS n, SUM(v) AS s
FROM g GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k;
"""

RECOVERY = """
CREATE TABLE big (k BIGINT, ts BIGINT) WITH (connector = 'datagen',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '1', 'fields.k.end' = '{groups}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '0', 'fields.ts.step' = '1',
  event_time_column = 'ts');
CREATE TABLE held (k BIGINT, window_start BIGINT, n BIGINT) WITH (connector = 'blackhole');
INSERT INTO held SELECT k, window_start, COUNT(*) AS n FROM big
GROUP BY TUMBLE(ts, INTERVAL '1' DAY), k;
CREATE TABLE ticks (i BIGINT) WITH (connector = 'datagen', rows_per_second = '100',
  'fields.i.kind' = 'sequence', 'fields.i.start' = '0');
SELECT i FROM ticks;
"""


def cpu_of(cmd, env=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"clink failed: {r.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def throughput(tmp):
    sql = tmp / "t.sql"
    sql.write_text(THROUGHPUT)
    env = dict(os.environ, CLINK_LOG_LEVEL="warn")
    res = {}
    for label, extra in (("no checkpoints", []),
                         ("1 s checkpoints", ["--checkpoint-interval-ms", "1000"])):
        cpus, walls = [], []
        for i in range(3):
            args = [CLINK, "run", str(sql)]
            if extra:
                d = tmp / f"ck-{i}"
                args += ["--checkpoint-dir", str(d), "--fresh"] + extra
            c, w = cpu_of(args, env)
            cpus.append(c)
            walls.append(w)
        res[label] = (statistics.median(cpus), statistics.median(walls))
    base_cpu, base_wall = res["no checkpoints"]
    ck_cpu, ck_wall = res["1 s checkpoints"]
    print("throughput, datagen -> TUMBLE(10 s) x 200k keys -> blackhole, 5M rows (median of 3):")
    for label, (c, w) in res.items():
        print(f"  {label:16} {c:6.2f} CPU-s {w:6.2f} s wall  {5e6 / c / 1e6:5.2f} M events/CPU-s")
    print(f"  cost of checkpointing: CPU {100 * (ck_cpu / base_cpu - 1):+.1f} %, wall {100 * (ck_wall / base_wall - 1):+.1f} %")
    return res


def recovery(tmp, groups):
    sql = tmp / "r.sql"
    sql.write_text(RECOVERY.format(groups=groups))
    ck = tmp / "ck-rec"
    env = dict(os.environ, CLINK_LOG_LEVEL="debug")
    p = subprocess.Popen([CLINK, "run", str(sql), "--checkpoint-dir", str(ck), "--fresh",
                          "--checkpoint-interval-ms", "500"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    completed, deadline = 0, time.monotonic() + 120
    for line in p.stderr:  # wait for checkpoints that hold the whole state
        if "completed" in line:
            completed += 1
            if completed >= 3:
                break
        if time.monotonic() > deadline:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    snap = max(ck.rglob("checkpoint-*.snap"), key=lambda f: f.stat().st_size)
    t0 = time.perf_counter()
    q = subprocess.Popen([CLINK, "run", str(sql), "--checkpoint-dir", str(ck)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = q.stdout.readline()
    dt = time.perf_counter() - t0
    restored, deadline = [], time.monotonic() + 60
    for line in q.stderr:  # every subtask reports its restore (debug log)
        if (m := re.search(r"restored checkpoint \d+ in ([\d.]+) ms", line)):
            restored.append(float(m.group(1)))
            if len(restored) >= 2 or time.monotonic() > deadline:
                break
    restored_at = time.perf_counter() - t0
    q.send_signal(signal.SIGINT)
    q.communicate(timeout=60)
    assert first, "the rerun printed nothing"
    print(f"rerun after SIGKILL, {groups:,} open groups (largest snapshot "
          f"{snap.stat().st_size / 1e6:.1f} MB): first output {dt * 1000:.0f} ms, "
          f"slowest subtask restore {max(restored):.0f} ms, all restored by {restored_at * 1000:.0f} ms")
    return dt


def trace_emit_cost(tmp):
    """ns per CK_TRACE call, off and on (bench/checkpoint/trace_emit.c), median of 5."""
    exe = tmp / "trace_emit"
    subprocess.run(["cc", "-O2", f"-I{REPO / 'src'}", "-o", str(exe),
                    str(REPO / "bench/checkpoint/trace_emit.c"),
                    str(REPO / "src/checkpoint/trace.c"), "-lpthread"], check=True)
    for mode, n in (("off", 5000000), ("on", 200000)):
        env = dict(os.environ)
        env.pop("CLINK_PROTOCOL_TRACE_DIR", None)
        if mode == "on":
            env["CLINK_PROTOCOL_TRACE_DIR"] = str(tmp / "emit-trace")
        got = []
        for _ in range(5):
            out = subprocess.run([str(exe), str(n)], capture_output=True, text=True, env=env,
                                 check=True).stdout
            got.append(float(out.split()[1]))
            shutil.rmtree(tmp / "emit-trace", ignore_errors=True)
        print(f"  one event, trace {mode:3}: {statistics.median(got):8.1f} ns (median of 5 x {n:,})")


def trace_cost(tmp, rounds=5):
    """The protocol trace on against off, alternating runs, median of `rounds`."""
    jobs = {
        "throughput, 1 s checkpoints": (THROUGHPUT, ["--checkpoint-interval-ms", "1000"], 5e6),
        "checkpoint-bound, 16 keys, 1 ms interval, p=2": (
            THROUGHPUT.replace("'5000000'", "'10000000'").replace("'200000'", "'16'"),
            ["--checkpoint-interval-ms", "1", "--parallelism", "2"], 1e7),
    }
    print(f"protocol trace cost (alternating runs, median of {rounds}):")
    trace_emit_cost(tmp)
    for label, (text, extra, rows) in jobs.items():
        sql = tmp / "trace.sql"
        sql.write_text(text)
        res = {"off": [], "on": []}
        for i in range(rounds):
            for mode in ("off", "on"):
                env = dict(os.environ, CLINK_LOG_LEVEL="debug")
                env.pop("CLINK_PROTOCOL_TRACE_DIR", None)
                tdir = tmp / f"trace-{i}"
                if mode == "on":
                    env["CLINK_PROTOCOL_TRACE_DIR"] = str(tdir)
                ck = tmp / f"ck-trace-{mode}-{i}"
                args = [CLINK, "run", str(sql), "--checkpoint-dir", str(ck), "--fresh", *extra]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                r = subprocess.run(args, capture_output=True, text=True, env=env)
                wall = time.perf_counter() - t0
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if r.returncode != 0:
                    sys.exit(f"clink failed: {r.stderr[-2000:]}")
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                n = len(re.findall(r"checkpoint \d+ completed", r.stderr))
                events = size = 0
                if mode == "on":
                    for f in tdir.glob("*.ndjson"):
                        size += f.stat().st_size
                        events += sum(1 for _ in f.open())
                res[mode].append((cpu, wall, n, events, size))
                shutil.rmtree(ck, ignore_errors=True)
                shutil.rmtree(tdir, ignore_errors=True)
        med = {m: [statistics.median(x[k] for x in v) for k in range(5)] for m, v in res.items()}
        print(f"  {label}:")
        for m in ("off", "on"):
            cpu, wall, n, events, size = med[m]
            per = 1000 * wall / n if n else float("nan")
            print(f"    trace {m:3} {cpu:6.2f} CPU-s {wall:6.2f} s wall {rows / wall / 1e6:5.2f} "
                  f"M rows/s  {n:5.0f} checkpoints  {per:6.2f} ms/checkpoint" +
                  (f"  {events:7.0f} events {size / 1e6:6.2f} MB" if m == "on" else ""))
        (c0, w0, n0, _, _), (c1, w1, n1, _, _) = med["off"], med["on"]
        print(f"    cost: CPU {100 * (c1 / c0 - 1):+.1f} %, wall {100 * (w1 / w0 - 1):+.1f} %"
              + (f", time per checkpoint {100 * ((w1 / n1) / (w0 / n0) - 1):+.1f} %"
                 if n0 and n1 else ""))


def main():
    tmp = Path(tempfile.mkdtemp(prefix="clink-bench-ckpt-"))
    try:
        if TRACE:
            trace_cost(tmp)
            return
        throughput(tmp)
        for groups in (100_000, 1_000_000):
            recovery(tmp, groups)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
