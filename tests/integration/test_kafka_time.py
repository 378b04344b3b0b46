"""Time as Flink users declare it, through the real broker: a TIMESTAMP(3) event-time column
read from ISO 8601 / SQL text (zone offsets, 'T' or a blank, fraction digits past the
millisecond) and epoch numbers, declared with WATERMARK FOR, windowed with an offset, written
back into a Kafka topic as Flink's SQL text; a timestamp that does not parse stops the job naming
the topic, partition, offset, field and value, or is skipped and counted.

Input is produced with confluent-kafka (not clink's client); expectations are computed here, in
Python, from the event times the producer chose. Topics are unique to the run (conftest.py).
"""

import json
import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from .test_kafka_connector import (clink_run, create_topic, finished_line, ok, produce,
                                   read_topic, rows)

BASE = 1772352000000  # 2026-03-01 08:00:00 UTC
N = 1200
PARTS = 3
WINDOW = 60000
OFFSET = 15000        # windows start at :15 past each minute


def text_of(ms, style):
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    frac = f"{ms % 1000:03d}"
    if style == 0:
        return t.strftime("%Y-%m-%d %H:%M:%S.") + frac
    if style == 1:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + frac + "Z"
    if style == 2:
        loc = t.astimezone(timezone(timedelta(hours=2)))
        return loc.strftime("%Y-%m-%dT%H:%M:%S.") + frac + "+02:00"
    if style == 3:
        loc = t.astimezone(timezone(timedelta(hours=-3, minutes=-30)))
        return loc.strftime("%Y-%m-%dT%H:%M:%S.") + frac + "123-0330"
    return ms  # an epoch number


def sql_text(ms):
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


@pytest.fixture(scope="module")
def events(kafka_brokers, run_id):
    """N events on PARTS partitions, event time advancing ~0.5 s per event and out of order
    within a partition by under 2 s (the watermark delay is 3 s): no event is late."""
    topic = "kt_iso_%s" % run_id
    create_topic(kafka_brokers, topic, PARTS)
    rng = random.Random(2026)
    evs = []
    for i in range(N):
        ts = BASE + i * 500 + rng.randint(0, 1900)
        evs.append({"id": i, "p": i % PARTS, "user": "u%d" % (i % 5), "ts": ts})
    records = []
    for p in range(PARTS):
        for e in sorted((e for e in evs if e["p"] == p), key=lambda e: e["id"]):
            value = {"id": e["id"], "user": e["user"], "ts": text_of(e["ts"], e["id"] % 5)}
            records.append((p, None, json.dumps(value)))
    produce(kafka_brokers, topic, records)
    return topic, evs


def expected(evs):
    want = Counter()
    for e in evs:
        start = e["ts"] - (e["ts"] - OFFSET) % WINDOW
        want[(e["user"], sql_text(start), sql_text(start + WINDOW))] += 1
    return want


def source_ddl(brokers, topic, extra=""):
    return """
      CREATE TABLE clicks (id BIGINT, user VARCHAR, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '3' SECOND)
      WITH (connector = 'kafka', format = 'json', brokers = '%s', topic = '%s',
            auto_offset_reset = 'earliest', scan.bounded = 'latest'%s);
    """ % (brokers, topic, extra)


@pytest.mark.parametrize("parallelism", [1, 3])
def test_iso_event_time_windows_with_offset_match_recomputation(kafka_brokers, events,
                                                                parallelism):
    topic, evs = events
    sql = source_ddl(kafka_brokers, topic) + """
      SELECT user, window_start, window_end, COUNT(*) AS n FROM clicks
      GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE, INTERVAL '15' SECOND), user
    """
    proc = ok(clink_run(sql, parallelism))
    got = Counter()
    for r in rows(proc):
        got[(r["user"], r["window_start"], r["window_end"])] += r["n"]
    assert got == expected(evs)
    assert " 0 late records dropped" in finished_line(proc)


def test_timestamps_written_back_to_kafka_as_sql_text(kafka_brokers, events, unique):
    topic, evs = events
    out = unique("kt_out")
    create_topic(kafka_brokers, out, 1)
    sql = source_ddl(kafka_brokers, topic) + """
      CREATE TABLE out (user VARCHAR, window_start TIMESTAMP(3), last_seen TIMESTAMP_LTZ(3),
                        n BIGINT)
      WITH (connector = 'kafka', format = 'json', brokers = '%s', topic = '%s');
      INSERT INTO out SELECT user, window_start, MAX(ts) AS last_seen, COUNT(*) AS n FROM clicks
      GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE, INTERVAL '15' SECOND), user;
    """ % (kafka_brokers, out)
    ok(clink_run(sql, 2))
    got = Counter()
    last = {}
    for _, _, value in read_topic(kafka_brokers, out, 1):
        r = json.loads(value)
        got[r["user"], r["window_start"]] += r["n"]
        last[r["user"], r["window_start"]] = r["last_seen"]
    want, want_last = Counter(), {}
    for e in evs:
        start = sql_text(e["ts"] - (e["ts"] - OFFSET) % WINDOW)
        want[e["user"], start] += 1
        prev = want_last.get((e["user"], start))
        want_last[e["user"], start] = max(prev, e["ts"]) if prev else e["ts"]
    assert got == want
    assert last == {k: sql_text(v) + "Z" for k, v in want_last.items()}


@pytest.fixture(scope="module")
def bad_time_topic(kafka_brokers, run_id):
    """Partition 0: five good ISO timestamps; partition 1: two good, one that is no date at
    offset 2 (month 13), two good."""
    topic = "kt_badtime_%s" % run_id
    create_topic(kafka_brokers, topic, 2)
    recs = [(0, None, json.dumps({"id": i, "user": "a", "ts": text_of(BASE + i * 1000, i % 4)}))
            for i in range(5)]
    recs += [(1, None, json.dumps({"id": 10 + i, "user": "b", "ts": text_of(BASE + i * 1000, 1)}))
             for i in range(2)]
    recs += [(1, None, json.dumps({"id": 12, "user": "b", "ts": "2026-13-01T08:00:02Z"}))]
    recs += [(1, None, json.dumps({"id": 13 + i, "user": "b", "ts": text_of(BASE + 3000 + i * 1000, 2)}))
             for i in range(2)]
    produce(kafka_brokers, topic, recs)
    return topic


def test_bad_timestamp_fails_naming_field_value_and_offset(kafka_brokers, bad_time_topic):
    proc = clink_run(source_ddl(kafka_brokers, bad_time_topic) + "SELECT id, ts FROM clicks")
    assert proc.returncode == 1, proc.stderr
    assert ("could not decode record at topic '%s' partition 1 offset 2: field 'ts': "
            "'2026-13-01T08:00:02Z' is not a timestamp" % bad_time_topic) in proc.stderr, proc.stderr


def test_bad_timestamp_skipped_and_counted(kafka_brokers, bad_time_topic):
    proc = ok(clink_run(source_ddl(kafka_brokers, bad_time_topic, ", on_decode_error = 'skip'")
                        + "SELECT id, ts FROM clicks", parallelism=2))
    got = sorted((r["id"], r["ts"]) for r in rows(proc))
    want = sorted([(i, sql_text(BASE + i * 1000)) for i in range(5)] +
                  [(10, sql_text(BASE)), (11, sql_text(BASE + 1000)),
                   (13, sql_text(BASE + 3000)), (14, sql_text(BASE + 4000))])
    assert got == want
    line = finished_line(proc)
    assert "9 records read" in line and " 1 undecodable records skipped" in line, line
