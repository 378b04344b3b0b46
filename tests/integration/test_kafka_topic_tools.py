"""Every tool that creates a Kafka topic waits for its partitions' leaders, through one helper.

bench/nexmark/compare.sh on a just-started broker failed with "nexmark_gen: could not read the
offsets of partition 0 of '…': Broker: Not leader for partition": the generator read offsets
right after creating the topic. The rule now: C tools create topics with
src/connectors/kafka/ktopic.c (ck_kafka_topic_create), Python tools with scripts/kafka_topic.py,
and both wait until every partition's leader answers ListOffsets. A broker restart cannot be
staged here (the services are shared), so the race itself is covered by the helpers' contract:
right after create returns, every partition answers ListOffsets and a produce, with no retry.
"""

import re
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

from .conftest import REPO, RUN_ID, require_env

sys.path.insert(0, str(REPO / "scripts"))
import kafka_topic  # noqa: E402

HELPERS = {"src/connectors/kafka/ktopic.c", "scripts/kafka_topic.py"}
CREATES = re.compile(r"rd_kafka_CreateTopics\s*\(|\.create_topics\s*\(|kafka-topics")


def test_every_tool_creates_topics_through_the_helper():
    offenders = []
    for top in ("bench", "examples", "scripts"):
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix not in (".c", ".h", ".py", ".sh") or not path.is_file():
                continue
            rel = str(path.relative_to(REPO))
            if rel in HELPERS:
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if CREATES.search(line):
                    offenders.append("%s:%d: %s" % (rel, n, line.strip()))
    assert not offenders, "tools that create a topic without the helper (which waits for the " \
        "partitions' leaders):\n" + "\n".join(offenders)


def test_python_helper_returns_only_when_every_partition_answers():
    (brokers,) = require_env("CLINK_KAFKA_BROKERS")
    topic = "topic_tools_%s" % RUN_ID
    kafka_topic.create_topic(brokers, topic, 5, config={"retention.ms": "-1"})
    cons = Consumer({"bootstrap.servers": brokers, "group.id": "t_" + RUN_ID})
    try:
        for p in range(5):  # no retry: the first request to each leader is answered
            assert cons.get_watermark_offsets(TopicPartition(topic, p), timeout=5) == (0, 0)
    finally:
        cons.close()
    prod = Producer({"bootstrap.servers": brokers, "linger.ms": 0, "message.send.max.retries": 0})
    errors = []
    for p in range(5):
        prod.produce(topic, b"x", partition=p, on_delivery=lambda e, m: e and errors.append(e))
    assert prod.flush(30) == 0
    assert errors == []
    # an existing topic: refused unless exist_ok, then waited for like a new one
    try:
        kafka_topic.create_topic(brokers, topic, 5)
        raise AssertionError("creating an existing topic was not refused")
    except Exception as e:  # KafkaException(TOPIC_ALREADY_EXISTS)
        assert "already exists" in str(e).lower() or "TOPIC_ALREADY_EXISTS" in str(e), e
    kafka_topic.create_topic(brokers, topic, 5, exist_ok=True)
