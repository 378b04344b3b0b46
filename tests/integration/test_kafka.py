"""Kafka smoke tests: the broker started by scripts/services.sh is a real one.

Transactions and idempotence through confluent-kafka (its own, newer
librdkafka); and through Debian's librdkafka 2.0.2, the one clink links, via
kcat and via ctypes: produce/consume, read_committed, a committed and an
aborted transaction, and a transactional offset commit whose metadata is
visible only when its transaction commits (how clink's Kafka sink tells, after
a crash, whether a checkpoint's transaction committed).
"""

import ctypes
import ctypes.util
import shutil
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE_S = 60


def create_topic(brokers, topic, partitions=1):
    admin = AdminClient({"bootstrap.servers": brokers})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    futures[topic].result(timeout=30)


def read_partition(brokers, topic, isolation, partition=0):
    """All values of one partition from the start up to its end (the last
    stable offset under read_committed); waits for end-of-partition with a
    deadline instead of sleeping."""
    consumer = Consumer({
        "bootstrap.servers": brokers,
        "group.id": "clink-smoke-reader",  # assign() only: never joins, never commits
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": isolation,
    })
    values = []
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])  # offset 0: from the start
        deadline = time.monotonic() + DEADLINE_S
        while True:
            if time.monotonic() > deadline:
                pytest.fail("no end of partition %s[%d] within %d s (%d records read)"
                            % (topic, partition, DEADLINE_S, len(values)))
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return values
                pytest.fail("consumer error on %s: %s" % (topic, msg.error()))
            values.append(msg.value().decode())
    finally:
        consumer.close()


def produce_checked(producer, topic, values):
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    for v in values:
        while True:
            try:
                producer.produce(topic, value=v.encode(), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush(DEADLINE_S)
    assert failures == [], "delivery failed: %s" % failures[:3]


def test_transaction_commit_and_abort_read_committed(kafka_brokers, unique):
    topic = unique("txn")
    create_topic(kafka_brokers, topic)
    producer = Producer({
        "bootstrap.servers": kafka_brokers,
        "transactional.id": unique("txid"),
        "linger.ms": 5,
    })
    producer.init_transactions(DEADLINE_S)

    committed = ["committed-%d" % i for i in range(1000)]
    producer.begin_transaction()
    produce_checked(producer, topic, committed)
    producer.commit_transaction(DEADLINE_S)

    aborted = ["aborted-%d" % i for i in range(300)]
    producer.begin_transaction()
    produce_checked(producer, topic, aborted)
    producer.abort_transaction(DEADLINE_S)

    seen = read_partition(kafka_brokers, topic, "read_committed")
    assert len(seen) == 1000, "read_committed saw %d records, expected the 1000 committed" % len(seen)
    assert seen == committed
    # The aborted records are in the log: the test would notice an abort that wrote nothing.
    raw = read_partition(kafka_brokers, topic, "read_uncommitted")
    assert raw == committed + aborted


def test_idempotent_producer_keeps_order(kafka_brokers, unique):
    topic = unique("idem")
    create_topic(kafka_brokers, topic)
    n = 20000
    producer = Producer({
        "bootstrap.servers": kafka_brokers,
        "enable.idempotence": True,
        "acks": "all",
        "max.in.flight.requests.per.connection": 5,
        "linger.ms": 2,
        "batch.num.messages": 500,  # many small batches in flight at once
    })
    values = ["%06d" % i for i in range(n)]
    produce_checked(producer, topic, values)
    seen = read_partition(kafka_brokers, topic, "read_committed")
    assert len(seen) == n
    first_bad = next((i for i, (a, b) in enumerate(zip(seen, values)) if a != b), None)
    assert first_bad is None, "out of order at %d: got %s, expected %s" % (
        first_bad, seen[first_bad], values[first_bad])


def kcat():
    path = shutil.which("kcat")
    if path is None:
        pytest.fail("kcat is not installed (Debian package kcat; run scripts/setup.sh)", pytrace=False)
    return path


def test_kcat_debian_librdkafka_produce_consume(kafka_brokers, unique):
    version = subprocess.run([kcat(), "-V"], capture_output=True, text=True, timeout=10).stdout
    assert "librdkafka" in version
    topic = unique("kcat")
    lines = ["line-%d" % i for i in range(500)]
    subprocess.run(
        [kcat(), "-P", "-b", kafka_brokers, "-t", topic,
         "-X", "enable.idempotence=true", "-X", "acks=all"],
        input="\n".join(lines) + "\n", text=True, check=True, timeout=DEADLINE_S)
    for isolation in ("read_committed", "read_uncommitted"):
        out = subprocess.run(
            [kcat(), "-C", "-b", kafka_brokers, "-t", topic, "-o", "beginning", "-e", "-q",
             "-X", "isolation.level=" + isolation],
            capture_output=True, text=True, check=True, timeout=DEADLINE_S).stdout
        assert out.splitlines() == lines, "kcat (%s) read back %d lines" % (isolation, len(out.splitlines()))
    # A consumer group through the same library: join, consume, commit.
    out = subprocess.run(
        [kcat(), "-C", "-b", kafka_brokers, "-G", unique("kcatgroup"), topic, "-o", "beginning", "-e", "-q",
         "-X", "isolation.level=read_committed"],
        capture_output=True, text=True, check=True, timeout=DEADLINE_S).stdout
    assert sorted(out.splitlines()) == sorted(lines)


# ---- Debian's librdkafka through ctypes: the transactional API clink uses ----

class TopicPartitionT(ctypes.Structure):
    _fields_ = [
        ("topic", ctypes.c_char_p),
        ("partition", ctypes.c_int32),
        ("offset", ctypes.c_int64),
        ("metadata", ctypes.c_void_p),
        ("metadata_size", ctypes.c_size_t),
        ("opaque", ctypes.c_void_p),
        ("err", ctypes.c_int),
        ("_private", ctypes.c_void_p),
    ]


class DebianRdkafka:
    """Just enough of librdkafka.so.1 (the system one, not the wheel's) to run
    transactions."""

    def __init__(self):
        self.lib = lib = ctypes.CDLL("librdkafka.so.1")
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"))
        self.libc.malloc.restype = ctypes.c_void_p
        self.libc.malloc.argtypes = [ctypes.c_size_t]
        vp, cp, i32, i64, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t
        sig = {
            "rd_kafka_version_str": (cp, []),
            "rd_kafka_conf_new": (vp, []),
            "rd_kafka_conf_set": (ctypes.c_int, [vp, cp, cp, ctypes.c_char_p, sz]),
            "rd_kafka_new": (vp, [ctypes.c_int, vp, ctypes.c_char_p, sz]),
            "rd_kafka_destroy": (None, [vp]),
            "rd_kafka_topic_new": (vp, [vp, cp, vp]),
            "rd_kafka_topic_destroy": (None, [vp]),
            "rd_kafka_produce": (ctypes.c_int, [vp, i32, ctypes.c_int, vp, sz, vp, sz, vp]),
            "rd_kafka_poll": (ctypes.c_int, [vp, ctypes.c_int]),
            "rd_kafka_flush": (ctypes.c_int, [vp, ctypes.c_int]),
            "rd_kafka_last_error": (ctypes.c_int, []),
            "rd_kafka_err2str": (cp, [ctypes.c_int]),
            "rd_kafka_init_transactions": (vp, [vp, ctypes.c_int]),
            "rd_kafka_begin_transaction": (vp, [vp]),
            "rd_kafka_commit_transaction": (vp, [vp, ctypes.c_int]),
            "rd_kafka_abort_transaction": (vp, [vp, ctypes.c_int]),
            "rd_kafka_send_offsets_to_transaction": (vp, [vp, vp, vp, ctypes.c_int]),
            "rd_kafka_error_string": (cp, [vp]),
            "rd_kafka_error_destroy": (None, [vp]),
            "rd_kafka_consumer_group_metadata_new": (vp, [cp]),
            "rd_kafka_consumer_group_metadata_destroy": (None, [vp]),
            "rd_kafka_topic_partition_list_new": (vp, [ctypes.c_int]),
            "rd_kafka_topic_partition_list_add": (ctypes.POINTER(TopicPartitionT), [vp, cp, i32]),
            "rd_kafka_topic_partition_list_destroy": (None, [vp]),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.version = lib.rd_kafka_version_str().decode()

    def check(self, error, what):
        if error:
            msg = self.lib.rd_kafka_error_string(error).decode()
            self.lib.rd_kafka_error_destroy(error)
            pytest.fail("librdkafka %s: %s failed: %s" % (self.version, what, msg))

    def producer(self, conf):
        lib = self.lib
        c = lib.rd_kafka_conf_new()
        err = ctypes.create_string_buffer(512)
        for k, v in conf.items():
            if lib.rd_kafka_conf_set(c, k.encode(), v.encode(), err, 512) != 0:
                pytest.fail("conf %s=%s: %s" % (k, v, err.value.decode()))
        rk = lib.rd_kafka_new(0, c, err, 512)  # 0 = RD_KAFKA_PRODUCER; owns c now
        assert rk, err.value.decode()
        return rk

    def produce(self, rk, topic, values):
        lib = self.lib
        rkt = lib.rd_kafka_topic_new(rk, topic.encode(), None)
        try:
            for v in values:
                data = v.encode()
                while lib.rd_kafka_produce(rkt, 0, 2, data, len(data), None, 0, None) != 0:  # 2 = F_COPY
                    code = lib.rd_kafka_last_error()
                    if code != -184:  # RD_KAFKA_RESP_ERR__QUEUE_FULL
                        pytest.fail("rd_kafka_produce: %s" % lib.rd_kafka_err2str(code).decode())
                    lib.rd_kafka_poll(rk, 100)
        finally:
            lib.rd_kafka_topic_destroy(rkt)

    def send_offsets(self, rk, group, topic, offset, metadata):
        lib = self.lib
        offsets = lib.rd_kafka_topic_partition_list_new(1)
        tp = lib.rd_kafka_topic_partition_list_add(offsets, topic.encode(), 0).contents
        tp.offset = offset
        buf = self.libc.malloc(len(metadata))  # the list frees it
        ctypes.memmove(buf, metadata, len(metadata))
        tp.metadata, tp.metadata_size = buf, len(metadata)
        cgmd = lib.rd_kafka_consumer_group_metadata_new(group.encode())
        try:
            self.check(lib.rd_kafka_send_offsets_to_transaction(rk, offsets, cgmd, DEADLINE_S * 1000),
                       "send_offsets_to_transaction")
        finally:
            lib.rd_kafka_consumer_group_metadata_destroy(cgmd)
            lib.rd_kafka_topic_partition_list_destroy(offsets)


def committed_offset(brokers, group, topic):
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": group, "enable.auto.commit": False})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        return tp.offset, tp.metadata
    finally:
        consumer.close()


def test_debian_librdkafka_transactions(kafka_brokers, unique):
    rd = DebianRdkafka()
    topic, group = unique("rdtxn"), unique("rdsink")
    create_topic(kafka_brokers, topic)
    rk = rd.producer({"bootstrap.servers": kafka_brokers, "transactional.id": unique("rdtxid"),
                      "linger.ms": "5"})
    try:
        rd.check(rd.lib.rd_kafka_init_transactions(rk, DEADLINE_S * 1000), "init_transactions")

        committed = ["c-%d" % i for i in range(1000)]
        rd.check(rd.lib.rd_kafka_begin_transaction(rk), "begin_transaction")
        rd.produce(rk, topic, committed)
        rd.send_offsets(rk, group, topic, 7, b"checkpoint=7")
        rd.check(rd.lib.rd_kafka_commit_transaction(rk, DEADLINE_S * 1000), "commit_transaction")

        rd.check(rd.lib.rd_kafka_begin_transaction(rk), "begin_transaction")
        rd.produce(rk, topic, ["a-%d" % i for i in range(200)])
        rd.send_offsets(rk, group, topic, 8, b"checkpoint=8")
        assert rd.lib.rd_kafka_flush(rk, DEADLINE_S * 1000) == 0
        rd.check(rd.lib.rd_kafka_abort_transaction(rk, DEADLINE_S * 1000), "abort_transaction")
    finally:
        rd.lib.rd_kafka_destroy(rk)

    assert read_partition(kafka_brokers, topic, "read_committed") == committed
    assert len(read_partition(kafka_brokers, topic, "read_uncommitted")) == 1200
    # The offset committed inside the committed transaction stands; the aborted one's does not.
    assert committed_offset(kafka_brokers, group, topic) == (7, "checkpoint=7")
    # And Debian's librdkafka reads the transactional log correctly too.
    out = subprocess.run(
        [kcat(), "-C", "-b", kafka_brokers, "-t", topic, "-o", "beginning", "-e", "-q",
         "-X", "isolation.level=read_committed"],
        capture_output=True, text=True, check=True, timeout=DEADLINE_S).stdout
    assert out.splitlines() == committed
