# %% [markdown]
# # Windows over a pandas DataFrame and a Kafka topic, in this Python process
#
# pyclink runs clink's engine inside Python: SQL jobs on the engine's threads, your data in
# as Arrow (pandas goes through pyarrow), results out as pyarrow tables and streams.
# Run it as a script, or cell by cell (the `# %%` markers) in Jupyter or VS Code:
#
#     pip install ./python/pyclink            # after scripts/setup.sh
#     eval "$(scripts/services.sh env)"       # for the Kafka part (CLINK_KAFKA_BROKERS)
#     python examples/python/window_pandas_and_kafka.py
#
# tests/python/test_pyclink.py runs this file (test_the_example_runs).

# %%
import json
import os
import time

import numpy as np
import pandas as pd
import pyarrow as pa

import pyclink

# %% [markdown]
# ## 1. A DataFrame through a one-minute tumbling window
#
# A `push` table takes batches from the host; `event_time_column` makes `ts` the event time,
# and the watermark follows it (`watermark_lag_ms`), so windows close as the data goes in.

# %%
rng = np.random.default_rng(7)
n = 50_000
df = pd.DataFrame({
    "sensor": rng.choice(["north", "south", "east", "west"], n),
    "ts": pd.Timestamp("2026-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 3_600_000, n)),
                                                       unit="ms"),
    "temp": rng.normal(18, 4, n).round(2),
})
df.head()

# %%
engine = pyclink.Engine(parallelism=2)
(job,) = engine.execute("""
    CREATE TABLE readings (sensor VARCHAR, ts TIMESTAMP(3), temp DOUBLE)
      WITH (connector = 'push', event_time_column = 'ts', watermark_lag_ms = '0');
    CREATE TABLE per_minute (window_start TIMESTAMP(3), sensor VARCHAR, n BIGINT,
                             avg_temp DOUBLE, hi DOUBLE)
      WITH (connector = 'collect');
    INSERT INTO per_minute
      SELECT window_start, sensor, COUNT(*) AS n, AVG(temp) AS avg_temp, MAX(temp) AS hi
      FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), sensor;
""")
results = engine.collect("per_minute")       # a pyarrow.RecordBatchReader
engine.push("readings", df, close=True)       # close: the input ends, the last windows fire
per_minute = results.read_all().to_pandas().sort_values(["window_start", "sensor"])
job.wait(60)
print(job, "-", len(per_minute), "windows")
per_minute.head()

# %% [markdown]
# The same numbers from pandas itself, as a check:

# %%
check = (df.assign(window_start=df.ts.dt.floor("1min"))
           .groupby(["window_start", "sensor"]).temp.agg(["count", "mean", "max"]).reset_index())
assert len(check) == len(per_minute)
assert (check["count"].to_numpy() == per_minute["n"].to_numpy()).all()
assert np.allclose(check["mean"].to_numpy(), per_minute["avg_temp"].to_numpy())
print("pandas agrees on", len(check), "windows")

# %% [markdown]
# ## 2. A Kafka topic through the same window, as a bounded query
#
# `scan.bounded = 'latest'` reads each partition up to its end as of start-up, so `sql()`
# returns a `pyarrow.Table`; leave it out and use `sql(..., stream=True)` for a standing
# query whose batches arrive as the topic grows.

# %%
brokers = os.environ.get("CLINK_KAFKA_BROKERS")
if brokers:
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from confluent_kafka import Producer
    from kafka_topic import create_topic

    topic = "pyclink_example_%d" % int(time.time() * 1000)
    create_topic(brokers, topic, partitions=2)
    producer = Producer({"bootstrap.servers": brokers})
    for row in df.head(10_000).itertuples():
        producer.produce(topic, json.dumps({"sensor": row.sensor,
                                            "ts": int(row.ts.value // 1_000_000),
                                            "temp": row.temp}).encode())
    producer.flush(30)
    from_kafka = engine.sql(f"""
        CREATE TABLE kreadings (sensor VARCHAR, ts BIGINT, temp DOUBLE) WITH (
          connector = 'kafka', format = 'json', brokers = '{brokers}', topic = '{topic}',
          auto_offset_reset = 'earliest', scan.bounded = 'latest',
          event_time_column = 'ts', watermark_lag_ms = '60000');
        SELECT window_start, sensor, COUNT(*) AS n, MAX(temp) AS hi
        FROM kreadings GROUP BY TUMBLE(ts, INTERVAL '10' MINUTE), sensor
    """)
    print(from_kafka.num_rows, "windows from Kafka, rows:", sum(from_kafka.column("n").to_pylist()))
    assert sum(from_kafka.column("n").to_pylist()) == 10_000
else:
    print("CLINK_KAFKA_BROKERS is not set: skipping the Kafka part")

# %%
engine.close()
