#!/usr/bin/env python3
"""Throughput of a keyed job across hosts: the coordinator and P workers (one slot each) in
network namespaces of their own on one machine (tests/cluster/netns.py), the job at
parallelism P = 1, 2, 4, so at P > 1 its keyed exchange crosses hosts. Needs root
(CAP_NET_ADMIN). Method: bench/cluster/README.md, section "Throughput across hosts".

DESIGN
  One set of namespaces for the whole run (co, w1 … w4), torn down at the end whatever
  happens. Per repetition and P: a new coordinator and P workers, the bounded datagen job below
  at full speed (rows_per_second far above what it reaches) into a blackhole sink, submitted;
  the time from RUNNING to FINISHED over the REST API (polled every 20 ms) is the figure,
  rows / time the rate. Checkpoints every --interval-ms into a directory (the namespaces share
  the filesystem). The job:
    SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM g
    GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k      -- k over --keys keys
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/cluster"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns import Hosts, NetnsRefused  # noqa: E402
from failover import BenchError, Proc, find_clink, free_port, wait_for  # noqa: E402

TOKEN = "bench-hosts-token"


def job_sql(rows, keys):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}', rows_per_second = '100000000',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{keys - 1}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '1772352000000', 'fields.ts.step' = '1',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '0', 'fields.v.end' = '999',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE out (k BIGINT, ws BIGINT, we BIGINT, n BIGINT, total BIGINT)
  WITH (connector = 'blackhole');
INSERT INTO out SELECT k, window_start AS ws, window_end AS we, COUNT(*) AS n, SUM(v) AS total FROM g
GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""


def get(host, port, path):
    req = urllib.request.Request(f"http://{host}:{port}{path}")
    req.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read().decode())
    except Exception:  # noqa: BLE001 (any failure is "not yet")
        return 0, {}


def one_run(clink, args, addrs, p, tmp):
    env = dict(os.environ, CLINK_LOG_LEVEL="info", CLINK_AUTH_TOKEN=TOKEN)
    co_ns, co_addr = addrs["co"]
    port, http = free_port(), free_port()
    procs = []
    try:
        procs.append(Proc(["ip", "netns", "exec", co_ns, clink, "coordinator", "--host", co_addr,
                           "--port", str(port), "--http-port", str(http), "--checkpoint-dir",
                           str(tmp / "checkpoints"), "--checkpoint-interval-ms",
                           str(args.interval_ms)], tmp / "co.out", tmp / "co.log", env))
        wait_for(lambda: get(co_addr, http, "/api/v1/health")[0] == 200, 20, "the coordinator")
        for i in range(1, p + 1):
            ns, addr = addrs[f"w{i}"]
            procs.append(Proc(["ip", "netns", "exec", ns, clink, "worker", "--coordinator-host",
                               co_addr, "--coordinator-port", str(port), "--host", addr,
                               "--slots", "1", "--id", f"w{i}"], tmp / f"w{i}.out",
                              tmp / f"w{i}.log", env))
        wait_for(lambda: sum(w["status"] == "REGISTERED" for w in
                             get(co_addr, http, "/api/v1/workers")[1].get("workers", [])) == p,
                 30, "the workers")
        sql = tmp / "job.sql"
        sql.write_text(job_sql(args.rows, args.keys))
        r = subprocess.run([clink, "run", str(sql), "--coordinator-host", co_addr,
                            "--coordinator-port", str(port), "--parallelism", str(p)],
                           capture_output=True, text=True, timeout=30, env=env)
        if r.returncode:
            raise BenchError(f"clink run: {r.stderr}")
        jid = int(r.stdout.split()[-1])
        wait_for(lambda: get(co_addr, http, f"/api/v1/jobs/{jid}")[1].get("status") in
                 ("RUNNING", "FINISHED"), 60, "RUNNING")
        t0 = time.monotonic()
        job = wait_for(lambda: (lambda j: j if j.get("status") in ("FINISHED", "FAILED")
                                else None)(get(co_addr, http, f"/api/v1/jobs/{jid}")[1]),
                       args.deadline_s, "FINISHED")
        took = time.monotonic() - t0
        if job["status"] != "FINISHED":
            raise BenchError(f"the job failed: {job}")
        return took
    finally:
        for pr in reversed(procs):
            pr.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--parallelism", default="1,2,4")
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--deadline-s", type=float, default=600)
    args = ap.parse_args()
    clink = find_clink()
    ps = [int(x) for x in args.parallelism.split(",")]
    hosts = Hosts(str(20 + (os.getpid() + 101) % 200))
    try:
        Hosts.probe()
    except NetnsRefused as e:
        raise BenchError(str(e))
    results = {}
    try:
        addrs = hosts.up(["co"] + [f"w{i}" for i in range(1, max(ps) + 1)])
        with tempfile.TemporaryDirectory(prefix="clink-bench-hosts-") as root:
            for p in ps:
                results[p] = []
                for r in range(args.runs):
                    tmp = Path(root) / f"p{p}-{r}"
                    tmp.mkdir()
                    results[p].append(one_run(clink, args, addrs, p, tmp))
    finally:
        hosts.down()
    print(f"keyed job across hosts: {args.rows} rows, {args.keys} keys, {args.runs} runs, "
          f"RUNNING -> FINISHED (median / min)")
    for p in ps:
        med, best = statistics.median(results[p]), min(results[p])
        print(f"  P={p}  {med:6.2f} s / {best:6.2f} s   {args.rows / med:10.0f} rows/s")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"hosts.py: {e}", file=sys.stderr)
        sys.exit(1)
