"""The scope's log identity and a fresh run's `from` offsets (docs/incidents.md, "Scope"): the
Kafka source records, beside its positions in every snapshot (position version 2), the brokers'
cluster id, the topic id and where the run began reading each partition.

  (a) a fresh bounded run over a topic whose partition 0 was truncated (delete_records) below
      offset 7: the scope of its first checkpoint has `from` 7 and 0 (the first offsets the source
      read, not unknown), `to` the end offsets, and the cluster id and topic id that
      confluent-kafka's AdminClient (another client than clink's) reports;
  (b) a topic deleted and created again under the same name while the job was down: the rerun
      restores its checkpoint and reads the new topic from the old positions. The scope of its
      first checkpoint starts at the restored checkpoint, whose snapshot names the old topic id:
      `incident scope` says the snapshots name two logs (3), and `incident reconcile` refuses
      the scope (2), naming both topic ids (each what AdminClient reported for its topic).
The binary is $CLINK_BIN, or build/src/cli/clink. Topics and tables are named after a random id.
"""

import base64
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from clickhouse_driver import Client
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka import TopicCollection

from .conftest import CLINK, env, run_clink

BROKERS = os.environ.get("CLINK_KAFKA_BROKERS")


@pytest.fixture
def admin():
    if not BROKERS:
        pytest.fail("CLINK_KAFKA_BROKERS is not set: eval \"$(scripts/services.sh env)\" first",
                    pytrace=False)
    return AdminClient({"bootstrap.servers": BROKERS})


def create(admin, topic, parts):
    admin.create_topics([NewTopic(topic, num_partitions=parts,
                                  replication_factor=1)])[topic].result(timeout=30)
    deadline = time.monotonic() + 30
    while True:  # until the brokers serve it (a recreated name can lag)
        try:
            u = admin.describe_topics(TopicCollection([topic]))[topic].result(10).topic_id
            raw = (u.get_most_significant_bits().to_bytes(8, "big", signed=True) +
                   u.get_least_significant_bits().to_bytes(8, "big", signed=True))
            # as Kafka prints it (org.apache.kafka.common.Uuid: URL-safe base64, no padding)
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def produce(topic, per_partition, parts, base=0):
    p = Producer({"bootstrap.servers": BROKERS})
    for part in range(parts):
        for i in range(per_partition):
            k = base + part * per_partition + i
            p.produce(topic, json.dumps({"id": k, "s": "v%d" % k}).encode(), partition=part)
    assert p.flush(30) == 0


def completed(ckpt):
    meta = Path(ckpt) / "v1" / "_meta"
    names = [f.name.split("-", 1)[1] for f in meta.glob("completed-*")] if meta.exists() else []
    return sorted(int(x) for x in names if x.isdigit())


def wait_for(what, pred, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while not pred():
        if proc.poll() is not None:
            pytest.fail("the job ended (%d) while waiting for %s: %s"
                        % (proc.returncode, what, proc.stderr.read()[-3000:]))
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for %s" % what)
        time.sleep(0.1)


def scope(bundle, n):
    r = run_clink("incident", "scope", bundle, "--checkpoint", n, "--json")
    assert r.stdout, r.stderr
    return r.returncode, json.loads(r.stdout)


def test_a_fresh_runs_scope_has_exact_from_offsets_and_the_logs_identity(admin, tmp_path):
    topic = "incid_fresh_" + uuid.uuid4().hex[:10]
    tid = create(admin, topic, 2)
    try:
        produce(topic, 20, 2)
        # retention's effect, by hand: partition 0 now starts at offset 7
        fut = admin.delete_records([TopicPartition(topic, 0, 7)])
        for f in fut.values():
            f.result(timeout=30)
        cluster = admin.list_topics(timeout=10).cluster_id
        sql = """
        CREATE TABLE src (id BIGINT, s VARCHAR) WITH (connector = 'kafka', format = 'json',
          brokers = '%s', topic = '%s', auto_offset_reset = 'earliest', 'scan.bounded' = 'latest');
        CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'file', path = '%s');
        INSERT INTO snk SELECT id, s FROM src;
        """ % (BROKERS, topic, tmp_path / "out.ndjson")
        ckpt, cap, bundle = tmp_path / "ck", tmp_path / "cap", tmp_path / "bundle"
        r = run_clink("run", "-e", sql, "--checkpoint-dir", ckpt, "--capture-dir", cap)
        assert r.returncode == 0, r.stderr[-2000:]
        r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                      "--include-captures", "--include-state", "--out", bundle)
        assert r.returncode == 0, r.stderr[-2000:]
        first = completed(ckpt)[0]
        rc, doc = scope(bundle, first)
        assert rc == 0 and doc["status"] == "complete", doc
        assert doc["start"]["checkpoint"] == 0, doc
        src, = doc["sources"]
        assert (src["cluster_id"], src["topic_id"]) == (cluster, tid), src
        assert "cluster_id" not in src["absent"] and "topic_id" not in src["absent"], src
        parts = {p["partition"]: (p["from"], p["to"]) for p in src["partitions"]}
        assert parts == {0: (7, 20), 1: (0, 20)}, parts
        assert doc["rows"] == 33, doc
    finally:
        admin.delete_topics([topic])


def test_a_recreated_topic_is_refused_by_its_topic_id(admin, tmp_path):
    port = os.environ.get("CLINK_CLICKHOUSE_PORT")
    assert port, "eval \"$(scripts/services.sh env)\" first"
    ch = Client(host="127.0.0.1", port=int(port), user="default", password="",
                connect_timeout=5, send_receive_timeout=60)
    topic = "incid_recreate_" + uuid.uuid4().hex[:10]
    table = topic
    ch.execute("CREATE TABLE default.%s (id Int64, s String) ENGINE = MergeTree ORDER BY id" % table)
    old_tid = create(admin, topic, 1)
    procs = []
    try:
        produce(topic, 30, 1)
        sql = """
        CREATE TABLE src (id BIGINT, s VARCHAR) WITH (connector = 'kafka', format = 'json',
          brokers = '%s', topic = '%s', auto_offset_reset = 'earliest');
        CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse', host = '127.0.0.1',
          port = '%s', database = 'default', table = '%s', user = 'clink', password = 'clink');
        INSERT INTO snk SELECT id, s FROM src;
        """ % (BROKERS, topic, port, table)
        ckpt, cap, bundle = tmp_path / "ck", tmp_path / "cap", tmp_path / "bundle"
        cmd = [CLINK, "run", "-e", sql, "--checkpoint-dir", str(ckpt), "--capture-dir", str(cap),
               "--checkpoint-interval-ms", "200", "--checkpoints-retained", "1000"]
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, env=env())
        procs.append(first)
        wait_for("every row written", lambda: ch.execute(
            "SELECT count() FROM default.%s" % table)[0][0] >= 30, first)
        n = len(completed(ckpt))
        wait_for("two checkpoints after the rows", lambda: len(completed(ckpt)) >= n + 2, first)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        restored = completed(ckpt)[-1]
        # the topic deleted and created again under its name, with more records than before
        admin.delete_topics([topic])[topic].result(timeout=30)
        deadline = time.monotonic() + 60
        while topic in admin.list_topics(timeout=10).topics:
            assert time.monotonic() < deadline, "the topic was not deleted"
            time.sleep(0.2)
        new_tid = create(admin, topic, 1)
        assert new_tid != old_tid
        produce(topic, 60, 1, base=1000)
        second = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, env=env())
        procs.append(second)
        wait_for("the rerun's rows", lambda: ch.execute(
            "SELECT count() FROM default.%s WHERE id >= 1000" % table)[0][0] >= 30, second)
        wait_for("a checkpoint of the rerun", lambda: completed(ckpt)[-1] > restored + 1, second)
        os.kill(second.pid, signal.SIGKILL)
        second.wait()
        r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                      "--include-captures", "--include-state", "--out", bundle)
        assert r.returncode == 0, r.stderr[-2000:]
        n = [c for c in completed(ckpt) if c > restored][0]
        rc, doc = scope(bundle, n)
        assert doc["start"]["checkpoint"] == restored, doc
        src, = doc["sources"]
        assert rc == 3 and doc["status"] == "unavailable", doc
        conflict = src["identity_conflict"]
        assert old_tid in conflict and new_tid in conflict and "two logs" in conflict, src
        # an older scope, wholly of the first topic, names it alone
        rc, old = scope(bundle, restored)
        assert old["sources"][0]["topic_id"] == old_tid, old
        assert "identity_conflict" not in old["sources"][0], old
        rep = tmp_path / "report.json"
        r = run_clink("incident", "reconcile", bundle, "--host", "127.0.0.1", "--port", port,
                      "--user", "clink", "--key", "id", "--checkpoint", n, "--pause-ms", "100",
                      "--json", rep, extra_env={"CLINK_RECONCILE_PASSWORD": "clink"})
        assert r.returncode == 2, r.stderr
        assert "two logs" in r.stderr and old_tid in r.stderr and new_tid in r.stderr, r.stderr
        assert json.loads(rep.read_text())["verdict"] == "refused"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        admin.delete_topics([topic])
        ch.execute("DROP TABLE IF EXISTS default.%s" % table)
        ch.disconnect()
