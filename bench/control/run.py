#!/usr/bin/env python3
"""Checkpoint control latency (issue 13): how long a trigger takes to become a barrier at every
source, and how long a sink takes to begin committing checkpoint N after COMPLETED-N.

The engine logs four debug lines with a monotonic timestamp (at_us):
  checkpoint N triggered            (the coordinator decided to take N)
  subtask T injected barrier N      (a source snapshotted and sent BARRIER(N) downstream)
  checkpoint N completed            (COMPLETED-N is durable)
  subtask T commits checkpoint N    (a sink calls its commit of N)
trigger -> barrier: per checkpoint, the last source's injection minus the trigger (only
checkpoints every source injected). COMPLETED -> commit: per sink commit, its time minus
COMPLETED-N's. The final checkpoint (taken on the way out) is left out.

Pipelines: datagen -> TUMBLE per key (hash exchange) -> blackhole, parallelism 2, so the sink
runs in a receiving subtask and the sources in theirs. idle: 10 rows/s in all (a source spends
its time waiting in poll); load: as fast as datagen goes (both cores busy).

With CLINK_KAFKA_BROKERS set (scripts/services.sh env; run it with $CLINK_PYTHON, which has
confluent_kafka), a third scenario, kafka-idle: the same job reading an empty 2-partition topic
(made for the run and deleted after), so the sources wait in the Kafka fetch.

Usage: run.py CLINK_BINARY [SECONDS] [INTERVAL_MS]   (defaults 20 s, 50 ms)
Prints one line per scenario. Loopback only; the checkpoint directory is removed.
"""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SQL = """
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (connector = 'datagen', rows_per_second = '{rps}',
  'fields.k.kind' = 'random', 'fields.k.start' = '1', 'fields.k.end' = '1000',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '0', 'fields.ts.step' = '1',
  'fields.v.kind' = 'random', 'fields.v.start' = '0', 'fields.v.end' = '1000',
  event_time_column = 'ts', watermark_lag_ms = '100');
CREATE TABLE sink (k BIGINT, window_start BIGINT, n BIGINT, s BIGINT) WITH (connector = 'blackhole');
INSERT INTO sink SELECT k, window_start, COUNT(*) AS n, SUM(v) AS s
FROM g GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k;
"""

KAFKA_SQL = """
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (connector = 'kafka', brokers = '{brokers}',
  topic = '{topic}', format = 'json', event_time_column = 'ts', watermark_lag_ms = '100');
CREATE TABLE sink (k BIGINT, window_start BIGINT, n BIGINT, s BIGINT) WITH (connector = 'blackhole');
INSERT INTO sink SELECT k, window_start, COUNT(*) AS n, SUM(v) AS s
FROM g GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k;
"""

LINE = re.compile(r"\[checkpoint\] (?:checkpoint (\d+) (triggered|completed)|subtask (\d+) "
                  r"(injected barrier|commits checkpoint) (\d+)) at_us=(\d+)")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def measure(clink, text, seconds, interval_ms):
    d = tempfile.mkdtemp(prefix="clink-ctrl-")
    try:
        sql = os.path.join(d, "job.sql")
        with open(sql, "w") as f:
            f.write(text)
        cmd = [clink, "run", "--parallelism", "2", "--checkpoint-dir", os.path.join(d, "ck"),
               "--checkpoint-interval-ms", str(interval_ms), "--log-level", "debug",
               "--progress-interval-ms", "0", sql]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(seconds)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    trig, comp, inj, commits = {}, {}, {}, []
    for m in LINE.finditer(err):
        us = int(m.group(6))
        if m.group(1):
            (trig if m.group(2) == "triggered" else comp)[int(m.group(1))] = us
        elif m.group(4) == "injected barrier":
            inj.setdefault(int(m.group(5)), []).append(us)
        else:
            commits.append((int(m.group(5)), us))
    if not trig:
        sys.exit("no checkpoint lines: is this binary built with the at_us debug lines?\n" + err[-2000:])
    last = max(trig)  # the final checkpoint: left out
    nsrc = max(len(v) for v in inj.values())
    t2b = [(max(v) - trig[i]) / 1000.0 for i, v in inj.items()
           if i in trig and i != last and len(v) == nsrc]
    c2c = [(us - comp[i]) / 1000.0 for i, us in commits if i in comp and i != last]
    return t2b, c2c


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    clink = os.path.abspath(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20
    interval = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    print(f"# {clink}: {seconds:g} s per scenario, --checkpoint-interval-ms {interval}, ms")
    print(f"{'scenario':10} {'trigger->barrier median':>22} {'p99':>8} {'n':>5}   "
          f"{'COMPLETED->commit median':>25} {'p99':>8} {'n':>5}")
    scenarios = [("idle", SQL.format(rps=10)), ("load", SQL.format(rps=0))]
    brokers = os.environ.get("CLINK_KAFKA_BROKERS")
    topic = None
    if brokers:  # kafka-idle: a Kafka source on an empty 2-partition topic (needs confluent_kafka)
        from confluent_kafka.admin import AdminClient
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
        from kafka_topic import create_topic  # waits until every partition has a leader
        admin = AdminClient({"bootstrap.servers": brokers})
        topic = f"clink-bench-control-{os.getpid()}-{int(time.time())}"
        create_topic(brokers, topic, 2)
        scenarios.append(("kafka-idle", KAFKA_SQL.format(brokers=brokers, topic=topic)))
    try:
        for name, text in scenarios:
            report(name, *measure(clink, text, seconds, interval))
    finally:
        if topic:
            for f in admin.delete_topics([topic]).values():
                f.result(30)


def report(name, t2b, c2c):
    print(f"{name:10} {statistics.median(t2b):22.2f} {pct(t2b, 99):8.2f} {len(t2b):5d}   "
          f"{statistics.median(c2c):25.2f} {pct(c2c, 99):8.2f} {len(c2c):5d}", flush=True)


if __name__ == "__main__":
    main()
