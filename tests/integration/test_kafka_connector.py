"""The Kafka connector end to end: the `clink run` binary against the real broker.

Every test creates its own topics (named after RUN_ID, see conftest.py) with confluent-kafka's
AdminClient, produces its input with confluent-kafka (a separate client and librdkafka from the
one clink links), runs `clink run -e SQL` as a subprocess with a deadline, and checks the output
against an expectation computed here in Python, never against what clink wrote before.

The binary is $CLINK_BIN, else build/src/cli/clink of this checkout.

Covered:
  - a TUMBLE aggregation over a 4-partition topic whose events are out of order within each
    partition (by less than the watermark lag) and across partitions, bounded at the topics'
    end offsets: equals the recomputation at --parallelism 1, 2 and 4, with no late records;
  - read_committed does not deliver the records of aborted transactions (and still ends when the
    partition ends in an abort marker); read_uncommitted does;
  - Kafka -> filter/project -> Kafka delivers every record, keyed, read back read_committed;
  - a malformed record at a known offset: 'fail' exits 1 naming topic, partition and offset;
    'skip' outputs the rest and reports one skipped record in the final "[job] finished" line;
  - a missing topic (source and sink; neither gets created), an unreachable broker, a topic
    deleted while it is read, and a delivery the broker refuses each fail with a clear
    message, quickly (exactly-once delivery is tests/checkpoint/test_eos_kafka.py);
  - bounded under read_committed ends at the last stable offset (an open transaction does not
    hold it back); read_uncommitted reads to the high watermark;
  - SIGKILL after two checkpoints, more input, the same command again: every window right;
  - a changelog (GROUP BY without a window) into Kafka carries "op" and ends at the counts.
"""

import json
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter, defaultdict

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .conftest import REPO, wait_until

DEADLINE_S = 90
CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build" / "src" / "cli" / "clink")


# ------------------------------------------------------------------------------ helpers

def clink_run(sql, parallelism=1, timeout=DEADLINE_S):
    if not os.access(CLINK, os.X_OK):
        pytest.fail("no clink binary at %s (build it, or set CLINK_BIN)" % CLINK, pytrace=False)
    env = dict(os.environ, CLINK_LOG_LEVEL="info")
    try:
        return subprocess.run([CLINK, "run", "--parallelism", str(parallelism), "-e", sql],
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail("clink run did not finish within %d s; stderr:\n%s" % (timeout, e.stderr))


def ok(proc):
    assert proc.returncode == 0, "clink run failed (%d):\n%s" % (proc.returncode, proc.stderr)
    return proc


def rows(proc):
    """The NDJSON rows a bare SELECT printed."""
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def finished_line(proc):
    lines = [l for l in proc.stderr.splitlines() if l.startswith("[job] finished")]
    assert lines, "no '[job] finished' line in:\n%s" % proc.stderr
    return lines[-1]


def create_topic(brokers, topic, partitions):
    admin = AdminClient({"bootstrap.servers": brokers})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                            replication_factor=1)])
    futures[topic].result(timeout=30)


def produce(brokers, topic, records, **conf):
    """records: (partition, key or None, value bytes or str) in order; waits for every delivery."""
    producer = Producer(dict({"bootstrap.servers": brokers, "linger.ms": 5,
                              "enable.idempotence": True}, **conf))
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    for partition, key, value in records:
        if isinstance(value, str):
            value = value.encode()
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition,
                                 on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(DEADLINE_S) == 0
    assert failures == [], "delivery failed: %s" % failures[:3]


def read_topic(brokers, topic, partitions, isolation="read_committed"):
    """Every (partition, key, value) of the topic from the start to the end of each partition,
    waiting for end-of-partition on all of them with a deadline."""
    consumer = Consumer({
        "bootstrap.servers": brokers,
        "group.id": "clink-test-reader",  # assign() only: never joins, never commits
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": isolation,
    })
    out, eof = [], set()
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + DEADLINE_S
        while len(eof) < partitions:
            if time.monotonic() > deadline:
                pytest.fail("no end of %s within %d s (%d records read)"
                            % (topic, DEADLINE_S, len(out)))
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(msg.partition())
                    continue
                pytest.fail("consumer error on %s: %s" % (topic, msg.error()))
            eof.discard(msg.partition())
            out.append((msg.partition(), msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


# ------------------------------------------------------------------------------ 1: windows

BASE_TS = 1772352000000
SENSORS = 8
TICKS = 600  # one reading per sensor per second of event time


def reading(sensor, tick):
    return (sensor * 37 + tick * 13) % 400 - 100


def window_expectation(window_ms):
    acc = defaultdict(list)
    for s in range(SENSORS):
        for t in range(TICKS):
            ts = BASE_TS + t * 1000
            acc[("sensor-%02d" % s, ts - ts % window_ms)].append(reading(s, t))
    return sorted(
        (sensor, ws, ws + window_ms, len(v), sum(v), min(v), max(v))
        for (sensor, ws), v in acc.items())


@pytest.fixture(scope="module")
def readings_topic(kafka_brokers, run_id):
    """8 sensors on 4 partitions (sensor s on partition s % 4). Within a partition the readings
    are out of event-time order by up to 2 s (watermark_lag_ms is 3000); across partitions the
    producer writes partition 3's readings first and partition 0's last, with each partition
    a different stretch of event time ahead of the others while it is written."""
    topic = "kc_readings_%s" % run_id
    create_topic(kafka_brokers, topic, 4)
    rng = random.Random(7)
    records = []
    for p in (3, 1, 2, 0):
        part = []
        for t in range(TICKS):
            for s in range(p, SENSORS, 4):
                part.append((t, s))
        # disorder within the partition: move each reading back by up to 2 s, never further
        keyed = sorted(part, key=lambda ts: ts[0] + rng.uniform(0, 2.0))
        for t, s in keyed:
            value = json.dumps({"sensor_id": "sensor-%02d" % s, "ts": BASE_TS + t * 1000,
                                "temp": reading(s, t)})
            records.append((p, None, value))
    produce(kafka_brokers, topic, records)
    return topic


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_tumble_over_four_partitions_matches_recomputation(kafka_brokers, readings_topic,
                                                           parallelism):
    sql = """
      CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp BIGINT) WITH (
        connector = 'kafka', format = 'json', brokers = '%s', topic = '%s',
        group_id = 'clink-test', auto_offset_reset = 'earliest', scan.bounded = 'latest',
        event_time_column = 'ts', watermark_lag_ms = '3000');
      SELECT sensor_id, window_start, window_end, COUNT(*) AS readings, SUM(temp) AS total,
             MIN(temp) AS lo, MAX(temp) AS hi
      FROM readings
      GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id
    """ % (kafka_brokers, readings_topic)
    proc = ok(clink_run(sql, parallelism))
    got = sorted((r["sensor_id"], r["window_start"], r["window_end"], r["readings"], r["total"],
                  r["lo"], r["hi"]) for r in rows(proc))
    expect = window_expectation(10000)
    assert len(got) == len(expect) == SENSORS * TICKS // 10
    missing = sorted(set(expect) - set(got))[:5]
    extra = sorted(set(got) - set(expect))[:5]
    assert got == expect, "windows differ: missing %s, unexpected %s" % (missing, extra)
    line = finished_line(proc)
    assert "%d records read" % (SENSORS * TICKS) in line, line
    assert " 0 late records dropped" in line, line


# ------------------------------------------------------------------------------ 2: transactions

def test_read_committed_skips_aborted_transactions(kafka_brokers, unique):
    topic = unique("txn")
    create_topic(kafka_brokers, topic, 2)
    producer = Producer({"bootstrap.servers": kafka_brokers,
                         "transactional.id": unique("txid"), "linger.ms": 5})
    producer.init_transactions(DEADLINE_S)
    plan = [("c1", 100, True), ("a1", 50, False), ("c2", 30, True), ("a2", 20, False)]
    for tag, n, commit in plan:  # ends in an aborted transaction: its marker is the last offset
        producer.begin_transaction()
        for i in range(n):
            producer.produce(topic, value=json.dumps({"tag": tag, "i": i}).encode(),
                             partition=i % 2)
        producer.flush(DEADLINE_S)
        if commit:
            producer.commit_transaction(DEADLINE_S)
        else:
            producer.abort_transaction(DEADLINE_S)

    def run(isolation):
        sql = """
          CREATE TABLE t (tag VARCHAR, i BIGINT) WITH (
            connector = 'kafka', brokers = '%s', topic = '%s', auto_offset_reset = 'earliest',
            scan.bounded = 'latest', isolation.level = '%s');
          SELECT tag, i FROM t
        """ % (kafka_brokers, topic, isolation)
        return Counter((r["tag"], r["i"]) for r in rows(ok(clink_run(sql))))

    committed = Counter((tag, i) for tag, n, commit in plan if commit for i in range(n))
    everything = Counter((tag, i) for tag, n, _ in plan for i in range(n))
    got = run("read_committed")
    assert got == committed, "read_committed: unexpected %s, missing %s" % (
        sorted(got - committed)[:5], sorted(committed - got)[:5])
    got = run("read_uncommitted")
    assert got == everything, "read_uncommitted: unexpected %s, missing %s" % (
        sorted(got - everything)[:5], sorted(everything - got)[:5])


# ------------------------------------------------------------------------------ 3: kafka to kafka

def test_kafka_filter_project_kafka_delivers_every_record(kafka_brokers, unique):
    src, dst = unique("in"), unique("out")
    create_topic(kafka_brokers, src, 4)
    create_topic(kafka_brokers, dst, 3)
    n = 20000
    produce(kafka_brokers, src,
            [(i % 4, None, json.dumps({"id": i, "name": "n%d" % i, "v": i * 0.5}))
             for i in range(n)])
    sql = """
      CREATE TABLE src (id BIGINT, name VARCHAR, v DOUBLE) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', auto_offset_reset = 'earliest',
        scan.bounded = 'latest');
      CREATE TABLE dst (id BIGINT, name VARCHAR, v2 DOUBLE) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', key = 'name',
        kafka.compression.type = 'lz4');
      INSERT INTO dst SELECT id, name, v * 2 AS v2 FROM src WHERE id %% 3 <> 0;
    """ % (kafka_brokers, src, kafka_brokers, dst)
    proc = ok(clink_run(sql, parallelism=2))
    expect = {i: {"id": i, "name": "n%d" % i, "v2": i * 1.0} for i in range(n) if i % 3 != 0}
    out = read_topic(kafka_brokers, dst, 3, "read_committed")
    got = Counter()
    for _partition, key, value in out:
        row = json.loads(value)
        assert key == row["name"].encode(), "key %r for row %s" % (key, row)
        assert expect.get(row["id"]) == row, "unexpected row %s" % row
        got[row["id"]] += 1
    dups = [i for i, c in got.items() if c > 1]
    missing = sorted(set(expect) - set(got))
    assert not missing, "%d records missing, e.g. %s" % (len(missing), missing[:5])
    assert not dups, "duplicates without any failure: %s" % dups[:5]
    line = finished_line(proc)
    assert "%d records read, %d written" % (n, len(expect)) in line, line


# ------------------------------------------------------------------------------ 4: bad records

@pytest.fixture(scope="module")
def malformed_topic(kafka_brokers, run_id):
    """Partition 0: ten good records; partition 1: five good, a malformed one at offset 5,
    four good."""
    topic = "kc_malformed_%s" % run_id
    create_topic(kafka_brokers, topic, 2)
    recs = [(0, None, json.dumps({"id": i})) for i in range(10)]
    recs += [(1, None, json.dumps({"id": 100 + i})) for i in range(5)]
    recs += [(1, None, '{"id": 105, "oops"')]
    recs += [(1, None, json.dumps({"id": 106 + i})) for i in range(4)]
    produce(kafka_brokers, topic, recs)
    return topic


def malformed_sql(brokers, topic, policy):
    return """
      CREATE TABLE t (id BIGINT) WITH (connector = 'kafka', brokers = '%s', topic = '%s',
        auto_offset_reset = 'earliest', scan.bounded = 'latest', on_decode_error = '%s');
      SELECT id FROM t
    """ % (brokers, topic, policy)


def test_malformed_record_fails_naming_topic_partition_offset(kafka_brokers, malformed_topic):
    proc = clink_run(malformed_sql(kafka_brokers, malformed_topic, "fail"))
    assert proc.returncode == 1, proc.stderr
    assert ("could not decode record at topic '%s' partition 1 offset 5:" % malformed_topic
            in proc.stderr), proc.stderr


def test_malformed_record_skipped_and_counted(kafka_brokers, malformed_topic):
    proc = ok(clink_run(malformed_sql(kafka_brokers, malformed_topic, "skip"), parallelism=2))
    got = sorted(r["id"] for r in rows(proc))
    assert got == list(range(10)) + [100, 101, 102, 103, 104, 106, 107, 108, 109]
    line = finished_line(proc)
    assert "19 records read" in line and " 1 undecodable records skipped" in line, line
    assert "partition 1 offset 5" in proc.stderr, proc.stderr  # the sample in the log


@pytest.fixture(scope="module")
def timeless_topic(kafka_brokers, run_id):
    """One partition: ts 1000, no ts at offset 1, ts null at offset 2, ts 1500, ts 2500."""
    topic = "kc_timeless_%s" % run_id
    create_topic(kafka_brokers, topic, 1)
    produce(kafka_brokers, topic, [(0, None, v) for v in (
        '{"id":1,"ts":1000}', '{"id":2}', '{"id":3,"ts":null}', '{"id":4,"ts":1500}',
        '{"id":5,"ts":2500}')])
    return topic


def timeless_sql(brokers, topic, policy):
    return """
      CREATE TABLE t (id BIGINT, ts BIGINT) WITH (connector = 'kafka', brokers = '%s',
        topic = '%s', auto_offset_reset = 'earliest', scan.bounded = 'latest',
        event_time_column = 'ts'%s);
      SELECT TUMBLE_START(ts, INTERVAL '1' SECOND) AS w, COUNT(*) AS n FROM t
      GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)
    """ % (brokers, topic, ", event_time_null = '%s'" % policy if policy else "")


def test_record_without_event_time_fails_by_default_naming_it(kafka_brokers, timeless_topic):
    """It used to be counted as a late record and dropped."""
    proc = clink_run(timeless_sql(kafka_brokers, timeless_topic, None))
    assert proc.returncode == 1, proc.stderr
    assert ("record at topic '%s' partition 0 offset 1 has no event time: its "
            "event_time_column 'ts' is missing or NULL" % timeless_topic in proc.stderr), \
        proc.stderr
    assert "event_time_null = 'skip'" in proc.stderr


def test_record_without_event_time_skipped_and_counted_apart_from_late(kafka_brokers,
                                                                       timeless_topic):
    proc = ok(clink_run(timeless_sql(kafka_brokers, timeless_topic, "skip")))
    assert sorted((r["w"], r["n"]) for r in rows(proc)) == [(1000, 2), (2000, 1)]
    line = finished_line(proc)
    assert " 0 late records dropped" in line, line
    assert " 2 records without event time skipped" in line, line


def test_embedded_progress_line_shows_live_counters(kafka_brokers, unique):
    """The counters used to appear only in the final '[job] finished' line: now a running
    job's '[job] progress:' line has them (every --progress-interval-ms)."""
    import threading
    topic = unique("progress")
    create_topic(kafka_brokers, topic, 1)
    produce(kafka_brokers, topic, [(0, None, '{"id":%d,"ts":%d}' % (i, 1000 * i))
                                   for i in range(1, 11)])
    proc = subprocess.Popen(
        [CLINK, "run", "--progress-interval-ms", "200", "-e", """
          CREATE TABLE t (id BIGINT, ts BIGINT) WITH (connector = 'kafka', brokers = '%s',
            topic = '%s', auto_offset_reset = 'earliest', event_time_column = 'ts',
            on_decode_error = 'skip', event_time_null = 'skip');
          SELECT TUMBLE_START(ts, INTERVAL '1' SECOND) AS w, COUNT(*) AS n FROM t
          GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)""" % (kafka_brokers, topic)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, CLINK_LOG_LEVEL="info"))
    out, err = [], []
    readers = [threading.Thread(target=lambda f, acc: acc.extend(iter(f.readline, "")),
                                args=(f, acc), daemon=True)
               for f, acc in ((proc.stdout, out), (proc.stderr, err))]
    for r in readers:
        r.start()
    try:
        # the window starting at 9000 fired: the watermark passed 10000
        wait_until("the window at 9000", lambda: any('"w":9000' in l for l in out) or
                   proc.poll() is not None, timeout=DEADLINE_S)
        assert proc.poll() is None, "".join(err)
        produce(kafka_brokers, topic, [(0, None, v) for v in (
            '{"id":101,"ts":100}', '{"oops', '{"id":201}', '{"id":102,"ts":200}',
            '{"id":202,"ts":null}', '{"id":', '{"id":103,"ts":300}', '{"id":203}',
            '{"id":204,"ts":null}', '{"id":11,"ts":11000}')])
        want = ("3 late records dropped, 2 undecodable records skipped, "
                "4 records without event time skipped")
        line = wait_until("a progress line with the counters", lambda: next(
            (l for l in list(err) if l.startswith("[job] progress:") and want in l), None),
            timeout=DEADLINE_S)
        assert proc.poll() is None, "".join(err)  # still running
        assert re.search(r"progress: 1[0-9] records read", line), line
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for r in readers:
        r.join(10)
    assert proc.returncode == 0, "".join(err)
    fin = [l for l in err if l.startswith("[job] stopped")]
    assert fin and want in fin[0], "".join(err)


# ------------------------------------------------------------------------------ 5: failures

def test_missing_topic_fails_fast(kafka_brokers, unique):
    topic = unique("nosuch")
    t0 = time.monotonic()
    proc = clink_run("""
      CREATE TABLE t (id BIGINT) WITH (connector = 'kafka', brokers = '%s', topic = '%s');
      SELECT id FROM t
    """ % (kafka_brokers, topic), timeout=30)
    took = time.monotonic() - t0
    assert proc.returncode == 1, proc.stderr
    assert "topic '%s' does not exist on Kafka brokers '%s'" % (topic, kafka_brokers) \
        in proc.stderr, proc.stderr
    assert took < 10, "took %.1f s" % took
    # ... and asking did not create it
    md = AdminClient({"bootstrap.servers": kafka_brokers}).list_topics(timeout=10)
    assert topic not in md.topics


def test_missing_sink_topic_fails_fast(kafka_brokers, unique):
    topic = unique("nosink")
    t0 = time.monotonic()
    proc = clink_run("""
      CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rows = '10');
      CREATE TABLE dst (id BIGINT) WITH (connector = 'kafka', brokers = '%s', topic = '%s');
      INSERT INTO dst SELECT id FROM g;
    """ % (kafka_brokers, topic), timeout=30)
    assert proc.returncode == 1, proc.stderr
    assert "topic '%s' does not exist" % topic in proc.stderr, proc.stderr
    assert time.monotonic() - t0 < 10
    # ... and the producer did not have the broker (auto.create.topics.enable) create it
    md = AdminClient({"bootstrap.servers": kafka_brokers}).list_topics(timeout=10)
    assert topic not in md.topics


def test_unreachable_broker_retries_with_logs_then_fails(unique):
    t0 = time.monotonic()
    proc = clink_run("""
      CREATE TABLE t (id BIGINT) WITH (connector = 'kafka', brokers = '127.0.0.1:1',
        topic = '%s', connect_timeout_ms = '3000');
      SELECT id FROM t
    """ % unique("t"), timeout=30)
    took = time.monotonic() - t0
    assert proc.returncode == 1, proc.stderr
    assert "[kafka] warning: table 't': could not get the metadata" in proc.stderr, proc.stderr
    assert "retrying" in proc.stderr
    assert "from Kafka brokers '127.0.0.1:1' within 3000 ms" in proc.stderr, proc.stderr
    assert 2.5 < took < 20, "took %.1f s" % took


def test_topic_deleted_while_reading_fails_naming_partition(kafka_brokers, unique):
    topic = unique("gone")
    create_topic(kafka_brokers, topic, 2)
    produce(kafka_brokers, topic, [(i % 2, None, json.dumps({"id": i})) for i in range(10)])
    proc = subprocess.Popen(
        [CLINK, "run", "-e", """
          CREATE TABLE t (id BIGINT) WITH (connector = 'kafka', brokers = '%s', topic = '%s',
            auto_offset_reset = 'earliest');
          SELECT id FROM t""" % (kafka_brokers, topic)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, CLINK_LOG_LEVEL="info"))
    try:
        # the job is reading (unbounded) once all ten rows are out: then delete the topic
        lines = []
        deadline = time.monotonic() + DEADLINE_S
        while len(lines) < 10:
            assert time.monotonic() < deadline, "no 10 rows within %d s" % DEADLINE_S
            line = proc.stdout.readline()
            assert line, "clink exited early: %s" % proc.stderr.read()
            lines.append(line)
        admin = AdminClient({"bootstrap.servers": kafka_brokers})
        admin.delete_topics([topic])[topic].result(30)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    assert "of topic '%s' no longer exists on Kafka brokers '%s'" % (topic, kafka_brokers) in err, err
    assert "the topic was deleted" in err
    assert time.monotonic() - t0 < 30


def test_sink_delivery_error_fails_the_job_with_the_brokers_reason(kafka_brokers, unique):
    src, dst = unique("in"), unique("small")
    create_topic(kafka_brokers, src, 1)
    admin = AdminClient({"bootstrap.servers": kafka_brokers})
    admin.create_topics([NewTopic(dst, num_partitions=1, replication_factor=1,
                                  config={"max.message.bytes": "200"})])[dst].result(30)
    produce(kafka_brokers, src, [(0, None, json.dumps({"id": i, "pad": "x" * 500}))
                                 for i in range(5)])
    proc = clink_run("""
      CREATE TABLE src (id BIGINT, pad VARCHAR) WITH (connector = 'kafka', brokers = '%s',
        topic = '%s', auto_offset_reset = 'earliest', scan.bounded = 'latest');
      CREATE TABLE dst (id BIGINT, pad VARCHAR) WITH (connector = 'kafka', brokers = '%s',
        topic = '%s', kafka.message.timeout.ms = '10000');
      INSERT INTO dst SELECT id, pad FROM src;
    """ % (kafka_brokers, src, kafka_brokers, dst), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "could not deliver" in proc.stderr and "to topic '%s'" % dst in proc.stderr, proc.stderr
    assert "Message size too large" in proc.stderr, proc.stderr


def test_kill_and_rerun_resumes_from_the_checkpoint(kafka_brokers, unique, tmp_path):
    """An unbounded job is SIGKILLed after it completed two checkpoints, with the first half of
    the input read and windows open; more input arrives; the same command again restores the
    source positions and the open windows from one cut. The output topic then holds every
    window with the right values (copies allowed: the sink is at least once). A late sentinel
    per partition moves the watermark past the last real window."""
    src, dst = unique("in"), unique("out")
    create_topic(kafka_brokers, src, 4)
    create_topic(kafka_brokers, dst, 2)
    ticks = 600

    def readings(t0, t1):
        return [(p, None, json.dumps({"sensor_id": "sensor-%02d" % s, "ts": BASE_TS + t * 1000,
                                      "temp": reading(s, t)}))
                for p in range(4) for t in range(t0, t1) for s in range(p, SENSORS, 4)]

    produce(kafka_brokers, src, readings(0, ticks // 2))
    sql = """
      CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp BIGINT) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', auto_offset_reset = 'earliest',
        event_time_column = 'ts', watermark_lag_ms = '3000');
      CREATE TABLE stats (sensor_id VARCHAR, window_start BIGINT, window_end BIGINT,
        readings BIGINT, total BIGINT, lo BIGINT, hi BIGINT) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', key = 'sensor_id');
      INSERT INTO stats
      SELECT sensor_id, window_start, window_end, COUNT(*) AS readings, SUM(temp) AS total,
             MIN(temp) AS lo, MAX(temp) AS hi
      FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
    """ % (kafka_brokers, src, kafka_brokers, dst)
    ckpt = tmp_path / "ckpt"
    cmd = [CLINK, "run", "--parallelism", "2", "--checkpoint-dir", str(ckpt),
           "--checkpoint-interval-ms", "100", "-e", sql]
    env = dict(os.environ, CLINK_LOG_LEVEL="info")

    def completed():
        meta = ckpt / "v1" / "_meta"
        # completed-<id>.tmp-<pid> is a marker being written: not one yet
        return sorted(int(f.name.split("-")[1]) for f in meta.glob("completed-*")
                      if f.name.split("-")[1].isdigit()) if meta.is_dir() else []

    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        wait_until("two completed checkpoints", lambda: len(completed()) >= 2
                   or first.poll() is not None, timeout=DEADLINE_S)
        assert first.poll() is None, "the unbounded job ended: %s" % first.stderr.read()
    finally:
        first.kill()
        first.communicate()
    assert first.returncode == -9
    before = completed()[-1]

    sentinels = [(p, None, json.dumps({"sensor_id": "zz", "ts": BASE_TS + 10 ** 7, "temp": 0}))
                 for p in range(4)]
    produce(kafka_brokers, src, readings(ticks // 2, ticks) + sentinels)

    expect = {}
    for s in range(SENSORS):
        for t in range(ticks):
            ts = BASE_TS + t * 1000
            expect.setdefault(("sensor-%02d" % s, ts - ts % 10000), []).append(reading(s, t))
    got = defaultdict(set)

    def read_all():
        got.clear()
        for _p, key, value in read_topic(kafka_brokers, dst, 2):
            r = json.loads(value)
            assert key == r["sensor_id"].encode()
            got[(r["sensor_id"], r["window_start"])].add(
                (r["window_end"], r["readings"], r["total"], r["lo"], r["hi"]))
        return set(expect) <= set(got)

    second = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env)
    try:
        wait_until("every window in the output topic", read_all, timeout=DEADLINE_S,
                   interval=0.5)
        second.send_signal(signal.SIGINT)
        _, err = second.communicate(timeout=DEADLINE_S)
    finally:
        if second.poll() is None:
            second.kill()
            second.communicate()
    assert second.returncode == 0, err
    assert "restore point: checkpoint %d" % before in err, err
    assert set(got) == set(expect), "unexpected windows %s" % sorted(set(got) - set(expect))[:5]
    for k, v in expect.items():
        want = (k[1] + 10000, len(v), sum(v), min(v), max(v))
        assert got[k] == {want}, "window %s: got %s, expected %s" % (k, got[k], want)


def test_changelog_into_kafka_carries_op_and_ends_at_the_counts(kafka_brokers, unique):
    src, dst = unique("in"), unique("counts")
    create_topic(kafka_brokers, src, 2)
    create_topic(kafka_brokers, dst, 2)
    n = 3000
    produce(kafka_brokers, src, [(i % 2, None, json.dumps({"id": i, "name": "k%d" % (i % 7)}))
                                 for i in range(n)])
    ok(clink_run("""
      CREATE TABLE src (id BIGINT, name VARCHAR) WITH (connector = 'kafka', brokers = '%s',
        topic = '%s', auto_offset_reset = 'earliest', scan.bounded = 'latest');
      CREATE TABLE dst (name VARCHAR, n BIGINT) WITH (connector = 'kafka', brokers = '%s',
        topic = '%s', key = 'name');
      INSERT INTO dst SELECT name, COUNT(*) AS n FROM src GROUP BY name;
    """ % (kafka_brokers, src, kafka_brokers, dst), parallelism=2))
    last = {}
    for _p, key, value in read_topic(kafka_brokers, dst, 2):  # a key's messages share a partition
        r = json.loads(value)
        assert key == r["name"].encode()
        assert r["op"] in ("insert", "update_before", "update", "delete"), r
        if r["op"] in ("insert", "update"):
            last[r["name"]] = r["n"]
    assert last == dict(Counter("k%d" % (i % 7) for i in range(n)))


def test_bounded_read_committed_ends_at_the_last_stable_offset(kafka_brokers, unique):
    """scan.bounded under read_committed: a transaction still open at start-up is past the
    partition's end (its last stable offset), so the read ends at once with the committed
    records, without waiting for the transaction; read_uncommitted reads up to the high
    watermark and so sees the open transaction's records."""
    topic = unique("open")
    create_topic(kafka_brokers, topic, 1)
    produce(kafka_brokers, topic, [(0, None, json.dumps({"i": i})) for i in range(3)])
    producer = Producer({"bootstrap.servers": kafka_brokers, "transactional.id": unique("tx")})
    producer.init_transactions(DEADLINE_S)
    producer.begin_transaction()
    for i in range(3, 6):
        producer.produce(topic, value=json.dumps({"i": i}).encode(), partition=0)
    producer.flush(DEADLINE_S)  # in the log, not committed
    try:
        def run(isolation):
            proc = ok(clink_run("""
              CREATE TABLE t (i BIGINT) WITH (connector = 'kafka', brokers = '%s',
                topic = '%s', auto_offset_reset = 'earliest', scan.bounded = 'latest',
                isolation.level = '%s');
              SELECT i FROM t""" % (kafka_brokers, topic, isolation), timeout=30))
            return sorted(r["i"] for r in rows(proc))
        assert run("read_committed") == [0, 1, 2]
        assert run("read_uncommitted") == [0, 1, 2, 3, 4, 5]
    finally:
        producer.abort_transaction(DEADLINE_S)
