"""A cluster job reconciled (docs/incidents.md, "Reconcile"): a coordinator and two workers run a
Kafka (two partitions) → filter → ClickHouse 18.16 job at parallelism 2, one sink subtask per
worker, each worker's runner with an attempt of its own, the workers recording with
--capture-dir. The bundle is collected with --job; every completed checkpoint whose scope has
rows reconciles (0), and their scopes together hold every filtered record once. Then one row
is deleted in ClickHouse (ALTER … DELETE, waited until done): the one scope that owed it fails
(1, one row missing, that key), every other still passes (0). A --job of another id is refused
(2)."""

import importlib
import json
import os
import sys
import time
import uuid

from clickhouse_driver import Client

from .conftest import REPO, run_clink


def harness():
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return importlib.import_module("tests.cluster.conftest")


def reconcile(bundle, port, *extra):
    rep = bundle.parent / ("report-%s.json" % uuid.uuid4().hex[:6])
    r = run_clink("incident", "reconcile", bundle, "--host", "127.0.0.1", "--port", port,
                  "--user", "clink", "--key", "id", "--pause-ms", "100", "--json", rep, *extra,
                  extra_env={"CLINK_RECONCILE_PASSWORD": "clink"})
    return r, (json.loads(rep.read_text()) if rep.exists() else None)


def test_a_cluster_job_reconciles_and_a_deleted_row_fails(tmp_path):
    port = os.environ.get("CLINK_CLICKHOUSE_PORT")
    assert port and os.environ.get("CLINK_KAFKA_BROKERS"), \
        "eval \"$(scripts/services.sh env)\" first"
    ch = Client(host="127.0.0.1", port=int(port), user="default", password="",
                connect_timeout=5, send_receive_timeout=60)
    name = "rcn_cluster_%s" % uuid.uuid4().hex[:10]
    ch.execute("CREATE TABLE default.%s (id Int64, s String) ENGINE = MergeTree ORDER BY id" % name)
    sys.path.insert(0, str(REPO / "scripts"))
    from kafka_topic import create_topic
    create_topic(os.environ["CLINK_KAFKA_BROKERS"], name, 2)
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
    for i in range(60):
        p.produce(name, json.dumps({"id": i, "s": "v%d" % i}).encode(), partition=i % 2)
    assert p.flush(30) == 0
    h = harness()
    c = h.Cluster(tmp_path, interval_ms=300)
    cap = tmp_path / "cap"
    sql = tmp_path / "job.sql"
    sql.write_text("""
        CREATE TABLE src (id BIGINT, s VARCHAR) WITH (connector = 'kafka', format = 'json',
          brokers = '%s', topic = '%s', auto_offset_reset = 'earliest', 'scan.bounded' = 'latest');
        CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse', host = '127.0.0.1',
          port = '%s', database = 'default', table = '%s', user = 'clink', password = 'clink');
        INSERT INTO snk SELECT id, s FROM src WHERE id %% 7 <> 3;
        """ % (os.environ["CLINK_KAFKA_BROKERS"], name, port, name))
    try:
        try:
            c.start_coordinator(extra=("--checkpoints-retained", "1000"))
            for wid in ("w1", "w2"):
                c.start_worker(wid, slots=1, extra=("--capture-dir", str(cap)))
            jid = c.submit(sql, parallelism=2)
            job = c.wait_status(jid, ("FINISHED", "FAILED"), timeout=180)
            assert job["status"] == "FINISHED", job
        finally:
            c.stop()
        b = tmp_path / "bundle"
        r = run_clink("incident", "collect", "--checkpoint-dir", c.ckpt, "--job", jid,
                      "--capture-dir", cap, "--include-captures", "--include-state", "--out", b)
        assert r.returncode == 0, r.stderr
        m = json.loads((b / "manifest.json").read_text())
        assert m["job"]["shape"] == "cluster" and m["job"]["id"] == jid, m["job"]
        attempts = {iv["attempt"] for iv in m["intervals"]}
        assert len(attempts) == 2, "one runner attempt per worker: %s" % attempts
        want = sum(1 for i in range(60) if i % 7 != 3)
        scopes = []
        for n in m["checkpoints"]["completed"]:
            s = run_clink("incident", "scope", b, "--checkpoint", n, "--job", jid, "--json")
            doc = json.loads(s.stdout)
            if doc["rows"]:
                assert s.returncode == 0 and doc["status"] == "complete", doc
                assert doc["attempt"] is None and len(doc["sinks"][0]["subtasks"]) == 2, doc
                scopes.append((n, doc["rows"]))
        assert sum(rows for _, rows in scopes) == want, scopes
        for n, rows in scopes:
            r, rep = reconcile(b, port, "--checkpoint", str(n), "--job", str(jid))
            assert r.returncode == 0, r.stderr
            assert rep["verdict"] == "pass" and rep["rows"]["matched"] == rows, rep["rows"]
        r, rep = reconcile(b, port, "--checkpoint", str(scopes[0][0]), "--job", str(jid + 1))
        assert r.returncode == 2 and "--job %d" % (jid + 1) in r.stderr, r.stderr
        # one row deleted in the destination
        ch.execute("ALTER TABLE default.%s DELETE WHERE id = 12" % name)
        deadline = time.monotonic() + 60
        while ch.execute("SELECT count() FROM system.mutations WHERE database = 'default' AND "
                         "table = '%s' AND is_done = 0" % name)[0][0]:
            assert time.monotonic() < deadline, "the mutation did not finish"
            time.sleep(0.2)
        failed = []
        for n, rows in scopes:
            r, rep = reconcile(b, port, "--checkpoint", str(n), "--job", str(jid))
            assert r.returncode in (0, 1), r.stderr
            if r.returncode == 1:
                miss = rep["rows"]["missing"]
                assert miss["count"] == 1 and rep["rows"]["matched"] == rows - 1, rep["rows"]
                assert [f["key"] for f in miss["first"]] in ([[12]], [{"id": 12}], [12]), miss
                assert rep["rows"]["changed"]["count"] == rep["rows"]["unexpected"]["count"] == 0
                failed.append(n)
        assert len(failed) == 1, (failed, scopes)
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)
        ch.disconnect()
