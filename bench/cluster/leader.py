#!/usr/bin/env python3
"""Leader failover on ZooKeeper: the time from SIGKILL of the leading coordinator to the job's
first output after the standby restored it, checkpoints on local disk vs on S3. Method:
bench/cluster/README.md, section "Leader failover"; needs the ZooKeeper (and, for s3, the
SeaweedFS) service: eval "$(scripts/services.sh env)".

DESIGN
  Every repetition builds a new cluster (failover.py's reasons): two coordinators on 127.0.0.1
  with --ha zookeeper://$CLINK_ZOOKEEPER/<unique path> and --ha-session-timeout-ms (default
  4000, the server's least), two workers with --ha (they find the leader there) and --slots 2,
  and failover.py's paced datagen → file job (at least once). Once the job is RUNNING, has
  --checkpoints checkpoints and output, and the standby stands by, the leader gets SIGKILL and
  the script polls (every --poll-ms) for: `leads` (the standby's "leader of … with epoch"),
  `restore` (its "restore point:" line), `output` (the output file larger than at the kill).
  The session timeout is the floor of `leads`: ZooKeeper expires a silent session between one
  and two timeouts after its last heartbeat, so a killed leader costs that much before any
  standby may act. A leader stopped with SIGTERM closes its session, and a standby leads at
  once: that is not measured here.
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from failover import BenchError, Cluster, find_clink, free_port, job_sql, sizes, wait_for  # noqa: E402


def s3_env():
    need = ("CLINK_S3_ENDPOINT", "CLINK_S3_ACCESS_KEY", "CLINK_S3_SECRET_KEY", "CLINK_S3_BUCKET")
    if not all(os.environ.get(k) for k in need):
        raise BenchError("the s3 store needs CLINK_S3_* (eval \"$(scripts/services.sh env)\")")
    return {"AWS_ACCESS_KEY_ID": os.environ["CLINK_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": os.environ["CLINK_S3_SECRET_KEY"],
            "AWS_ENDPOINT_URL_S3": os.environ["CLINK_S3_ENDPOINT"], "AWS_REGION": "us-east-1"}


def one_run(clink, args, store, run_no, root, rng):
    tmp = root / f"{store}-{run_no}"
    tmp.mkdir()
    zk = os.environ.get("CLINK_ZOOKEEPER")
    if not zk:
        raise BenchError("CLINK_ZOOKEEPER is not set (eval \"$(scripts/services.sh env)\")")
    url = f"zookeeper://{zk}/clink-bench/leader-{uuid.uuid4().hex[:10]}"
    c = Cluster(clink, tmp, args.interval_ms, 2)
    if store == "s3":
        c.env.update(s3_env())
        ckpt = f"s3://{os.environ['CLINK_S3_BUCKET']}/bench-leader-{uuid.uuid4().hex[:10]}"
    else:
        ckpt = str(tmp / "checkpoints")

    def coordinator(name, port, http):
        return c._start([clink, "coordinator", "--port", str(port), "--http-port", str(http),
                         "--checkpoint-dir", ckpt, "--checkpoint-interval-ms",
                         str(args.interval_ms), "--ha", url, "--ha-session-timeout-ms",
                         str(args.session_ms)], name)

    try:
        a = coordinator("leader", c.port, c.http)
        wait_for(lambda: c.get("/api/v1/health")[0] == 200, 20, "the leader's health")
        for n in (1, 2):
            wid = f"worker-{n}"
            c.workers[wid] = c._start([clink, "worker", "--ha", url, "--slots", "2", "--id", wid],
                                      wid)
        wait_for(lambda: c.registered() >= set(c.workers), 20, "the workers to register")
        out = tmp / "out.json"
        sql = tmp / "job.sql"
        sql.write_text(job_sql("file", out, args.rate))
        jid = c.submit(sql, args.parallelism)
        paths = [out] if args.parallelism == 1 else [
            out.parent / f"{out.name}-{k}" for k in range(args.parallelism)]
        b_port, b_http = free_port(), free_port()
        b = coordinator("standby", b_port, b_http)
        wait_for(lambda: "standing by" in b.err_path.read_text(), 20, "the standby")
        wait_for(lambda: (c.job(jid).get("last_checkpoint") or 0) >= args.checkpoints and
                 sum(sizes(paths)) > 0, 60, "checkpoints and output")
        time.sleep(rng.uniform(0, args.interval_ms / 1000))  # anywhere in the checkpoint cycle
        size0 = sum(sizes(paths))
        a.kill()
        t0 = time.monotonic()
        seen = {}
        deadline = t0 + args.deadline_s
        while len(seen) < 3 and time.monotonic() < deadline:
            text = b.err_path.read_text(errors="replace")
            now = (time.monotonic() - t0) * 1000
            if "leads" not in seen and " with epoch " in text:
                seen["leads"] = now
            if "leads" in seen and "restore" not in seen and "restore point:" in text:
                seen["restore"] = now
                size0 = sum(sizes(paths))  # the old deployment's last writes are before this
            elif "restore" in seen and "output" not in seen and sum(sizes(paths)) > size0:
                seen["output"] = now
            time.sleep(args.poll_ms / 1000)
        if len(seen) < 3:
            raise BenchError(f"{store} run {run_no}: only {seen} within {args.deadline_s} s")
        return seen
    finally:
        c.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="repetitions per store (default 3)")
    ap.add_argument("--store", choices=("disk", "s3", "both"), default="both")
    ap.add_argument("--session-ms", type=int, default=4000)
    ap.add_argument("--interval-ms", type=int, default=200)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--checkpoints", type=int, default=3)
    ap.add_argument("--poll-ms", type=float, default=5.0)
    ap.add_argument("--deadline-s", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write every run's figures here")
    args = ap.parse_args()
    clink = find_clink()
    rng = random.Random(args.seed)
    stores = ("disk", "s3") if args.store == "both" else (args.store,)
    results = {s: [] for s in stores}
    with tempfile.TemporaryDirectory(prefix="clink-bench-leader-") as root:
        for s in stores:
            for r in range(args.runs):
                results[s].append(one_run(clink, args, s, r, Path(root), rng))
    print(f"leader SIGKILL -> phase, ms (session timeout {args.session_ms} ms, "
          f"{args.runs} runs each, median / max)")
    for s in stores:
        cells = []
        for phase in ("leads", "restore", "output"):
            v = [run[phase] for run in results[s]]
            cells.append(f"{phase} {statistics.median(v):.0f} / {max(v):.0f}")
        print(f"  {s:5}  " + "   ".join(cells))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"leader.py: {e}", file=sys.stderr)
        sys.exit(1)
