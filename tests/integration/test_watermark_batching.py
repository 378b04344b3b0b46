"""Whether a record is late is a function of its partition's record order, never of batching.

A source used to move its watermark after each poll batch (up to 1,024 records, or one Kafka
fetch), so a record behind a window's end was counted or dropped depending on where its batch
ended: the same input gave different counts at different batch sizes. Now the watermark moves
after every record (rows carry the watermark they arrived under, runtime/batch.h).

The expectation is computed here, in Python, by a per-record model of the watermark as Flink
defines it (watermark = largest event time so far - lag, moved after each record; a window
fires when end + allowed lateness <= watermark; a record whose windows have all fired is late),
never from clink's output. The same input runs through:
  - the file source with poll_rows 1, 7 and 1024, for TUMBLE, HOP and SESSION with a lag and
    allowed lateness, at parallelism 1 and 2 (a keyed exchange between source and window);
  - a one-partition Kafka topic read with a fetch size of 1 KB and of 1 MB.
Each run must equal the model: every window's count and sum, and the late-record count.
"""

import json
import random
import sys
from collections import defaultdict

import pytest

from .conftest import REPO, require_env
from .test_kafka_connector import clink_run, finished_line, ok, produce, rows

sys.path.insert(0, str(REPO / "scripts"))
import kafka_topic  # noqa: E402

LAG, LATENESS = 300, 200
TUMBLE = ("TUMBLE", 1000)
HOP = ("HOP", 2000, 500)
SESSION = ("SESSION", 400)
N = 3000


def records(seed=7):
    """Out of order by up to 3 s against a lag of 0.3 s: many records land behind a window's
    end, so where the watermark stands before each one matters."""
    rnd = random.Random(seed)
    out = []
    for i in range(N):
        base = i * 20
        ts = base - rnd.randrange(0, 3000) if rnd.random() < 0.3 else base
        out.append({"k": "k%d" % rnd.randrange(5), "v": rnd.randrange(100), "ts": max(ts, 0)})
    return out


def windows_of(window, ts):
    if window[0] == "TUMBLE":
        s = ts - ts % window[1]
        return [(s, s + window[1])]
    size, slide = window[1], window[2]
    last = ts - ts % slide
    return [(s, s + size) for s in range(last, ts - size, -slide) if s + size > ts]


def model(recs, window):
    """(sorted (start, end, key, count, sum) of every fired window, late records)."""
    wm = -(1 << 63)
    open_, fired, late = {}, [], 0

    def fire_due():
        for w in sorted(w for w in open_ if w[1] + LATENESS <= wm):
            c, s = open_.pop(w)
            fired.append((w[0], w[1], w[2], c, s))

    max_ts = None
    for r in recs:
        fire_due()
        k, ts, v = r["k"], r["ts"], r["v"]
        if window[0] == "SESSION":
            gap = window[1]
            lo, hi = ts, ts + gap
            touching = [w for w in open_ if w[2] == k and w[0] <= hi and w[1] >= ts]
            if not touching and hi + LATENESS <= wm:
                late += 1
            else:
                c, s = 1, v
                for w in touching:
                    wc, ws = open_.pop(w)
                    c, s = c + wc, s + ws
                    lo, hi = min(lo, w[0]), max(hi, w[1])
                open_[(lo, hi, k)] = (c, s)
        else:
            live = [(a, b) for a, b in windows_of(window, ts) if b + LATENESS > wm]
            if not live:
                late += 1
            for a, b in live:
                c, s = open_.get((a, b, k), (0, 0))
                open_[(a, b, k)] = (c + 1, s + v)
        max_ts = ts if max_ts is None else max(max_ts, ts)
        wm = max(wm, max_ts - LAG)
    wm = 1 << 63
    fire_due()
    return sorted(fired), late


ARGS = {"TUMBLE": "INTERVAL '1' SECOND",
        "HOP": "INTERVAL '2' SECOND, INTERVAL '0.5' SECOND",
        "SESSION": "INTERVAL '0.4' SECOND"}


def window_sql(window, table_with):
    name, args = window[0], ARGS[window[0]]
    return ("CREATE TABLE ev (k STRING, v BIGINT, ts BIGINT) WITH (%s, format = 'json', "
            "event_time_column = 'ts', watermark_lag_ms = '%d', allowed_lateness_ms = '%d');\n"
            "SELECT %s_START(ts, %s) AS ws, %s_END(ts, %s) AS we, k, COUNT(*) AS n, "
            "SUM(v) AS s FROM ev GROUP BY %s(ts, %s), k;"
            % (table_with, LAG, LATENESS, name, args, name, args, name, args))


def outcome(proc):
    got = sorted((r["ws"], r["we"], r["k"], r["n"], r["s"]) for r in rows(proc))
    line = finished_line(proc)
    late = int(line.split(" late records dropped")[0].rsplit(" ", 1)[1])
    return got, late


@pytest.mark.parametrize("window", [TUMBLE, HOP, SESSION], ids=lambda w: w[0])
def test_file_source_batch_sizes_give_the_model_s_windows_and_late_count(window, tmp_path):
    recs = records()
    path = tmp_path / "ev.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    want, want_late = model(recs, window)
    assert want_late > 50, "the input must make lateness matter (%d late)" % want_late
    for parallelism in (1, 2):
        for poll_rows in (1, 7, 1024):
            src = "connector = 'file', path = '%s', poll_rows = '%d'" % (path, poll_rows)
            got, late = outcome(ok(clink_run(window_sql(window, src), parallelism=parallelism)))
            assert late == want_late, (parallelism, poll_rows, late, want_late)
            assert got == want, (parallelism, poll_rows, window,
                                 [g for g in got if g not in want][:5],
                                 [w for w in want if w not in got][:5])


def test_kafka_fetch_sizes_give_the_model_s_windows_and_late_count(unique):
    (brokers,) = require_env("CLINK_KAFKA_BROKERS")
    topic = unique("wm_batching")
    kafka_topic.create_topic(brokers, topic, 1)
    recs = records(seed=11)
    produce(brokers, topic, [(0, None, json.dumps(r)) for r in recs])
    want, want_late = model(recs, TUMBLE)
    assert want_late > 50
    for fetch in (1024, 1 << 20):
        src = ("connector = 'kafka', brokers = '%s', topic = '%s', auto_offset_reset = "
               "'earliest', scan.bounded = 'latest', kafka.max.partition.fetch.bytes = '%d'"
               % (brokers, topic, fetch))
        got, late = outcome(ok(clink_run(window_sql(TUMBLE, src))))
        assert late == want_late, (fetch, late, want_late)
        assert got == want, fetch
