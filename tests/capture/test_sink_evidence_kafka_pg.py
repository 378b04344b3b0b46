"""The Kafka and PostgreSQL sinks' accounts in the interval evidence (docs/evidence.md), held
against an independent read of the destination.

A bounded, paced datagen job (ts = BASE + i, unique per row) writes exactly once into a Kafka
topic or a PostgreSQL table with --capture-dir, is SIGKILLed after a few completed checkpoints
and run again to its end. Then:

  Kafka: a read_committed consumer (confluent-kafka) takes every committed record with its
  partition and offset. Each evidence file's interval is wholly committed or wholly aborted:
  the committed records inside its per-partition offset ranges are exactly its `records`, or
  none (a checkpoint that never completed, or an interval its recovery wrote again, which the
  next run's account says under `recovered`). Every committed record lies in exactly one
  committed interval's ranges (or a redo), every completed checkpoint's interval is committed,
  and together they hold each generated row once. The rerun's producers fence the killed
  ones: the same transactional id with a higher producer epoch.

  PostgreSQL: psycopg reads the table. Each interval's rows are the sink's capture of that
  epoch (pyarrow reads it); they are in the table, every one, when the interval's prepared
  transaction committed, and none of them when it did not; the table holds each generated row
  once, and no transaction the evidence names as in doubt is still prepared at the end.
"""
import json
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pyarrow.ipc as ipc
import pytest

REPO = Path(__file__).resolve().parents[2]
CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build" / "src" / "cli" / "clink")
BASE, ROWS = 1772352000000, 4000


def env_or_fail(name):
    v = os.environ.get(name)
    if not v:
        pytest.fail(f"{name} is not set: run eval \"$(scripts/services.sh env)\" first")
    return v


def job_sql(sink):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{ROWS}', rows_per_second = '1000',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '6',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{BASE}', 'fields.ts.step' = '1',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '5', 'fields.v.step' = '3');
CREATE TABLE s (k BIGINT, ts BIGINT, v BIGINT) WITH ({sink}, delivery_guarantee = 'exactly_once');
INSERT INTO s SELECT k, ts, v FROM g;
"""


def completed(tmp):
    """The checkpoints whose COMPLETED marker is on disk (a kill may leave a .tmp one)."""
    return {int(m.group(1)) for f in (tmp / "ck").glob("v1/_meta/completed-*")
            if (m := re.fullmatch(r"completed-(\d+)", f.name))}


def run_killed_and_rerun(tmp, sql):
    """The job SIGKILLed after 3 completed checkpoints, then run again to its end."""
    (tmp / "job.sql").write_text(sql)
    args = [CLINK, "run", str(tmp / "job.sql"), "--checkpoint-dir", str(tmp / "ck"),
            "--checkpoint-interval-ms", "250", "--checkpoints-retained", "1000000",
            "--capture-dir", str(tmp / "cap")]
    env = dict(os.environ, CLINK_LOG_LEVEL="info")
    env.pop("CLINK_FAULT", None)
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env)
    deadline = time.monotonic() + 90
    while len(completed(tmp)) < 3 and p.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.02)
    killed = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.communicate()
    assert killed, "the job ended before it could be killed"
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "restore point: checkpoint" in r.stderr, r.stderr
    done = completed(tmp)
    files = sorted((tmp / "cap").glob("op-*/subtask-0/epoch-*.sink.json"))
    ev = {int(re.match(r"epoch-(\d+)\.sink", f.name).group(1)): json.loads(f.read_text())
          for f in files}
    assert done and done <= set(ev), (sorted(done), sorted(ev))  # evidence for every completed
    for n, doc in ev.items():
        assert doc["account"]["checkpoint"] == n, doc
    return ev, done, r.stderr


def interval_ts(tmp, op, n):
    """The ts of the rows the sink's capture recorded taking in epoch n (pyarrow)."""
    f = tmp / "cap" / f"op-{op}" / "subtask-0" / f"epoch-{n}.cap"
    t = ipc.open_stream(f.read_bytes()).read_all().to_pylist()
    assert ipc.open_stream(f.read_bytes()).schema.metadata[b"clink.capture.truncated"] == b"false"
    return [r["ts"] for r in t if r["__event"] == 0]


def test_kafka_account_agrees_with_a_read_committed_consumer(tmp_path):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    brokers = env_or_fail("CLINK_KAFKA_BROKERS")
    topic = f"ev_kafka_{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": brokers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    try:
        ev, done, log = run_killed_and_rerun(tmp_path, job_sql(
            f"connector = 'kafka', brokers = '{brokers}', topic = '{topic}', format = 'json', "
            f"key = 'k'"))
        # every committed record, with where it lies (read_committed, from the start)
        c = Consumer({"bootstrap.servers": brokers, "group.id": f"ev-{uuid.uuid4().hex}",
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in (0, 1)}
        c.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
        got, deadline = {}, time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got[(m.partition(), m.offset())] = json.loads(m.value())["ts"]
            pos = {tp.partition: tp.offset for tp in c.position([TopicPartition(topic, p) for p in (0, 1)])}
            if all(pos[p] >= ends[p] for p in (0, 1)):
                break
        c.close()
    finally:
        admin.delete_topics([topic])
    assert sorted(got.values()) == [BASE + i for i in range(ROWS)]  # each row once
    redone = {d["account"]["recovered"]["checkpoint"] for d in ev.values()
              if d["account"]["recovered"] and d["account"]["recovered"]["outcome"] == "redo"}
    covered = set()
    by_txn = {}
    for n, d in sorted(ev.items()):
        a = d["account"]
        assert a["kind"] == "kafka" and a["topic"] == topic and a["mode"] == "exactly_once", a
        assert a["records"] == d["records"] == sum(r["records"] for r in a["offsets"]), d
        # the interval's own transaction is prepared and in doubt until its checkpoint completes
        assert [x["checkpoint"] for x in a["in_doubt"]][-1:] == [n], a
        inside = {k for k in got for r in a["offsets"]
                  if k[0] == r["partition"] and r["first_offset"] <= k[1] <= r["last_offset"]}
        if n in done and n not in redone:
            assert len(inside) == a["records"], (n, len(inside), a)  # wholly committed
        else:
            assert not inside, (n, len(inside), a)  # wholly aborted
        assert not inside & covered
        covered |= inside
        p = a["producer"]
        if p["producer_id"] is not None:
            by_txn.setdefault(p["transactional_id"], []).append((d["attempt"], p["producer_id"],
                                                                 p["producer_epoch"]))
    # `recovered` is the run's (docs/evidence.md): every interval of the rerun repeats it, so
    # each run's redo counts once, however many intervals the rerun had
    redo_records = sum({d["attempt"]: d["account"]["recovered"]["records_written_again"]
                        for d in ev.values() if d["account"]["recovered"] and
                        d["account"]["recovered"]["outcome"] == "redo"}.values())
    assert len(covered) + redo_records == len(got), (len(covered), redo_records, len(got))
    # the rerun fenced the killed run: the same transactional id, the same producer id, a
    # higher epoch
    assert len({d["attempt"] for d in ev.values()}) == 2
    fenced = 0
    for txn, seen in by_txn.items():
        per_attempt = {}
        for att, pid, epoch in seen:
            per_attempt.setdefault(att, set()).add((pid, epoch))
        assert all(len(v) == 1 for v in per_attempt.values()), seen  # one producer per run
        if len(per_attempt) == 2:
            (p1, e1), (p2, e2) = sorted(next(iter(v)) for v in per_attempt.values())
            assert p1 == p2 and e1 != e2, seen
            fenced += 1
    assert fenced >= 1, by_txn


def test_postgres_account_agrees_with_the_table(tmp_path):
    import psycopg
    dsn = env_or_fail("CLINK_PG_DSN")
    table = f"ev_pg_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (k bigint, ts bigint, v bigint)")
    try:
        ev, done, log = run_killed_and_rerun(tmp_path, job_sql(
            f"connector = 'postgres', dsn = '{dsn}', table = '{table}'"))
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = [r[0] for r in conn.execute(f"SELECT ts FROM {table}").fetchall()]
            oid = conn.execute(f"SELECT '{table}'::regclass::oid::text").fetchone()[0]
            ident = conn.execute("SELECT current_setting('server_version_num'), "
                                 "current_database()").fetchone()
            prepared = {r[0] for r in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()}
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    assert sorted(rows) == [BASE + i for i in range(ROWS)]  # each row once
    in_table = set(rows)
    op = int(next((tmp_path / "cap").glob("op-*/subtask-0/epoch-*.sink.json")).parts[-3][3:])
    seen_rows = 0
    recovered = [d["account"]["recovered"] for d in ev.values() if d["account"]["recovered"]]
    assert recovered, "the rerun's account does not say what its recovery resolved"
    for n, d in sorted(ev.items()):
        a = d["account"]
        assert a["kind"] == "postgres" and a["mode"] == "exactly_once", a
        dest = a["destination"]
        assert (dest["table_oid"], dest["server_version_num"], dest["database"]) == (
            oid, ident[0], ident[1]), dest
        ts = interval_ts(tmp_path, op, n)
        assert a["rows"] == d["records"] == len(ts), (n, a["rows"], d["records"], len(ts))
        if not ts:
            assert a["transaction"] is None, a
            continue
        gid = a["transaction"]["name"]
        assert gid.startswith(a["transaction_prefix"]) and gid.endswith(f"_{n}"), a
        assert gid in {x["name"] for x in a["in_doubt"]}, a
        assert gid not in prepared  # resolved, one way or the other, by the end
        # a completed interval committed every one of its rows; one that never completed was
        # rolled back (its rows are in the table only because the rerun wrote them again, in
        # a later interval: counted there)
        if n in done:
            landed = sum(t in in_table for t in ts)
            assert landed == len(ts), (n, landed, len(ts))
            seen_rows += landed
    # the completed intervals hold every row, each once (their rows are disjoint)
    assert seen_rows == ROWS, seen_rows
