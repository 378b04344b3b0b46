"""Sink-interval evidence (src/capture/evidence.c, docs/evidence.md): with --capture-dir, every
sink subtask writes DIR/op-<id>/subtask-<s>/epoch-<N>.sink.json after its prepare for checkpoint
N and before it acknowledges N. Against real ClickHouse servers of both tested lines (18.16 and
26.9), through the `clink` binary.

What these tests hold the runner and the ClickHouse sink's account to:
  (a) a job killed with SIGKILL and run again: every checkpoint either run completed (the
      protocol trace's completed markers, written by the coordinator side) has its evidence
      file, from the attempt that completed it; the rerun's first interval starts at the
      restored checkpoint; the ledgers of the completed intervals acknowledge exactly the rows
      the input holds, each id once, which an independent client counts in the table;
  (b) a checkpoint that failed (its snapshot write fails: the fault point
      before_snapshot_write) has no evidence, and the job goes on under a new attempt id;
  (c) an evidence file that cannot be written fails its checkpoint, which never completes;
  (d) a job that is not killed: the ledger rows of all its intervals equal the rows the table
      holds, counted by clickhouse-driver; the account names the server, the table, its
      engine and create query, what the server lacks (18.16: no server UUID, no table UUID, no
      async_insert) with a reason, and the column plan;
  (e) the sink's password appears in no file under --capture-dir (a loopback proxy swaps a
      distinctive password the job is given for the server's real one, so the job's options
      hold a password that could not occur by accident);
  (f) an INSERT whose answer is withheld is in the ledger as two attempts, in doubt, with what
      its resend could do (deduplicated, or may_duplicate and why), which the table's count
      bears out;
  (g) on a cluster, the workers write their sink subtasks' evidence for every checkpoint the
      coordinator completed;
  (h) the file sink's account cuts its output into each interval's rows.

The binary is $CLINK_BIN, or build/src/cli/clink. Tables are named after a random id.
"""

import json
import os
import re
import signal
import socket
import sys
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from clickhouse_driver import Client

REPO = Path(__file__).resolve().parents[2]
CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build" / "src" / "cli" / "clink")

LINES = {
    "18.16": ("CLINK_CLICKHOUSE_HOST", "CLINK_CLICKHOUSE_PORT"),
    "26.9": ("CLINK_CLICKHOUSE26_HOST", "CLINK_CLICKHOUSE26_PORT"),
}
USER = os.environ.get("CLINK_CLICKHOUSE_USER", "clink")
PASSWORD = os.environ.get("CLINK_CLICKHOUSE_PASSWORD", "clink")


@pytest.fixture(scope="module", params=sorted(LINES))
def line(request):
    host_var, port_var = LINES[request.param]
    if not os.environ.get(host_var) or not os.environ.get(port_var):
        pytest.fail("%s/%s are not set: eval \"$(scripts/services.sh env)\" first" %
                    (host_var, port_var), pytrace=False)
    return {"line": request.param, "host": os.environ[host_var], "port": int(os.environ[port_var])}


@pytest.fixture
def ch(line):
    client = Client(host=line["host"], port=line["port"], user="default", password="",
                    connect_timeout=5, send_receive_timeout=60)
    yield client
    client.disconnect()


@pytest.fixture
def table(ch):
    names = []

    def make(prefix):
        name = "%s_%s" % (prefix, uuid.uuid4().hex[:10])
        ch.execute("CREATE TABLE default.%s (id Int64, s String) ENGINE = MergeTree ORDER BY id"
                   % name)
        names.append(name)
        return name

    yield make
    for n in names:
        ch.execute("DROP TABLE IF EXISTS default.%s" % n)


def pipeline(host, port, name, rows, rate, password=PASSWORD):
    return """
        CREATE TABLE g (id BIGINT, s VARCHAR) WITH (connector = 'datagen', rows = '%d',
            rows_per_second = '%d', 'fields.id.kind' = 'sequence');
        CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse',
            host = '%s', port = '%d', database = 'default', table = '%s', user = '%s',
            password = '%s', batch_rows = '1000000', batch_interval_ms = '0');
        INSERT INTO snk SELECT id, s FROM g;
        """ % (rows, rate, host, port, name, USER, password)


def start(sql, ckpt, cap, trace, env=None, interval=300):
    e = dict(os.environ)
    e.pop("CLINK_FAULT", None)
    e["CLINK_PROTOCOL_TRACE_DIR"] = str(trace)
    e.update(env or {})
    return subprocess.Popen([CLINK, "run", "-e", sql, "--checkpoint-dir", str(ckpt),
                             "--checkpoint-interval-ms", str(interval), "--capture-dir", str(cap),
                             "--log-level", "info"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=e)


def finish(proc, timeout=120):
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "LeakSanitizer" not in err and "runtime error:" not in err, err
    return proc.returncode, err


def trace_events(trace, event):
    out = []
    for f in sorted(Path(trace).glob("*.ndjson")):
        for ln in f.read_text().splitlines():
            try:
                ev = json.loads(ln)
            except ValueError:  # a line a kill cut short
                continue
            if ev.get("event") == event:
                out.append(ev)
    return out


def completed(trace):
    return sorted({ev["ckpt"] for ev in trace_events(trace, "marker")
                   if ev.get("kind") == "completed"})


def evidence(cap):
    """{checkpoint: parsed epoch-N.sink.json} of the one sink subtask under cap."""
    files = [f for f in Path(cap).glob("op-*/subtask-*/epoch-*.sink.json") if f.is_file()]
    out = {}
    for f in files:
        n = int(re.match(r"epoch-(\d+)\.sink\.json$", f.name).group(1))
        doc = json.loads(f.read_text())
        assert doc["format"] == "clink-sink-evidence" and doc["version"] == 1, doc
        assert doc["checkpoint"] == n, (f, doc["checkpoint"])
        assert n not in out, "two sink subtasks? %s" % files
        out[n] = doc
    # nothing half-written is ever visible under its own name
    assert not [p for p in Path(cap).rglob("*") if p.is_file() and ".tmp" in p.name]
    return out


def ledger_rows(doc):
    rows = sum(e["rows"] for e in doc["account"]["ledger"])
    assert rows == doc["account"]["rows"], doc["account"]
    return rows


def wait_for(what, predicate, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        if proc.poll() is not None:
            pytest.fail("clink ended before %s: %s" % (what, proc.stderr.read()[-3000:]))
        time.sleep(0.05)
    pytest.fail("timed out waiting for %s" % what)


# --------------------------------------------------------------------------- (a) ----

def test_evidence_for_every_completed_checkpoint_of_a_killed_and_rerun_job(ch, line, table,
                                                                           tmp_path):
    name = table("ev_kill")
    rows = 3000
    sql = pipeline(line["host"], line["port"], name, rows, 500)
    ckpt, cap, trace = tmp_path / "ckpt", tmp_path / "cap", tmp_path / "trace"
    first = start(sql, ckpt, cap, trace)
    try:
        wait_for("three completed checkpoints", lambda: len(completed(trace)) >= 3, first)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    run1 = completed(trace)
    ev1 = evidence(cap)
    for n in run1:
        assert n in ev1, "checkpoint %d completed and has no evidence (have %s)" % (n, sorted(ev1))
    attempt1 = {ev1[n]["attempt"] for n in run1}
    assert len(attempt1) == 1, attempt1

    second = start(sql, ckpt, cap, trace)
    rc, err = finish(second)
    assert rc == 0, err[-3000:]
    restore = [ev["restore"] for ev in trace_events(trace, "restore_point")]
    assert len(restore) == 2 and restore[0] == 0 and restore[1] in run1, restore
    restored = restore[1]
    run2 = [n for n in completed(trace) if n not in run1]
    assert run2, "the rerun completed no checkpoint"
    ev = evidence(cap)
    for n in run1 + run2:
        assert n in ev, "checkpoint %d completed and has no evidence (have %s)" % (n, sorted(ev))
    attempt2 = {ev[n]["attempt"] for n in run2}
    assert len(attempt2) == 1 and attempt2 != attempt1, (attempt1, attempt2)
    first2 = ev[min(run2)]
    assert first2["restored_from"] == restored and first2["previous_barrier"] == restored, first2
    # each interval of a run starts where the run's previous one ended
    for run in (run1, run2):
        for a, b in zip(run, run[1:]):
            assert ev[b]["previous_barrier"] == a, (a, ev[b]["previous_barrier"])

    # the lineage: run 1 up to the restored checkpoint, then run 2
    lineage = [n for n in run1 if n <= restored] + run2
    acknowledged = sum(ledger_rows(ev[n]) for n in lineage)
    for n in lineage:
        assert ev[n]["records"] == ledger_rows(ev[n]), ev[n]
    (count, distinct), = ch.execute("SELECT count(), uniqExact(id) FROM default.%s" % name)
    assert acknowledged == rows == distinct, (acknowledged, rows, distinct)
    # at least once: run 1's rows after the restored checkpoint are there a second time
    assert count >= rows


# --------------------------------------------------------------------------- (b) ----

def test_no_evidence_for_a_checkpoint_that_failed(ch, line, table, tmp_path):
    name = table("ev_fail")
    rows = 1500
    sql = pipeline(line["host"], line["port"], name, rows, 500)
    ckpt, cap, trace = tmp_path / "ckpt", tmp_path / "cap", tmp_path / "trace"
    proc = start(sql, ckpt, cap, trace, env={"CLINK_FAULT": "before_snapshot_write:fail:3"})
    rc, err = finish(proc)
    assert rc == 0, err[-3000:]
    assert "[fault] before_snapshot_write hit" in err
    done = completed(trace)
    assert 3 not in done and 2 in done and len(done) >= 3, done
    ev = evidence(cap)
    assert 3 not in ev, "checkpoint 3 failed and has evidence: %s" % ev[3]
    for n in done:
        assert n in ev, "checkpoint %d completed and has no evidence" % n
    after = [n for n in done if n > 3]
    assert {ev[n]["attempt"] for n in after} != {ev[2]["attempt"]}
    assert ev[after[0]]["restored_from"] == 2 == ev[after[0]]["previous_barrier"]
    acknowledged = sum(ledger_rows(ev[n]) for n in done)
    (distinct,), = ch.execute("SELECT uniqExact(id) FROM default.%s" % name)
    assert acknowledged == rows == distinct


# --------------------------------------------------------------------------- (c) ----

def test_evidence_that_cannot_be_written_fails_its_checkpoint(ch, line, table, tmp_path):
    name = table("ev_nowrite")
    sql = pipeline(line["host"], line["port"], name, 1000, 500)
    ckpt, cap, trace = tmp_path / "ckpt", tmp_path / "cap", tmp_path / "trace"
    # a directory where checkpoint 2's evidence would go: the rename over it fails (op 2 is the
    # sink of this pipeline: datagen 0, projection 1, sink 2)
    (cap / "op-2" / "subtask-0" / "epoch-2.sink.json").mkdir(parents=True)
    rc, err = finish(start(sql, ckpt, cap, trace))
    assert rc == 0, err[-3000:]
    assert "interval evidence" in err and "epoch-2.sink.json" in err, err[-3000:]
    done = completed(trace)
    assert 2 not in done and 1 in done and len(done) >= 2, done
    ev = evidence(cap)
    assert all(n in ev for n in done)


# --------------------------------------------------------------------------- (d) ----

def test_ledger_rows_are_the_rows_the_table_holds_and_the_account_names_the_destination(
        ch, line, table, tmp_path):
    name = table("ev_ledger")
    rows = 1200
    sql = pipeline(line["host"], line["port"], name, rows, 600)
    ckpt, cap, trace = tmp_path / "ckpt", tmp_path / "cap", tmp_path / "trace"
    rc, err = finish(start(sql, ckpt, cap, trace, interval=200))
    assert rc == 0, err[-3000:]
    done = completed(trace)
    ev = evidence(cap)
    assert sorted(ev) == done, (sorted(ev), done)
    assert len(done) >= 3, done
    (count,), = ch.execute("SELECT count() FROM default.%s" % name)
    assert sum(ledger_rows(ev[n]) for n in done) == count == rows
    for n in done:
        for e in ev[n]["account"]["ledger"]:
            assert e["attempts"] == 1 and e["in_doubt"] is False and e["resend"] is None, e
        cap_sum = ev[n]["capture"]
        assert cap_sum["state"] in ("written", "empty"), cap_sum
        assert cap_sum["records_seen"] == ledger_rows(ev[n]), (cap_sum, ev[n]["account"]["rows"])
    acc = ev[done[-1]]["account"]
    dest = acc["destination"]
    (version,), = ch.execute("SELECT version()")[0:1]
    assert dest["server"]["version"] == version
    assert acc["endpoint"] == "%s:%d" % (line["host"], line["port"])
    assert (dest["database"], dest["table"], dest["engine"]) == ("default", name, "MergeTree")
    (create, full), = ch.execute("SELECT create_table_query, engine_full FROM system.tables "
                                 "WHERE database = 'default' AND name = %(n)s", {"n": name})
    assert (dest["create_table_query"], dest["engine_full"]) == (create, full)
    assert [(c["sql_column"], c["declared"], c["target"]) for c in acc["columns"]] == \
        [("id", "BIGINT", "Int64"), ("s", "VARCHAR", "String")]
    absent = dest["absent"]
    if line["line"] == "18.16":
        assert dest["server"]["uuid"] is None and "serverUUID" in absent["server_uuid"]
        assert dest["table_uuid"] is None and "uuid" in absent["table_uuid"]
        assert "async_insert" in absent and acc["dedup"]["tokens"] is False
        assert all(e["token"] is None for n in done for e in ev[n]["account"]["ledger"])
    else:
        (uuid_text,), = ch.execute("SELECT toString(serverUUID())")
        if uuid_text == "00000000-0000-0000-0000-000000000000":
            assert dest["server"]["uuid"] is None and "nil UUID" in absent["server_uuid"]
        else:
            assert dest["server"]["uuid"] == uuid_text
        assert dest["settings"]["async_insert"]["value"] in ("0", "1")
        assert acc["dedup"]["sent_with_each_insert"]["async_insert"] == "0"
        tokens = [e["token"] for n in done for e in ev[n]["account"]["ledger"]]
        assert all(t.startswith("clink:") for t in tokens) and len(set(tokens)) == len(tokens)
    for key, why in absent.items():
        assert isinstance(why, str) and why, (key, why)


# --------------------------------------------------------------------------- (e) ----

SECRET = "Evidence-Secret-%s" % uuid.uuid4().hex[:12]


class PasswordProxy:
    """Loopback proxy to a ClickHouse native port that rewrites the password of each
    connection's Hello packet (code 0: client name, three versions, database, user,
    password — strings with a varint length) from `given` to `real`, and forwards the rest
    unchanged. So a job can be given a password nothing else contains."""

    def __init__(self, host, port, given, real):
        self.target, self.given, self.real = (host, port), given.encode(), real.encode()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.rewritten = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @staticmethod
    def _varint(b, i):
        v = s = 0
        while True:
            if i >= len(b):
                raise IndexError
            c = b[i]
            i += 1
            v |= (c & 0x7F) << s
            s += 7
            if not c & 0x80:
                return v, i

    def _hello(self, b):
        """(bytes up to the password, password, the rest) or None while incomplete."""
        try:
            code, i = self._varint(b, 0)
            assert code == 0, "not a Hello"
            n, i = self._varint(b, i)  # client name
            i += n
            for _ in range(3):
                _, i = self._varint(b, i)
            for _ in range(2):  # database, user
                n, i = self._varint(b, i)
                i += n
            start = i
            n, i = self._varint(b, i)
            if i + n > len(b):
                return None
            return b[:start], b[i:i + n], b[i + n:]
        except IndexError:
            return None

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        server = socket.create_connection(self.target, timeout=30)
        buf = b""
        while True:
            data = client.recv(65536)
            if not data:
                return
            buf += data
            parts = self._hello(buf)
            if parts:
                break
        head, pw, rest = parts
        if pw == self.given:
            pw = self.real
            self.rewritten += 1
        n, enc = len(pw), b""
        while True:
            c = n & 0x7F
            n >>= 7
            enc += bytes([c | 0x80]) if n else bytes([c])
            if not n:
                break
        server.sendall(head + enc + pw + rest)

        def pump(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=pump, args=(client, server), daemon=True).start()
        threading.Thread(target=pump, args=(server, client), daemon=True).start()

    def close(self):
        self.sock.close()


def test_the_password_is_in_no_file_under_the_capture_dir(ch, line, table, tmp_path):
    name = table("ev_secret")
    proxy = PasswordProxy(line["host"], line["port"], SECRET, PASSWORD)
    try:
        sql = pipeline("127.0.0.1", proxy.port, name, 600, 600, password=SECRET)
        ckpt, cap, trace = tmp_path / "ckpt", tmp_path / "cap", tmp_path / "trace"
        rc, err = finish(start(sql, ckpt, cap, trace, interval=200))
        assert rc == 0, err[-3000:]
        assert proxy.rewritten >= 1
    finally:
        proxy.close()
    ev = evidence(cap)
    assert ev and all(ledger_rows(d) >= 0 for d in ev.values())
    (count,), = ch.execute("SELECT count() FROM default.%s" % name)
    assert count == 600
    files = [p for p in cap.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".sink.json") for p in files)
    leaked = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert not leaked, "the password is in %s" % leaked


# ----------------------------------------------------------------- the file sink ----

def test_file_sink_account_says_how_far_its_output_goes(tmp_path):
    out = tmp_path / "out.ndjson"
    sql = """
        CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rows = '800',
            rows_per_second = '800', 'fields.id.kind' = 'sequence');
        CREATE TABLE f (id BIGINT) WITH (connector = 'file', path = '%s', format = 'json');
        INSERT INTO f SELECT id FROM g;
        """ % out
    ckpt, cap, trace = tmp_path / "ckpt", tmp_path / "cap", tmp_path / "trace"
    rc, err = finish(start(sql, ckpt, cap, trace, interval=200))
    assert rc == 0, err[-3000:]
    done = completed(trace)
    ev = evidence(cap)
    assert sorted(ev) == done and len(done) >= 3, (sorted(ev), done)
    sizes = [ev[n]["account"]["synced_bytes"] for n in done]
    for n in done:
        acc = ev[n]["account"]
        assert (acc["kind"], acc["path"], acc["mode"]) == ("file", str(out), "at_least_once")
    assert sizes == sorted(sizes) and sizes[0] >= 0
    # the final checkpoint is taken after the last output: it covers the whole file
    assert sizes[-1] == out.stat().st_size
    lines = out.read_bytes().splitlines(keepends=True)
    assert len(lines) == 800
    # each interval's bytes are whole lines: as many as the interval's rows
    prev = 0
    for n in done:
        upto = ev[n]["account"]["synced_bytes"]
        assert len(out.read_bytes()[prev:upto].splitlines()) == ev[n]["records"], n
        prev = upto


# ------------------------------------------------------------ an INSERT in doubt ----

def test_ledger_records_an_insert_in_doubt_and_what_its_resend_could_do(ch, line, tmp_path):
    """The server's answer to the interval's one INSERT is withheld after the rows were
    written (tests/integration/chproxy.py): the sink resends it. The ledger entry says two
    attempts, in doubt, and what the resend could do: "deduplicated" where the table keeps a
    deduplication log under the INSERT's token (26.9, non_replicated_deduplication_window),
    "may_duplicate" with the reason on a plain MergeTree (either line), and the table's
    count agrees (one copy, or two)."""
    import sys
    sys.path.insert(0, str(REPO / "tests" / "integration"))
    from chproxy import CutProxy
    engines = {"18.16": ["plain"], "26.9": ["window", "plain"]}[line["line"]]
    for engine in engines:
        name = "ev_doubt_%s_%s" % (engine, uuid.uuid4().hex[:10])
        ddl = {"window": "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100",
               "plain": "MergeTree ORDER BY id"}[engine]
        ch.execute("CREATE TABLE default.%s (id Int64, s String) ENGINE = %s" % (name, ddl))
        try:
            proxy = CutProxy(line["host"], line["port"])
            rows = 20000
            try:
                proxy.cut_answer_after(200000)
                sql = """
                    CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rows = '%d',
                        'fields.id.kind' = 'sequence');
                    CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (connector = 'clickhouse',
                        host = '127.0.0.1', port = '%d', table = '%s', user = '%s',
                        password = '%s', compression = 'none', retry_backoff_ms = '50',
                        batch_rows = '1000000', batch_interval_ms = '0');
                    INSERT INTO snk SELECT id, CONCAT('row-', CAST(id AS VARCHAR),
                        '-padding-padding-padding') AS s FROM g;
                    """ % (rows, proxy.port, name, USER, PASSWORD)
                d = tmp_path / engine
                rc, err = finish(start(sql, d / "ckpt", d / "cap", d / "trace", interval=60000))
            finally:
                proxy.close()
            assert rc == 0, err[-3000:]
            assert proxy.cuts == 1, "%s: the proxy never cut an answer" % engine
            ev = evidence(d / "cap")
            entries = [e for n in sorted(ev) for e in ev[n]["account"]["ledger"]]
            assert len(entries) == 1, entries
            e = entries[0]
            assert (e["rows"], e["attempts"], e["in_doubt"]) == (rows, 2, True), e
            (count,), = ch.execute("SELECT count() FROM default.%s" % name)
            if engine == "window":
                assert e["resend"] == "deduplicated" and e["token"].startswith("clink:"), e
                assert count == rows
            else:
                assert e["resend"] == "may_duplicate" and "deduplication log" in e["why"], e
                assert count == 2 * rows
        finally:
            ch.execute("DROP TABLE IF EXISTS default.%s" % name)


# ------------------------------------------------------------------- on workers ----

def test_workers_write_the_evidence_of_their_sink_subtasks(ch, line, table, tmp_path):
    """A cluster job at parallelism 2 over two workers recording into one --capture-dir: every
    checkpoint the coordinator completed has the evidence of both sink subtasks, each written
    by the worker that ran it, and the ledgers acknowledge the input's rows exactly once."""
    import importlib
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    h = importlib.import_module("tests.cluster.conftest")  # a package module, like its suite
    name = table("ev_cluster")
    rows = 2000
    cap, trace = tmp_path / "cap", tmp_path / "trace"
    c = h.Cluster(tmp_path, interval_ms=200)
    c.env["CLINK_PROTOCOL_TRACE_DIR"] = str(trace)
    try:
        c.start_coordinator()
        for wid in ("w1", "w2"):
            c.start_worker(wid, slots=1, extra=("--capture-dir", str(cap)))
        sql = tmp_path / "job.sql"
        sql.write_text(pipeline(line["host"], line["port"], name, rows, 400))
        jid = c.submit(sql, parallelism=2)
        job = c.wait_status(jid, ("FINISHED", "FAILED"), timeout=180)
        assert job["status"] == "FINISHED", job
    finally:
        c.stop()
    done = completed(trace)
    assert len(done) >= 2, done
    files = [f for f in cap.glob("op-*/subtask-*/epoch-*.sink.json")]
    by = {}
    for f in files:
        doc = json.loads(f.read_text())
        by[(doc["checkpoint"], doc["subtask"])] = doc
        assert f.parent.name == "subtask-%d" % doc["subtask"]
    for n in done:
        for s in (0, 1):
            assert (n, s) in by, "checkpoint %d has no evidence of sink subtask %d" % (n, s)
    assert len({by[(done[0], s)]["attempt"] for s in (0, 1)}) == 2  # one runner per worker
    acknowledged = sum(ledger_rows(by[(n, s)]) for n in done for s in (0, 1))
    (count,), = ch.execute("SELECT count() FROM default.%s" % name)
    assert acknowledged == count == rows
