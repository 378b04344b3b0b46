"""Creating a Kafka topic and waiting until it can be used: the Python twin of
src/connectors/kafka/ktopic.c, for every Python tool that creates a topic (bench/, examples/).

A created topic is not usable at once: a broker that just started answers metadata for it with
"unknown topic" or partitions without a leader for a moment, and a leader named in metadata may
still answer ListOffsets and produce with "not leader for partition". So the wait ends only
when every partition has a leader in metadata and answers a ListOffsets request.

    sys.path.insert(0, str(REPO / "scripts")); from kafka_topic import create_topic
    create_topic(brokers, "t", partitions=4, config={"retention.ms": "-1"})
"""

import time


def wait_topic(brokers, topic, partitions=0, timeout=60.0):
    """Returns when topic has `partitions` partitions (any number for 0), each with a leader
    that answers ListOffsets; raises TimeoutError naming what is not ready after timeout s."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": brokers})
    cons = Consumer({"bootstrap.servers": brokers, "group.id": "clink-topic-wait",
                     "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    why = "not asked yet"
    try:
        while True:
            md = admin.list_topics(timeout=5).topics.get(topic)
            if md is None or md.error is not None:
                why = "not in metadata" if md is None else str(md.error)
            elif partitions and len(md.partitions) != partitions:
                why = "%d partitions in metadata" % len(md.partitions)
            elif not md.partitions:
                why = "no partitions in metadata"
            else:
                why = None
                for p in sorted(md.partitions):
                    if md.partitions[p].leader < 0 or md.partitions[p].error is not None:
                        why = "partition %d: no leader" % p
                        break
                    try:
                        cons.get_watermark_offsets(TopicPartition(topic, p), timeout=2)
                    except KafkaException as e:
                        why = "partition %d: offsets: %s" % (p, e)
                        break
                if why is None:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError("topic '%s' is not ready after %.0f s: %s" % (topic, timeout, why))
            time.sleep(0.02)
    finally:
        cons.close()


def create_topic(brokers, topic, partitions, config=None, exist_ok=False, timeout=60.0):
    """Creates topic (replication factor 1) and waits for it (wait_topic)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": brokers})
    fut = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                        config=dict(config or {}))])
    try:
        fut[topic].result(timeout=timeout)
    except KafkaException as e:
        if not (exist_ok and e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS):
            raise
    wait_topic(brokers, topic, 0 if exist_ok else partitions, timeout)
