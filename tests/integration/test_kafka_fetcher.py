"""clink's own Kafka fetch client (fetcher = 'clink', the default) against the real broker,
side by side with librdkafka's consumer (fetcher = 'librdkafka') on the same topics.

Inputs are produced here with confluent-kafka (its own librdkafka); the expectation is what was
produced, computed here, and both fetchers must give exactly it.

Covered:
  - every compression codec a producer can use (none, gzip, snappy, lz4, zstd), with keys,
    tombstones, empty values and values from a few bytes to 300 KB, over 3 partitions, read in
    'raw' format so every byte of every value is compared;
  - a value larger than 'kafka.max.partition.fetch.bytes' is still read;
  - read_committed with two transactional producers interleaved on one partition (one aborts
    twice, the other commits) and plain records between them: exactly the committed and
    plain records; read_uncommitted: all of them;
  - fetcher = 'clink' with a property only librdkafka has is refused at plan time naming it;
    'auto' picks librdkafka for such a property and clink otherwise (the start-up line says
    which);
  - the broker restarted (scripts/services.sh restart kafka) under a running job: the client
    logs the lost connection, reconnects when the broker is back, and delivers every record
    written before and after exactly once.
"""

import json
import os
import random
import signal
import subprocess
import threading
from collections import Counter

import pytest
from confluent_kafka import Producer

from .conftest import wait_until
from .test_kafka_connector import CLINK, DEADLINE_S, clink_run, create_topic, ok, produce, rows

FETCHERS = ["clink", "librdkafka"]


def raw_sql(brokers, topic, fetcher, extra=""):
    return """
      CREATE TABLE t (v VARCHAR) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', format = 'raw',
        auto_offset_reset = 'earliest', scan.bounded = 'latest', fetcher = '%s'%s);
      SELECT v FROM t
    """ % (brokers, topic, fetcher, extra)


def value(i, rng):
    if i % 97 == 0:
        return None  # a tombstone
    if i % 89 == 0:
        return ""
    if i % 401 == 0:
        size = rng.randrange(50_000, 300_000)
    else:
        size = rng.randrange(1, 400)
    body = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 {}\":,") for _ in range(64))
    return ("%d:" % i + body * (size // 64 + 1))[:max(size, len(str(i)) + 1)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_gives_every_record_through_both_fetchers(kafka_brokers, unique, codec):
    topic = unique("codec_" + codec)
    create_topic(kafka_brokers, topic, 3)
    rng = random.Random(codec)
    values = [value(i, rng) for i in range(3000)]
    records = [(i % 3, ("k%d" % i).encode() if i % 2 else None, v if v is not None else None)
               for i, v in enumerate(values)]
    produce(kafka_brokers, topic, records, **{"compression.type": codec, "linger.ms": 20,
                                              "batch.size": 262144})
    expected = Counter(values)
    for fetcher in FETCHERS:
        proc = ok(clink_run(raw_sql(kafka_brokers, topic, fetcher)))
        got = Counter(r["v"] for r in rows(proc))
        assert got == expected, "%s, %s: %d rows, missing %s, unexpected %s" % (
            codec, fetcher, sum(got.values()), [str(v)[:40] for v in (expected - got)][:3],
            [str(v)[:40] for v in (got - expected)][:3])
        which = "clink's fetch client" if fetcher == "clink" else "librdkafka"
        assert "through %s" % which in proc.stderr, proc.stderr


def test_a_value_larger_than_the_partition_fetch_limit_is_read(kafka_brokers, unique):
    topic = unique("bigvalue")
    create_topic(kafka_brokers, topic, 1)
    values = ["%d-" % i + "x" * (20_000 + i) for i in range(20)]
    produce(kafka_brokers, topic, [(0, None, v) for v in values], **{"linger.ms": 0})
    proc = ok(clink_run(raw_sql(kafka_brokers, topic, "clink",
                                ", 'kafka.max.partition.fetch.bytes' = '1024'")))
    assert [r["v"] for r in rows(proc)] == values


def test_interleaved_transactions_read_committed(kafka_brokers, unique):
    topic = unique("txn_mix")
    create_topic(kafka_brokers, topic, 1)
    good = Producer({"bootstrap.servers": kafka_brokers, "transactional.id": unique("good"),
                     "linger.ms": 0})
    bad = Producer({"bootstrap.servers": kafka_brokers, "transactional.id": unique("bad"),
                    "linger.ms": 0})
    plain = Producer({"bootstrap.servers": kafka_brokers, "linger.ms": 0})
    for p in (good, bad):
        p.init_transactions(DEADLINE_S)
    committed, aborted, plain_rows = [], [], []

    def send(producer, tag, i, into):
        v = json.dumps({"tag": tag, "i": i})
        producer.produce(topic, value=v.encode(), partition=0)
        producer.flush(DEADLINE_S)  # one batch per record: the two transactions interleave
        into.append((tag, i))

    for round_ in range(2):
        good.begin_transaction()
        bad.begin_transaction()
        for i in range(30):
            send(good, "good%d" % round_, i, committed)
            send(bad, "bad%d" % round_, i, aborted)
            if i % 10 == 0:
                send(plain, "plain%d" % round_, i, plain_rows)
        bad.abort_transaction(DEADLINE_S)
        for i in range(30, 40):
            send(good, "good%d" % round_, i, committed)
        good.commit_transaction(DEADLINE_S)

    def run(isolation):
        sql = """
          CREATE TABLE t (tag VARCHAR, i BIGINT) WITH (
            connector = 'kafka', brokers = '%s', topic = '%s', auto_offset_reset = 'earliest',
            scan.bounded = 'latest', isolation.level = '%s', fetcher = 'clink');
          SELECT tag, i FROM t
        """ % (kafka_brokers, topic, isolation)
        return Counter((r["tag"], r["i"]) for r in rows(ok(clink_run(sql))))

    want = Counter(committed + plain_rows)
    got = run("read_committed")
    assert got == want, "read_committed: unexpected %s, missing %s" % (
        sorted(got - want)[:5], sorted(want - got)[:5])
    everything = Counter(committed + plain_rows + aborted)
    got = run("read_uncommitted")
    assert got == everything, "read_uncommitted: unexpected %s, missing %s" % (
        sorted(got - everything)[:5], sorted(everything - got)[:5])


def test_fetcher_choice_follows_the_properties(kafka_brokers, unique):
    topic = unique("fetcher_choice")
    create_topic(kafka_brokers, topic, 1)
    produce(kafka_brokers, topic, [(0, None, "a"), (0, None, "b")])
    proc = clink_run(raw_sql(kafka_brokers, topic, "clink", ", 'kafka.session.timeout.ms' = '9000'"))
    assert proc.returncode != 0
    assert "option 'kafka.session.timeout.ms' needs librdkafka's consumer" in proc.stderr, \
        proc.stderr
    assert "fetcher = 'librdkafka'" in proc.stderr
    proc = ok(clink_run(raw_sql(kafka_brokers, topic, "auto",
                                ", 'kafka.session.timeout.ms' = '9000'")))
    assert [r["v"] for r in rows(proc)] == ["a", "b"]
    assert "through librdkafka" in proc.stderr, proc.stderr
    proc = ok(clink_run(raw_sql(kafka_brokers, topic, "auto",
                                ", 'kafka.security.protocol' = 'plaintext'")))
    assert [r["v"] for r in rows(proc)] == ["a", "b"]
    assert "through clink's fetch client" in proc.stderr, proc.stderr


def test_broker_restart_under_a_running_job(kafka_brokers, unique, services_script):
    topic = unique("restart")
    create_topic(kafka_brokers, topic, 2)
    produce(kafka_brokers, topic, [(i % 2, None, "v%d" % i) for i in range(500)])
    sql = """
      CREATE TABLE t (v VARCHAR) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', format = 'raw',
        auto_offset_reset = 'earliest', fetcher = 'clink');
      SELECT v FROM t
    """ % (kafka_brokers, topic)
    proc = subprocess.Popen([CLINK, "run", "-e", sql], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, CLINK_LOG_LEVEL="info"))
    out, err = [], []
    readers = [threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True),
               threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)]
    for r in readers:
        r.start()
    try:
        wait_until("the first 500 records", lambda: len(out) >= 500, timeout=DEADLINE_S)
        subprocess.run([services_script, "restart", "kafka"], check=True, timeout=300)
        # then an end marker per partition: a partition's records come in order, so any record
        # delivered twice by a refetch would come before its partition's marker
        produce(kafka_brokers, topic, [(i % 2, None, "v%d" % i) for i in range(500, 1000)] +
                [(0, None, "end"), (1, None, "end")])
        wait_until("every record and both end markers",
                   lambda: sum('"end"' in line for line in out) == 2, timeout=DEADLINE_S)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for r in readers:
            r.join(timeout=10)
    got = Counter(json.loads(line)["v"] for line in out if line.strip())
    del got["end"]
    assert got == Counter("v%d" % i for i in range(1000)), \
        "missing %s, duplicated %s" % (sorted(set("v%d" % i for i in range(1000)) - set(got))[:5],
                                      [v for v, n in got.items() if n > 1][:5])
    log = "".join(err)
    assert "(retrying)" in log, log
