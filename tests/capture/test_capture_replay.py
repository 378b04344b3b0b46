"""The flight recorder and replay (capture/capture.h, clink replay; docs/replay.md).

A bounded datagen job whose row i is k = i mod 7, ts = BASE + 10*i, v = 5 + 3*(i mod 6) feeds
a calc (WHERE v > 6, a projection) and four aggregates — tumble, hop and session windows and an
unwindowed GROUP BY, whose changelog retracts — into file sinks, with checkpoints and
--capture-dir. Then every operator subtask's every recorded interval is replayed with --verify
(two replays byte-identical, and equal to what the next operator recorded taking), at
parallelism 1 and 4, embedded and on a cluster; and the replayed windows are checked against a
recomputation in Python from the capture's own records (read with pyarrow), and those records
against the generator's definition — never against anything the engine printed.
"""
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.ipc as ipc
import pytest

REPO = Path(__file__).resolve().parents[2]
CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build/src/cli/clink")
BASE, KEYS, ROWS = 1772352000000, 7, 6000


def gen_rows(n=ROWS):
    return [(i % KEYS, BASE + 10 * i, 5 + 3 * (i % 6)) for i in range(n)]


def job_sql(out, extra_sink="", rate=12000):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{ROWS}', rows_per_second = '{rate}',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{KEYS - 1}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{BASE}', 'fields.ts.step' = '10',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '5', 'fields.v.step' = '3', 'fields.v.end' = '20',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE tum (k BIGINT, ws BIGINT, n BIGINT, total BIGINT) WITH (connector = 'file', path = '{out}/tum.json');
CREATE TABLE hop (k BIGINT, ws BIGINT, n BIGINT) WITH (connector = 'file', path = '{out}/hop.json');
CREATE TABLE ses (k BIGINT, ws BIGINT, n BIGINT) WITH (connector = 'file', path = '{out}/ses.json');
CREATE TABLE grp (b BIGINT, n BIGINT) WITH (connector = 'file', path = '{out}/grp.json');
{extra_sink}
INSERT INTO tum SELECT k, window_start AS ws, COUNT(*) AS n, SUM(v) AS total FROM g WHERE v > 6
  GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
INSERT INTO hop SELECT k, window_start AS ws, COUNT(*) AS n FROM g
  GROUP BY HOP(ts, INTERVAL '1' SECOND, INTERVAL '500' MILLISECOND), k;
INSERT INTO ses SELECT k, window_start AS ws, COUNT(*) AS n FROM g WHERE v <> 11
  GROUP BY SESSION(ts, INTERVAL '30' MILLISECOND), k;
INSERT INTO grp SELECT v % 4 AS b, COUNT(*) AS n FROM g GROUP BY v % 4;
"""


def clink(*args, env=None, timeout=120):
    e = dict(os.environ, CLINK_LOG_LEVEL="warn")
    e.pop("CLINK_MUTANT", None)
    e.update(env or {})
    return subprocess.run([CLINK, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=e)


def run_job(tmp, parallelism, *extra, sql=None):
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    (tmp / "job.sql").write_text(sql or job_sql(out))
    r = clink("run", tmp / "job.sql", "--parallelism", parallelism, "--checkpoint-dir",
              tmp / "ck", "--checkpoint-interval-ms", 150, "--checkpoints-retained", 1000000,
              "--capture-dir", tmp / "cap", *extra)
    assert r.returncode == 0, r.stderr
    return tmp / "cap", tmp / "ck"


def ops(cap):
    return {int(p.name[3:]): json.loads((p / "op.json").read_text())
            for p in sorted(cap.glob("op-*"))}


def intervals(cap, op):
    for sub in sorted((cap / f"op-{op}").glob("subtask-*")):
        for f in sorted(sub.glob("epoch-*.cap")):
            yield int(sub.name[8:]), f.name[6:-4], f


def read_cap(f):
    t = ipc.open_stream(f.read_bytes()).read_all()
    meta = {k.decode(): v.decode() for k, v in t.schema.metadata.items()}
    return meta, t.to_pylist()


def replay(cap, ck, op, sub, epoch, *extra):
    return clink("replay", "--capture-dir", cap, "--checkpoint-dir", ck, "--op", op,
                 "--subtask", sub, "--epoch", epoch, *extra)


def replay_all(cap, ck):
    """Every interval of every operator replayed with --verify; the rows by operator."""
    emitted, kinds = {}, set()
    for op, meta in ops(cap).items():
        kinds.add((meta["kind"], meta["parameters"].get("window", {}).get("kind")))
        rows = []
        n = 0
        for sub, epoch, f in intervals(cap, op):
            r = replay(cap, ck, op, sub, epoch, "--verify")
            assert r.returncode == 0, (op, sub, epoch, r.stderr)
            assert "two replays are byte-identical" in r.stderr, r.stderr
            if meta["kind"] != "sink":  # every operator but a sink feeds a recorded one
                assert re.search(r"the replay matches what operator \d+ recorded", r.stderr), r.stderr
            rows += [json.loads(l) for l in r.stdout.splitlines() if "__watermark" not in l]
            n += 1
        assert n, f"operator {op} recorded nothing"
        emitted[op] = rows
    return emitted, kinds


def op_of(cap, kind, window=None):
    for op, meta in ops(cap).items():
        if meta["kind"] == kind and meta["parameters"].get("window", {}).get("kind") == window:
            return op, meta
    raise AssertionError(f"no {kind} {window} operator in {sorted(ops(cap))}")


def recorded_records(cap, op):
    recs = []
    for _, _, f in intervals(cap, op):
        meta, rows = read_cap(f)
        assert meta["clink.capture.truncated"] == "false", f
        recs += [r for r in rows if r["__event"] == 0]
    return recs


@pytest.mark.parametrize("parallelism", [1, 4])
def test_every_operator_kind_replays_and_verifies_embedded(tmp_path, parallelism):
    cap, ck = run_job(tmp_path, parallelism)
    emitted, kinds = replay_all(cap, ck)
    assert {("calc", None), ("agg", "tumble"), ("agg", "hop"), ("agg", "session"),
            ("agg", "none"), ("sink", None)} <= kinds, kinds
    check_against_python(cap, emitted, parallelism)


def check_against_python(cap, emitted, parallelism):
    # the tumble aggregate's input as recorded is the generator's filtered, projected rows …
    tum, meta = op_of(cap, "agg", "tumble")
    names = [c["name"] for c in meta["input_schema"]]
    recs = recorded_records(cap, tum)
    gen = [(k, ts, v) for k, ts, v in gen_rows() if v > 6]
    kcol, tcol = names.index("k"), names.index("ts")
    vcol = meta["parameters"]["calls"][1]["arg_col"]
    got = Counter((r[names[kcol]], r[names[tcol]], r[names[vcol]]) for r in recs)
    assert got == Counter(gen), "the tumble operator's capture is not the generator's rows"
    # … and its replayed windows are those records' windows, recomputed here
    acc = {}
    for r in recs:
        k, ts, v = r[names[kcol]], r[names[tcol]], r[names[vcol]]
        key = (k, ts - ts % 1000)
        n, s = acc.get(key, (0, 0))
        acc[key] = (n + 1, s + v)
    want = Counter((k, ws, n, s) for (k, ws), (n, s) in acc.items())
    out = [c["name"] for c in meta["output_schema"]]
    have = Counter((r[out[0]], r[out[1]], r[out[3]], r[out[4]]) for r in emitted[tum])
    assert have == want, (sorted(have - want)[:5], sorted(want - have)[:5])
    assert len(want) > 40 and sum(n for _, _, n, _ in want) == len(gen)
    # the unwindowed GROUP BY updates its rows (a changelog: +U replaces a group's earlier row),
    # and the last row per group is the final count over the records it took
    grp, gmeta = op_of(cap, "agg", "none")
    assert any(r.get("__kind") == "+U" for r in emitted[grp]), emitted[grp][:5]
    gnames = [c["name"] for c in gmeta["input_schema"]]
    final = {}
    for r in emitted[grp]:
        if r.get("__kind") not in ("-U", "-D"):
            final[r[gmeta["output_schema"][0]["name"]]] = r[gmeta["output_schema"][1]["name"]]
    grecs = recorded_records(cap, grp)
    key = gnames[gmeta["parameters"]["key_cols"][0]]
    assert final == dict(Counter(r[key] for r in grecs)), final
    assert final == dict(Counter(v % 4 for _, _, v in gen_rows())), final


def test_truncated_capture_is_flagged_and_replayed(tmp_path):
    cap, ck = run_job(tmp_path, 1, "--capture-records", 50)
    tum, _ = op_of(cap, "agg", "tumble")
    flagged = 0
    for sub, epoch, f in intervals(cap, tum):
        meta, rows = read_cap(f)
        stored, seen = int(meta["clink.capture.records_stored"]), int(meta["clink.capture.records_seen"])
        assert stored == sum(r["__event"] == 0 for r in rows) and stored <= 50, (f, meta)
        if seen > 50:
            assert meta["clink.capture.truncated"] == "true" and stored == 50, meta
            head = json.loads(clink("capture-cat", f).stdout.splitlines()[0])["capture"]
            assert head["truncated"] is True and head["records_seen"] == seen, head
            r = replay(cap, ck, tum, sub, epoch, "--verify")
            assert r.returncode == 0, r.stderr
            assert f"holds 50 of the {seen} records" in r.stderr, r.stderr
            assert "the capture is truncated: not compared" in r.stderr, r.stderr
            flagged += 1
    assert flagged, "no interval of the tumble operator saw more than 50 records"


def test_no_credential_under_capture_dir(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    from kafka_topic import create_topic
    brokers = os.environ.get("CLINK_KAFKA_BROKERS")
    assert brokers, 'eval "$(scripts/services.sh env)" first'
    m = re.match(r"postgresql://([^:@]+)(?::[^@]*)?@([^:/]+):(\d+)/(\w+)", os.environ["CLINK_PG_DSN"])
    user, host, port, db = m.groups()
    topic = f"capture_redact_{os.getpid()}"
    create_topic(brokers, topic, 1)
    sasl, pg = "Sasl-Capture-Secret-8841", "PgUri-Capture-Secret-8842"
    out = tmp_path / "out"
    out.mkdir()
    sql = job_sql(out, extra_sink=f"""
CREATE TABLE k (k BIGINT, n BIGINT) WITH (connector = 'kafka', brokers = '{brokers}', topic = '{topic}',
  kafka.sasl.password = '{sasl}');
CREATE TABLE p (k BIGINT, n BIGINT) WITH (connector = 'postgres',
  dsn = 'postgresql://{user}:{pg}@{host}:{port}/{db}', table = 'capture_redact_{os.getpid()}');
INSERT INTO k SELECT k, COUNT(*) AS n FROM g GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
INSERT INTO p SELECT k, COUNT(*) AS n FROM g GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
""")
    import psycopg
    table = f"capture_redact_{os.getpid()}"
    with psycopg.connect(os.environ["CLINK_PG_DSN"], autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (k bigint, n bigint)")
    try:
        cap, ck = run_job(tmp_path, 1, sql=sql)
    finally:
        with psycopg.connect(os.environ["CLINK_PG_DSN"], autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    files = [p for p in cap.rglob("*") if p.is_file()]
    assert len(files) > 20, files
    leaks = []
    for p in files:
        data = p.read_bytes()
        texts = [data]
        if p.name == "op.json":  # the serialised graph inside is hex: look inside it too
            texts.append(bytes.fromhex(json.loads(data)["plan"]))
        for t in texts:
            for s in (sasl, pg):
                if s.encode() in t:
                    leaks.append(f"{p} holds {s}")
    assert not leaks, leaks
    sinks = [m for m in ops(cap).values() if m["kind"] == "sink"]
    assert any(m["parameters"]["options"].get("kafka.sasl.password") == "***" for m in sinks), sinks


def emitted_test_passes(tdir, tmp, env=None):
    b = tmp / ("build-" + (env or {}).get("CLINK_MUTANT", "plain"))
    e = dict(os.environ, **(env or {}))
    r = subprocess.run(["cmake", "-S", tdir, "-B", b, f"-DCLINK={CLINK}"], capture_output=True,
                       text=True, env=e)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["ctest", "--output-on-failure"], cwd=b, capture_output=True, text=True,
                       env=e, timeout=120)
    return r.returncode == 0, r.stdout + r.stderr


def test_emit_test_guards_the_incident(tmp_path):
    cap, ck = run_job(tmp_path, 1)
    tum, _ = op_of(cap, "agg", "tumble")
    # the second interval starts from checkpoint 1: the emitted test carries that state too
    sub, epoch, _ = [i for i in intervals(cap, tum) if i[1] == "2"][0]
    tdir = tmp_path / "incident"
    r = replay(cap, ck, tum, sub, epoch, "--emit-test", tdir)
    assert r.returncode == 0, r.stderr
    assert (tdir / "golden.ndjson").read_text() == r.stdout and r.stdout.count("\n") > 5
    assert list((tdir / "checkpoints").rglob("checkpoint-1.snap")), list(tdir.rglob("*"))
    ok, log = emitted_test_passes(tdir, tmp_path)
    assert ok, log
    # a bug planted in the aggregate (COUNT one too many) makes the emitted test fail
    ok, log = emitted_test_passes(tdir, tmp_path, env={"CLINK_MUTANT": "agg_count_plus_one"})
    assert not ok and "differs from golden.ndjson" in log, log


def test_replay_refuses_what_it_cannot_do(tmp_path):
    cap, ck = run_job(tmp_path, 1)
    tum, _ = op_of(cap, "agg", "tumble")
    r = clink("replay", "--capture-dir", cap, "--op", tum, "--epoch", "2")
    assert r.returncode != 0 and "starts from checkpoint 1" in r.stderr and "--checkpoint-dir" in r.stderr, r.stderr
    r = clink("replay", "--capture-dir", cap, "--epoch", "2")
    assert r.returncode == 2 and "give --op" in r.stderr, r.stderr
    r = clink("replay", "--capture-dir", cap, "--checkpoint-dir", ck, "--op", tum, "--epoch", "9999")
    assert r.returncode == 1 and "epoch-9999.cap" in r.stderr, r.stderr
    # an operator with two inputs (none of this engine's has) is refused by name
    j = cap / f"op-{tum}" / "op.json"
    j.write_text(j.read_text().replace('"inputs":1', '"inputs":2'))
    r = clink("replay", "--capture-dir", cap, "--checkpoint-dir", ck, "--op", tum, "--epoch", "2")
    assert r.returncode == 1 and "(window_agg): it has 2 inputs" in r.stderr, r.stderr
    bad = tmp_path / "bad.cap"
    f = next(intervals(cap, tum))[2]
    bad.write_bytes(f.read_bytes()[:200])
    r = clink("capture-cat", bad)
    assert r.returncode == 1 and "not a readable Arrow IPC stream" in r.stderr, r.stderr


def load_cluster_harness():
    """tests/cluster's harness (a package module: it imports the checkpoint suite's helpers)."""
    import importlib
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return importlib.import_module("tests.cluster.conftest")


@pytest.mark.parametrize("parallelism", [1, 4])
def test_every_operator_kind_replays_and_verifies_on_a_cluster(tmp_path, parallelism):
    h = load_cluster_harness()
    c = h.Cluster(tmp_path, interval_ms=150)
    cap = tmp_path / "cap"
    try:
        c.start_coordinator(extra=("--checkpoints-retained", "1000000"))
        # two workers recording into one directory (each writes its own subtasks' files)
        for wid in ("w1", "w2"):
            c.start_worker(wid, slots=2, extra=("--capture-dir", str(cap)))
        out = tmp_path / "out"
        out.mkdir()
        sql = tmp_path / "job.sql"
        sql.write_text(job_sql(out))
        jid = c.submit(sql, parallelism=parallelism)
        job = c.wait_status(jid, ("FINISHED", "FAILED"), timeout=180)
        assert job["status"] == "FINISHED", job
    finally:
        c.stop()
    cks = {p.parent for p in c.ckpt.rglob("v1")} if c.ckpt.exists() else set()
    assert len(cks) == 1, cks
    emitted, kinds = replay_all(cap, cks.pop())
    assert {("calc", None), ("agg", "tumble"), ("agg", "hop"), ("agg", "session"),
            ("agg", "none"), ("sink", None)} <= kinds, kinds
    subtasks = {p.name for p in cap.glob("op-*/subtask-*")}
    assert len(subtasks) == parallelism, subtasks
    check_against_python(cap, emitted, parallelism)


def test_replay_after_a_kill_starts_from_the_restored_checkpoint(tmp_path):
    import signal
    import time
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "job.sql").write_text(job_sql(out, rate=2500))
    args = [CLINK, "run", str(tmp_path / "job.sql"), "--parallelism", "2", "--checkpoint-dir",
            str(tmp_path / "ck"), "--checkpoint-interval-ms", "150", "--capture-dir",
            str(tmp_path / "cap")]
    env = dict(os.environ, CLINK_LOG_LEVEL="warn")
    env.pop("CLINK_MUTANT", None)
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    # SIGKILL once a few checkpoints completed (a condition, not a sleep: the markers on disk)
    deadline = time.monotonic() + 60
    while len(list((tmp_path / "ck").glob("v1/_meta/completed-*"))) < 3 and p.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.02)
    killed = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.communicate()
    assert killed, "the job ended before it could be killed"
    r = subprocess.run(args, capture_output=True, text=True, env=dict(env, CLINK_LOG_LEVEL="info"),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    cap, ck = tmp_path / "cap", tmp_path / "ck"
    froms = set()
    for op in ops(cap):
        for sub, epoch, f in intervals(cap, op):
            froms.add(int(read_cap(f)[0]["clink.capture.from_checkpoint"]))
    # the rerun's first intervals start from the checkpoint it restored, not from nothing
    restored = [int(m) for m in re.findall(r"restore point: checkpoint (\d+)", r.stderr)]
    assert restored, r.stderr
    assert restored[0] in froms, (restored, sorted(froms))
    # every interval whose starting checkpoint is still on disk replays and verifies; one whose
    # checkpoint was pruned since (the job keeps 3) is refused saying so
    replayed = pruned = 0
    for op, opmeta in ops(cap).items():
        for sub, epoch, f in intervals(cap, op):
            meta, _ = read_cap(f)
            # a sink's replay is the rows it took: it needs no state
            start = int(meta["clink.capture.from_checkpoint"]) if opmeta["kind"] != "sink" else 0
            task = int(meta["clink.capture.task"])
            r = replay(cap, ck, op, sub, epoch, "--verify")
            if start and not (ck / "v1" / str(task) / f"checkpoint-{start}.snap").exists():
                assert r.returncode == 1 and "pruned since" in r.stderr, r.stderr
                pruned += 1
                continue
            assert r.returncode == 0, (op, sub, epoch, r.stderr)
            assert "two replays are byte-identical" in r.stderr, r.stderr
            replayed += 1
    assert replayed > 10 and pruned > 0, (replayed, pruned)
