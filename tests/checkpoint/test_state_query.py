"""Issue 14: `clink state-query` — SQL over a checkpoint's state, by clink's own engine — and
the live query of a running job through the REST API (coordinator, and an embedded
`clink run --http-port`).

- Queries over a checkpoint taken mid-stream answer what pyarrow reads from the snapshot
  files themselves (the counts per slot, every open window's key, bounds, count and sum from
  the raw bytes, the source positions from the raw bytes), never what clink decodes.
- A GROUP BY over more entries than one batch answers once per group (no changelog lines).
- Bad SQL is refused with its line:column, as `clink run` does; anything but one SELECT too.
- On a running embedded job, `--checkpoint-dir` reads one completed checkpoint, says which,
  and every row is of that checkpoint, with as many entries as its files hold.
- `clink run --http-port` serves health, jobs, the job, operators, checkpoints, state and
  metrics; the state route needs the token (401 without it, or with a wrong one).
- A cluster job: `state-query --job --coordinator` names the checkpoint it read (the route's
  X-Clink-Checkpoint header), its rows are all of that checkpoint; without the token, and on a
  coordinator that has no token, the route answers 401.
"""
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pytest

from .conftest import BASE_TS, CLINK, FAULT_EXIT
from .test_state import uvarints

REPO = Path(__file__).resolve().parents[2]
from ..cluster import conftest as clusterharness  # noqa: E402 (a sibling suite's harness)
free_port, wait_for = clusterharness.free_port, clusterharness.wait_for

SLOT_COUNT = "SELECT slot, COUNT(*) AS entries FROM state GROUP BY slot"


def run(args, env=None, timeout=120):
    return subprocess.run([CLINK, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def query(*args, env=None):
    r = run(["state-query", *args], env=env)
    rows = [json.loads(x) for x in r.stdout.splitlines()] if r.returncode == 0 else None
    return r, rows


def gen_sql(keys, rate, sink="connector = 'blackhole'", step=10):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '1000000000', rows_per_second = '{rate}',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{keys - 1}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{BASE_TS}', 'fields.ts.step' = '{step}',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.step' = '1',
  'fields.v.end' = '1000000000',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT)
WITH ({sink});
INSERT INTO out
SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total
FROM g GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k;
"""


def env_without_fault():
    env = dict(os.environ)
    env.pop("CLINK_FAULT", None)
    env.pop("CLINK_AUTH_TOKEN", None)
    return env


def stopped_mid_stream(tmp, keys, rate, parallelism, step=10, after=3):
    (tmp / "job.sql").write_text(gen_sql(keys, rate, step=step))
    env = dict(env_without_fault(), CLINK_FAULT=f"after_completed:exit:{after}")
    r = run(["run", str(tmp / "job.sql"), "--checkpoint-dir", str(tmp / "ckpt"),
             "--checkpoint-interval-ms", "100", "--parallelism", str(parallelism)], env=env)
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    meta = tmp / "ckpt" / "v1" / "_meta"
    return max(int(p.name.split("-")[1]) for p in meta.glob("completed-*")
               if p.name.split("-")[1].isdigit())


def pyarrow_rows(ckpt, n):
    """Every row of checkpoint n by pyarrow alone, with its task and operator name."""
    out = []
    for d in sorted((Path(ckpt) / "v1").iterdir()):
        if not d.name.isdigit():
            continue
        reader = pyarrow.ipc.open_stream((d / f"checkpoint-{n}.snap").read_bytes())
        ops = {o["op_id"]: o for o in json.loads(reader.schema.metadata[b"clink.operators"])}
        for r in reader.read_all().to_pylist():
            r.update(task=int(d.name), name=ops[r["op_id"]]["name"])
            out.append(r)
    return out


@pytest.fixture(scope="module")
def mid_stream(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sq")
    return tmp, stopped_mid_stream(tmp, 8, 4000, 2)


def test_queries_answer_what_pyarrow_reads_from_the_files(mid_stream):
    tmp, n = mid_stream
    ckpt = tmp / "ckpt"
    truth = pyarrow_rows(ckpt, n)
    # counts per slot, over every subtask's file of the newest completed checkpoint
    r, rows = query(f"--checkpoint-dir={ckpt}", f"--sql={SLOT_COUNT}")
    assert r.returncode == 0, r.stderr
    assert f"state-query: checkpoint {n} of " in r.stderr, r.stderr
    assert sorted(rows, key=lambda x: x["slot"]) == sorted(
        ({"slot": s, "entries": c} for s, c in Counter(t["slot"] for t in truth).items()),
        key=lambda x: x["slot"])
    assert {x["slot"] for x in rows} == {"<raw>", "win"}
    # every open window: key, bounds, count and sum, from the raw bytes
    want = set()
    for t in truth:
        if t["slot"] != "win":
            continue
        v = t["value"]
        # the record without its key group and key (format 3.0: their own columns hold them)
        start = int.from_bytes(v[0:8], "little", signed=True)
        end = int.from_bytes(v[8:16], "little", signed=True)
        count = int.from_bytes(v[16:24], "little", signed=True)
        total = int.from_bytes(v[25:41], "little", signed=True)
        want.add((json.loads(t["user_key"]), t["key_group"], start, end, count, total))
    r, rows = query(f"--dir={ckpt}", f"--id={n}", "--sql=SELECT key_int, key_group, "
                    "window_start, window_end, value_int, agg1, agg2 FROM state "
                    "WHERE slot = 'win' AND operator = 'window_agg'")
    assert r.returncode == 0, r.stderr
    got = {(x["key_int"], x["key_group"], x["window_start"], x["window_end"], x["value_int"],
            int(x["agg2"])) for x in rows}
    assert got == want and len(rows) == len(want)
    assert all(x["agg1"] == x["value_int"] for x in rows)
    # the source positions (u8 version, uvarint parallelism, uvarint next row), summed by SQL
    nexts = [uvarints(t["value"], 1, 2)[0][1] for t in truth if t["name"] == "datagen_source"]
    assert len(nexts) == 2
    r, rows = query(f"--dir={ckpt / 'v1'}", "--sql=SELECT operator, SUM(value_int) AS pos, "
                    "COUNT(*) AS n FROM state WHERE kind = 'source' GROUP BY operator")
    assert r.returncode == 0, r.stderr
    assert rows == [{"operator": "datagen_source", "pos": sum(nexts), "n": 2}]
    # one file (--from): that file's entries only
    f = ckpt / "v1" / "0" / f"checkpoint-{n}.snap"
    r, rows = query(f"--from={f}", "--sql=SELECT COUNT(*) AS n, MIN(task) AS lo, "
                    "MAX(task) AS hi FROM state GROUP BY checkpoint")
    assert r.returncode == 0, r.stderr
    assert rows == [{"n": sum(1 for t in truth if t["task"] == 0), "lo": 0, "hi": 0}]


GROUPS_SQL = f"""
CREATE TABLE g (k BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '1000000000', rows_per_second = '200000',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '4999',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.step' = '1',
  'fields.v.end' = '1000000000');
CREATE TABLE out (k BIGINT, n BIGINT, total BIGINT) WITH (connector = 'blackhole');
INSERT INTO out SELECT k, COUNT(*) AS n, SUM(v) AS total FROM g GROUP BY k;
"""


def test_group_by_over_many_batches_answers_once_per_group(tmp_path):
    # a GROUP BY's groups stay open: thousands of 'group' entries, more than one batch (1024
    # rows); stop later until there are (a loaded machine reads fewer rows per checkpoint)
    (tmp_path / "job.sql").write_text(GROUPS_SQL)
    for after in (3, 10, 30):
        env = dict(env_without_fault(), CLINK_FAULT=f"after_completed:exit:{after}")
        r = run(["run", str(tmp_path / "job.sql"), "--checkpoint-dir", str(tmp_path / "ckpt"),
                 "--checkpoint-interval-ms", "100", "--fresh"], env=env)
        assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
        n = max(completed_ids(tmp_path / "ckpt"))
        truth = pyarrow_rows(tmp_path / "ckpt", n)
        groups = sum(1 for t in truth if t["slot"] == "group")
        if groups > 1024:
            break
    assert groups > 1024, groups
    r, rows = query(f"--checkpoint-dir={tmp_path / 'ckpt'}", f"--sql={SLOT_COUNT}")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2, r.stdout[:2000]  # no update lines
    assert {x["slot"]: x["entries"] for x in rows} == dict(Counter(t["slot"] for t in truth))
    assert all("op" not in x for x in rows)
    r, rows = query(f"--checkpoint-dir={tmp_path / 'ckpt'}", "--sql=SELECT key_group, "
                    "COUNT(*) AS c FROM state WHERE slot = 'group' GROUP BY key_group "
                    "HAVING COUNT(*) > 40")
    assert r.returncode == 0, r.stderr
    per_kg = Counter(t["key_group"] for t in truth if t["slot"] == "group")
    assert {x["key_group"]: x["c"] for x in rows} == {k: c for k, c in per_kg.items() if c > 40}
    # every group's COUNT, summed by SQL, is the rows the source had read (its raw position)
    read = sum(uvarints(t["value"], 1, 2)[0][1] for t in truth if t["name"] == "datagen_source")
    r, rows = query(f"--checkpoint-dir={tmp_path / 'ckpt'}", "--sql=SELECT SUM(value_int) AS n, "
                    "COUNT(*) AS g FROM state WHERE slot = 'group' GROUP BY slot")
    assert r.returncode == 0, r.stderr
    assert rows == [{"n": read, "g": groups}], (rows, read, groups)


def test_bad_sql_is_refused_with_its_line_and_column(mid_stream):
    tmp, _ = mid_stream
    d = f"--dir={tmp / 'ckpt'}"
    r, _ = query(d, "--sql=SELECT slott FROM state")
    assert r.returncode == 1 and "<--sql>:1:8: error: unknown column 'slott'" in r.stderr, r.stderr
    assert "did you mean 'slot'" in r.stderr
    r, _ = query(d, "--sql=SELECT slot,\n  COUNT(* FROM state")
    assert r.returncode == 1 and "<--sql>:2:11: error:" in r.stderr, r.stderr
    r, _ = query(d, "--sql=SELECT * FROM nosuch")
    assert r.returncode == 1 and "<--sql>:1:15: error: unknown table 'nosuch'" in r.stderr, r.stderr
    r, _ = query(d, "--sql=INSERT INTO state SELECT * FROM state")
    assert r.returncode == 1 and "<--sql>:1:1: error:" in r.stderr and "not a SELECT" in r.stderr
    r, _ = query(d, "--sql=SELECT 1 FROM state; SELECT 2 FROM state")
    assert r.returncode == 1 and "<--sql>:1:22: error:" in r.stderr, r.stderr
    r, _ = query("--sql=SELECT 1 FROM state")
    assert r.returncode == 2
    r, _ = query(f"--dir={tmp / 'nothing'}", "--sql=SELECT 1 FROM state")
    assert r.returncode == 1 and "could not find a completed checkpoint" in r.stderr


# ---------------------------------------------------------------- a running embedded job

def http_get(port, path, token=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=90) as r:
            return r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers


def completed_ids(root):
    return sorted(int(p.name.split("-")[1]) for p in (Path(root) / "v1" / "_meta").glob("completed-*")
                  if p.name.split("-")[1].isdigit()) if (Path(root) / "v1" / "_meta").exists() else []


def check_consistent(stderr_or_header, rows, root):
    """rows are of exactly the checkpoint named, and there are as many as its files hold."""
    n = int(stderr_or_header)
    assert [x["checkpoint"] for x in rows] == [n], rows
    try:
        truth = pyarrow_rows(root, n)
    except FileNotFoundError:  # retention removed it since: nothing to compare
        return False
    assert rows[0]["n"] == len(truth), (rows, len(truth))
    return True


@pytest.fixture
def embedded(tmp_path):
    (tmp_path / "job.sql").write_text(gen_sql(8, 2000))
    env = dict(env_without_fault(), CLINK_AUTH_TOKEN="tok-embedded", CLINK_LOG_LEVEL="info")
    log = open(tmp_path / "run.log", "w")
    p = subprocess.Popen([CLINK, "run", str(tmp_path / "job.sql"), "--checkpoint-dir",
                          str(tmp_path / "ckpt"), "--checkpoint-interval-ms", "150",
                          "--parallelism", "2", "--http-port", "0"],
                         stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        port = int(wait_for(lambda: re.search(r"serving the job's REST API on 127\.0\.0\.1:(\d+)",
                                              (tmp_path / "run.log").read_text()), 30,
                            "the REST line").group(1))
        wait_for(lambda: len(completed_ids(tmp_path / "ckpt")) >= 2, 60, "two checkpoints")
        yield tmp_path, port, "tok-embedded"
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()
        text = (tmp_path / "run.log").read_text(errors="replace")
        for what in ("runtime error:", "AddressSanitizer", "LeakSanitizer"):
            assert what not in text, text[-3000:]


def test_checkpoint_dir_of_a_running_job_reads_one_checkpoint_and_names_it(embedded):
    tmp, _, _ = embedded
    seen = set()
    compared = 0
    for _ in range(6):
        r, rows = query(f"--checkpoint-dir={tmp / 'ckpt'}", "--sql=SELECT checkpoint, "
                        "COUNT(*) AS n FROM state GROUP BY checkpoint")
        assert r.returncode == 0, r.stderr
        n = re.search(r"state-query: checkpoint (\d+) of ", r.stderr).group(1)
        compared += check_consistent(n, rows, tmp / "ckpt")
        seen.add(int(n))
    assert compared >= 3
    assert len(seen) >= 2, seen  # the job kept checkpointing: the newest moved on


def test_http_port_serves_the_read_only_routes_and_the_state_route_needs_the_token(embedded):
    tmp, port, token = embedded
    code, body, _ = http_get(port, "/api/v1/health")
    assert code == 200 and json.loads(body)["status"] == "ok"
    code, body, _ = http_get(port, "/api/v1/jobs")
    assert code == 401  # CLINK_AUTH_TOKEN is set: every route but health needs it
    code, body, _ = http_get(port, "/api/v1/jobs", token)
    jobs = json.loads(body)["jobs"]
    assert code == 200 and [j["id"] for j in jobs] == [1] and jobs[0]["status"] == "RUNNING"
    code, body, _ = http_get(port, "/api/v1/jobs/1", token)
    assert code == 200 and json.loads(body)["name"].endswith("job.sql")
    assert http_get(port, "/api/v1/jobs/2", token)[0] == 404
    code, body, _ = http_get(port, "/api/v1/jobs/1/operators", token)
    ops = json.loads(body)["operators"]
    assert code == 200 and {o["name"] for o in ops} >= {"datagen_source", "window_agg"}
    assert sum(o["records_in"] for o in ops if o["name"] == "datagen_source") > 0
    code, body, _ = http_get(port, "/api/v1/jobs/1/checkpoints", token)
    c = json.loads(body)
    assert code == 200 and c["latest_completed"] >= 2
    assert c["latest_completed"] in completed_ids(tmp / "ckpt") or \
        c["latest_completed"] <= max(completed_ids(tmp / "ckpt"))
    code, body, _ = http_get(port, "/metrics", token)
    assert code == 200 and 'clink_operator_records_in_total{job="1"' in body
    assert 'clink_job_last_checkpoint{job="1"}' in body
    # the state route: the token, always
    q = "/api/v1/jobs/1/state?sql=" + urllib.request.quote(
        "SELECT checkpoint, COUNT(*) AS n FROM state GROUP BY checkpoint")
    code, body, _ = http_get(port, q)
    assert code == 401, body
    code, body, _ = http_get(port, q, "not-the-token")
    assert code == 401, body
    code, body, headers = http_get(port, q, token)
    assert code == 200, body
    ans = json.loads(body)
    assert ans["job"] == 1 and str(ans["checkpoint"]) == headers["X-Clink-Checkpoint"]
    check_consistent(ans["checkpoint"], ans["rows"], tmp / "ckpt")
    code, body, _ = http_get(port, "/api/v1/jobs/1/state?sql=SELECT+slott+FROM+state", token)
    assert code == 400 and "<--sql>:1:8: error: unknown column 'slott'" in json.loads(body)["error"]
    # the CLI over the same route
    r, rows = query("--job=1", f"--coordinator=127.0.0.1:{port}", f"--token={token}",
                    f"--sql={SLOT_COUNT}")
    assert r.returncode == 0, r.stderr
    assert re.search(r"state-query: job 1, checkpoint \d+ ", r.stderr), r.stderr
    assert {x["slot"] for x in rows} == {"<raw>", "win"}
    r, _ = query("--job=1", f"--coordinator=127.0.0.1:{port}", f"--sql={SLOT_COUNT}",
                 env=env_without_fault())
    assert r.returncode == 1 and "answered 401" in r.stderr, r.stderr


# ---------------------------------------------------------------- a cluster job

def test_live_query_of_a_cluster_job_names_its_checkpoint_and_needs_the_token(tmp_path):
    c = clusterharness.Cluster(tmp_path, token="tok-cluster", interval_ms=150)
    try:
        c.start_coordinator()
        c.start_worker("w1", slots=4)
        (tmp_path / "job.sql").write_text(gen_sql(8, 2000))
        jid = c.submit(tmp_path / "job.sql", parallelism=2)
        c.wait_status(jid, ["RUNNING"])
        root = c.ckpt / f"job-{jid}"
        wait_for(lambda: len(completed_ids(root)) >= 2, 60, "two checkpoints")
        env = dict(env_without_fault(), CLINK_AUTH_TOKEN="tok-cluster")
        compared = 0
        for _ in range(4):
            r, rows = query(f"--job={jid}", f"--coordinator=127.0.0.1:{c.http}",
                            "--sql=SELECT checkpoint, COUNT(*) AS n FROM state "
                            "GROUP BY checkpoint", env=env)
            assert r.returncode == 0, r.stderr
            n = re.search(rf"state-query: job {jid}, checkpoint (\d+) ", r.stderr).group(1)
            compared += check_consistent(n, rows, root)
        assert compared >= 2
        # the job's directory read directly (running): one checkpoint, named
        r, rows = query(f"--checkpoint-dir={root}", "--sql=SELECT checkpoint, COUNT(*) AS n "
                        "FROM state GROUP BY checkpoint")
        assert r.returncode == 0, r.stderr
        check_consistent(re.search(r"state-query: checkpoint (\d+) of ", r.stderr).group(1),
                         rows, root)
        r, rows = query(f"--job={jid}", f"--coordinator=127.0.0.1:{c.http}",
                        f"--sql={SLOT_COUNT}", env=env)
        assert r.returncode == 0 and {x["slot"] for x in rows} == {"<raw>", "win"}, r.stderr
        # without the token, a wrong one, an unknown job, bad SQL
        r, _ = query(f"--job={jid}", f"--coordinator=127.0.0.1:{c.http}", f"--sql={SLOT_COUNT}",
                     env=env_without_fault())
        assert r.returncode == 1 and "answered 401" in r.stderr, r.stderr
        code, _, _ = c.request("GET", f"/api/v1/jobs/{jid}/state?sql=SELECT+1+FROM+state",
                               token="wrong")
        assert code == 401
        code, _, _ = c.request("GET", "/api/v1/jobs/99/state?sql=SELECT+1+FROM+state")
        assert code == 404
        r, _ = query(f"--job={jid}", f"--coordinator=127.0.0.1:{c.http}",
                     "--sql=SELECT nope FROM state", env=env)
        assert r.returncode == 1 and "<--sql>:1:8: error: unknown column 'nope'" in r.stderr
    finally:
        c.stop()


def test_a_coordinator_without_a_token_refuses_the_state_route(tmp_path):
    c = clusterharness.Cluster(tmp_path, token=None)
    try:
        c.start_coordinator()
        code, body, _ = c.request("GET", "/api/v1/jobs/1/state?sql=SELECT+1+FROM+state")
        assert code == 401 and "CLINK_AUTH_TOKEN" in json.loads(body)["error"], body
        assert c.get("/api/v1/jobs")[0] == 200  # the other routes as before
    finally:
        c.stop()
