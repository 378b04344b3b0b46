#!/usr/bin/env python3
"""Engine benchmarks (issue 3): events per CPU-second side by side with DuckDB, process start to
first printed row, and memory per open window group. Run it through bench/engine/run.sh.

DESIGN
  Everything runs on this machine, one process at a time, no services and no network.

  0. Setup. The clink binary is copied into the cache directory first, so a rebuild of build/
     by someone else mid-run cannot mix two binaries into one set of figures. The input is
     generated once into $CLINK_BENCH_CACHE (default /var/tmp/clink-bench, outside the repo):
     N rows (default 5,000,000) of a 6-field bid record as NDJSON, a pure function of the row
     number (no RNG, no clock), so every run and every machine reads the same bytes. It is read
     once before measuring so both engines start from a warm page cache.

  1. Throughput, events per CPU-second = input rows / (user + sys CPU of the engine process).
     Every engine process runs under GNU time (/usr/bin/time -f '%e %U %S %M' -o FILE); CPU is
     the rusage os.wait4 returns for that process (the engine plus the ~1 ms of time itself, at
     microsecond resolution), peak RSS is time's %M. Cases, each R times, clink and DuckDB runs
     interleaved so drift hits both alike:
       file-filter   file NDJSON -> WHERE price > 50000 + 5-column projection -> blackhole
       file-tumble   file NDJSON -> TUMBLE 60 s, COUNT(*) and SUM(price) per auction
                     (10,000 keys) -> blackhole
       file-scan     file NDJSON -> WHERE price < 0 (no row passes) -> blackhole: the cost of
                     reading and decoding alone
       datagen-filter, datagen-tumble, datagen-scan   the same queries over the datagen
                     connector (rows=N, same columns and value ranges), so JSON decoding drops
                     out; clink only. datagen's own cost is what datagen-scan measures
     DuckDB (the test venv's duckdb, threads=1) runs the same query over the same file with
     read_json and explicit columns, in a fresh python process per run; its result goes into an
     aggregate over every projected column (count, sums, max) — DuckDB's cheapest "sink" that
     still computes each output value. Its whole-process CPU (interpreter and import included,
     the same way clink is measured) gives the ratio; its in-process query CPU is printed too.
     The output row counts of clink (the "[job] finished: … written" line) and DuckDB must be
     equal, or the run is reported as a mismatch and exits 1.

  2. Start-up: wall time from just before Popen to the first byte read from the pipe on
     clink's stdout, for `clink run -e "CREATE TABLE … datagen …; SELECT …"`, median of 20
     runs after 2 unmeasured ones; `clink version` measured the same way gives exec + dynamic
     loading alone, /bin/echo the floor of the method (fork + exec + pipe from python).

  3. Memory per open window group: datagen, unbounded (rows=-1), key column a sequence wrapping
     after K values, event times random in [0, 1000] ms, TUMBLE of 1 DAY: the watermark never
     passes the window end, so nothing fires and the state only grows to K groups. After a
     fixed time the process gets SIGINT (stop reading; the window stays open, "0 written" is
     checked) and the "stopped: N records read" line must show N >= 2K (every key seen); too
     few and that run is repeated with twice the time. Peak RSS comes from GNU time's %M, never
     from python's own rusage: ru_maxrss of a child forked from python starts at python's RSS
     (Linux carries the pre-exec image's high-water mark across exec), ~10 MB here, which would
     swallow the 1-key baseline. bytes/group = (peak(K) - peak(1)) / K.

  A benchmark, never a timed test: nothing here fails on a number, only on a wrong answer.
"""

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GNU_TIME = "/usr/bin/time"
DATA_VERSION = "v1"  # bump when bid_lines changes, so a stale cached file is not reused
CHANNELS = ["Google", "Facebook", "Baidu", "Apple", "Bing"]
BASE_TS = 1772352000000  # 2026-03-01T08:00:00Z, a multiple of 60,000 ms
KEYS = 10000

# ---- the input ----------------------------------------------------------------------------


def bid_lines(lo, hi):
    """Rows lo..hi-1: auction in [0, 10000), bidder in [0, 100000), price in [100, 100100),
    channel one of 5, a url of ~45 bytes, date_time = BASE_TS + i (1 ms apart, in order)."""
    out = []
    for i in range(lo, hi):
        h = (i * 2654435761) & 0xFFFFFFFF
        g = ((i * 40503 + 12345) * 2246822519) & 0xFFFFFFFF
        out.append('{"auction":%d,"bidder":%d,"price":%d,"channel":"%s",'
                   '"url":"https://www.nexmark.com/item.htm?id=%d","date_time":%d}\n'
                   % (h % KEYS, g % 100000, 100 + (g >> 8) % 100000, CHANNELS[i % 5],
                      g % 1000003, BASE_TS + i))
    return "".join(out)


def ensure_input(cache, rows):
    path = cache / ("bids-%s-%d.json" % (DATA_VERSION, rows))
    if path.exists():
        return path, False
    t0 = time.monotonic()
    tmp = path.with_suffix(".tmp%d" % os.getpid())
    with open(tmp, "w") as f:
        for lo in range(0, rows, 100000):
            f.write(bid_lines(lo, min(rows, lo + 100000)))
    os.replace(tmp, path)
    print("generated %s (%d rows, %.0f MB) in %.1f s"
          % (path, rows, path.stat().st_size / 1e6, time.monotonic() - t0), flush=True)
    return path, True


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


# ---- the queries --------------------------------------------------------------------------

BID_COLUMNS = ("auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, "
               "date_time TIMESTAMP(3)")
FILTER_SINK = ("CREATE TABLE out (auction BIGINT, bidder BIGINT, price_eur BIGINT, "
               "channel VARCHAR, date_time TIMESTAMP(3)) WITH (connector = 'blackhole');\n"
               "INSERT INTO out SELECT auction, bidder, price * 908 / 1000 AS price_eur, "
               "channel, date_time FROM bids WHERE price > 50000;\n")
SCAN_SINK = ("CREATE TABLE out (auction BIGINT) WITH (connector = 'blackhole');\n"
             "INSERT INTO out SELECT auction FROM bids WHERE price < 0;\n")
TUMBLE_SINK = ("CREATE TABLE out (auction BIGINT, window_start TIMESTAMP(3), bids BIGINT, "
               "total BIGINT) WITH (connector = 'blackhole');\n"
               "INSERT INTO out SELECT auction, window_start, COUNT(*) AS bids, "
               "SUM(price) AS total FROM bids "
               "GROUP BY TUMBLE(date_time, INTERVAL '60' SECOND), auction;\n")


def file_source(path):
    return ("CREATE TABLE bids (%s) WITH (connector = 'file', path = '%s', format = 'json', "
            "event_time_column = 'date_time', watermark_lag_ms = '1000');\n" % (BID_COLUMNS, path))


def datagen_source(rows):
    return ("CREATE TABLE bids (%s) WITH (connector = 'datagen', rows = '%d', "
            "event_time_column = 'date_time', watermark_lag_ms = '1000', "
            "fields.auction.end = '%d', fields.bidder.end = '99999', "
            "fields.price.start = '100', fields.price.end = '100099', "
            "fields.channel.kind = 'choice', fields.channel.values = '%s', "
            "fields.url.length = '45', fields.date_time.start = '%d');\n"
            % (BID_COLUMNS, rows, KEYS - 1, ",".join(CHANNELS), BASE_TS))


def duck_src(path):
    return ("read_json('%s', format = 'newline_delimited', columns = {auction: 'BIGINT', "
            "bidder: 'BIGINT', price: 'BIGINT', channel: 'VARCHAR', url: 'VARCHAR', "
            "date_time: 'BIGINT'})" % path)


def duck_filter(path):
    return ("SELECT count(*), sum(auction), sum(bidder), sum(price_eur), max(channel), "
            "max(date_time) FROM (SELECT auction, bidder, price * 908 // 1000 AS price_eur, "
            "channel, date_time FROM %s WHERE price > 50000)" % duck_src(path))


def duck_scan(path):
    return "SELECT count(*), sum(auction) FROM %s WHERE price < 0" % duck_src(path)


def duck_tumble(path):
    return ("SELECT count(*), sum(bids), sum(total), max(window_start) FROM ("
            "SELECT auction, date_time // 60000 * 60000 AS window_start, count(*) AS bids, "
            "sum(price) AS total FROM %s GROUP BY auction, window_start)" % duck_src(path))


DUCK_CHILD = r"""
import json, resource, sys, time
import duckdb
con = duckdb.connect(config={"threads": 1})
con.execute("SET enable_progress_bar = false")
r0 = resource.getrusage(resource.RUSAGE_SELF)
rows = con.execute(sys.argv[1]).fetchall()
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"result": [str(v) for v in rows[0]], "query_cpu": cpu,
                  "version": duckdb.__version__}))
"""

# ---- measuring a process ------------------------------------------------------------------


class Measured:
    def __init__(self, rc, cpu, wall, maxrss_kb, stdout, stderr):
        self.rc, self.cpu, self.wall, self.maxrss_kb = rc, cpu, wall, maxrss_kb
        self.stdout, self.stderr = stdout, stderr


def spawn_timed(argv, tmpdir):
    """Starts argv under GNU time, its stdout and stderr going to files (pipes would need a
    reader, and Popen.communicate reaps the child before wait4 could get its rusage)."""
    d = Path(tmpdir)
    files = [d / "time.out", d / "stdout", d / "stderr"]
    files[0].unlink(missing_ok=True)
    with open(files[1], "w") as out, open(files[2], "w") as err:
        proc = subprocess.Popen([GNU_TIME, "-f", "%e %U %S %M", "-o", str(files[0]), "--"] + argv,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    return proc, files


def reap_timed(proc, files, t0):
    """Waits for the GNU time wrapper; CPU from wait4 (wrapper + engine), RSS from time's %M."""
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    fields = files[0].read_text().strip().splitlines()[-1].split()
    return Measured(proc.returncode, ru.ru_utime + ru.ru_stime, wall, int(fields[3]),
                    files[1].read_text(), files[2].read_text())


def run_timed(argv, tmpdir):
    t0 = time.perf_counter()
    proc, tfile = spawn_timed(argv, tmpdir)
    return reap_timed(proc, tfile, t0)


def job_line(stderr):
    m = re.search(r"\[job\] (finished|stopped): (\d+) records read, (\d+) written", stderr)
    if not m:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3))


# ---- 1. throughput ------------------------------------------------------------------------


def clink_case(clink, sql, parallelism, tmpdir, rows):
    m = run_timed([clink, "run", "--parallelism", str(parallelism), "-e", sql], tmpdir)
    job = job_line(m.stderr)
    if m.rc != 0 or not job or job[0] != "finished" or job[1] != rows:
        sys.exit("clink run failed (exit %d), expected %d rows read:\n%s" % (m.rc, rows, m.stderr))
    return {"cpu": m.cpu, "wall": m.wall, "rss_kb": m.maxrss_kb, "written": job[2]}


def duck_case(python, query, tmpdir):
    m = run_timed([python, "-c", DUCK_CHILD, query], tmpdir)
    if m.rc != 0:
        sys.exit("duckdb run failed (exit %d):\n%s" % (m.rc, m.stderr))
    res = json.loads(m.stdout.strip().splitlines()[-1])
    return {"cpu": m.cpu, "wall": m.wall, "rss_kb": m.maxrss_kb, "query_cpu": res["query_cpu"],
            "written": int(res["result"][0]), "result": res["result"],
            "version": res["version"]}


def summarise(samples, rows):
    cpus = sorted(s["cpu"] for s in samples)
    med = statistics.median(cpus)
    out = {"runs": len(samples), "cpu_median": med, "cpu_min": cpus[0], "cpu_max": cpus[-1],
           "eps_median": rows / med, "eps_best": rows / cpus[0], "eps_worst": rows / cpus[-1],
           "wall_median": statistics.median(s["wall"] for s in samples),
           "rss_kb_max": max(s["rss_kb"] for s in samples), "written": samples[0]["written"]}
    if "query_cpu" in samples[0]:
        q = statistics.median(s["query_cpu"] for s in samples)
        out["query_cpu_median"] = q
        out["query_eps_median"] = rows / q
    return out


# ---- 2. start-up --------------------------------------------------------------------------

STARTUP_SQL = ("CREATE TABLE g (id BIGINT, price BIGINT) WITH (connector = 'datagen', "
               "rows = '1000', fields.id.kind = 'sequence');\n"
               "SELECT id, price FROM g WHERE price > 10;")


def first_byte(argv):
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    b = os.read(proc.stdout.fileno(), 1)
    t1 = time.perf_counter()
    while os.read(proc.stdout.fileno(), 1 << 16):
        pass
    proc.wait()
    t2 = time.perf_counter()
    proc.stdout.close()
    if not b or proc.returncode != 0:
        sys.exit("%s printed nothing or failed (exit %s)" % (argv[0], proc.returncode))
    return (t1 - t0) * 1e3, (t2 - t0) * 1e3


def startup(clink, n):
    res = {}
    for name, argv in (("clink", [clink, "run", "-e", STARTUP_SQL]),
                       ("clink-version", [clink, "version"]),
                       ("echo", ["/bin/echo", "x"])):
        for _ in range(2):
            first_byte(argv)
        xs = [first_byte(argv) for _ in range(n)]
        fb = sorted(x[0] for x in xs)
        res[name] = {"runs": n, "first_byte_ms_median": statistics.median(fb),
                     "first_byte_ms_min": fb[0], "first_byte_ms_max": fb[-1],
                     "exit_ms_median": statistics.median(x[1] for x in xs)}
    return res


# ---- 3. memory per open window group -------------------------------------------------------


def memory_sql(keys):
    return ("CREATE TABLE g (k BIGINT, ts TIMESTAMP(3)) WITH (connector = 'datagen', "
            "rows = '-1', event_time_column = 'ts', "
            "fields.k.kind = 'sequence', fields.k.start = '0', fields.k.end = '%d', "
            "fields.ts.kind = 'random', fields.ts.start = '0', fields.ts.end = '1000');\n"
            "CREATE TABLE bh (k BIGINT, c BIGINT) WITH (connector = 'blackhole');\n"
            "INSERT INTO bh SELECT k, COUNT(*) AS c FROM g "
            "GROUP BY TUMBLE(ts, INTERVAL '1' DAY), k;\n" % (keys - 1))


def child_of(pid, deadline):
    while time.monotonic() < deadline:
        try:
            kids = Path("/proc/%d/task/%d/children" % (pid, pid)).read_text().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.001)
    sys.exit("GNU time did not start clink")


def memory_once(clink, keys, seconds, tmpdir):
    for _ in range(4):
        t0 = time.perf_counter()
        proc, tfile = spawn_timed([clink, "run", "-e", memory_sql(keys)], tmpdir)
        pid = child_of(proc.pid, time.monotonic() + 10)  # GNU time ignores SIGINT itself
        time.sleep(seconds)
        os.kill(pid, signal.SIGINT)
        m = reap_timed(proc, tfile, t0)
        job = job_line(m.stderr)
        if m.rc != 0 or not job or job[0] != "stopped" or job[2] != 0:
            sys.exit("memory run (%d keys) did not stop cleanly with nothing fired (exit %d):\n%s"
                     % (keys, m.rc, m.stderr))
        if job[1] >= 2 * keys:
            return {"keys": keys, "rss_kb": m.maxrss_kb, "records_read": job[1],
                    "seconds": seconds}
        seconds *= 2
    sys.exit("memory run (%d keys) read only %d records" % (keys, job[1]))


# ---- main ---------------------------------------------------------------------------------


def machine():
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    return {"nproc": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem_kb / 2**20, 1),
            "kernel": platform.release()}


def git_head():
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("+dirty src" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def fmt_m(eps):
    return "%.2f M" % (eps / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clink", default=str(REPO / "build" / "src" / "cli" / "clink"))
    ap.add_argument("--python", default=os.environ.get("CLINK_PYTHON", sys.executable),
                    help="a python with duckdb (the test venv's)")
    ap.add_argument("--cache", default=os.environ.get("CLINK_BENCH_CACHE",
                                                      "/var/tmp/clink-bench"))
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=5, help="runs per throughput case")
    ap.add_argument("--startup-runs", type=int, default=20)
    ap.add_argument("--memory-runs", type=int, default=2)
    ap.add_argument("--memory-keys", default="1000000,2000000",
                    help="comma-separated group counts, each against a 1-key baseline")
    ap.add_argument("--memory-seconds", type=float, default=1.0)
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--only", default="throughput,startup,memory")
    args = ap.parse_args()
    only = set(args.only.split(","))

    if not os.access(GNU_TIME, os.X_OK):
        sys.exit("GNU time is not installed at %s (apt-get install time)" % GNU_TIME)
    if not os.access(args.clink, os.X_OK):
        sys.exit("no clink binary at %s (scripts/build.sh release)" % args.clink)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()

    with tempfile.TemporaryDirectory(prefix="clink-bench-", dir=cache) as tmpdir:
        clink = str(Path(tmpdir) / "clink")
        shutil.copy2(args.clink, clink)
        sha = hashlib.sha256(Path(clink).read_bytes()).hexdigest()[:12]
        report = {"machine": machine(), "git": git_head(), "clink_sha256": sha,
                  "clink_mtime": time.strftime("%Y-%m-%d %H:%M:%S",
                                               time.localtime(os.path.getmtime(args.clink))),
                  "rows": args.rows, "parallelism": args.parallelism,
                  "when": time.strftime("%Y-%m-%d %H:%M:%S")}
        mc = report["machine"]
        print("machine: %d CPUs, %s, %.1f GiB RAM, Linux %s"
              % (mc["nproc"], mc["cpu"], mc["mem_gib"], mc["kernel"]))
        print("clink: %s (sha256 %s, built %s), git %s, --parallelism %d"
              % (args.clink, sha, report["clink_mtime"], report["git"], args.parallelism))
        mismatches = []

        if "throughput" in only:
            path, _ = ensure_input(cache, args.rows)
            warm(path)
            report["input"] = {"path": str(path), "bytes": path.stat().st_size}
            cases = [
                ("file-filter", file_source(path) + FILTER_SINK, duck_filter(path)),
                ("file-tumble", file_source(path) + TUMBLE_SINK, duck_tumble(path)),
                ("file-scan", file_source(path) + SCAN_SINK, duck_scan(path)),
                ("datagen-filter", datagen_source(args.rows) + FILTER_SINK, None),
                ("datagen-tumble", datagen_source(args.rows) + TUMBLE_SINK, None),
                ("datagen-scan", datagen_source(args.rows) + SCAN_SINK, None),
            ]
            report["throughput"] = {}
            for name, sql, dq in cases:
                cs, ds = [], []
                for _ in range(args.runs):
                    cs.append(clink_case(clink, sql, args.parallelism, tmpdir, args.rows))
                    if dq:
                        ds.append(duck_case(args.python, dq, tmpdir))
                entry = {"clink": summarise(cs, args.rows), "clink_sql": sql}
                line = "%-15s clink %s ev/CPU-s (CPU %.2f s [%.2f..%.2f], wall %.2f s, " \
                       "%d rows out, RSS %.0f MB)" % (
                           name, fmt_m(entry["clink"]["eps_median"]), entry["clink"]["cpu_median"],
                           entry["clink"]["cpu_min"], entry["clink"]["cpu_max"],
                           entry["clink"]["wall_median"], entry["clink"]["written"],
                           entry["clink"]["rss_kb_max"] / 1024)
                if dq:
                    d = summarise(ds, args.rows)
                    entry["duckdb"] = d
                    entry["duckdb_sql"] = dq
                    entry["duckdb_version"] = ds[0]["version"]
                    entry["ratio"] = entry["clink"]["eps_median"] / d["eps_median"]
                    entry["ratio_query_only"] = entry["clink"]["eps_median"] / d["query_eps_median"]
                    line += "\n%-15s duckdb %s ev/CPU-s (CPU %.2f s [%.2f..%.2f], query only " \
                            "%.2f s, wall %.2f s, %d rows out, RSS %.0f MB)\n%-15s clink/duckdb " \
                            "%.2f (%.2f against query-only CPU)" % (
                                "", fmt_m(d["eps_median"]), d["cpu_median"], d["cpu_min"],
                                d["cpu_max"], d["query_cpu_median"], d["wall_median"],
                                d["written"], d["rss_kb_max"] / 1024, "", entry["ratio"],
                                entry["ratio_query_only"])
                    if d["written"] != entry["clink"]["written"]:
                        mismatches.append("%s: clink wrote %d rows, duckdb %d"
                                          % (name, entry["clink"]["written"], d["written"]))
                report["throughput"][name] = entry
                print(line, flush=True)

        if "startup" in only:
            s = startup(clink, args.startup_runs)
            report["startup"] = s
            print("start-up to first stdout byte (median [min..max] of %d runs):" % args.startup_runs)
            for name, what in (("clink", "clink run -e 'datagen ... SELECT'"),
                               ("clink-version", "clink version (exec + dynamic loading)"),
                               ("echo", "/bin/echo x (floor of the method)")):
                x = s[name]
                print("  %-40s %6.2f ms [%.2f..%.2f], exit %.2f ms"
                      % (what, x["first_byte_ms_median"], x["first_byte_ms_min"],
                         x["first_byte_ms_max"], x["exit_ms_median"]))
            print("  aim <= 10 ms: %s" % ("met" if s["clink"]["first_byte_ms_median"] <= 10
                                        else "NOT met"), flush=True)

        if "memory" in only:
            keys_list = [int(k) for k in args.memory_keys.split(",")]
            runs = {k: [] for k in [1] + keys_list}
            for _ in range(args.memory_runs):
                for k in runs:
                    runs[k].append(memory_once(clink, k, args.memory_seconds, tmpdir))
            base = [r["rss_kb"] for r in runs[1]]
            mem = {"baseline_rss_kb": base, "groups": {}}
            print("memory: 1-key baseline peak RSS %s KB" % base)
            for k in keys_list:
                peaks = [r["rss_kb"] for r in runs[k]]
                per = sorted((p - statistics.median(base)) * 1024 / k for p in peaks)
                mem["groups"][k] = {"rss_kb": peaks, "bytes_per_group": per,
                                    "records_read": [r["records_read"] for r in runs[k]]}
                print("memory: %d groups: peak RSS %s KB -> %s bytes/group (aim < 64: %s)"
                      % (k, peaks, ", ".join("%.1f" % x for x in per),
                         "met" if max(per) < 64 else "NOT met"), flush=True)
            report["memory"] = mem

        report["elapsed_s"] = round(time.monotonic() - t_start, 1)
        print("elapsed: %.1f s" % report["elapsed_s"])
        out = cache / ("results-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
        out.write_text(json.dumps(report, indent=1, default=str))
        print("results: %s" % out)
        if mismatches:
            print("MISMATCH: " + "; ".join(mismatches), file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
