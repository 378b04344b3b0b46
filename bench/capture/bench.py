#!/usr/bin/env python3
"""The flight recorder's cost (issue 15): CPU per event with capture off, on, and on with a
sink that gives an account, side by side. Run it through bench/capture/run.sh.

DESIGN
  Two pipeline shapes over the datagen connector (the bid columns of bench/engine, rows=N, so
  no JSON decoding and no broker in the figure):
    q0       Nexmark q0: every column passed through (a projection) into the sink
    window   TUMBLE 10 s, COUNT(*) and SUM(price) per auction (10,000 keys) into the sink
  Two sinks: blackhole (its interval evidence has no account), and ClickHouse 26.9 (the
  evidence's account: the destination read once at open, the INSERT ledger per interval).
  Two modes per pair, both with --checkpoint-dir and the same --checkpoint-interval-ms:
    off      no --capture-dir
    on       --capture-dir with the default bound (--capture-records 10000): every operator
             subtask's input per interval as a .cap file, op.json, and each sink subtask's
             epoch-<N>.sink.json
  The binary is copied first (a rebuild of build/ mid-run cannot mix two binaries).
  CPU = user + sys of the clink process (os.wait4's rusage), divided by the N input rows: ns per
  event. Each case runs R times, the modes interleaved so drift hits both alike; the median is
  the figure, and the ratio on/off is printed per shape and sink. The ClickHouse server's own
  CPU is not counted (it is the same work in both modes). The output row count ("[job]
  finished: … written") must be the same in both modes, and with capture on every completed
  checkpoint must have its sink.json, or the run exits 1. A benchmark: nothing fails on a number.
"""

import argparse
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
import uuid
from pathlib import Path

KEYS = 10000
BASE_TS = 1772352000000
CHANNELS = "Google,Facebook,Baidu,Apple,Bing"
BID = ("auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, "
       "date_time TIMESTAMP(3)")


def source(rows):
    return ("CREATE TABLE bids (%s) WITH (connector = 'datagen', rows = '%d', "
            "event_time_column = 'date_time', watermark_lag_ms = '1000', "
            "fields.auction.end = '%d', fields.bidder.end = '99999', "
            "fields.price.start = '100', fields.price.end = '100099', "
            "fields.channel.kind = 'choice', fields.channel.values = '%s', "
            "fields.url.length = '45', fields.date_time.start = '%d');\n"
            % (BID, rows, KEYS - 1, CHANNELS, BASE_TS))


SHAPES = {
    "q0": ("auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, "
           "date_time BIGINT",
           "auction Int64, bidder Int64, price Int64, channel String, url String, date_time Int64",
           "INSERT INTO out SELECT auction, bidder, price, channel, url, date_time FROM bids;\n"),
    "window": ("auction BIGINT, window_start BIGINT, bids BIGINT, total BIGINT",
               "auction Int64, window_start Int64, bids Int64, total Int64",
               "INSERT INTO out SELECT auction, window_start, COUNT(*) AS bids, "
               "SUM(price) AS total FROM bids "
               "GROUP BY TUMBLE(date_time, INTERVAL '10' SECOND), auction;\n"),
}


def ch_http(args, sql):
    import urllib.request
    req = urllib.request.Request("http://%s:%d/" % (args.ch_host, args.ch_http_port),
                                 data=sql.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def script(shape, sink, rows, args, table):
    cols, ch_cols, insert = SHAPES[shape]
    if sink == "blackhole":
        with_ = "connector = 'blackhole'"
    else:
        with_ = ("connector = 'clickhouse', host = '%s', port = '%d', table = '%s', "
                 "user = '%s', password = '%s'"
                 % (args.ch_host, args.ch_port, table, args.ch_user, args.ch_password))
    return source(rows) + "CREATE TABLE out (%s) WITH (%s);\n" % (cols, with_) + insert


def run_once(args, shape, sink, mode, tmp):
    d = Path(tempfile.mkdtemp(dir=tmp))
    table = None
    if sink == "clickhouse":
        table = "bench_capture_%s" % uuid.uuid4().hex[:10]
        ch_http(args, "CREATE TABLE default.%s (%s) ENGINE = MergeTree ORDER BY tuple()"
                % (table, SHAPES[shape][1]))
    argv = [args.clink, "run", "-e", script(shape, sink, args.rows, args, table),
            "--checkpoint-dir", str(d / "ckpt"), "--checkpoint-interval-ms",
            str(args.interval), "--parallelism", str(args.parallelism)]
    if mode == "on":
        argv += ["--capture-dir", str(d / "cap")]
    env = dict(os.environ)
    env.pop("CLINK_FAULT", None)
    with open(d / "stderr", "w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, env=env)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    stderr = (d / "stderr").read_text()
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        sys.exit("clink failed (%s %s %s):\n%s" % (shape, sink, mode, stderr[-3000:]))
    m = re.search(r"\[job\] finished: (\d+) records read, (\d+) written, .* (\d+) checkpoints",
                  stderr)
    if not m:
        sys.exit("no [job] finished line:\n" + stderr[-3000:])
    read, written, ckpts = int(m.group(1)), int(m.group(2)), int(m.group(3))
    evidence = caps = 0
    if mode == "on":
        evidence = len(list((d / "cap").glob("op-*/subtask-*/epoch-*.sink.json")))
        caps = sum(p.stat().st_size for p in (d / "cap").rglob("*.cap"))
        if evidence < ckpts * args.parallelism:
            sys.exit("%d checkpoints completed and %d sink.json files were written (%s %s)"
                     % (ckpts, evidence, shape, sink))
    if table:
        ch_http(args, "DROP TABLE default.%s" % table)
    shutil.rmtree(d, ignore_errors=True)
    return {"cpu": ru.ru_utime + ru.ru_stime, "wall": wall, "read": read, "written": written,
            "checkpoints": ckpts, "sink_json": evidence, "cap_bytes": caps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clink", required=True)
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--interval", type=int, default=1000, help="--checkpoint-interval-ms")
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--only", default="q0,window")
    ap.add_argument("--sinks", default="blackhole,clickhouse")
    ap.add_argument("--ch-host", default=os.environ.get("CLINK_CLICKHOUSE26_HOST", "127.0.0.1"))
    ap.add_argument("--ch-port", type=int, default=int(os.environ.get("CLINK_CLICKHOUSE26_PORT", "21300")))
    ap.add_argument("--ch-http-port", type=int,
                    default=int(os.environ.get("CLINK_CLICKHOUSE26_HTTP_PORT", "21323")))
    ap.add_argument("--ch-user", default=os.environ.get("CLINK_CLICKHOUSE_USER", "clink"))
    ap.add_argument("--ch-password", default=os.environ.get("CLINK_CLICKHOUSE_PASSWORD", "clink"))
    ap.add_argument("--out", default=os.environ.get("CLINK_BENCH_CACHE", "/var/tmp/clink-bench"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="capture-", dir=out)
    # a private copy: a rebuild of build/ mid-run cannot mix two binaries into one set of figures
    binary = Path(tmp) / "clink"
    shutil.copy2(args.clink, binary)
    args.clink = str(binary)
    try:
        load = os.getloadavg()
        print("clink %s, %d rows, checkpoint every %d ms, parallelism %d, %d runs; load %.1f %.1f %.1f"
              % (args.clink, args.rows, args.interval, args.parallelism, args.runs, *load),
              flush=True)
        results = {}
        # written after every case, so a run the timeout stops keeps what it measured
        path = out / ("capture-results-%s.json" % time.strftime("%Y%m%d-%H%M%S"))
        for shape in args.only.split(","):
            for sink in args.sinks.split(","):
                runs = {"off": [], "on": []}
                for _ in range(args.runs):
                    for mode in ("off", "on"):
                        runs[mode].append(run_once(args, shape, sink, mode, tmp))
                if {r["written"] for r in runs["off"]} != {r["written"] for r in runs["on"]}:
                    sys.exit("%s %s: rows written differ: %s" % (shape, sink, runs))
                med = {m: statistics.median(r["cpu"] for r in runs[m]) for m in runs}
                ns = {m: med[m] / args.rows * 1e9 for m in med}
                results["%s/%s" % (shape, sink)] = {"runs": runs, "ns_per_event": ns}
                print("%-7s %-10s  off %7.1f ns/event  on %7.1f ns/event  on/off %.3f  "
                      "(%d checkpoints, %d written, .cap %.1f MB)"
                      % (shape, sink, ns["off"], ns["on"], ns["on"] / ns["off"],
                         runs["on"][0]["checkpoints"], runs["on"][0]["written"],
                         runs["on"][0]["cap_bytes"] / 1e6), flush=True)
                path.write_text(json.dumps({"args": vars(args), "machine": platform.platform(),
                                            "load": load, "results": results}, indent=1))
        print("results: %s" % path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
