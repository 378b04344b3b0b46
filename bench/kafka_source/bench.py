#!/usr/bin/env python3
"""Kafka source throughput: `clink run` (Kafka source + JSON decode into a blackhole), through
clink's own fetch client and through librdkafka's consumer, side by side with kcat and with
floor.c (librdkafka alone, read the source's way: the ceiling of the librdkafka path), on the
same topic.

DESIGN
  1. Pre-fill a topic (created fresh unless --topic names an existing one) with N JSON records
     of the Nexmark bid shape, spread evenly over the partitions, with confluent-kafka.
  2. Run each reader R times over the whole topic and measure the CPU it used (user + sys of the
     child process, from getrusage(RUSAGE_CHILDREN) around a blocking subprocess.run) and the
     wall time:
       clink:  CREATE TABLE bids (...) WITH (connector='kafka', format='json',
               auto_offset_reset='earliest', scan.bounded='latest', fetcher='clink'), INSERT
               INTO a blackhole; the record count is checked from the "[job] finished: N
               records read" line.
       clink/rdk: the same with fetcher='librdkafka'.
       kcat:   kcat -C -b BROKERS -t TOPIC -e -o beginning -q > /dev/null (no decode: it only
               fetches and prints each value).
       floor:  bench/kafka_source/floor.c --touch (compiled into $CLINK_CACHE/bench): one
               librdkafka consumer with the Kafka source's settings and calls (per-partition
               queues, batch consume, destroy per message), reading every value's bytes once
               and decoding nothing: what any decoder on top of librdkafka starts from.
  3. Print events per CPU-second of each (best and median of R), clink / kcat and
     clink / floor. The figures and the method are in docs/benchmarks.md ("Kafka source").

  A benchmark, never a timed test: nothing here passes or fails on a number.

Usage:
  eval "$(scripts/services.sh env)"
  "$CLINK_PYTHON" bench/kafka_source/bench.py [--records 1000000] [--partitions 4]
        [--runs 3] [--parallelism 1] [--clink build/src/cli/clink] [--topic NAME] [--markdown]
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Producer

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from kafka_topic import create_topic  # noqa: E402  (waits until every partition has a leader)
CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]


def bid(i):
    """The i-th bid; deterministic, ~200 bytes of JSON like Nexmark's generator."""
    auction = 1000 + (i * 7919) % 10000
    bidder = 2000 + (i * 104729) % 100000
    return json.dumps({
        "auction": auction,
        "bidder": bidder,
        "price": 100 + (i * 31) % 1000000,
        "channel": CHANNELS[i % len(CHANNELS)],
        "url": "https://www.nexmark.com/%s/item.htm?query=1&channel_id=%d" % (
            CHANNELS[i % len(CHANNELS)].lower(), (i * 17) % 1000),
        "dateTime": 1772352000000 + i,
        "extra": "x" * (20 + i % 30),
    }, separators=(",", ":")).encode()




def prefill(brokers, topic, records, partitions):
    producer = Producer({
        "bootstrap.servers": brokers,
        "linger.ms": 50,
        "batch.num.messages": 10000,
        "queue.buffering.max.messages": 500000,
        "enable.idempotence": True,
    })
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    t0 = time.monotonic()
    nbytes = 0
    for i in range(records):
        value = bid(i)
        nbytes += len(value)
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions,
                                 on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if left or failures:
        sys.exit("prefill failed: %d undelivered, errors %s" % (left, failures[:3]))
    print("prefilled %s: %d records, %.1f MB of values, %d partitions, in %.1f s"
          % (topic, records, nbytes / 1e6, partitions, time.monotonic() - t0))


def measured(cmd, **kw):
    """Runs cmd to completion; returns (completed process, cpu seconds, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, **kw)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, cpu, wall


def run_clink(clink, brokers, topic, records, parallelism, fetcher):
    sql = (
        "CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, "
        "url VARCHAR, dateTime BIGINT, extra VARCHAR) WITH (connector = 'kafka', "
        "format = 'json', brokers = '%s', topic = '%s', auto_offset_reset = 'earliest', "
        "scan.bounded = 'latest', fetcher = '%s');\n"
        "CREATE TABLE sink (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, "
        "url VARCHAR, dateTime BIGINT, extra VARCHAR) WITH (connector = 'blackhole');\n"
        "INSERT INTO sink SELECT * FROM bids;\n" % (brokers, topic, fetcher))
    proc, cpu, wall = measured(
        [clink, "run", "--parallelism", str(parallelism), "-e", sql],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, CLINK_LOG_LEVEL="info"))
    if proc.returncode != 0:
        sys.exit("clink run failed (%d):\n%s" % (proc.returncode, proc.stderr))
    m = re.search(r"\[job\] finished: (\d+) records read", proc.stderr)
    if not m or int(m.group(1)) != records:
        sys.exit("clink read %s records, expected %d:\n%s"
                 % (m.group(1) if m else "?", records, proc.stderr))
    return cpu, wall


def build_floor():
    """Compiles floor.c into the cache (again when the source is newer); returns its path."""
    src = Path(__file__).with_name("floor.c")
    cache = Path(os.environ.get("CLINK_CACHE") or Path.home() / ".cache" / "clink") / "bench"
    exe = cache / "kafka_floor"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = str(exe) + ".tmp"
        if subprocess.run(["cc", "-O2", "-o", tmp, str(src), "-lrdkafka"]).returncode != 0:
            sys.exit("could not compile %s (needs cc and librdkafka-dev)" % src)
        os.replace(tmp, exe)
    return str(exe)


def run_floor(floor, brokers, topic, records):
    proc, cpu, wall = measured([floor, "--brokers", brokers, "--topic", topic, "--touch"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0 or not proc.stdout.startswith("%d records" % records):
        sys.exit("floor failed (%d), expected %d records:\n%s%s"
                 % (proc.returncode, records, proc.stdout, proc.stderr))
    return cpu, wall


def run_kcat(kcat, brokers, topic):
    proc, cpu, wall = measured([kcat, "-C", "-b", brokers, "-t", topic, "-e", "-o", "beginning",
                                "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    if proc.returncode != 0:
        sys.exit("kcat failed (%d):\n%s" % (proc.returncode, proc.stderr))
    return cpu, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--clink", default=os.environ.get("CLINK_BIN")
                    or str(REPO / "build" / "src" / "cli" / "clink"))
    ap.add_argument("--topic", help="an existing, already filled topic to read instead")
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table row")
    args = ap.parse_args()

    brokers = os.environ.get("CLINK_KAFKA_BROKERS")
    if not brokers:
        sys.exit('CLINK_KAFKA_BROKERS is not set: scripts/services.sh start && '
                 'eval "$(scripts/services.sh env)"')
    kcat = shutil.which("kcat")
    if not kcat:
        sys.exit("kcat is not installed (scripts/setup.sh installs it)")
    if not os.access(args.clink, os.X_OK):
        sys.exit("no clink binary at %s (cmake --build build)" % args.clink)

    floor = build_floor()
    topic = args.topic
    if not topic:
        topic = "bench_bids_%d_%d" % (int(time.time()), os.getpid())
        create_topic(brokers, topic, args.partitions)
        prefill(brokers, topic, args.records, args.partitions)

    results = {"clink": [], "clink_rdk": [], "kcat": [], "floor": []}
    for r in range(args.runs):
        results["kcat"].append(run_kcat(kcat, brokers, topic))
        results["floor"].append(run_floor(floor, brokers, topic, args.records))
        results["clink"].append(run_clink(args.clink, brokers, topic, args.records,
                                          args.parallelism, "clink"))
        results["clink_rdk"].append(run_clink(args.clink, brokers, topic, args.records,
                                              args.parallelism, "librdkafka"))
        print("run %d: clink %.2f s CPU (%.2f s wall), clink/rdk %.2f s CPU (%.2f s wall), "
              "kcat %.2f s CPU (%.2f s wall), floor %.2f s CPU (%.2f s wall)"
              % (r + 1, results["clink"][-1][0], results["clink"][-1][1],
                 results["clink_rdk"][-1][0], results["clink_rdk"][-1][1],
                 results["kcat"][-1][0], results["kcat"][-1][1],
                 results["floor"][-1][0], results["floor"][-1][1]))

    def best(name):
        cpu, wall = min(results[name])
        return args.records / cpu, cpu, wall

    def median(name):
        cpus = sorted(cpu for cpu, _ in results[name])
        return args.records / cpus[len(cpus) // 2]

    c_eps, c_cpu, c_wall = best("clink")
    r_eps, r_cpu, r_wall = best("clink_rdk")
    k_eps, k_cpu, k_wall = best("kcat")
    f_eps, f_cpu, f_wall = best("floor")
    c_med, k_med, f_med = median("clink"), median("kcat"), median("floor")
    r_med = median("clink_rdk")
    print()
    print("records: %d in %d partitions (topic %s), %d runs, clink --parallelism %d"
          % (args.records, args.partitions, topic, args.runs, args.parallelism))
    print("clink run (kafka source + json decode -> blackhole): best %.2f M events/CPU-s "
          "(%.2f s CPU, %.2f s wall), median %.2f M" % (c_eps / 1e6, c_cpu, c_wall, c_med / 1e6))
    print("clink run, fetcher = 'librdkafka':                  best %.2f M events/CPU-s "
          "(%.2f s CPU, %.2f s wall), median %.2f M" % (r_eps / 1e6, r_cpu, r_wall, r_med / 1e6))
    print("kcat -C -e -o beginning -q (librdkafka, no decode):  best %.2f M events/CPU-s "
          "(%.2f s CPU, %.2f s wall), median %.2f M" % (k_eps / 1e6, k_cpu, k_wall, k_med / 1e6))
    print("floor.c --touch (librdkafka the source's way, no decode): best %.2f M events/CPU-s "
          "(%.2f s CPU, %.2f s wall), median %.2f M" % (f_eps / 1e6, f_cpu, f_wall, f_med / 1e6))
    print("ratio clink / clink with librdkafka: best %.2f, median %.2f"
          % (c_eps / r_eps, c_med / r_med))
    print("ratio clink / kcat: best %.2f, median %.2f" % (c_eps / k_eps, c_med / k_med))
    print("ratio clink / floor: best %.2f, median %.2f" % (c_eps / f_eps, c_med / f_med))
    if args.markdown:
        print()
        print("| %d | %d | %d | %.2f M (median %.2f M) | %.2f M (median %.2f M) | "
              "%.2f M (median %.2f M) | %.2f (%.2f) |"
              % (args.records, args.partitions, args.parallelism, c_eps / 1e6, c_med / 1e6,
                 k_eps / 1e6, k_med / 1e6, f_eps / 1e6, f_med / 1e6, c_eps / f_eps,
                 c_med / f_med))


if __name__ == "__main__":
    main()
