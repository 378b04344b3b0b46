"""The range reader against the real Kafka broker (scripts/services.sh), with committed and
aborted transactions interleaved: the oracle is the producer's own delivery reports."""
import os
import time
import uuid

import pytest
from confluent_kafka import Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from clink_reference import Scope, read_range
from conftest import scope_doc

BROKERS = os.environ.get("CLINK_KAFKA_BROKERS")
pytestmark = pytest.mark.skipif(not BROKERS, reason="CLINK_KAFKA_BROKERS is not set: "
                                "scripts/services.sh start && eval \"$(scripts/services.sh env)\"")


_ADMIN = []


def admin():
    """One client for the module: a future outlives no handle it was made by."""
    if not _ADMIN:
        _ADMIN.append(AdminClient({"bootstrap.servers": BROKERS}))
    return _ADMIN[0]


def make_topic(partitions=1, config=None):
    name = f"ref_{uuid.uuid4().hex[:12]}"
    fs = admin().create_topics([NewTopic(name, partitions, 1, config=config or {})])
    fs[name].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # metadata reaches the broker's cache
        d = admin().describe_topics(TopicCollection([name]))[name].result(10)
        if d.topic_id is not None and len(d.partitions) == partitions:
            return name
        time.sleep(0.1)  # a poll interval, not a synchronisation
    raise AssertionError(f"topic {name} never appeared")


def identity(topic):
    a = admin()
    return a.list_topics(timeout=10).cluster_id, str(a.describe_topics(TopicCollection([topic]))[topic].result(10).topic_id)


def produce_txns(topic, plan):
    """plan: [("commit"|"abort", [values])] in one transactional producer, partition 0.
    Returns the (offset, value) of every committed record, from the delivery reports."""
    p = Producer({"bootstrap.servers": BROKERS, "transactional.id": f"ref-{uuid.uuid4().hex}"})
    p.init_transactions(30)
    committed = []
    for what, values in plan:
        got = []
        p.begin_transaction()
        for v in values:
            p.produce(topic, v.encode(), key=v.encode(), partition=0,
                      on_delivery=lambda err, m, got=got: got.append((m.offset(), m.value().decode())))
        p.flush(30)
        if what == "commit":
            p.commit_transaction(30)
            committed += got
        else:
            p.abort_transaction(30)
    return committed, p


def high(topic, p=0):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": BROKERS, "group.id": "x", "isolation.level": "read_uncommitted"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
    finally:
        c.close()


def scope_for(topic, lo, hi, **kw):
    cid, tid = identity(topic)
    return Scope(scope_doc(topic=topic, cluster_id=kw.pop("cluster_id", cid),
                           topic_id=kw.pop("topic_id", tid), parts=((0, lo, hi),), **kw))


def test_a_range_ending_in_an_aborted_transaction_is_passed_not_counted():
    t = make_topic()
    committed, p = produce_txns(t, [("commit", ["a", "b"]), ("abort", ["x", "y"]),
                                    ("commit", ["c"]), ("abort", ["z"])])
    hw = high(t)
    # offsets: a b (marker) x y (marker) c (marker) z (marker): the range's end is the log's
    r = read_range(scope_for(t, 0, hw), BROKERS, deadline_s=30)
    assert r.complete, r.reasons
    assert [(x.offset, x.value.decode()) for x in r.records] == committed
    assert [v for _, v in committed] == ["a", "b", "c"]
    assert r.partitions[0]["passed_by"].startswith("end of partition")
    # a range that stops before the last commit marker: only what lies below `to`
    c_off = committed[-1][0]
    r = read_range(scope_for(t, 0, c_off), BROKERS, deadline_s=30)
    assert r.complete, r.reasons
    assert [x.value for x in r.records] == [b"a", b"b"]
    assert r.partitions[0]["passed_by"] == f"record at offset {c_off}"
    # from inside the range
    r = read_range(scope_for(t, 1, hw), BROKERS, deadline_s=30)
    assert r.complete and [x.value for x in r.records] == [b"b", b"c"]


def test_an_open_transaction_below_the_end_leaves_it_incomplete_at_the_deadline():
    t = make_topic()
    _, p = produce_txns(t, [("commit", ["a"])])
    p.begin_transaction()
    p.produce(t, b"open", partition=0)
    p.flush(30)
    try:
        hw = high(t)
        r = read_range(scope_for(t, 0, hw), BROKERS, deadline_s=3)
        assert not r.complete
        assert any(x.startswith("deadline: partition 0 of") for x in r.reasons), r.reasons
    finally:
        p.abort_transaction(30)


def test_identity_history_and_ends_are_confirmed_before_reading():
    t = make_topic()
    committed, _ = produce_txns(t, [("commit", [str(i) for i in range(6)])])
    hw = high(t)
    r = read_range(scope_for(t, 0, hw + 5), BROKERS, deadline_s=10)
    assert not r.complete and any("the log ends early" in x for x in r.reasons), r.reasons
    r = read_range(scope_for(t, 0, hw, cluster_id="another-cluster"), BROKERS, deadline_s=10)
    assert any(x.startswith("another cluster") for x in r.reasons), r.reasons
    r = read_range(scope_for(t, 0, hw, cluster_id=None), BROKERS, deadline_s=10)
    assert any("records no cluster id" in x for x in r.reasons), r.reasons
    r = read_range(scope_for(t, 0, hw, topic_id=None), BROKERS, deadline_s=10)
    assert any("records no topic id" in x for x in r.reasons), r.reasons
    # expired history: the log's start moved past `from`
    admin().delete_records([TopicPartition(t, 0, 3)])[TopicPartition(t, 0, 3)].result(30)
    r = read_range(scope_for(t, 0, hw), BROKERS, deadline_s=10)
    assert any(x.startswith("history expired: partition 0") for x in r.reasons), r.reasons
    r = read_range(scope_for(t, 3, hw), BROKERS, deadline_s=10)
    assert r.complete, r.reasons


def test_a_recreated_topic_and_a_compacted_one_are_refused():
    t = make_topic()
    produce_txns(t, [("commit", ["a", "b"])])
    old = scope_for(t, 0, high(t))
    admin().delete_topics([t])[t].result(30)
    deadline = time.monotonic() + 60
    while True:
        try:
            admin().create_topics([NewTopic(t, 1, 1)])[t].result(30)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)  # the deletion completes asynchronously; poll interval
    produce_txns(t, [("commit", ["c", "d", "e"])])
    r = read_range(old, BROKERS, deadline_s=10)
    assert any(x.startswith(f"the topic {t} was recreated") for x in r.reasons), r.reasons
    c = make_topic(config={"cleanup.policy": "compact"})
    produce_txns(c, [("commit", ["a"])])
    r = read_range(scope_for(c, 0, high(c)), BROKERS, deadline_s=10)
    assert any("is compacted" in x for x in r.reasons), r.reasons


def test_an_incomplete_scope_is_not_read():
    t = make_topic()
    s = Scope(scope_doc(topic=t, status="unavailable", parts=((0, None, 4),)))
    r = read_range(s, BROKERS, deadline_s=5)
    assert not r.complete
    assert any("not complete" in x for x in r.reasons) and any("no recorded from" in x for x in r.reasons)
