#!/usr/bin/env python3
"""ClickHouse sink throughput (issue 6): rows per second (wall) and CPU-seconds per million rows
of the inserting process, for clink's ClickHouse sink side by side with clickhouse-client, in
one run. Run it through bench/clickhouse/run.sh.

DESIGN
  0. Setup. The clink binary is copied into a temporary directory first, so a rebuild of
     build/ by someone else mid-run cannot mix two binaries into one set of figures. The input
     is generated once into $CLINK_BENCH_CACHE/clickhouse (default /var/tmp/clink-bench): N rows
     (default 1,000,000) of a sensor reading as NDJSON, a pure function of the row number:
       {"sensor_id":"sensor-0001","ts":1772352000010,"temp_c":34.19,"humidity":57.29,
        "site":"site-01","battery_mv":3031}
     sensor i % 1000, ts = BASE + 10 ms * i, temp_c / humidity with two decimals, site
     sensor % 20, battery_mv in [3000, 4200). The expected column sums (and the expected
     windows of case 2) are computed here, in Python, from the same formulas.
     Everything in ClickHouse lives in database clink_bench (dropped at the end). The JSON is
     loaded once into a Log table `staging` with clickhouse-client ... FORMAT JSONEachRow
     (ClickHouse's own parser); its sums must match Python's. Then
     `SELECT * FROM staging FORMAT Native` writes data.native: the ceiling's input, produced
     by ClickHouse itself. A fresh 4-partition topic gets the same N lines (row i into
     partition i % 4, so each partition is in event-time order); it is deleted at the end.

  1. Cases, each R times, taking turns inside every round so drift hits all alike. Each
     measured command runs alone; CPU is the user + sys rusage os.wait4 returns for that one
     process (all its threads), wall is Popen -> reaped. The server's CPU over the same
     interval is read from /proc/<clickhouse-server pid>/stat (10 ms ticks), because the
     server runs on the same 2 cores and competes with the inserter.
       ceiling      clickhouse-client --query "INSERT INTO t FORMAT Native" < data.native
                    (--compression 1: LZ4 on the wire, as the clink sink sends)
       file         clink run: file source (json) -> ClickHouse sink (batch_rows 100000,
                    compression lz4) into the MergeTree t (sensor_id, ts, ...)
       kafka-tumble clink run: Kafka source (scan.bounded latest, auto_offset_reset earliest,
                    event time ts, watermark lag 1 s) -> TUMBLE(ts, 100 s) per sensor_id
                    (1000 keys x 100 windows = 100,000 rows) -> ClickHouse sink into t_agg;
                    input rows/s = N / wall, output rows/s = windows / wall
     With --line 26.9 (ClickHouse 26.9 from scripts/services.sh clickhouse26, which can take
     exactly once) two more, the cost of exactly once:
       file-1s      the file case with checkpoints every second (--checkpoint-interval-ms 1000)
       file-eos-1s  the same with delivery_guarantee = 'exactly_once' (each interval staged in
                    a table of its own, its parts moved into t when the checkpoint completes)
     References (--no-references drops them), to split the figures into their parts:
       client-json  clickhouse-client ... FORMAT JSONEachRow < data.json: the client parses
                    the same JSON itself and sends native blocks (like-for-like with "file")
       file-bh      clink: the same file source -> blackhole (reading + JSON decode alone)
       kafka-bh     clink: the same Kafka -> TUMBLE job -> blackhole
     Before each measured command the target table is dropped and created again, and the
     script waits until no merge runs in clink_bench. After it, the result is checked before
     any figure is kept: count() = N (or the window count), the integer sums equal Python's,
     and for raw rows sum(cityHash64(all columns)) equals the staging table's, i.e. the
     inserted rows are bit-identical to what ClickHouse's own parser made of the JSON. A
     mismatch stops the run (exit 1). Others restart ClickHouse on this machine: a sample
     during which the server's uptime() went back, or the clink sink logged a retry, measured
     an outage; it is discarded and measured again (3 tries). The clink sinks get
     retry_timeout_ms 60000, so a server that stays away fails the run instead of hanging it.
     Each round also measures `clickhouse-client --query "SELECT 1"`: the client's start-up,
     a large part of the ceiling's CPU.

  2. The report: per case the median over R of rows/s and of CPU-s per 1M rows, with
     [min..max], the server's CPU-s per 1M rows, and the ratios to the ceiling
     (rows/s: case / ceiling; CPU: case / ceiling). A results-<time>.json with every sample
     goes to the cache directory.

  A benchmark, never a timed test: nothing here fails on a number, only on a wrong answer.
"""

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA_VERSION = "v1"  # bump when line() changes, so a stale cached file is not reused
BASE_TS = 1772352000000  # a multiple of the 100 s window
STEP_MS = 10
SENSORS = 1000
WINDOW_MS = 100_000
DB = "clink_bench"
RAW_COLS = ("sensor_id String, ts Int64, temp_c Float64, humidity Float64, site String, "
            "battery_mv Int32")
SQL_COLS = ("sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE, humidity DOUBLE, site VARCHAR, "
            "battery_mv INT")
AGG_COLS = ("sensor_id String, window_start Int64, window_end Int64, readings Int64, "
            "avg_temp_c Float64, min_temp_c Float64, max_temp_c Float64, avg_humidity Float64")
AGG_SQL_COLS = ("sensor_id VARCHAR, window_start BIGINT, window_end BIGINT, readings BIGINT, "
                "avg_temp_c DOUBLE, min_temp_c DOUBLE, max_temp_c DOUBLE, avg_humidity DOUBLE")
RAW_CHECK = ("SELECT count(), sum(ts), sum(battery_mv), sum(toInt64(round(temp_c * 100))), "
             "sum(toInt64(round(humidity * 100))), sum(length(sensor_id) + length(site)), "
             "uniqExact(sensor_id), sum(cityHash64(sensor_id, ts, temp_c, humidity, site, "
             "battery_mv)) FROM %s.%s FORMAT TabSeparated")
AGG_CHECK = ("SELECT count(), uniqExact(sensor_id, window_start), sum(readings), "
             "sum(toInt64(round(min_temp_c * 100))), sum(toInt64(round(max_temp_c * 100))), "
             "min(window_start), max(window_end), sum(window_end - window_start) "
             "FROM %s.%s FORMAT TabSeparated")


# ---- the input ----------------------------------------------------------------------------

def row(i):
    sensor = i % SENSORS
    c = 1500 + (i * 7919) % 2000          # temp_c * 100, 15.00 .. 34.99
    h = 3000 + (i * 104729) % 6000        # humidity * 100, 30.00 .. 89.99
    b = 3000 + (i * 31) % 1200            # battery_mv
    return sensor, BASE_TS + i * STEP_MS, c, h, sensor % 20, b


def line(i):
    sensor, ts, c, h, site, b = row(i)
    return ('{"sensor_id":"sensor-%04d","ts":%d,"temp_c":%d.%02d,"humidity":%d.%02d,'
            '"site":"site-%02d","battery_mv":%d}\n'
            % (sensor, ts, c // 100, c % 100, h // 100, h % 100, site, b))


def expectations(n):
    """Column sums of the raw rows and of the expected windows, from the formulas alone."""
    raw = [n, 0, 0, 0, 0, 0, min(n, SENSORS)]
    win = {}
    for i in range(n):
        sensor, ts, c, h, site, b = row(i)
        raw[1] += ts
        raw[2] += b
        raw[3] += c
        raw[4] += h
        raw[5] += len("sensor-%04d" % sensor) + len("site-%02d" % site)
        key = (sensor, ts - ts % WINDOW_MS)
        w = win.get(key)
        if w is None:
            win[key] = [1, c, c]
        else:
            w[0] += 1
            w[1] = min(w[1], c)
            w[2] = max(w[2], c)
    starts = [k[1] for k in win]
    agg = [len(win), len(win), n, sum(w[1] for w in win.values()),
           sum(w[2] for w in win.values()), min(starts), max(starts) + WINDOW_MS,
           WINDOW_MS * len(win)]
    return raw, agg


def ensure_input(cache, n):
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / ("sensors-%s-%d.json" % (DATA_VERSION, n))
    exp_path = cache / ("sensors-%s-%d.expect.json" % (DATA_VERSION, n))
    if not path.exists() or not exp_path.exists():
        t0 = time.monotonic()
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            for lo in range(0, n, 100_000):
                f.write("".join(line(i) for i in range(lo, min(n, lo + 100_000))))
        raw, agg = expectations(n)
        exp_path.write_text(json.dumps({"raw": raw, "agg": agg}))
        tmp.rename(path)
        print("generated %s (%.1f MB) in %.1f s" % (path, path.stat().st_size / 1e6,
                                                    time.monotonic() - t0), flush=True)
    exp = json.loads(exp_path.read_text())
    return path, exp["raw"], exp["agg"]


# ---- ClickHouse ---------------------------------------------------------------------------

class CH:
    def __init__(self, host, http_port, native_port, user, password):
        self.host, self.http_port, self.native_port = host, http_port, native_port
        self.user, self.password = user, password

    def q(self, sql):
        """Runs sql over HTTP; waits up to 60 s for a server that is restarting."""
        url = "http://%s:%s/?%s" % (self.host, self.http_port, urllib.parse.urlencode(
            {"user": self.user, "password": self.password}))
        end = time.monotonic() + 60
        while True:
            req = urllib.request.Request(url, data=sql.encode(), method="POST")
            try:
                with urllib.request.urlopen(req, timeout=120) as r:
                    return r.read().decode()
            except urllib.error.HTTPError as e:
                sys.exit("ClickHouse refused %r: %s" % (sql[:200], e.read().decode()[:1000]))
            except OSError as e:
                if time.monotonic() > end:
                    sys.exit("ClickHouse at %s:%s is not answering: %s"
                             % (self.host, self.http_port, e))
                time.sleep(0.5)  # the server is (re)starting: retry with a deadline

    def uptime(self):
        return int(self.q("SELECT uptime()"))

    def client(self, query):
        return ["clickhouse-client", "--host", self.host, "--port", str(self.native_port),
                "--user", self.user, "--password", self.password, "--compression", "1",
                "--query", query]

    def recreate(self, table, cols, engine="MergeTree ORDER BY (sensor_id, %s)"):
        self.q("DROP TABLE IF EXISTS %s.%s" % (DB, table))
        self.q("CREATE TABLE %s.%s (%s) ENGINE = %s" % (DB, table, cols, engine))

    def quiet(self, deadline_s=60):
        """Waits until no merge runs in our database (so one case's merges don't cost the next)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self.q("SELECT count() FROM system.merges WHERE database = '%s'" % DB).strip() == "0":
                return
            time.sleep(0.2)  # polling a condition with a deadline

    def check(self, sql, table):
        return [int(x) for x in self.q(sql % (DB, table)).split()]


def server_pid(service="clickhouse"):
    """The server's pid from `scripts/services.sh status` (None if not found)."""
    try:
        out = subprocess.run([str(REPO / "scripts/services.sh"), "status"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"^%s\s+running\s+pid\s+(\d+)" % service, out, re.M)
    return int(m.group(1)) if m else None


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    if pid is None:
        return None
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    except OSError:
        return None


# ---- measuring ----------------------------------------------------------------------------

class Sample:
    def __init__(self, rc, cpu, wall, server_cpu, log):
        self.rc, self.cpu, self.wall, self.server_cpu, self.log = rc, cpu, wall, server_cpu, log
        self.inserts = inserts_of(log)


def measured(argv, tmp, srv, stdin_path=None, env=None):
    """Runs argv alone; CPU from wait4 for that process, server CPU from /proc over the run."""
    log_path = tmp / "stderr.log"
    with open(log_path, "wb") as log, \
            open(stdin_path or os.devnull, "rb") as stdin:
        s0 = proc_cpu(srv)
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=log, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        s1 = proc_cpu(srv)
        p.returncode = os.waitstatus_to_exitcode(status)
    text = log_path.read_text(errors="replace")
    server = s1 - s0 if s0 is not None and s1 is not None else None
    return Sample(p.returncode, ru.ru_utime + ru.ru_stime, wall, server, text)


def job_counts(log):
    m = re.search(r"\[job\] finished: (\d+) records read, (\d+) written", log)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def inserts_of(log):
    m = re.search(r"rows written to \S+ in (\d+) inserts", log)
    return int(m.group(1)) if m else None


# ---- the cases ----------------------------------------------------------------------------

def file_source(path):
    return ("CREATE TABLE readings (%s) WITH (connector = 'file', path = '%s', format = 'json');\n"
            % (SQL_COLS, path))


def kafka_source(brokers, topic):
    return ("CREATE TABLE readings (%s) WITH (connector = 'kafka', format = 'json', "
            "brokers = '%s', topic = '%s', auto_offset_reset = 'earliest', "
            "scan.bounded = 'latest', event_time_column = 'ts', watermark_lag_ms = '1000');\n"
            % (SQL_COLS, brokers, topic))


def ch_sink(name, cols, ch, table, batch_rows, compression, extra=""):
    return ("CREATE TABLE %s (%s) WITH (connector = 'clickhouse', host = '%s', port = '%s', "
            "database = '%s', table = '%s', user = '%s', password_env = 'CLINK_BENCH_CH_PASSWORD', "
            "batch_rows = '%d', compression = '%s', retry_timeout_ms = '60000'%s);\n"
            % (name, cols, ch.host, ch.native_port, DB, table, ch.user, batch_rows, compression,
               extra))


def blackhole(name, cols):
    return "CREATE TABLE %s (%s) WITH (connector = 'blackhole');\n" % (name, cols)


TUMBLE = ("INSERT INTO agg SELECT sensor_id, window_start, window_end, COUNT(*) AS readings, "
          "AVG(temp_c) AS avg_temp_c, MIN(temp_c) AS min_temp_c, MAX(temp_c) AS max_temp_c, "
          "AVG(humidity) AS avg_humidity FROM readings "
          "GROUP BY TUMBLE(ts, INTERVAL '100' SECOND), sensor_id;\n")

# name, description, is a reference (and EOS_CASES: only with --line 26.9)
EOS_CASES = ("file-1s", "file-eos-1s")
CASES = [
    ("ceiling", "clickhouse-client INSERT … FORMAT Native < data.native", False),
    ("file", "clink: file (json) → ClickHouse sink", False),
    ("kafka-tumble", "clink: Kafka → TUMBLE 100 s per sensor → ClickHouse", False),
    ("file-1s", "clink: file (json) → ClickHouse sink, checkpoints every 1 s, at least once", False),
    ("file-eos-1s", "clink: the same, delivery_guarantee = 'exactly_once'", False),
    ("client-json", "clickhouse-client INSERT … FORMAT JSONEachRow < data.json", True),
    ("file-bh", "clink: file (json) → blackhole", True),
    ("kafka-bh", "clink: Kafka → TUMBLE 100 s per sensor → blackhole", True),
]


class Bench:
    def __init__(self, args, ch, srv, tmp, data_json, data_native, raw_exp, agg_exp, topic,
                 staging_hash):
        self.a, self.ch, self.srv, self.tmp = args, ch, srv, tmp
        self.raw_exp, self.agg_exp = raw_exp, agg_exp
        self.staging_hash = staging_hash
        self.restarts = 0
        env = dict(os.environ, CLINK_LOG_LEVEL="info", CLINK_BENCH_CH_PASSWORD=ch.password)
        n, w = args.rows, agg_exp[0]
        src_f, src_k = file_source(data_json), kafka_source(args.brokers, topic)
        sink = lambda name, cols, table: ch_sink(name, cols, ch, table, args.batch_rows,
                                                  args.compression)
        copy = "INSERT INTO t SELECT * FROM readings;\n"
        # case -> (ClickHouse table or None, kind, argv, stdin, env, clink (read, written))
        self.spec = {
            "ceiling": ("t_native", "raw", ch.client("INSERT INTO %s.t_native FORMAT Native" % DB),
                        data_native, None, None),
            "client-json": ("t_json", "raw",
                            ch.client("INSERT INTO %s.t_json FORMAT JSONEachRow" % DB),
                            data_json, None, None),
            "file": ("t_file", "raw", self.clink(src_f + sink("t", SQL_COLS, "t_file") + copy),
                     None, env, (n, n)),
            "file-1s": ("t_file1", "raw",
                        self.clink(src_f + sink("t", SQL_COLS, "t_file1") + copy, tmp / "ck-alo"),
                        None, env, (n, n)),
            "file-eos-1s": ("t_eos", "raw",
                            self.clink(src_f + ch_sink("t", SQL_COLS, ch, "t_eos", args.batch_rows,
                                                       args.compression,
                                                       ", delivery_guarantee = 'exactly_once'")
                                       + copy, tmp / "ck-eos"),
                            None, env, (n, n)),
            "file-bh": (None, None, self.clink(src_f + blackhole("t", SQL_COLS) + copy),
                        None, env, (n, n)),
            "kafka-tumble": ("t_agg", "agg",
                             self.clink(src_k + sink("agg", AGG_SQL_COLS, "t_agg") + TUMBLE),
                             None, env, (n, w)),
            "kafka-bh": (None, None, self.clink(src_k + blackhole("agg", AGG_SQL_COLS) + TUMBLE),
                         None, env, (n, w)),
        }

    def clink(self, sql, checkpoints=None):
        argv = [self.a.clink, "run", "--parallelism", str(self.a.parallelism), "-e", sql]
        if checkpoints:
            argv += ["--checkpoint-dir", str(checkpoints), "--checkpoint-interval-ms", "1000",
                     "--fresh"]
        return argv

    def pid(self):
        """The server's pid, looked up again if it changed (others restart it on this machine)."""
        if self.srv is None or proc_cpu(self.srv) is None:
            self.srv = server_pid(self.a.service)
        return self.srv

    def run(self, case):
        """One verified sample of case; measured again (up to 3 times) if the server restarted
        while it ran or the clink sink had to retry: such a sample measures the outage."""
        table, kind, argv, stdin, env, counts = self.spec[case]
        for attempt in range(1, 4):
            if table:
                cols = AGG_COLS if kind == "agg" else RAW_COLS
                order = "sensor_id, window_start" if kind == "agg" else "sensor_id, ts"
                self.ch.recreate(table, cols, "MergeTree ORDER BY (%s)" % order)
            self.ch.quiet()
            up0, t0 = self.ch.uptime(), time.monotonic()
            s = measured(argv, self.tmp, self.pid(), stdin_path=stdin, env=env)
            restarted = self.ch.uptime() < up0 + (time.monotonic() - t0) - 2
            retried = "retrying" in s.log
            if restarted or retried:
                self.restarts += 1
                print("  %s: %s; measuring again (attempt %d)" % (
                    case, "the server restarted during the run" if restarted
                    else "the sink retried an insert", attempt + 1), flush=True)
                continue
            if s.rc != 0:
                sys.exit("%s failed (exit %d):\n%s" % (case, s.rc, s.log[-3000:]))
            if counts:
                r, w = job_counts(s.log)
                if (r, w) != counts:
                    sys.exit("%s: clink read %s and wrote %s records, expected %d and %d:\n%s"
                             % (case, r, w, counts[0], counts[1], s.log[-3000:]))
            if kind == "raw":
                got, want = self.ch.check(RAW_CHECK, table), self.raw_exp + [self.staging_hash]
            elif kind == "agg":
                got, want = self.ch.check(AGG_CHECK, table), self.agg_exp
            if kind and got != want:
                sys.exit("%s: wrong result in %s.%s:\n  got  %s\n  want %s"
                         % (case, DB, table, got, want))
            if table:
                self.ch.q("DROP TABLE %s.%s" % (DB, table))
            return s
        sys.exit("%s: no undisturbed run in 3 attempts (is something restarting ClickHouse?)"
                 % case)


# ---- Kafka --------------------------------------------------------------------------------

def make_topic(brokers, topic, partitions, data_json, n):
    from confluent_kafka import Producer
    sys.path.insert(0, str(REPO / "scripts"))
    from kafka_topic import create_topic  # waits until every partition has a leader
    create_topic(brokers, topic, partitions)
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 50,
                         "batch.num.messages": 10000, "queue.buffering.max.messages": 500000,
                         "enable.idempotence": True})
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    t0 = time.monotonic()
    with open(data_json, "rb") as f:
        for i, value in enumerate(f):
            value = value.rstrip(b"\n")
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
    print("topic %s: %d records in %d partitions, filled in %.1f s"
          % (topic, n, partitions, time.monotonic() - t0), flush=True)


def delete_topic(brokers, topic):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": brokers, "log_level": 3})
    try:
        admin.delete_topics([topic])[topic].result(timeout=30)
    except Exception as e:  # cleanup only: report, don't fail the run
        print("could not delete topic %s: %s" % (topic, e))


# ---- report -------------------------------------------------------------------------------

def med(xs):
    return statistics.median(xs)


def summary(samples, rows, out_rows=None):
    rps = [rows / s.wall for s in samples]
    cpu = [s.cpu / rows * 1e6 for s in samples]
    srv = [s.server_cpu / rows * 1e6 for s in samples if s.server_cpu is not None]
    d = {"rows_per_s": med(rps), "rows_per_s_range": [min(rps), max(rps)],
         "cpu_per_m": med(cpu), "cpu_per_m_range": [min(cpu), max(cpu)],
         "server_cpu_per_m": med(srv) if srv else None,
         "wall_s": med([s.wall for s in samples]), "cpu_s": med([s.cpu for s in samples])}
    if out_rows is not None:
        d["out_rows_per_s"] = med([out_rows / s.wall for s in samples])
    return d


def fmt_rate(x):
    return "%.0fk" % (x / 1e3) if x < 1e7 else "%.1fM" % (x / 1e6)


def machine():
    cpu = "?"
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return "%d x %s, %s, load %s" % (os.cpu_count(), cpu, platform.release(),
                                     " ".join("%.2f" % x for x in os.getloadavg()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--compression", default="lz4", choices=["lz4", "none"])
    ap.add_argument("--no-references", action="store_true",
                    help="only the three main cases (ceiling, file, kafka-tumble)")
    ap.add_argument("--keep", action="store_true",
                    help="keep database clink_bench and the topic at the end")
    ap.add_argument("--line", default="18.16", choices=["18.16", "26.9"],
                    help="the ClickHouse server: Debian's 18.16, or 26.9 (chdb-core), which also "
                         "measures exactly once")
    ap.add_argument("--clink", default=os.environ.get("CLINK_BIN")
                    or str(REPO / "build/src/cli/clink"))
    args = ap.parse_args()
    if args.rows % (SENSORS * 10):
        sys.exit("--rows must be a multiple of 10000 (whole windows of 10 readings per sensor)")

    env = dict(os.environ)
    args.service = "clickhouse"
    if args.line == "26.9":
        args.service = "clickhouse26"
        for k in ("HOST", "PORT", "HTTP_PORT"):
            if env.get("CLINK_CLICKHOUSE26_" + k):
                env["CLINK_CLICKHOUSE_" + k] = env["CLINK_CLICKHOUSE26_" + k]
    missing = [k for k in ("CLINK_KAFKA_BROKERS", "CLINK_CLICKHOUSE_HOST", "CLINK_CLICKHOUSE_PORT",
                           "CLINK_CLICKHOUSE_HTTP_PORT") if not env.get(k)]
    if missing:
        sys.exit('%s not set: eval "$(scripts/services.sh env)"' % ", ".join(missing))
    if not shutil.which("clickhouse-client"):
        sys.exit("clickhouse-client is not installed")
    args.brokers = env["CLINK_KAFKA_BROKERS"]
    ch = CH(env["CLINK_CLICKHOUSE_HOST"], env["CLINK_CLICKHOUSE_HTTP_PORT"],
            env["CLINK_CLICKHOUSE_PORT"], env.get("CLINK_CLICKHOUSE_USER", "default"),
            env.get("CLINK_CLICKHOUSE_PASSWORD", ""))
    srv = server_pid(args.service)
    cache = Path(env.get("CLINK_BENCH_CACHE", "/var/tmp/clink-bench")) / "clickhouse"
    t_start = time.monotonic()

    data_json, raw_exp, agg_exp = ensure_input(cache, args.rows)
    tmp = Path(tempfile.mkdtemp(prefix="clink-chbench."))
    topic = "bench_ch_%d_%d" % (int(time.time()), os.getpid())
    topic_made = False
    try:
        clink = tmp / "clink"
        shutil.copy2(args.clink, clink)
        args.clink = str(clink)
        sha = hashlib.sha256(clink.read_bytes()).hexdigest()[:12]
        version = ch.q("SELECT version()").strip()
        print("machine: %s" % machine())
        print("clink: %s (sha256 %s), ClickHouse %s (server pid %s), %d rows, %d runs, "
              "batch_rows %d, compression %s, --parallelism %d"
              % (args.clink, sha, version, srv, args.rows, args.runs, args.batch_rows,
                 args.compression, args.parallelism), flush=True)

        ch.q("CREATE DATABASE IF NOT EXISTS %s" % DB)
        ch.recreate("staging", RAW_COLS, "Log")
        subprocess.run(ch.client("INSERT INTO %s.staging FORMAT JSONEachRow" % DB),
                       stdin=open(data_json, "rb"), check=True)
        got = ch.check(RAW_CHECK, "staging")
        if got[:-1] != raw_exp:
            sys.exit("ClickHouse's parse of %s disagrees with the generator:\n  got  %s\n  want %s"
                     % (data_json, got[:-1], raw_exp))
        native = tmp / "data.native"
        with open(native, "wb") as f:
            subprocess.run(ch.client("SELECT * FROM %s.staging FORMAT Native" % DB), stdout=f,
                           check=True)
        print("data: %s (%.1f MB), data.native from ClickHouse (%.1f MB)"
              % (data_json, data_json.stat().st_size / 1e6, native.stat().st_size / 1e6),
              flush=True)
        for p in (data_json, native):  # warm the page cache for everyone alike
            with open(p, "rb") as f:
                while f.read(1 << 22):
                    pass

        topic_made = True
        make_topic(args.brokers, topic, args.partitions, data_json, args.rows)

        b = Bench(args, ch, srv, tmp, data_json, native, raw_exp, agg_exp, topic, got[-1])
        cases = [c for c in CASES if not (args.no_references and c[2])
                 and (args.line == "26.9" or c[0] not in EOS_CASES)]
        samples = {c[0]: [] for c in cases}
        startup = []
        for r in range(args.runs):
            parts = []
            for name, _, _ in cases:
                s = b.run(name)
                samples[name].append(s)
                extra = ""
                if getattr(s, "inserts", None) is not None:
                    extra = ", %d inserts" % s.inserts
                parts.append("%s %.2f s wall %.2f CPU-s%s" % (name, s.wall, s.cpu, extra))
            st = measured(ch.client("SELECT 1"), tmp, None)
            startup.append(st.cpu)
            print("run %d: %s; client start-up (SELECT 1) %.3f CPU-s" % (r + 1, "; ".join(parts),
                                                                          st.cpu), flush=True)

        summ = {}
        for name, _, _ in cases:
            summ[name] = summary(samples[name], args.rows,
                                 agg_exp[0] if name.startswith("kafka") else None)
        ceil = summ["ceiling"]
        print()
        print("%d rows, median of %d runs [min..max]; CPU of the inserting process; server CPU "
              "from /proc over the same interval" % (args.rows, args.runs))
        print()
        print("| case | rows/s (wall) | CPU-s per 1M rows | server CPU-s per 1M rows | "
              "rows/s ÷ ceiling | CPU ÷ ceiling |")
        print("|---|---|---|---|---|---|")
        for name, desc, _ in cases:
            s = summ[name]
            rate = "%s [%s..%s]" % (fmt_rate(s["rows_per_s"]), fmt_rate(s["rows_per_s_range"][0]),
                                    fmt_rate(s["rows_per_s_range"][1]))
            if "out_rows_per_s" in s:
                rate += " in, %s out" % fmt_rate(s["out_rows_per_s"])
            print("| %s: %s | %s | %.3f [%.3f..%.3f] | %s | %.2f | %.2f |"
                  % (name, desc, rate, s["cpu_per_m"], s["cpu_per_m_range"][0],
                     s["cpu_per_m_range"][1],
                     "%.3f" % s["server_cpu_per_m"] if s["server_cpu_per_m"] is not None else "—",
                     s["rows_per_s"] / ceil["rows_per_s"], s["cpu_per_m"] / ceil["cpu_per_m"]))
        print()
        print("clickhouse-client start-up alone (--query 'SELECT 1'): %.3f CPU-s [%.3f..%.3f], "
              "part of the ceiling's CPU" % (med(startup), min(startup), max(startup)))
        if "file-bh" in summ:
            print("file sink's own CPU (file − file-bh): %.3f CPU-s per 1M rows"
                  % (summ["file"]["cpu_per_m"] - summ["file-bh"]["cpu_per_m"]))
        if "kafka-bh" in summ:
            print("kafka-tumble sink's own CPU (kafka-tumble − kafka-bh): %.3f CPU-s per 1M input "
                  "rows (%d output rows)" % (summ["kafka-tumble"]["cpu_per_m"]
                                             - summ["kafka-bh"]["cpu_per_m"], agg_exp[0]))
        if "file-eos-1s" in summ:
            print("exactly once ÷ at least once, both with checkpoints every 1 s: CPU %.2f, "
                  "rows/s %.2f (aim: CPU ≤ 1.25)"
                  % (summ["file-eos-1s"]["cpu_per_m"] / summ["file-1s"]["cpu_per_m"],
                     summ["file-eos-1s"]["rows_per_s"] / summ["file-1s"]["rows_per_s"]))
        if b.restarts:
            print("%d sample(s) measured again: the server restarted or the sink retried "
                  "during them (someone else restarting ClickHouse)" % b.restarts)
        print("verified: count() and column sums of every insert, and bit-identical raw rows "
              "(sum of cityHash64 of all columns = the staging table's)")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = cache / ("results-%s.json" % stamp)
        out.write_text(json.dumps({
            "machine": machine(), "clink_sha256": sha, "clickhouse": version,
            "remeasured": b.restarts, "args": {
                k: v for k, v in vars(args).items()},
            "summary": summ, "client_startup_cpu": startup,
            "samples": {k: [{"cpu": s.cpu, "wall": s.wall, "server_cpu": s.server_cpu,
                             "inserts": getattr(s, "inserts", None)} for s in v]
                        for k, v in samples.items()}}, indent=1))
        print("results: %s; total %.0f s" % (out, time.monotonic() - t_start))
    finally:
        if not args.keep:
            if topic_made:
                delete_topic(args.brokers, topic)
            try:
                ch.q("DROP DATABASE IF EXISTS %s" % DB)
            except (SystemExit, OSError) as e:
                print("could not drop database %s: %s" % (DB, e))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
