"""clink incident reconcile (docs/incidents.md, "Reconcile") on small Kafka → ClickHouse jobs,
against the real servers of both lines, for what the example (examples/destination-reconciliation)
does not show:
  (a) a key read differently twice: a loopback proxy between clink and the real server — the
      sink writes through it too, so it is the endpoint the evidence names — rewrites one key
      literal of the second read of the scope (same length), so the server really answers the
      second read differently: unavailable (3); the same bundle through the proxy unarmed: 0;
  (b) refusals (2): a --checkpoint the bundle does not hold as completed, a --key that is not a
      written column, a --job for an embedded run's bundle, a --host/--port that is not the
      endpoint the sink wrote to; and a missing --host is usage (2);
  (c) a job whose source is not Kafka (datagen): unsupported, by name (3), never 0;
  (d) an INSERT in doubt (the server's answer withheld, tests/integration/chproxy.py) resent into
      a table with no deduplication log: every row twice, each duplicate explained by the
      in-doubt resend (1), and the capture's truncation at the default --capture-records is
      unavailable before that (the run records 100000);
  (e) a written column altered to another type: unavailable where the table has a UUID (26.9 in
      an Atomic database: still the evidence's table), refused where the definition is the
      identity (18.16).
The binary is $CLINK_BIN, or build/src/cli/clink. Topics and tables are named after a random id.
"""

import json
import os
import socket
import threading
import uuid
from pathlib import Path

import pytest
from clickhouse_driver import Client

from .conftest import run_clink

LINES = {"18.16": "CLINK_CLICKHOUSE_PORT", "26.9": "CLINK_CLICKHOUSE26_PORT"}


class RewriteProxy:
    """Forwards every byte between clink and the server; when armed, the `nth` client packet
    holding `marker` has `old` replaced by `new` (same length, so every length prefix holds)."""

    def __init__(self, port):
        self.target = ("127.0.0.1", port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.rule = None
        self.seen = 0
        self.rewrote = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, marker, nth, old, new):
        assert len(old) == len(new)
        with self.lock:
            self.rule, self.seen = (marker, nth, old, new), 0

    def _accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            s = socket.create_connection(self.target, timeout=30)
            threading.Thread(target=self._pump, args=(c, s, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(s, c, False), daemon=True).start()

    def _pump(self, src, dst, up):
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if up:
                    with self.lock:
                        if self.rule and self.rule[0] in data:
                            self.seen += 1
                            if self.seen == self.rule[1] and self.rule[2] in data:
                                data = data.replace(self.rule[2], self.rule[3], 1)
                                self.rewrote += 1
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for x in (src, dst):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


@pytest.fixture(scope="module", params=sorted(LINES))
def line(request):
    port = os.environ.get(LINES[request.param])
    if not port or not os.environ.get("CLINK_KAFKA_BROKERS"):
        pytest.fail("the services' settings are not exported: eval \"$(scripts/services.sh env)\" "
                    "first", pytrace=False)
    return {"line": request.param, "port": int(port)}


@pytest.fixture
def ch(line):
    c = Client(host="127.0.0.1", port=line["port"], user="default", password="",
               connect_timeout=5, send_receive_timeout=60)
    yield c
    c.disconnect()


def make_table(ch, name):
    ch.execute("DROP TABLE IF EXISTS default.%s" % name)
    ch.execute("CREATE TABLE default.%s (id Int64, s String) ENGINE = MergeTree ORDER BY id" % name)


def produce(topic, n):
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from kafka_topic import create_topic
    from confluent_kafka import Producer
    create_topic(os.environ["CLINK_KAFKA_BROKERS"], topic, 1)
    p = Producer({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
    for i in range(n):
        p.produce(topic, json.dumps({"id": i, "s": "v%d" % i}).encode())
    p.flush(30)


def job(tmp, source, port, table):
    sql = """
    %s
    CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse', host = '127.0.0.1',
      port = '%d', database = 'default', table = '%s', user = 'clink', password = 'clink');
    INSERT INTO snk SELECT id, s FROM src WHERE id %% 7 <> 3;
    """ % (source, port, table)
    ckpt, cap, bundle = tmp / "ck", tmp / "cap", tmp / "bundle"
    r = run_clink("run", "-e", sql, "--checkpoint-dir", ckpt, "--capture-dir", cap,
                  "--checkpoint-interval-ms", "200", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                  "--include-captures", "--include-state", "--out", bundle)
    assert r.returncode == 0, r.stderr[-2000:]
    return bundle


def reconcile(bundle, port, *extra):
    rep = Path(str(bundle) + "-%s.json" % uuid.uuid4().hex[:6])
    r = run_clink("incident", "reconcile", bundle, "--host", "127.0.0.1", "--port", port,
                  "--user", "clink", "--pause-ms", "100", "--json", rep, *extra,
                  extra_env={"CLINK_RECONCILE_PASSWORD": "clink"})
    doc = json.loads(rep.read_text()) if rep.exists() else None
    return r, doc


def kafka_source(topic):
    return ("CREATE TABLE src (id BIGINT, s VARCHAR) WITH (connector = 'kafka', format = 'json', "
            "brokers = '%s', topic = '%s', auto_offset_reset = 'earliest', "
            "'scan.bounded' = 'latest');" % (os.environ["CLINK_KAFKA_BROKERS"], topic))


def test_a_key_read_differently_twice_is_unavailable(line, ch, tmp_path):
    name = "rcn_twice_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    proxy = RewriteProxy(line["port"])
    try:
        produce(name, 40)
        bundle = job(tmp_path, kafka_source(name), proxy.port, name)
        r, doc = reconcile(bundle, proxy.port, "--key", "id")
        assert r.returncode == 0, r.stderr
        assert doc["verdict"] == "pass" and doc["rows"]["matched"] == 34, doc
        # the second SELECT of the table's rows asks for key 9 where the first asked for key 1
        proxy.arm(b"FROM `default`.`%s` WHERE" % name.encode(), 2, b"toInt64('1')",
                  b"toInt64('9')")
        r, doc = reconcile(bundle, proxy.port, "--key", "id")
        assert proxy.rewrote == 1
        assert r.returncode == 3, r.stderr
        dest = [c for c in doc["checks"] if c["name"] == "reconcile.destination"][0]
        assert dest["status"] == "unavailable" and "read differently twice" in dest["why"], dest
        rows = [c for c in doc["checks"] if c["name"] == "reconcile.rows"][0]
        assert rows["status"] == "not_run", rows
    finally:
        proxy.close()
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)


def test_refusals(line, ch, tmp_path):
    name = "rcn_refuse_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    try:
        produce(name, 20)
        bundle = job(tmp_path, kafka_source(name), line["port"], name)
        r, doc = reconcile(bundle, line["port"], "--key", "id", "--checkpoint", "999")
        assert r.returncode == 2 and "not a completed checkpoint" in r.stderr, r.stderr
        r, doc = reconcile(bundle, line["port"], "--key", "nope")
        assert r.returncode == 2 and "is not a column the sink wrote" in r.stderr, r.stderr
        r, doc = reconcile(bundle, line["port"], "--key", "id", "--job", "4")
        assert r.returncode == 2 and "--job 4" in r.stderr, r.stderr
        r, doc = reconcile(bundle, line["port"], "--key", "id", "--database", "default",
                           "--table", "other")
        assert r.returncode == 2 and "does not fit the bundle" in r.stderr, r.stderr
        other = 21300 if line["line"] == "18.16" else int(os.environ["CLINK_CLICKHOUSE_PORT"])
        r, doc = reconcile(bundle, other, "--key", "id")
        assert r.returncode == 2 and "is not the one the evidence names" in r.stderr, r.stderr
        assert doc["verdict"] == "refused"
        r = run_clink("incident", "reconcile", bundle, "--key", "id")
        assert r.returncode == 2 and "--host" in r.stderr
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)


def test_a_source_other_than_kafka_is_unsupported(line, ch, tmp_path):
    name = "rcn_datagen_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    try:
        src = ("CREATE TABLE src (id BIGINT, s VARCHAR) WITH (connector = 'datagen', rows = '30', "
               "'fields.id.kind' = 'sequence');")
        bundle = job(tmp_path, src, line["port"], name)
        r, doc = reconcile(bundle, line["port"], "--key", "id")
        assert r.returncode == 3, r.stderr
        scope = [c for c in doc["checks"] if c["name"] == "reconcile.scope"][0]
        assert scope["status"] == "unsupported" and "Kafka source only" in scope["why"], scope
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)


def test_duplicates_of_an_in_doubt_resend_are_explained(line, ch, tmp_path):
    """The server's answer to the interval's one INSERT is withheld after the rows were
    written (tests/integration/chproxy.py, which forwards whole again afterwards): the sink
    resends it, the table keeps no deduplication log, and every row lands twice. The ledger
    says the block was in doubt and its resend may_duplicate: each duplicate is explained by it
    (still exit 1: the table does not hold the scope exactly once)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from chproxy import CutProxy
    name = "rcn_doubt_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    proxy = CutProxy("127.0.0.1", line["port"])
    try:
        rows = 20000
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
        from kafka_topic import create_topic
        from confluent_kafka import Producer
        create_topic(os.environ["CLINK_KAFKA_BROKERS"], name, 1)
        p = Producer({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
        for i in range(rows):
            p.produce(name, json.dumps({"id": i, "s": "row-%d-padding-padding-padding" % i}).encode())
            if i % 1000 == 0:
                p.poll(0)
        p.flush(60)
        proxy.cut_answer_after(200000)
        sql = """
        %s
        CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse', host = '127.0.0.1',
          port = '%d', database = 'default', table = '%s', user = 'clink', password = 'clink',
          compression = 'none', retry_backoff_ms = '50', batch_rows = '1000000',
          batch_interval_ms = '0');
        INSERT INTO snk SELECT id, s FROM src;
        """ % (kafka_source(name), proxy.port, name)
        ckpt, cap, bundle = tmp_path / "ck", tmp_path / "cap", tmp_path / "bundle"
        r = run_clink("run", "-e", sql, "--checkpoint-dir", ckpt, "--capture-dir", cap,
                      "--checkpoint-interval-ms", "60000", "--capture-records", "100000",
                      timeout=180)
        assert r.returncode == 0, r.stderr[-2000:]
        assert proxy.cuts == 1, "the proxy never cut an answer"
        r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                      "--include-captures", "--include-state", "--out", bundle)
        assert r.returncode == 0, r.stderr[-2000:]
        r, doc = reconcile(bundle, proxy.port, "--key", "id")
        assert r.returncode == 1, r.stderr
        d = doc["rows"]["duplicated"]
        assert (d["count"], d["explained_by_resend"]) == (rows, rows), d
        assert all(f["explained"].startswith("in_doubt_resend:") for f in d["first"]), d["first"]
        assert doc["rows"]["missing"]["count"] == doc["rows"]["changed"]["count"] == 0
    finally:
        proxy.close()
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)


def test_a_written_column_of_another_type(line, ch, tmp_path):
    """ALTER … MODIFY COLUMN after the run. Where the table has a UUID (26.9, an Atomic
    database) it is still the evidence's table, and the form check finds the written column of
    another type: unavailable (3). Where it has none (18.16) the definition is what identifies it,
    and the changed definition is refused (2): never a pass either way."""
    tag = uuid.uuid4().hex[:10]
    db = "rcn_adb_%s" % tag if line["line"] == "26.9" else "default"
    name = "rcn_alter_%s" % tag
    if db != "default":
        ch.execute("CREATE DATABASE %s ENGINE = Atomic" % db)
    ch.execute("CREATE TABLE %s.%s (id Int64, s String) ENGINE = MergeTree ORDER BY id" % (db, name))
    try:
        produce(name, 20)
        sql = """
        %s
        CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse', host = '127.0.0.1',
          port = '%d', database = '%s', table = '%s', user = 'clink', password = 'clink');
        INSERT INTO snk SELECT id, s FROM src;
        """ % (kafka_source(name), line["port"], db, name)
        ckpt, cap, bundle = tmp_path / "ck", tmp_path / "cap", tmp_path / "bundle"
        r = run_clink("run", "-e", sql, "--checkpoint-dir", ckpt, "--capture-dir", cap)
        assert r.returncode == 0, r.stderr[-2000:]
        r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                      "--include-captures", "--include-state", "--out", bundle)
        assert r.returncode == 0, r.stderr[-2000:]
        r, doc = reconcile(bundle, line["port"], "--key", "id")
        assert r.returncode == 0, r.stderr
        ch.execute("ALTER TABLE %s.%s MODIFY COLUMN s LowCardinality(String)" % (db, name))
        r, doc = reconcile(bundle, line["port"], "--key", "id")
        if line["line"] == "26.9":
            assert r.returncode == 3, r.stderr
            dest = [c for c in doc["checks"] if c["name"] == "reconcile.destination"][0]
            assert dest["status"] == "unavailable" and "is now LowCardinality(String)" in dest["why"]
            assert doc["destination"]["identity"]["table_by"].startswith("uuid")
        else:
            assert r.returncode == 2 and "create_table_query" in r.stderr, r.stderr
    finally:
        ch.execute("DROP TABLE IF EXISTS %s.%s" % (db, name))
        if db != "default":
            ch.execute("DROP DATABASE IF EXISTS %s" % db)


def test_a_table_whose_rows_can_change_on_their_own_is_unsupported(line, ch, tmp_path):
    """A ReplacingMergeTree (its merges rewrite rows) and, on 26.9, a MergeTree with a TTL (rows
    expire; 18.16 has no TTL): the form check reports unsupported by name (3) though every row is
    there."""
    engines = ["ReplacingMergeTree ORDER BY id"]
    if line["line"] == "26.9":
        engines.append("MergeTree ORDER BY id TTL toDateTime(1700000000 + id) + INTERVAL 100 YEAR")
    for i, engine in enumerate(engines):
        name = "rcn_form_%s" % uuid.uuid4().hex[:10]
        ch.execute("CREATE TABLE default.%s (id Int64, s String) ENGINE = %s" % (name, engine))
        try:
            produce(name, 20)
            bundle = job(tmp_path / str(i), kafka_source(name), line["port"], name)
            r, doc = reconcile(bundle, line["port"], "--key", "id")
            assert r.returncode == 3, r.stderr
            dest = [c for c in doc["checks"] if c["name"] == "reconcile.destination"][0]
            want = "ReplacingMergeTree" if "Replacing" in engine else "TTL"
            assert dest["status"] == "unsupported" and want in dest["why"], dest
        finally:
            ch.execute("DROP TABLE IF EXISTS default.%s" % name)


def test_a_key_the_job_writes_twice_is_unsupported(line, ch, tmp_path):
    """The topic holds id 5 twice: the job writes that key twice in the scope, so the key does
    not identify one row the job writes, and the comparison is unsupported (3), never decided."""
    name = "rcn_twicekey_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    try:
        produce(name, 20)
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
        p.produce(name, json.dumps({"id": 5, "s": "again"}).encode())
        p.flush(30)
        bundle = job(tmp_path, kafka_source(name), line["port"], name)
        r, doc = reconcile(bundle, line["port"], "--key", "id")
        assert r.returncode == 3, r.stderr
        scope = [c for c in doc["checks"] if c["name"] == "reconcile.scope"][0]
        assert scope["status"] == "unsupported" and "more than once" in scope["why"], scope
        # with (id, s) as the key every row is one again: a pass
        r, doc = reconcile(bundle, line["port"], "--key", "id,s")
        assert r.returncode == 0, r.stderr
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)


def test_a_scope_whose_bounding_marker_retention_pruned_is_unavailable(line, ch, tmp_path):
    """The job runs with the default --checkpoints-retained (3) while records keep arriving:
    retention deletes the completed markers (and snapshots) of older checkpoints behind an id
    floor. The scope of the oldest checkpoint the bundle still holds as completed starts at a
    checkpoint whose marker is gone, so whether that one completed, and where the scope starts,
    is not known: verify, scope and reconcile are partial (3), and reconcile claims no start
    (its report's scope.start is null) instead of walking on to the run's start. The newest
    completed checkpoint with rows, bounded by retained markers, reconciles (0)."""
    import signal
    import subprocess
    import time
    from confluent_kafka import Producer
    from .conftest import CLINK, env
    name = "rcn_pruned_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    sys_path = str(Path(__file__).resolve().parents[2] / "scripts")
    import sys
    sys.path.insert(0, sys_path)
    from kafka_topic import create_topic
    create_topic(os.environ["CLINK_KAFKA_BROKERS"], name, 1)
    p = Producer({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
    sql = """
    CREATE TABLE src (id BIGINT, s VARCHAR) WITH (connector = 'kafka', format = 'json',
      brokers = '%s', topic = '%s', auto_offset_reset = 'earliest');
    CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse', host = '127.0.0.1',
      port = '%d', database = 'default', table = '%s', user = 'clink', password = 'clink');
    INSERT INTO snk SELECT id, s FROM src;
    """ % (os.environ["CLINK_KAFKA_BROKERS"], name, line["port"], name)
    ckpt, cap, bundle = tmp_path / "ck", tmp_path / "cap", tmp_path / "bundle"
    meta = ckpt / "v1" / "_meta"

    def newest():
        ids = [f.name.split("-", 1)[1] for f in meta.glob("completed-*")] if meta.exists() else []
        ids = [int(x) for x in ids if x.isdigit()]
        return max(ids) if ids else 0

    job = subprocess.Popen([CLINK, "run", "-e", sql, "--checkpoint-dir", ckpt, "--capture-dir",
                            cap, "--checkpoint-interval-ms", "200"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=env())
    try:
        i, deadline = 0, time.monotonic() + 120
        while newest() < 10:  # records keep arriving: intervals with rows, markers pruned
            assert job.poll() is None, job.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "timed out waiting for ten checkpoints"
            p.produce(name, json.dumps({"id": i, "s": "v%d" % i}).encode())
            p.poll(0)
            i += 1
            time.sleep(0.02)
        p.flush(30)
        last = newest()
        deadline = time.monotonic() + 60
        while newest() < last + 2:  # every produced record inside a completed checkpoint
            assert time.monotonic() < deadline and job.poll() is None
            time.sleep(0.05)
    finally:
        if job.poll() is None:
            os.kill(job.pid, signal.SIGKILL)
        job.wait()
    try:
        r = run_clink("incident", "collect", "--checkpoint-dir", ckpt, "--capture-dir", cap,
                      "--include-captures", "--include-state", "--out", bundle)
        assert r.returncode == 0, r.stderr[-2000:]
        man = json.loads((bundle / "manifest.json").read_text())
        done = man["checkpoints"]["completed"]
        assert man["checkpoints"]["id_floor"] > 0 and done[0] > 3, man["checkpoints"]
        r = run_clink("incident", "verify", bundle, "--json", timeout=600)
        checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
        assert r.returncode == 3 and checks["bundle.markers"]["status"] == "unavailable", checks
        oldest = done[0]
        r = run_clink("incident", "scope", bundle, "--checkpoint", oldest, "--json")
        doc = json.loads(r.stdout)
        assert r.returncode == 3 and any("pruned" in w for w in doc["unavailable"]), doc
        r, rep = reconcile(bundle, line["port"], "--key", "id", "--checkpoint", str(oldest))
        assert r.returncode == 3, r.stderr
        checks = {c["name"]: c for c in rep["checks"]}
        assert checks["reconcile.scope"]["status"] == "unavailable", checks
        assert "retention pruned markers" in checks["reconcile.scope"]["why"], checks
        assert rep["scope"]["start"] is None and rep["scope"]["intervals"] == [oldest], rep["scope"]
        assert checks["reconcile.rows"]["status"] == "not_run", checks
        # a checkpoint bounded by retained markers, with rows: a pass
        for n in reversed(done[1:]):
            r = run_clink("incident", "scope", bundle, "--checkpoint", n, "--json")
            if json.loads(r.stdout)["rows"] > 0:
                break
        else:
            pytest.fail("no retained checkpoint's scope has rows")
        r, rep = reconcile(bundle, line["port"], "--key", "id", "--checkpoint", str(n))
        assert r.returncode == 0, (r.stderr, rep["checks"])
        assert rep["scope"]["start"] in done, rep["scope"]
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)
