"""Harness for the checkpoint and recovery tests: run `clink run` with a checkpoint directory,
kill it (at a fault point or with SIGKILL at a random moment), run it again, and judge the
output against an expectation computed in Python from the generator's definition — never from
anything the engine wrote.

The job: a paced datagen source whose columns are all sequences, so row i is
  k = i mod 7, ts = 1772352000000 + 10*i, v = 5 + 3*(i mod 6)
and ten-second... (here one-second) tumbling windows per key of COUNT(*) and SUM(v).
"""
import json
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build/src/cli/clink")
FAULT_EXIT = 86

BASE_TS = 1772352000000
KEYS, V_PERIOD = 7, 6


def job_sql(out_path, rows, rate, sink_options="", extra_where=""):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}', rows_per_second = '{rate}',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{KEYS - 1}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{BASE_TS}', 'fields.ts.step' = '10',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '5', 'fields.v.step' = '3',
  'fields.v.end' = '{5 + 3 * (V_PERIOD - 1)}',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT)
WITH (connector = 'file', path = '{out_path}'{sink_options});
INSERT INTO out
SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total
FROM g {extra_where}
GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""


def expected_windows(rows):
    """Every window of the job, recomputed from the generator's definition."""
    acc = {}
    for i in range(rows):
        k, ts, v = i % KEYS, BASE_TS + 10 * i, 5 + 3 * (i % V_PERIOD)
        ws = ts - ts % 1000
        n, total = acc.get((k, ws), (0, 0))
        acc[(k, ws)] = (n + 1, total + v)
    return Counter((k, ws, ws + 1000, n, t) for (k, ws), (n, t) in acc.items())


def read_rows(paths):
    rows = Counter()
    for p in paths:
        if not Path(p).exists():
            continue
        for line in Path(p).read_text().splitlines():
            r = json.loads(line)
            rows[(r["k"], r["window_start"], r["window_end"], r["n"], r["total"])] += 1
    return rows


class Job:
    """One pipeline with its checkpoint directory, run as many times as a test needs."""

    def __init__(self, tmp_path, rows=20000, rate=8000, parallelism=1, interval_ms=100,
                 sink_options=""):
        self.dir = tmp_path
        self.out = tmp_path / "out.json"
        self.ckpt = tmp_path / "ckpt"
        self.rows, self.parallelism = rows, parallelism
        self.sql = tmp_path / "job.sql"
        self.sql.write_text(job_sql(self.out, rows, rate, sink_options))
        self.interval_ms = interval_ms
        self.logs = []

    def args(self, *extra):
        return [CLINK, "run", str(self.sql), "--checkpoint-dir", str(self.ckpt),
                "--checkpoint-interval-ms", str(self.interval_ms),
                "--parallelism", str(self.parallelism), *extra]

    def env(self, fault=None):
        env = dict(os.environ, CLINK_LOG_LEVEL="debug")
        env.pop("CLINK_FAULT", None)
        if fault:
            env["CLINK_FAULT"] = fault
        return env

    def run(self, *extra, fault=None, timeout=120):
        r = subprocess.run(self.args(*extra), capture_output=True, text=True, timeout=timeout,
                           env=self.env(fault))
        self.logs.append(r.stderr)
        return r

    def run_killed(self, after_s, *extra):
        """Starts the job and SIGKILLs it after `after_s` seconds (or lets it finish)."""
        p = subprocess.Popen(self.args(*extra), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=self.env())
        try:
            _, err = p.communicate(timeout=after_s)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            _, err = p.communicate()
        self.logs.append(err)
        return p.returncode

    def run_to_end(self, limit=20):
        for _ in range(limit):
            r = self.run()
            if r.returncode == 0:
                return r
        raise AssertionError("the job did not finish after %d reruns:\n%s" % (limit, self.logs[-1]))

    def first_checkpoint_then_kill(self):
        """A run SIGKILLed once a checkpoint is on disk (so that the next run restores)."""
        assert self.run_killed(1.0) != 0

    def kill_randomly_then_finish(self, rnd, min_kills=5):
        """6-9 runs, each SIGKILLed after 0.3-1.0 s (rnd), until one finishes; then runs to the
        end. At least min_kills runs must have been killed and a rerun must have restored a
        checkpoint, or the kills did not exercise recovery."""
        kills, finished = 0, False
        for _ in range(rnd.randint(6, 9)):
            finished = self.run_killed(rnd.uniform(0.3, 1.0)) == 0
            if finished:
                break  # another run now would start the bounded job over (clean finish)
            kills += 1
        assert kills >= min_kills, f"only {kills} runs were killed before the job finished"
        if not finished:
            self.run_to_end()
        assert sum("restore point: checkpoint" in log for log in self.logs) >= 1, \
            "no rerun restored a checkpoint: the kills did not exercise recovery"
        return kills

    def outputs(self):
        if self.parallelism == 1:
            return [self.out]
        return [Path(f"{self.out}-{s}") for s in range(self.parallelism)]

    def check(self, exactly_once):
        got, want = read_rows(self.outputs()), expected_windows(self.rows)
        distinct = Counter(set(got))
        missing = want - distinct
        unexpected = distinct - want
        assert not missing, f"{sum(missing.values())} windows missing, e.g. {list(missing)[:3]}"
        assert not unexpected, f"windows that should not exist: {list(unexpected)[:3]}"
        if exactly_once:
            dup = {w: c for w, c in got.items() if c > 1}
            assert not dup, f"{len(dup)} windows written more than once, e.g. {list(dup.items())[:3]}"
        return got

    def checkpoint_ids(self):
        """Checkpoint ids each run completed, from its debug log."""
        return [[int(m) for m in re.findall(r"checkpoint (\d+) completed", log)] for log in self.logs]


def die_at(j, point):
    """Runs job j until fault point `point` makes it exit: at its third hit, or for
    before_restore (which fires only in a rerun that restores) at its first, after a run that
    left a checkpoint (j.first_checkpoint_then_kill). Returns that run."""
    ordinal = 1 if point == "before_restore" else 3
    if point == "before_restore":
        j.first_checkpoint_then_kill()
    r = j.run(fault=f"{point}:exit:{ordinal}")
    assert r.returncode == FAULT_EXIT, f"the fault point did not fire:\n{r.stderr[-3000:]}"
    assert f"[fault] {point} hit" in r.stderr
    return r


CHECK_TRACE = REPO / "formal/check-trace"


def check_protocol_trace(trace_dir):
    """formal/check-trace over every process's trace of one test: None when accepted (or
    nothing was traced), else what it said."""
    if not list(Path(trace_dir).glob("*.ndjson")):
        return None
    r = subprocess.run([os.environ.get("CLINK_PYTHON") or "python3", str(CHECK_TRACE),
                        str(trace_dir)], capture_output=True, text=True, timeout=300)
    return None if r.returncode == 0 else (r.stdout + r.stderr)


def trace_external(ckpt_dir, what, **fields):
    """Records in the protocol trace that the test itself changed checkpoint directory
    ckpt_dir (what: remove_clean_finish, remove_snapshot task= ckpt=, remove_marker ckpt=), so
    that formal/check-trace knows the directory as the next run finds it."""
    d = os.environ.get("CLINK_PROTOCOL_TRACE_DIR")
    if not d:
        return
    Path(d).mkdir(parents=True, exist_ok=True)
    f = Path(d) / f"test-{os.getpid()}.ndjson"
    seq = len(f.read_text().splitlines()) + 1 if f.exists() else 1
    ev = dict(seq=seq, ts=time.time_ns(), proc=f"test-{os.getpid()}", event="external",
              dir=f"{ckpt_dir}/v1", what=what, **fields)
    with open(f, "a") as fh:
        fh.write(json.dumps(ev) + "\n")


@pytest.fixture(autouse=True)
def protocol_trace(tmp_path, monkeypatch):
    """Every clink process a test starts writes its protocol trace (CLINK_PROTOCOL_TRACE_DIR)
    into the test's own directory; after the test, the traces of all of them are held to the
    Spin model together (formal/check-trace, docs/protocol.md), and a rejection fails it."""
    d = tmp_path / "protocol-trace"
    monkeypatch.setenv("CLINK_PROTOCOL_TRACE_DIR", str(d))
    yield d
    why = check_protocol_trace(d)
    assert why is None, f"the protocol trace in {d} is rejected by formal/check-trace:\n{why}"


@pytest.fixture
def job(tmp_path):
    return lambda **kw: Job(tmp_path, **kw)


def fault_points():
    """The points of the checkpoint protocol, which every sink passes."""
    text = (REPO / "src/checkpoint/fault.h").read_text()
    text = text[text.index("#define CK_FAULT_TABLE"):text.index("#define CK_FAULT_SINK_TABLE")]
    return re.findall(r'X\(\w+,\s*"(\w+)"', text)


def sink_fault_points(prefix):
    """The points inside one connector's commit protocol (names starting with prefix)."""
    text = (REPO / "src/checkpoint/fault.h").read_text()
    text = text[text.index("#define CK_FAULT_SINK_TABLE"):text.index("typedef enum ck_fault_point")]
    return [p for p in re.findall(r'X\(\w+,\s*"(\w+)"', text) if p.startswith(prefix)]
