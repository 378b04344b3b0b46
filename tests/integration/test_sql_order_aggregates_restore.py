"""FIRST_VALUE, LAST_VALUE, LISTAGG and APPROX_COUNT_DISTINCT (src/runtime/agg_op.c) in
checkpointed window state: a job SIGKILLed after two completed checkpoints, with windows open,
shows the accumulators in `clink state-cat`, restarts from one cut and emits every window with
the values a Python recomputation gives in each sensor's arrival (partition) order. Needs Kafka
(scripts/services.sh)."""
import json
import os
import signal
import subprocess
from collections import defaultdict

from .conftest import wait_until
from .test_sql_aggregates_restore import kill_after_two_checkpoints
from .test_kafka_connector import (BASE_TS, CLINK, DEADLINE_S, SENSORS, create_topic, produce,
                                   read_topic, reading)


def test_order_aggregates_restore_after_kill(kafka_brokers, unique, tmp_path):
    src, dst = unique("ordagg_in"), unique("ordagg_out")
    create_topic(kafka_brokers, src, 4)
    create_topic(kafka_brokers, dst, 2)
    ticks = 600

    def readings(t0, t1):  # sensor s always in partition s % 4, in tick order
        return [(p, None, json.dumps({"sensor_id": "sensor-%02d" % s, "ts": BASE_TS + t * 1000,
                                      "temp": reading(s, t) if t % 7 else None}))
                for p in range(4) for t in range(t0, t1) for s in range(p, SENSORS, 4)]

    produce(kafka_brokers, src, readings(0, ticks // 2))
    sql = """
      CREATE TABLE readings (sensor_id VARCHAR, ts BIGINT, temp BIGINT) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', auto_offset_reset = 'earliest',
        event_time_column = 'ts', watermark_lag_ms = '3000');
      CREATE TABLE stats (sensor_id VARCHAR, window_start BIGINT, f BIGINT, l BIGINT,
        temps VARCHAR, nd BIGINT) WITH (
        connector = 'kafka', brokers = '%s', topic = '%s', key = 'sensor_id');
      INSERT INTO stats
      SELECT sensor_id, window_start, FIRST_VALUE(temp) AS f, LAST_VALUE(temp) AS l,
             LISTAGG(CAST(temp AS VARCHAR), ';') AS temps, APPROX_COUNT_DISTINCT(temp) AS nd
      FROM readings GROUP BY TUMBLE(ts, INTERVAL '20' SECOND), sensor_id;
    """ % (kafka_brokers, src, kafka_brokers, dst)
    ckpt = tmp_path / "ckpt"
    cmd = [CLINK, "run", "--parallelism", "2", "--checkpoint-dir", str(ckpt),
           "--checkpoint-interval-ms", "100", "-e", sql]
    env = dict(os.environ, CLINK_LOG_LEVEL="info")

    before = kill_after_two_checkpoints(cmd, env, ckpt)

    # the state tools decode the new accumulators
    cat = subprocess.run([CLINK, "state-cat", "--dir", str(ckpt), "--id", str(before)],
                         capture_output=True, text=True, timeout=60)
    assert cat.returncode == 0, cat.stderr
    text = cat.stdout
    for needle in ('"fn":"FIRST_VALUE"', '"fn":"LAST_VALUE"', '"arrival":', '"fn":"LISTAGG"',
                   '"text":', '"fn":"APPROX_COUNT_DISTINCT"', '"estimate":'):
        assert needle in text, (needle, text[:2000])

    sentinels = [(p, None, json.dumps({"sensor_id": "zz", "ts": BASE_TS + 10 ** 7, "temp": 0}))
                 for p in range(4)]
    produce(kafka_brokers, src, readings(ticks // 2, ticks) + sentinels)

    windows = defaultdict(list)
    for s in range(SENSORS):
        for t in range(ticks):
            ts = BASE_TS + t * 1000
            windows[("sensor-%02d" % s, ts - ts % 20000)].append(reading(s, t) if t % 7 else None)
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
        vals = [x for x in v if x is not None]
        for r in got[k]:  # at least once: a window may come twice, with the same values
            assert r["f"] == vals[0] and r["l"] == vals[-1], (k, r, vals)
            assert r["temps"] == ";".join(str(x) for x in vals), (k, r, vals)
            assert abs(r["nd"] - len(set(vals))) <= 0.065 * len(set(vals)) + 3, (k, r, vals)
