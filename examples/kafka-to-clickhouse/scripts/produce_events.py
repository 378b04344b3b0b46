#!/usr/bin/env python3
"""Streams the tutorial's readings into Kafka, paced, through an idempotent producer.

  produce_events.py [--rate READINGS_PER_SECOND] [--topic readings] [--brokers HOST:PORT]

Each reading is written once: the producer is idempotent (a broker-side retry never writes a
batch twice), and it refuses to run when the topic already holds readings, since running it
twice doubles the input (the verifier would then report counts of 20 where it expects 10).
"""
import argparse
import os
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload  # noqa: E402


def topic_size(brokers, topic):
    c = Consumer({"bootstrap.servers": brokers, "group.id": "produce-events-check"})
    try:
        md = c.list_topics(topic, timeout=10)
        if topic not in md.topics or md.topics[topic].error:
            sys.exit(f"produce_events: topic '{topic}' does not exist; create it first")
        total = 0
        for p in md.topics[topic].partitions:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            total += hi - lo
        return total
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", default=os.environ.get("CLINK_KAFKA_BROKERS", "127.0.0.1:9092"))
    ap.add_argument("--topic", default="readings")
    ap.add_argument("--rate", type=float, default=50.0, help="readings per second (0: no pacing)")
    args = ap.parse_args()
    if topic_size(args.brokers, args.topic):
        sys.exit(f"produce_events: topic '{args.topic}' already holds readings; "
                 "recreate it (run.sh does) rather than doubling the input")
    p = Producer({"bootstrap.servers": args.brokers, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 5})
    failures = []
    t0 = time.monotonic()
    rows = workload.arrival_order()
    for n, r in enumerate(rows):
        if args.rate > 0:
            due = t0 + n / args.rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing, not synchronisation
        p.produce(args.topic, key=r[0], value=workload.as_json(r),
                  on_delivery=lambda err, msg: err and failures.append(err))
        p.poll(0)
    p.flush(60)
    if failures or len(p):
        sys.exit(f"produce_events: {len(failures) or len(p)} readings were not delivered: {failures[:3]}")
    print(f"produce_events: {len(rows)} readings written to '{args.topic}'")


if __name__ == "__main__":
    main()
