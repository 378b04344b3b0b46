"""The aggregates clink reduces to others (STDDEV_POP, VAR_SAMP, BOOL_OR, agg FILTER (WHERE …);
src/sql/planner.c, expand_aggs) in checkpointed window state: a job SIGKILLed after two completed
checkpoints, with windows open, restarts from one cut and emits every window with the values a
Python recomputation gives. Needs Kafka (scripts/services.sh)."""
import json
import math
import os
import signal
import statistics
import subprocess
from collections import defaultdict

from .conftest import wait_until
from .test_kafka_connector import (BASE_TS, CLINK, DEADLINE_S, SENSORS, create_topic, produce,
                                   read_topic, reading)


def completed_ids(ckpt):
    """The completed checkpoint ids of an embedded run's checkpoint directory, ascending."""
    meta = ckpt / "v1" / "_meta"
    return sorted(int(f.name.split("-")[1]) for f in meta.glob("completed-*")
                  if f.name.split("-")[1].isdigit()) if meta.is_dir() else []


def kill_after_two_checkpoints(cmd, env, ckpt):
    """Runs the unbounded job until two checkpoints completed, SIGKILLs it; the last id."""
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        wait_until("two completed checkpoints", lambda: len(completed_ids(ckpt)) >= 2
                   or first.poll() is not None, timeout=DEADLINE_S)
        assert first.poll() is None, "the unbounded job ended: %s" % first.stderr.read()
    finally:
        first.kill()
        first.communicate()
    assert first.returncode == -9
    return completed_ids(ckpt)[-1]


def test_reduced_aggregates_restore_after_kill(kafka_brokers, unique, tmp_path):
    src, dst = unique("agg_in"), unique("agg_out")
    create_topic(kafka_brokers, src, 4)
    create_topic(kafka_brokers, dst, 2)
    ticks = 600

    def readings(t0, t1):
        return [(p, None, json.dumps({"sensor_id": "sensor-%02d" % s, "ts": BASE_TS + t * 1000,
                                      "temp": reading(s, t)}))
                for p in range(4) for t in range(t0, t1) for s in range(p, SENSORS, 4)]

    produce(kafka_brokers, src, readings(0, ticks // 2))
    sql = """
      CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp BIGINT) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', auto_offset_reset = 'earliest',
        event_time_column = 'ts', watermark_lag_ms = '3000');
      CREATE TABLE stats (sensor_id VARCHAR, window_start BIGINT, sd DOUBLE, vs DOUBLE,
        anyhot BOOLEAN, allpos BOOLEAN, npos BIGINT, negsum BIGINT) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', key = 'sensor_id');
      INSERT INTO stats
      SELECT sensor_id, window_start, STDDEV_POP(temp) AS sd, VAR_SAMP(temp) AS vs,
             BOOL_OR(temp > 250) AS anyhot, BOOL_AND(temp > 0) AS allpos,
             COUNT(*) FILTER (WHERE temp > 0) AS npos, SUM(temp) FILTER (WHERE temp < 0) AS negsum
      FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
    """ % (kafka_brokers, src, kafka_brokers, dst)
    ckpt = tmp_path / "ckpt"
    cmd = [CLINK, "run", "--parallelism", "2", "--checkpoint-dir", str(ckpt),
           "--checkpoint-interval-ms", "100", "-e", sql]
    env = dict(os.environ, CLINK_LOG_LEVEL="info")

    before = kill_after_two_checkpoints(cmd, env, ckpt)

    sentinels = [(p, None, json.dumps({"sensor_id": "zz", "ts": BASE_TS + 10 ** 7, "temp": 0}))
                 for p in range(4)]
    produce(kafka_brokers, src, readings(ticks // 2, ticks) + sentinels)

    windows = defaultdict(list)
    for s in range(SENSORS):
        for t in range(ticks):
            ts = BASE_TS + t * 1000
            windows[("sensor-%02d" % s, ts - ts % 10000)].append(reading(s, t))
    got = defaultdict(list)

    def read_all():
        got.clear()
        for _p, _key, value in read_topic(kafka_brokers, dst, 2):
            r = json.loads(value)
            got[(r["sensor_id"], r["window_start"])].append(r)
        return set(windows) <= set(got)

    second = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env)
    try:
        wait_until("every window in the output topic", read_all, timeout=DEADLINE_S, interval=0.5)
        second.send_signal(signal.SIGINT)
        _, err = second.communicate(timeout=DEADLINE_S)
    finally:
        if second.poll() is None:
            second.kill()
            second.communicate()
    assert second.returncode == 0, err
    assert "restore point: checkpoint %d" % before in err, err
    assert set(got) == set(windows), "unexpected windows %s" % sorted(set(got) - set(windows))[:5]
    for k, v in windows.items():
        neg = [x for x in v if x < 0]
        for r in got[k]:  # at least once: a window may come twice, with the same values
            assert math.isclose(r["sd"], statistics.pstdev(v), rel_tol=1e-9), (k, r)
            assert math.isclose(r["vs"], statistics.variance(v), rel_tol=1e-9), (k, r)
            assert r["anyhot"] == any(x > 250 for x in v), (k, r)
            assert r["allpos"] == all(x > 0 for x in v), (k, r)
            assert r["npos"] == sum(1 for x in v if x > 0), (k, r)
            assert r["negsum"] == (sum(neg) if neg else None), (k, r)
