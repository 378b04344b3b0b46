"""The tutorial's workload, defined once: the producer and the verifier both read it.

Eight temperature sensors report once per second of event time for five minutes and five
seconds: ticks 0..304, 2,440 readings. Every value is a pure function of the sensor and the
tick, in integer tenths of a degree, so there is no randomness anywhere and the expected window
results can be recomputed exactly. sensor-03's readings reach Kafka two seconds after the
others' (out of event-time order, inside the pipeline's 3 s watermark lag).
"""

SENSORS = [f"sensor-{i:02d}" for i in range(1, 9)]
TICKS = 305
START_MS = 1772352000000          # 2026-03-01 08:00:00 UTC
WINDOW_MS = 10_000
LATE_SENSOR, LATE_BY_MS = "sensor-03", 2000
# a ten-tick pattern that averages to zero, so each full window's mean is the sensor's base
PATTERN = [-4, -3, -2, -1, 0, 0, 1, 2, 3, 4]


def temp_tenths(sensor_index, tick):
    """Temperature in tenths of a degree: sensor-01 around 18.0, each next sensor 0.5 higher."""
    return 175 + 5 * (sensor_index + 1) + PATTERN[tick % 10]


def readings():
    """Every reading as (sensor_id, ts_ms, temp_tenths), in event-time order."""
    for tick in range(TICKS):
        for i, s in enumerate(SENSORS):
            yield s, START_MS + tick * 1000, temp_tenths(i, tick)


def arrival_order():
    """Readings in the order they reach Kafka: sensor-03 two seconds late."""
    def arrives(r):
        return r[1] + (LATE_BY_MS if r[0] == LATE_SENSOR else 0), SENSORS.index(r[0])
    return sorted(readings(), key=arrives)


def as_json(r):
    s, ts, t = r
    return '{"sensor_id": "%s", "ts": %d, "temp_c": %s}' % (s, ts, t / 10)


def expected_windows():
    """{(sensor_id, window_start): (count, min, max, avg)} for every window the watermark
    closes: the last window [300 s, 310 s) holds readings up to 304 s only, and the watermark
    (largest ts - 3 s) never passes its end, so it must not fire."""
    acc = {}
    for s, ts, t in readings():
        ws = ts - ts % WINDOW_MS
        acc.setdefault((s, ws), []).append(t)
    last_ts = START_MS + (TICKS - 1) * 1000
    watermark = last_ts - 3000
    out = {}
    for (s, ws), ts_ in acc.items():
        if ws + WINDOW_MS > watermark:
            continue  # still open: never fires
        out[(s, ws)] = (len(ts_), min(ts_) / 10, max(ts_) / 10, sum(ts_) / len(ts_) / 10)
    return out


def open_windows():
    acc = {(s, ts - ts % WINDOW_MS) for s, ts, _ in readings()}
    return acc - set(expected_windows())
