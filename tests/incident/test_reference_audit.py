"""The independent reference audit (docs/incidents.md, "The independent reference"): a
Kafka → filter/project → ClickHouse job with capture, a reference computed by
python/clink-reference and this test's own transformation (never clink's), and
`clink incident reconcile --reference`, on both ClickHouse lines:
  (a) a faithful job and a reference that agrees: every check passes (0), the three
      relationships reported apart, what the artifact only records reported as such;
  (b) a job whose filter is not the one the reference implements: the delivery passes
      (reconcile.rows: the table holds what the job wrote) and the transformation fails (1);
  (c) a row deleted in the table: the delivery and the reference against the table fail (1);
  (d) an artifact for another checkpoint, an unfinished one, another schema: refused (2),
      naming what differs;
  (e) an incomplete reference (the topic's history deleted before the reference read it):
      held unavailable (3), never compared.
"""

import json
import os
import sys
import uuid
from pathlib import Path

from .conftest import REPO, run_clink

sys.path.insert(0, str(REPO / "python" / "clink-reference"))
from clink_reference import Scope, read_artifact, read_range, write_artifact  # noqa: E402

COLUMNS = [{"name": "id", "type": "Int64", "key": True}, {"name": "s", "type": "String"}]
# the ClickHouse line fixtures and the table the reconcile tests use
from .test_reconcile import ch, line, make_table  # noqa: E402,F401


def produce(topic, n):
    sys.path.insert(0, str(REPO / "scripts"))
    from kafka_topic import create_topic
    from confluent_kafka import Producer
    create_topic(os.environ["CLINK_KAFKA_BROKERS"], topic, 2)
    p = Producer({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
    for i in range(n):
        p.produce(topic, json.dumps({"id": i, "s": "v%d" % i}).encode(), partition=i % 2)
    p.flush(30)


def run_job(tmp, topic, port, table, where):
    sql = """
    CREATE TABLE src (id BIGINT, s VARCHAR) WITH (connector = 'kafka', format = 'json',
      brokers = '%s', topic = '%s', auto_offset_reset = 'earliest', 'scan.bounded' = 'latest');
    CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse', host = '127.0.0.1',
      port = '%d', database = 'default', table = '%s', user = 'clink', password = 'clink');
    INSERT INTO snk SELECT id, UPPER(s) AS s FROM src WHERE %s;
    """ % (os.environ["CLINK_KAFKA_BROKERS"], topic, port, table, where)
    ckpt, cap, bundle = tmp / "ck", tmp / "cap", tmp / "bundle"
    r = run_clink("run", "-e", sql, "--checkpoint-dir", ckpt, "--capture-dir", cap,
                  "--checkpoint-interval-ms", "200", "--checkpoints-retained", "1000", timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                  "--include-captures", "--include-state", "--out", bundle)
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((bundle / "manifest.json").read_text())
    return bundle, max(manifest["checkpoints"]["completed"])


def scope_of(bundle, n):
    r = run_clink("incident", "scope", bundle, "--checkpoint", n, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def reference(scope_text, path, keep):
    """This test's own implementation of the job's transformation, over the exact range."""
    scope = Scope(scope_text)
    got = read_range(scope, os.environ["CLINK_KAFKA_BROKERS"], deadline_s=60)
    rows = []
    for rec in got.records:
        e = json.loads(rec.value)
        if keep(e["id"]):
            rows.append((e["id"], e["s"].upper()))
    write_artifact(path, scope, COLUMNS, rows, read=got,
                   reference={"implementation": "tests/incident/test_reference_audit.py", "version": "1"})
    return got


def reconcile(bundle, port, n, artifact):
    rep = Path(str(bundle) + "-%s.json" % uuid.uuid4().hex[:6])
    r = run_clink("incident", "reconcile", bundle, "--host", "127.0.0.1", "--port", port,
                  "--user", "clink", "--pause-ms", "50", "--key", "id", "--checkpoint", n,
                  "--reference", artifact, "--json", rep,
                  extra_env={"CLINK_RECONCILE_PASSWORD": "clink"})
    doc = json.loads(rep.read_text()) if rep.exists() else None
    return r, doc


def check(doc, name):
    return [c for c in doc["checks"] if c["name"] == name][0]


def test_faithful_wrong_transformation_and_a_deleted_row(line, ch, tmp_path):
    name = "ref_audit_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    try:
        produce(name, 60)
        bundle, n = run_job(tmp_path / "a", name, line["port"], name, "id % 5 <> 2")
        st = scope_of(bundle, n)
        art = tmp_path / "ref.ndjson"
        got = reference(st, art, lambda i: i % 5 != 2)
        assert got.complete, got.reasons
        r, doc = reconcile(bundle, line["port"], n, art)
        assert r.returncode == 0, r.stdout + r.stderr
        for c in ("audit.reference", "audit.transformation", "audit.reference_vs_destination",
                  "reconcile.rows"):
            assert check(doc, c)["status"] == "pass", doc["checks"]
        assert doc["reference"]["verified"]["fingerprint"] == read_artifact(art)[0]["fingerprint"]
        assert doc["reference"]["recorded"]["reference"]["implementation"].endswith("test_reference_audit.py")
        assert "not established" in doc["reference"]["coverage"]
        # (b) the reference implements another filter than the job: the delivery is faithful,
        # the transformation is not
        bad = tmp_path / "other.ndjson"
        reference(st, bad, lambda i: i % 5 != 3)
        r, doc = reconcile(bundle, line["port"], n, bad)
        assert r.returncode == 1, r.stdout + r.stderr
        assert check(doc, "reconcile.rows")["status"] == "pass"
        t = check(doc, "audit.transformation")
        assert t["status"] == "fail", t
        tr = doc["reference"]["transformation"]
        # the reference expects every id % 5 == 2 the job dropped, and not the id % 5 == 3 it kept
        want_missing = sum(1 for rec in got.records if json.loads(rec.value)["id"] % 5 == 2)
        want_unexpected = sum(1 for rec in got.records if json.loads(rec.value)["id"] % 5 == 3)
        assert tr["missing"]["count"] == want_missing and tr["unexpected"]["count"] == want_unexpected, tr
        assert check(doc, "audit.reference_vs_destination")["status"] == "fail"
        # (c) a row deleted in the table
        victim = next(json.loads(x.value)["id"] for x in got.records if json.loads(x.value)["id"] % 5 != 2)
        ch.execute("ALTER TABLE default.%s DELETE WHERE id = %d" % (name, victim),
                   settings={"mutations_sync": 1} if line["line"] != "18.16" else {})
        import time
        deadline = time.monotonic() + 60
        while ch.execute("SELECT count() FROM default.%s WHERE id = %d" % (name, victim))[0][0]:
            assert time.monotonic() < deadline, "the mutation did not finish"
            time.sleep(0.2)  # polling the table, not synchronising
        r, doc = reconcile(bundle, line["port"], n, art)
        assert r.returncode == 1, r.stdout + r.stderr
        assert check(doc, "audit.transformation")["status"] == "pass"
        assert check(doc, "reconcile.rows")["status"] == "fail"
        rd = doc["reference"]["reference_vs_destination"]
        assert rd["missing"]["count"] == 1 and rd["missing"]["first"][0]["expected"]["id"] == victim, rd
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)


def test_refusals_and_an_incomplete_reference(line, ch, tmp_path):
    name = "ref_refuse_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    try:
        produce(name, 30)
        bundle, n = run_job(tmp_path / "a", name, line["port"], name, "id >= 0")
        st = scope_of(bundle, n)
        art = tmp_path / "ref.ndjson"
        assert reference(st, art, lambda i: True).complete
        # another checkpoint: the scope text says so, and the binding names the field
        other = json.loads(st)
        other["checkpoint"] = n + 100
        art2 = tmp_path / "other-ck.ndjson"
        write_artifact(art2, Scope(json.dumps(other)), COLUMNS, [])
        r, _ = reconcile(bundle, line["port"], n, art2)
        assert r.returncode == 2 and "the checkpoint differs" in r.stderr, r.stderr
        # unfinished
        cut = tmp_path / "cut.ndjson"
        cut.write_bytes(b"".join(art.read_bytes().splitlines(keepends=True)[:-1]))
        r, _ = reconcile(bundle, line["port"], n, cut)
        assert r.returncode == 2 and "unfinished" in r.stderr, r.stderr
        # another schema
        art3 = tmp_path / "schema.ndjson"
        write_artifact(art3, Scope(st), [COLUMNS[0], {"name": "s", "type": "Nullable(String)"}], [])
        r, _ = reconcile(bundle, line["port"], n, art3)
        assert r.returncode == 2 and "the reference's column 2 is s Nullable(String)" in r.stderr, r.stderr
        # incomplete: the topic's history deleted below the range's start
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
        tps = [TopicPartition(name, p, 3) for p in (0, 1)]
        for f in a.delete_records(tps).values():
            f.result(30)
        art4 = tmp_path / "incomplete.ndjson"
        got = reference(st, art4, lambda i: True)
        assert not got.complete and any("history expired" in x for x in got.reasons), got.reasons
        r, doc = reconcile(bundle, line["port"], n, art4)
        assert r.returncode == 3, r.stdout + r.stderr
        ref = check(doc, "audit.reference")
        assert ref["status"] == "unavailable" and "history expired" in ref["why"], ref
        assert check(doc, "audit.transformation")["status"] == "not_run"
        assert check(doc, "reconcile.rows")["status"] == "pass"
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)
