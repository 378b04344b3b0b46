"""Incident bundles (docs/incidents.md; src/incident/): `clink incident collect`, `verify` and
`scope` on a real Kafka -> file job with the flight recorder, SIGKILLed mid-stream and run again.

The job reads a 3-partition topic (confluent-kafka produces it: another client and librdkafka
than the one clink links), filters and projects, and writes a file; parallelism 2. The first
run is killed after some checkpoints completed, more records are produced, and the rerun (a
takeover: it restores the first run's last completed checkpoint) is stopped with SIGINT, which
drains it and takes a final checkpoint. Then:
  - the collected bundle verifies (exit 0), every check passing and every captured epoch
    replayed;
  - a byte flipped in one file, or a file added, fails it (1);
  - an epoch deleted from the capture directory before collecting makes it partial (3), never 0;
  - bad usage is 2 (test_incident_usage.py has the rest);
  - the scope of a checkpoint has, per partition, the exact [from, to) that (a) the job's own
    snapshots hold, decoded here with pyarrow from the checkpoint directory (not through
    clink), and (b) an independent read of the topic bears out: the records consumed from those
    offsets, put through the job's filter in Python, are exactly the rows the sink's captures
    of the scope hold;
  - the job had a credential (a librdkafka SASL password the plaintext listener ignores), and
    no file of the bundle holds it.
"""

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .conftest import CLINK, env, run_clink

BROKERS = os.environ.get("CLINK_KAFKA_BROKERS")
SECRET = "Incident-Secret-" + uuid.uuid4().hex[:12]
PARTITIONS = 3


def keep(i):
    """The job's filter, computed here: WHERE id % 5 <> 0."""
    return i % 5 != 0


def produce(topic, ids):
    p = Producer({"bootstrap.servers": BROKERS, "linger.ms": 5, "enable.idempotence": True})
    for i in ids:
        p.produce(topic, json.dumps({"id": i, "v": i * 7}).encode(), partition=i % PARTITIONS)
    assert p.flush(60) == 0


def completed(ckpt):
    meta = Path(ckpt) / "v1" / "_meta"
    if not meta.is_dir():
        return []
    return sorted(int(p.name[len("completed-"):]) for p in meta.iterdir()
                  if p.name.startswith("completed-") and p.name[len("completed-"):].isdigit())


def wait_for(what, pred, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        if proc.poll() is not None:
            pytest.fail("clink ended before %s: %s" % (what, proc.stderr.read()[-3000:]))
        time.sleep(0.05)
    pytest.fail("timed out waiting for %s" % what)


def sink_rows(cap_path):
    """The ids of the record rows in a capture file (pyarrow; __event 0 is a record)."""
    t = ipc.open_stream(pa.BufferReader(Path(cap_path).read_bytes())).read_all()
    ev = t.column("__event").to_pylist()
    ids = t.column("id").to_pylist()
    return [i for e, i in zip(ev, ids) if e == 0]


def uvarint(b, i):
    v, shift = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def snapshot_positions(ckpt, checkpoint, source_op=0, starts=None):
    """{partition: next offset} of the Kafka source in every task's snapshot of checkpoint,
    decoded here from the Arrow file (docs/state.md) and the position's layout (version 2:
    u8 version, uvarint topic length, topic, uvarint count, then uvarint partition, offset and
    run start + 1; the identity after). With starts (a dict), each partition's run start too."""
    out = {}
    for f in sorted((Path(ckpt) / "v1").glob("*/checkpoint-%d.snap" % checkpoint)):
        t = ipc.open_stream(pa.BufferReader(f.read_bytes())).read_all()
        for op, val in zip(t.column("op_id").to_pylist(), t.column("value").to_pylist()):
            if op != source_op:
                continue
            assert val[0] == 2, val
            n, i = uvarint(val, 1)
            i += n
            count, i = uvarint(val, i)
            for _ in range(count):
                p, i = uvarint(val, i)
                o, i = uvarint(val, i)
                s, i = uvarint(val, i)
                out[p] = o
                if starts is not None:
                    starts[p] = s - 1 if s else None
    return out


def read_range(topic, partition, start, end):
    """The ids of the records at offsets [start, end) of one partition, read independently."""
    if end <= start:
        return []
    c = Consumer({"bootstrap.servers": BROKERS, "group.id": "incident-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        c.assign([TopicPartition(topic, partition, start)])
        out, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            if m.offset() >= end:
                break
            out.append(json.loads(m.value())["id"])
            if m.offset() == end - 1:
                break
        else:
            pytest.fail("could not read %s[%d] offsets %d..%d" % (topic, partition, start, end))
        return out
    finally:
        c.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The job run, killed and rerun; then collected. Yields a dict of paths and facts."""
    if not BROKERS:
        pytest.fail("CLINK_KAFKA_BROKERS is not set: eval \"$(scripts/services.sh env)\" first",
                    pytrace=False)
    base = tmp_path_factory.mktemp("incident")
    topic = "incident_" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": BROKERS})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS,
                                  replication_factor=1)])[topic].result(timeout=30)
    ckpt, cap, trace, out = base / "ckpt", base / "cap", base / "trace", base / "out.ndjson"
    sql = """
        CREATE TABLE src (id BIGINT, v BIGINT) WITH (connector = 'kafka', format = 'json',
            brokers = '%s', topic = '%s', auto_offset_reset = 'earliest',
            kafka.sasl.password = '%s');
        CREATE TABLE snk (id BIGINT, w BIGINT) WITH (connector = 'file', path = '%s');
        INSERT INTO snk SELECT id, v * 2 AS w FROM src WHERE id %% 5 <> 0;
        """ % (BROKERS, topic, SECRET, out)
    cmd = [CLINK, "run", "-e", sql, "--parallelism", "2", "--checkpoint-dir", str(ckpt),
           "--checkpoint-interval-ms", "200", "--checkpoints-retained", "1000",
           "--capture-dir", str(cap), "--log-level", "info"]
    e = env({"CLINK_PROTOCOL_TRACE_DIR": str(trace)})
    procs = []
    try:
        produce(topic, range(0, 1500))
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, env=e)
        procs.append(first)
        wait_for("two completed checkpoints", lambda: len(completed(ckpt)) >= 2, first)
        produce(topic, range(1500, 3000))
        n = completed(ckpt)[-1]
        wait_for("two more checkpoints", lambda: len([c for c in completed(ckpt) if c > n]) >= 2,
                 first)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        run1 = completed(ckpt)
        produce(topic, range(3000, 4000))
        second = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, env=e)
        procs.append(second)
        wait_for("the rerun's checkpoints", lambda: len(completed(ckpt)) >= len(run1) + 3, second)
        second.send_signal(signal.SIGINT)
        _, err2 = second.communicate(timeout=120)
        assert second.returncode == 0, err2[-3000:]
        assert "restore point: checkpoint %d" % run1[-1] in err2, err2[-3000:]
        assert "LeakSanitizer" not in err2 and "runtime error:" not in err2, err2
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    bundle = base / "bundle"
    r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                  "--include-captures", "--include-state", "--trace-dir", trace, "--out", bundle)
    assert r.returncode == 0, r.stderr
    yield {"base": base, "topic": topic, "ckpt": ckpt, "cap": cap, "trace": trace,
           "bundle": bundle, "run1": run1, "restored": run1[-1], "sql": sql}
    admin.delete_topics([topic])


def verify(bundle):
    r = run_clink("incident", "verify", bundle, "--json", timeout=600)
    assert r.stdout, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "clink-incident-verify" and doc["version"] == 1, doc
    assert doc["exit"] == r.returncode, doc
    return r.returncode, {c["name"]: c for c in doc["checks"]}, doc


def test_collected_bundle_verifies(run):
    m = json.loads((run["bundle"] / "manifest.json").read_text())
    assert m["format"] == "clink-incident-bundle" and m["missing"] == [], m["missing"]
    assert len(m["runs"]) == 2 and m["runs"][1]["restored_from"] == run["restored"], m["runs"]
    assert (run["bundle"] / "job.json").is_file()
    assert list((run["bundle"] / "trace").glob("*.ndjson")), "no protocol trace collected"
    rc, checks, doc = verify(run["bundle"])
    assert rc == 0, json.dumps(doc, indent=1)[-4000:]
    assert set(checks) == {"bundle.manifest", "bundle.integrity", "bundle.completeness",
                           "bundle.markers", "bundle.restore", "bundle.participants",
                           "bundle.checkpoint_ids", "replay.epochs", "protocol.trace"}, checks
    assert all(c["status"] == "pass" for c in checks.values()), checks
    assert "formal/check-trace" in checks["protocol.trace"]["detail"], checks
    # every calc epoch of both runs was replayed: two subtasks, every completed checkpoint
    calc_caps = list(run["bundle"].glob("capture/op-1/subtask-*/epoch-*.cap"))
    assert len(calc_caps) >= 2 * len(m["checkpoints"]["completed"]), calc_caps
    assert "%d epoch(s) replayed" % len(calc_caps) in checks["replay.epochs"]["detail"], checks
    # the text form says the same
    t = run_clink("incident", "verify", run["bundle"], timeout=600)
    assert t.returncode == 0 and "result: pass (exit 0)" in t.stdout, t.stdout


def test_a_trace_the_model_rejects_fails_verify(run, tmp_path):
    """The protocol trace of the kill and rerun with the first run's process left out: the
    rerun restores a checkpoint no event of the trace made durable, a step the model does not
    allow, so protocol.trace fails (1) though every file is intact; with no checker to run it is
    unavailable (3), never a pass."""
    files = sorted(run["trace"].glob("*.ndjson"), key=lambda f: f.read_text().split("\n", 1)[0])
    assert len(files) >= 2, files
    # the first run's file is the one whose first event is the earliest
    first = min(files, key=lambda f: json.loads(f.read_text().split("\n", 1)[0])["ts"])
    trace = tmp_path / "trace"
    trace.mkdir()
    for f in files:
        if f != first:
            shutil.copy(f, trace / f.name)
    b = tmp_path / "bundle"
    r = run_clink("incident", "collect", "--checkpoint-dir", run["ckpt"], "--capture-dir",
                  run["cap"], "--include-captures", "--include-state", "--trace-dir", trace,
                  "--out", b)
    assert r.returncode == 0, r.stderr
    rc, checks, doc = verify(b)
    assert rc == 1 and checks["protocol.trace"]["status"] == "fail", checks["protocol.trace"]
    assert checks["bundle.integrity"]["status"] == "pass", checks
    r = run_clink("incident", "verify", b, "--json", "--trace-checker", tmp_path / "none")
    doc = json.loads(r.stdout)
    trace_check = [c for c in doc["checks"] if c["name"] == "protocol.trace"][0]
    assert r.returncode == 1 or trace_check["status"] == "unavailable", doc
    assert trace_check["status"] == "unavailable" and "no trace checker" in trace_check["detail"]
    r = run_clink("incident", "verify", run["bundle"], "--json", "--trace-checker",
                  tmp_path / "none")
    assert r.returncode == 3, r.stdout


def test_a_tampered_or_added_file_fails(run, tmp_path):
    b = tmp_path / "b"
    shutil.copytree(run["bundle"], b)
    cap = sorted(b.glob("capture/op-1/subtask-0/epoch-*.cap"))[1]
    data = bytearray(cap.read_bytes())
    data[len(data) // 2] ^= 0x01
    cap.write_bytes(bytes(data))
    rc, checks, _ = verify(b)
    assert rc == 1, checks
    assert checks["bundle.integrity"]["status"] == "fail", checks
    assert cap.relative_to(b).as_posix() in checks["bundle.integrity"]["detail"], checks
    c = tmp_path / "c"
    shutil.copytree(run["bundle"], c)
    (c / "capture" / "op-1" / "extra.txt").write_text("not collected")
    rc, checks, _ = verify(c)
    assert rc == 1 and "extra.txt" in checks["bundle.integrity"]["detail"], checks


def test_a_missing_epoch_makes_verify_partial_never_a_pass(run, tmp_path):
    cap = tmp_path / "cap"
    shutil.copytree(run["cap"], cap)
    done = completed(run["ckpt"])
    gone = cap / "op-1" / "subtask-1" / ("epoch-%d.cap" % done[2])
    assert gone.is_file()
    gone.unlink()
    b = tmp_path / "b"
    r = run_clink("incident", "collect", "--checkpoint-dir", run["ckpt"], "--capture-dir", cap,
                  "--include-captures", "--include-state", "--out", b)
    assert r.returncode == 0, r.stderr
    m = json.loads((b / "manifest.json").read_text())
    assert [x["file"] for x in m["missing"]] == [
        "capture/op-1/subtask-1/epoch-%d.cap" % done[2]], m["missing"]
    rc, checks, _ = verify(b)
    assert rc == 3, checks
    assert checks["bundle.completeness"]["status"] == "unavailable", checks
    assert not [c for c in checks.values() if c["status"] == "fail"], checks


def test_a_directory_that_is_not_a_bundle_fails_and_bad_usage_is_2(run, tmp_path):
    rc, checks, _ = verify(tmp_path)
    assert rc == 1 and checks["bundle.manifest"]["status"] == "fail", checks
    assert run_clink("incident", "verify").returncode == 2
    assert run_clink("incident", "scope", run["bundle"], "--checkpoint", "999999").returncode == 2
    assert run_clink("incident", "scope", run["bundle"], "--checkpoint", "1",
                     "--job", "7").returncode == 2
    r = run_clink("incident", "collect", "--checkpoint-dir", run["ckpt"], "--out", run["bundle"])
    assert r.returncode == 2 and "not empty" in r.stderr, r.stderr


def scope(run, n):
    r = run_clink("incident", "scope", run["bundle"], "--checkpoint", n, "--json")
    assert r.returncode in (0, 3), r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "clink-scope" and doc["version"] == 1 and doc["checkpoint"] == n
    return r.returncode, doc


def check_scope_against_the_topic(run, doc):
    """The scope's ranges equal the snapshots' positions (decoded here) and the topic's records
    in those ranges, filtered here, are the sink's captured input over the scope."""
    src, = doc["sources"]
    assert src["topic"] == run["topic"] and src["isolation_level"] == "read_committed", src
    # the log's identity: the cluster id as another client sees it; the job reads through
    # librdkafka (its kafka.sasl.password), which exposes no topic id
    cluster = AdminClient({"bootstrap.servers": BROKERS}).list_topics(timeout=10).cluster_id
    assert src["cluster_id"] == cluster and "cluster_id" not in src["absent"], src
    assert src["topic_id"] is None and "librdkafka" in src["absent"]["topic_id"], src
    run_start = {}
    end = snapshot_positions(run["ckpt"], doc["checkpoint"], starts=run_start)
    start_ck = doc["start"]["checkpoint"]
    start = snapshot_positions(run["ckpt"], start_ck) if start_ck else {}
    parts = {p["partition"]: (p["from"], p["to"]) for p in src["partitions"]}
    assert sorted(parts) == list(range(PARTITIONS)), parts
    expected = Counter()
    for p, (lo, hi) in parts.items():
        assert hi == end[p], (p, hi, end)
        if start_ck:
            assert lo == start[p], (p, lo, start)
        else:
            # a fresh run: where the source began reading, from N's own snapshot; a new
            # topic read from its earliest offset, 0
            assert lo == run_start[p] == 0 and "from" not in src["absent"], (src, run_start)
        expected.update(i for i in read_range(run["topic"], p, lo, hi) if keep(i))
    got = Counter()
    for sink in doc["sinks"]:
        for st in sink["subtasks"]:
            for capf in st["captures"]:
                got.update(sink_rows(run["bundle"] / capf))
    assert got == expected, (sorted((got - expected).elements())[:10],
                             sorted((expected - got).elements())[:10])
    assert doc["rows"] == sum(expected.values()), doc["rows"]
    return sum(expected.values())


def test_scope_ranges_are_the_checkpoints_positions_and_the_topics_records(run):
    done = completed(run["ckpt"])
    restored = run["restored"]
    # a checkpoint of the first run, its start a completed checkpoint
    rc, doc = scope(run, done[1])
    assert doc["start"]["checkpoint"] == done[0] and doc["intervals"][0]["completed"], doc
    rows = check_scope_against_the_topic(run, doc)
    assert (rc == 0) == (rows > 0) and doc["status"] == ("complete" if rows else "unavailable")
    # the rerun's first checkpoint: its interval starts at the restored checkpoint
    after = [c for c in done if c > restored]
    rc, doc = scope(run, after[0])
    assert doc["start"] == {"checkpoint": restored, "restored_from": restored}, doc
    check_scope_against_the_topic(run, doc)
    # the first checkpoint: the run's start; every scope with rows is complete
    rc, doc = scope(run, done[0])
    assert doc["start"]["checkpoint"] == 0, doc
    check_scope_against_the_topic(run, doc)
    total = 0
    for n in done:
        rc, doc = scope(run, n)
        if doc["rows"]:
            assert rc == 0 and doc["status"] == "complete", doc
        else:
            assert rc == 3 and "empty scope" in " ".join(doc["unavailable"]), doc
        total += doc["rows"]
    # the scopes of consecutive completed checkpoints tile the topic: every filtered record once
    # per run that read it (the rerun reads again what the first run read after its restore point)
    assert total >= sum(1 for i in range(4000) if keep(i)), total


def test_the_bundle_holds_no_credential(run):
    hits = [p for p in run["bundle"].rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert not hits, hits
    job = json.loads((run["bundle"] / "job.json").read_text())
    assert job["format"] == "clink-job-manifest" and job["parallelism"] == 2, job
    src = [n for n in job["nodes"] if n["kind"] == "source"][0]
    assert src["options"]["kafka.sasl.password"] == "***", src
    assert "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE" in job["guarantee"], job
