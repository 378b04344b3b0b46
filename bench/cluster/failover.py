#!/usr/bin/env python3
"""Cluster failover: the time from SIGKILL of a worker to the job's first output after the
restore. Aim: <= 1.5 s. Method and the reasons for it: bench/cluster/README.md; figures:
docs/benchmarks.md, section "Cluster failover".

DESIGN
  Every repetition builds a new cluster in its own temporary directory, all on 127.0.0.1 with
  free ports: a coordinator (--checkpoint-interval-ms, default 200) and two workers with
  --slots 2 each, so the job can restart at once on the survivor without waiting for a new
  process. A new cluster per repetition because the coordinator's restart backoff grows with a
  job's restarts (100 ms x attempt): killing the same job again and again would measure the
  backoff, not the failover.

  The job: a datagen source paced at --rate rows per second (a sequence column i, so row i is
  i), a per-row projection, and a sink:
    file   connector 'file', at least once (its default). The sink buffers rows and writes
           them at 1 MiB, at every checkpoint barrier and at finish, so at this rate its output
           appears once per checkpoint: "first output" is the first barrier after the restart.
    print  connector 'print' into the worker's stdout, redirected to a file of its own: one
           write per batch, nothing held back, so "first output" is the first batch the
           restored pipeline makes: the engine's failover without the file sink's flush policy.
  The output is timestamped from outside the engine only: by the size of the files it writes.

  One repetition: wait (polling, with deadlines) until the job is RUNNING, --checkpoints
  checkpoints completed, the output grew at least three times and the survivor is registered
  (its --slots are at least the parallelism, so it can take the whole job). The victim is the
  worker the job runs on (/api/v1/jobs/:id "workers"; at parallelism 2 the first listed, as
  every worker then runs a source and a sink subtask). That state is reached just after a
  checkpoint completed, so the kill is then put off by a random 0 to 1 checkpoint interval
  (seeded, --seed): it lands anywhere in the checkpoint cycle, as a real failure would, and the
  rows it replays are typical. That pause waits for nothing. Then t0 = clock, SIGKILL, and a
  poll every --poll-ms until the deadline for, each in milliseconds after t0:
    lost      the coordinator's log has "worker lost: <victim>"
    restore   it has "restore point: checkpoint" (or "starting fresh") after the kill
    started   it has "running on" after that: every task deployed, START sent
    output    the output grew past its baseline. At parallelism 1 the baseline is the size at
              the kill (the victim is dead and the survivor ran nothing of the job, so any new
              byte is the restored deployment's); at parallelism > 1 it is the size when the
              restore line was seen, because the survivor's cancelled subtasks flush what they
              buffered while they stop, before the coordinator redeploys.
  Log lines carry no timestamps, so they are timestamped by the same poll: each figure is late
  by up to one poll interval plus the cost of one poll (well under a millisecond here).

  After each repetition the output is checked, as at-least-once allows: every i from 0 to the
  largest written must be there (a gap is a lost row: a wrong restore, and an error), and the
  first row written after the restore must not lie past the last one written before the kill.
  Reported with it: how many rows written before the kill the restored job makes again
  ("replayed": per subtask, the rows before the kill at or past its first row after the
  restore; what the restore rewound to its checkpoint, as far as the sink had written it).

  A benchmark, not a test: it exits 0 whether the aim is met or not, and non-zero only on an
  error (a process that would not start, a deadline missed, a wrong output). Every process it
  started is stopped on every exit path (SIGTERM, then SIGKILL after 10 s), by its own handle.

Usage: bench/cluster/failover.py [--runs 5] [--sink file|print|both] [--parallelism 1|2]
         [--interval-ms 200] [--rate 1000] [--poll-ms 5] [--deadline-s 30] [--seed 1]
         [--json FILE] [--keep]
  The binary: $CLINK_BIN, else build/src/cli/clink, built with scripts/build.sh release when
  missing. It is copied into the run's temporary directory first, so a rebuild mid-run cannot
  mix two binaries into one set of figures.
"""
import argparse
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AIM_MS = 1500
PHASES = ("lost", "restore", "started", "output")


class BenchError(Exception):
    """Something went wrong that is not a figure: the run is void."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout_s, what, interval_s=0.02):
    """Polls cond() until it returns something truthy; BenchError at the deadline."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval_s)
    raise BenchError(f"timed out after {timeout_s} s waiting for {what} (last: {last!r})")


def find_clink():
    b = os.environ.get("CLINK_BIN")
    if b:
        if not os.access(b, os.X_OK):
            raise BenchError(f"CLINK_BIN={b} is not an executable")
        return os.path.abspath(b)
    b = REPO / "build/src/cli/clink"
    if not os.access(b, os.X_OK):
        print(f"no {b}: building the release binary", file=sys.stderr)
        r = subprocess.run([str(REPO / "scripts/build.sh"), "release"], cwd=REPO,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"scripts/build.sh release failed:\n{r.stdout}{r.stderr}")
        b = REPO / r.stdout.strip().splitlines()[-1]
    return str(b)


class Proc:
    """A process this script started; stdout and stderr each to a file of its own."""

    def __init__(self, args, out_path, err_path, env):
        self.out_path, self.err_path = Path(out_path), Path(err_path)
        self.out, self.err = open(out_path, "wb"), open(err_path, "wb")
        self.p = subprocess.Popen(args, stdout=self.out, stderr=self.err, env=env,
                                  stdin=subprocess.DEVNULL)

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.out.close()
        self.err.close()


class Cluster:
    def __init__(self, clink, tmp, interval_ms, slots):
        self.clink, self.dir = clink, tmp
        self.port, self.http = free_port(), free_port()
        self.interval_ms, self.slots = interval_ms, slots
        self.procs = []  # every process started, in order, for teardown
        self.workers = {}
        self.coordinator = None
        self.env = dict(os.environ, CLINK_LOG_LEVEL="info")
        for k in ("CLINK_FAULT", "CLINK_AUTH_TOKEN"):
            self.env.pop(k, None)

    def _start(self, args, name):
        p = Proc(args, self.dir / f"{name}.out", self.dir / f"{name}.log", self.env)
        self.procs.append(p)
        return p

    def start(self, nworkers):
        self.coordinator = self._start(
            [self.clink, "coordinator", "--host", "127.0.0.1", "--port", str(self.port),
             "--http-port", str(self.http), "--checkpoint-dir", str(self.dir / "checkpoints"),
             "--checkpoint-interval-ms", str(self.interval_ms)], "coordinator")
        wait_for(lambda: self.get("/api/v1/health")[0] == 200 or self._dead(self.coordinator),
                 20, "the coordinator's health")
        self._check_alive(self.coordinator, "the coordinator")
        for n in range(1, nworkers + 1):
            wid = f"worker-{n}"
            self.workers[wid] = self._start(
                [self.clink, "worker", "--coordinator-host", "127.0.0.1", "--coordinator-port",
                 str(self.port), "--host", "127.0.0.1", "--slots", str(self.slots), "--id", wid],
                wid)
        wait_for(lambda: self.registered() >= set(self.workers), 20, "the workers to register")

    def _dead(self, proc):
        return proc.p.poll() is not None

    def _check_alive(self, proc, what):
        if self._dead(proc):
            raise BenchError(f"{what} exited with {proc.p.returncode}: "
                             f"{proc.err_path.read_text()[-2000:]}")

    def registered(self):
        code, body = self.get("/api/v1/workers")
        if code != 200:
            return set()
        return {w["id"] for w in body.get("workers", []) if w["status"] == "REGISTERED"}

    def stop(self):
        for p in reversed(self.procs):
            p.stop()

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http}{path}", timeout=5) as r:
                return r.status, json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            return e.code, {}
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            return 0, {}

    def job(self, jid):
        return self.get(f"/api/v1/jobs/{jid}")[1]

    def submit(self, sql_path, parallelism):
        r = subprocess.run([self.clink, "run", str(sql_path), "--coordinator-host", "127.0.0.1",
                            "--coordinator-port", str(self.port), "--parallelism",
                            str(parallelism), "--name", "failover"],
                           capture_output=True, text=True, timeout=30, env=self.env)
        if r.returncode != 0 or not r.stdout.startswith("submitted job "):
            raise BenchError(f"clink run failed ({r.returncode}): {r.stdout}{r.stderr}")
        return int(r.stdout.split()[-1])


def job_sql(sink, out, rate):
    sink_with = (f"connector = 'file', path = '{out}'" if sink == "file" else
                 "connector = 'print'")
    return f"""
CREATE TABLE g (i BIGINT, ts BIGINT) WITH (connector = 'datagen', rows_per_second = '{rate}',
  'fields.i.kind' = 'sequence', 'fields.i.start' = '0',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '1772352000000', 'fields.ts.step' = '1');
CREATE TABLE out (i BIGINT, k BIGINT, ts BIGINT) WITH ({sink_with});
INSERT INTO out SELECT i, i % 7 AS k, ts FROM g;
"""


def sizes(paths):
    return tuple(p.stat().st_size if p.exists() else 0 for p in paths)


def rows_of(data):
    """The i of every complete line (a line cut short by the kill is not a row)."""
    out = []
    for line in data.split(b"\n"):
        if line.startswith(b"{") and line.endswith(b"}"):
            out.append(json.loads(line)["i"])
    return out


def one_run(clink, args, sink, run_no, root, rng):
    tmp = root / f"{sink}-{run_no}"
    tmp.mkdir()
    c = Cluster(clink, tmp, args.interval_ms, args.slots)
    try:
        c.start(2)
        sql = tmp / "job.sql"
        out = tmp / "out.json"
        sql.write_text(job_sql(sink, out, args.rate))
        jid = c.submit(sql, args.parallelism)
        wait_for(lambda: c.job(jid).get("status") == "RUNNING" or
                 c.job(jid).get("status") in ("FAILED", "FINISHED"), 30, "the job to run")
        if c.job(jid)["status"] != "RUNNING":
            raise BenchError(f"job {jid} did not run: {c.job(jid)}")
        on = c.job(jid)["workers"]
        if not on:
            raise BenchError(f"job {jid} runs on no worker: {c.job(jid)}")
        victim = on[0]
        survivors = [w for w in c.workers if w != victim]
        if sink == "file":
            paths = ([out] if args.parallelism == 1 else
                     [Path(f"{out}-{s}") for s in range(args.parallelism)])
        else:  # the print sink writes into the stdout of whichever worker runs it
            paths = [c.workers[w].out_path for w in c.workers]
        # steady: checkpoints completed, output growing, the survivor ready to take the job
        growths = {"n": 0, "last": sizes(paths)}

        def steady():
            s = sizes(paths)
            if s != growths["last"]:
                growths["n"] += 1
                growths["last"] = s
            j = c.job(jid)
            if j and j.get("status") != "RUNNING":
                raise BenchError(f"job {jid} left RUNNING before the kill: {j}")
            return (j.get("last_checkpoint", 0) >= args.checkpoints and growths["n"] >= 3 and
                    set(survivors) <= c.registered())
        wait_for(steady, 60, f"{args.checkpoints} checkpoints and growing output", 0.01)
        # a random point of the checkpoint cycle (see DESIGN): not a wait for any condition
        offset_ms = rng.uniform(0, args.interval_ms)
        time.sleep(offset_ms / 1000.0)
        j = c.job(jid)
        if j.get("status") != "RUNNING":
            raise BenchError(f"job {jid} left RUNNING before the kill: {j}")
        last_ckpt = j["last_checkpoint"]
        log = c.coordinator.err_path
        log_at_kill = log.stat().st_size

        t0 = time.monotonic()
        c.workers[victim].p.send_signal(signal.SIGKILL)
        c.workers[victim].p.wait()
        base = sizes(paths)
        at_kill = base
        seen = {}
        poll = args.poll_ms / 1000.0
        deadline = t0 + args.deadline_s
        lost_line = f"worker lost: {victim}".encode()
        while len(seen) < len(PHASES):
            now = time.monotonic()
            if now > deadline:
                raise BenchError(f"deadline of {args.deadline_s} s passed with only {sorted(seen)} "
                                 f"seen; coordinator log tail:\n"
                                 f"{log.read_text()[-3000:]}")
            with open(log, "rb") as f:
                f.seek(log_at_kill)
                text = f.read()
            t = (time.monotonic() - t0) * 1000.0
            if "lost" not in seen and lost_line in text:
                seen["lost"] = t
            if "lost" in seen and "restore" not in seen:
                i = max(text.find(b"restore point: checkpoint"), text.find(b"starting fresh"))
                if i >= 0:
                    seen["restore"] = t
                    restore_at = i
                    if args.parallelism > 1:
                        base = sizes(paths)
            if "restore" in seen and "started" not in seen and \
                    b"running on" in text[restore_at:]:
                seen["started"] = t
            if "restore" in seen and "output" not in seen:
                s = sizes(paths)
                if any(a > b for a, b in zip(s, base)):
                    seen["output"] = (time.monotonic() - t0) * 1000.0
            for w in survivors:
                c._check_alive(c.workers[w], w)
            c._check_alive(c.coordinator, "the coordinator")
            if len(seen) < len(PHASES):
                time.sleep(max(0.0, poll - (time.monotonic() - now)))
        t_end = time.monotonic()
        restore_line = next((ln for ln in text.decode(errors="replace").splitlines()
                             if "restore point: checkpoint" in ln or "starting fresh" in ln), "")

        # the output, as at-least-once allows: no gap, and the restore did not skip ahead. Read
        # once every restored subtask wrote something (the measurement is over by now)
        par = args.parallelism

        def every_subtask_wrote():
            subs = set()
            for path, b in zip(paths, base):
                data = path.read_bytes() if path.exists() else b""
                if len(data) > b and not data.endswith(b"\n"):
                    return False
                subs |= {i % par for i in rows_of(data[b:])}
            return len(subs) == par
        wait_for(every_subtask_wrote, 10, "output from every restored subtask")
        before, after, first_new = [], [], {}  # first_new: subtask -> its first row restored
        for path, b in zip(paths, base):
            data = path.read_bytes() if path.exists() else b""
            before += rows_of(data[:b])
            for i in rows_of(data[b:]):
                after.append(i)
                first_new[i % par] = min(first_new.get(i % par, i), i)
        first_new = [first_new[k] for k in sorted(first_new)]
        allrows = set(before) | set(after)
        # subtask s of P makes i = s, s + P, s + 2P, ...: each must have no gap up to its top
        for s in range(args.parallelism):
            mine = sorted(i for i in allrows if i % args.parallelism == s)
            want = list(range(s, mine[-1] + 1, args.parallelism)) if mine else []
            if mine != want:
                gap = next(i for i in want if i not in allrows)
                raise BenchError(f"{len(want) - len(mine)} rows lost across the failover, the "
                                 f"first i = {gap} (rows before the kill up to {max(before)}, "
                                 f"first after the restore {first_new}): a wrong restore")
        if before and min(first_new) > max(before) + 1:
            raise BenchError(f"the restored job started at i = {min(first_new)}, past the last "
                             f"row written before the kill ({max(before)})")
        replayed = sum(sum(1 for i in set(before) if i % par == f % par and i >= f)
                       for f in first_new)
        res = {"sink": sink, "run": run_no, "victim": victim, "survivor": survivors[0],
               "kill_offset_ms": round(offset_ms, 1),
               "restored": (m.group(0) if (m := re.search(r"checkpoint \d+|starting fresh",
                                                          restore_line)) else "?"),
               "last_checkpoint_before_kill": last_ckpt, "restore_line": restore_line.strip(),
               "bytes_at_kill": sum(at_kill), "rows_before_kill": len(before),
               "rows_replayed": replayed, "first_row_after_restore": min(first_new),
               "waited_for_capacity": b"waiting for capacity" in text,
               "poll_loop_ms": round((t_end - t0) * 1000, 1)}
        res.update({k: round(v, 1) for k, v in seen.items()})
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        return res
    finally:
        c.stop()


def summarise(results, sink):
    rs = [r for r in results if r["sink"] == sink]
    if not rs:
        return None
    print(f"\n{sink} sink, {len(rs)} runs — ms after SIGKILL (median / max):")
    summary = {}
    prev = None
    for ph in PHASES:
        vals = [r[ph] for r in rs]
        summary[ph] = (statistics.median(vals), max(vals))
        print(f"  {ph:8} {summary[ph][0]:7.1f} / {summary[ph][1]:7.1f}", end="")
        if prev:
            d = [r[ph] - r[prev] for r in rs]
            print(f"   (+{statistics.median(d):.1f} / +{max(d):.1f} after {prev})", end="")
        print()
        prev = ph
    med, mx = summary["output"]
    verdict = "met" if mx <= AIM_MS else ("met in the median, not in the max" if med <= AIM_MS
                                          else "NOT met")
    print(f"  aim: first output <= {AIM_MS} ms after the kill: {verdict} "
          f"(median {med:.0f} ms, max {mx:.0f} ms)")
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="repetitions per sink (default 5)")
    ap.add_argument("--sink", choices=("file", "print", "both"), default="both")
    ap.add_argument("--parallelism", type=int, choices=(1, 2), default=1)
    ap.add_argument("--slots", type=int, default=2, help="slots per worker (default 2)")
    ap.add_argument("--interval-ms", type=int, default=200, help="checkpoint interval")
    ap.add_argument("--rate", type=int, default=1000, help="datagen rows per second")
    ap.add_argument("--checkpoints", type=int, default=3,
                    help="checkpoints completed before the kill (default 3)")
    ap.add_argument("--poll-ms", type=float, default=5.0)
    ap.add_argument("--deadline-s", type=float, default=30.0,
                    help="per repetition, from the kill to the first output")
    ap.add_argument("--seed", type=int, default=1, help="of the kill offsets (default 1)")
    ap.add_argument("--json", help="write every run's raw figures here")
    ap.add_argument("--keep", action="store_true", help="keep each run's directory and logs")
    args = ap.parse_args()
    if args.slots < args.parallelism:
        ap.error("--slots must be at least --parallelism, so the survivor can take the job")

    # SIGTERM/SIGHUP end the run like Ctrl-C does: through the finally clauses
    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    root = Path(tempfile.mkdtemp(prefix="clink-bench-failover-"))
    results = []
    try:
        src = find_clink()
        clink = str(root / "clink")
        shutil.copy2(src, clink)
        sha = hashlib.sha256(Path(clink).read_bytes()).hexdigest()
        print(f"clink {src} (sha256 {sha[:12]}…), {platform.node()}, {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.2f}")
        print(f"2 workers x {args.slots} slots, checkpoint interval {args.interval_ms} ms, "
              f"parallelism {args.parallelism}, datagen {args.rate} rows/s, poll {args.poll_ms} "
              f"ms; a new cluster per run")
        sinks = ("file", "print") if args.sink == "both" else (args.sink,)
        rng = random.Random(args.seed)
        for sink in sinks:
            for n in range(1, args.runs + 1):
                r = one_run(clink, args, sink, n, root, rng)
                results.append(r)
                print(f"  {sink:5} run {n}: lost {r['lost']:6.1f}  restore {r['restore']:6.1f}  "
                      f"started {r['started']:6.1f}  output {r['output']:6.1f} ms   "
                      f"(killed {r['victim']} {r['kill_offset_ms']:.0f} ms into the cycle, "
                      f"after checkpoint {r['last_checkpoint_before_kill']}; restored "
                      f"{r['restored']}; {r['rows_replayed']} rows replayed)", flush=True)
        summary = {s: summarise(results, s) for s in sinks}
        if args.json:
            Path(args.json).write_text(json.dumps(
                {"binary_sha256": sha, "args": vars(args), "runs": results,
                 "summary": summary}, indent=1) + "\n")
    except BenchError as e:
        print(f"error: {e}\nlogs and outputs kept in {root}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        print(f"interrupted ({e}); logs and outputs kept in {root}", file=sys.stderr)
        return 130
    if args.keep:
        print(f"kept {root}", file=sys.stderr)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
