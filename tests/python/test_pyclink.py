"""pyclink against the engine it bundles: push sources, collect tables, bare SELECTs, errors
with their SQL position, cancel and Ctrl-C, a real Kafka topic, and the library's exported
symbols. tests/python/run.sh installs the package from this tree first (ctest python_pyclink).

Every expected result is computed here from the test's own data (pandas-free arithmetic over
the Python rows), never by the engine; Kafka topics are named after this run.
"""

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from datetime import timezone
from pathlib import Path

import pyarrow as pa
import pytest

import pyclink

REPO = Path(__file__).resolve().parents[2]
RUN_ID = "%d_%d" % (int(time.time()), os.getpid())
sys.path.insert(0, str(REPO / "scripts"))


def readings(n, seed=3):
    rng = random.Random(seed)
    base = 1_700_000_000_000
    rows = {"sensor": [], "ts": [], "temp": []}
    for i in range(n):
        rows["sensor"].append("s%d" % rng.randrange(7))
        rows["ts"].append(base + i * 53 + rng.randrange(50))  # ascending: no late rows
        rows["temp"].append(rng.randrange(-200, 400) / 10.0)
    return rows


def tumble_oracle(rows, size_ms):
    acc = defaultdict(lambda: [0, 0.0, None])
    for s, t, v in zip(rows["sensor"], rows["ts"], rows["temp"]):
        a = acc[(t - t % size_ms, s)]
        a[0] += 1
        a[1] += v
        a[2] = v if a[2] is None else max(a[2], v)
    return {k: (n, round(total, 6), hi) for k, (n, total, hi) in acc.items()}


WINDOWED = """
CREATE TABLE readings (sensor VARCHAR, ts TIMESTAMP(3), temp DOUBLE)
  WITH (connector = 'push', event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE per_second (window_start TIMESTAMP(3), sensor VARCHAR, n BIGINT, total DOUBLE,
                         hi DOUBLE)
  WITH (connector = 'collect');
INSERT INTO per_second
  SELECT window_start, sensor, COUNT(*) AS n, SUM(temp) AS total, MAX(temp) AS hi
  FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), sensor;
"""


def as_windows(table):
    d = table.to_pydict()
    out = {}
    for ws, s, n, total, hi in zip(d["window_start"], d["sensor"], d["n"], d["total"], d["hi"]):
        key = (int(ws.replace(tzinfo=timezone.utc).timestamp() * 1000), s)
        assert key not in out, "window %s twice" % (key,)
        out[key] = (n, round(total, 6), hi)
    return out


@pytest.mark.parametrize("parallelism", [1, 2])
def test_push_tumble_collect_matches_recomputation(parallelism, tmp_path):
    rows = readings(20000)
    data = pa.table({"sensor": rows["sensor"],
                     "ts": pa.array(rows["ts"], pa.int64()).cast(pa.timestamp("ms")),
                     "temp": rows["temp"]})
    with pyclink.Engine(parallelism=parallelism, checkpoint_dir=str(tmp_path / "ck")) as e:
        (job,) = e.execute(WINDOWED)
        assert job.status == pyclink.JobStatus.RUNNING
        reader = e.collect("per_second")
        assert reader.schema.field("window_start").type == pa.timestamp("ms")
        # in slices of 3000 rows, microsecond timestamps: converted by the library
        us = data.set_column(1, "ts", data.column("ts").cast(pa.timestamp("us")))
        assert e.push("readings", us.to_batches(max_chunksize=3000), close=True) == 20000
        got = as_windows(reader.read_all())
        assert job.wait(30)
        assert job.status == pyclink.JobStatus.FINISHED
        assert job.counts[0] == 20000
    assert got == tumble_oracle(rows, 1000)


def test_pandas_dataframe_through_a_window():
    pd = pytest.importorskip("pandas")
    rows = readings(5000, seed=11)
    df = pd.DataFrame({"sensor": rows["sensor"], "ts": pd.to_datetime(rows["ts"], unit="ms"),
                       "temp": rows["temp"]})
    with pyclink.Engine() as e:
        e.execute(WINDOWED)
        reader = e.collect("per_second")
        e.push("readings", df, close=True)
        got = as_windows(reader.read_all())
    assert got == tumble_oracle(rows, 1000)


def test_sql_returns_a_table_and_a_stream():
    with pyclink.Engine() as e:
        e.execute("CREATE TABLE t (k VARCHAR, v BIGINT, ok BOOLEAN) WITH (connector = 'push')")
        stream = e.sql("SELECT k, v * 10 AS v10, ok FROM t WHERE v % 2 = 0", stream=True)
        assert isinstance(stream, pa.RecordBatchReader)
        e.push("t", pa.table({"k": ["a", "b", None, "d"], "v": [1, 2, 4, None],
                              "ok": [True, False, None, True]}), close=True)
        t = stream.read_all()
        assert t.to_pydict() == {"k": ["b", None], "v10": [20, 40], "ok": [False, None]}
        # bounded: a file source, read to its end
        path = REPO / "tests" / "sql" / "data" / "readings.json"
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        table = e.sql("""
            CREATE TABLE r (sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE)
              WITH (connector = 'file', path = '%s', format = 'json');
            SELECT sensor_id, COUNT(*) AS n FROM r GROUP BY sensor_id""" % path)
        assert isinstance(table, pa.Table)
        want = defaultdict(int)
        for x in lines:
            want[x["sensor_id"]] += 1
        # an update stream: the last row per key is its final count
        final = {}
        for k, n in zip(table.column("sensor_id").to_pylist(), table.column("n").to_pylist()):
            final[k] = n
        assert final == dict(want)


def test_errors_carry_the_sql_position():
    with pyclink.Engine() as e:
        with pytest.raises(pyclink.ClinkError) as ei:
            e.execute("CREATE TABLE t (x BIGINT) WITH (connector = 'push');\n"
                      "INSERT INTO nowhere\n  SELECT x FROM t;")
        assert (ei.value.line, ei.value.column) == (2, 13)
        assert "nowhere" in str(ei.value) and "<sql>:2:13" in str(ei.value)
        with pytest.raises(pyclink.ClinkError) as ei:
            e.sql("SELECT FROM")
        assert ei.value.line == 1 and ei.value.column > 0
        e.execute("CREATE TABLE t (x BIGINT) WITH (connector = 'push')")
        with pytest.raises(pyclink.ClinkError, match="does not convert to BIGINT"):
            e.push("t", pa.table({"x": ["not a number"]}))
    with pytest.raises(pyclink.ClinkError, match="parallelism"):
        pyclink.Engine(parallelism=0)


def test_cancel_ends_the_stream_and_the_job():
    with pyclink.Engine() as e:
        e.execute("""
            CREATE TABLE src (x BIGINT) WITH (connector = 'push');
            CREATE TABLE out (x BIGINT) WITH (connector = 'collect');
            INSERT INTO out SELECT x FROM src""")
        (job,) = e.jobs
        reader = e.collect("out")
        e.push("src", pa.table({"x": list(range(100))}))
        first = reader.read_next_batch()
        assert first.num_rows > 0
        assert not job.wait(0.2)
        job.cancel()
        with pytest.raises(pyclink.ClinkError, match="cancelled"):
            reader.read_all()
        assert job.wait(30)
        assert job.status == pyclink.JobStatus.CANCELLED


CTRL_C = """
import os, signal, sys, threading, pyarrow as pa, pyclink
with pyclink.Engine() as e:
    e.execute('''CREATE TABLE src (x BIGINT) WITH (connector = 'push');
                 CREATE TABLE out (x BIGINT) WITH (connector = 'collect');
                 INSERT INTO out SELECT x FROM src''')
    (job,) = e.jobs
    reader = e.collect("out")
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        for batch in reader:   # nothing is pushed: blocked until Ctrl-C
            pass
        print("no interrupt")
    except KeyboardInterrupt:
        job.wait(30)
        print("interrupted", job.status.value)
"""


def test_ctrl_c_cancels_cleanly():
    p = subprocess.run([sys.executable, "-c", CTRL_C], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "interrupted CANCELLED", (p.stdout, p.stderr)


def test_log_callback_gets_the_lines():
    lines = []
    with pyclink.Engine(log_level="info", log=lambda lvl, line: lines.append((lvl, line))) as e:
        e.execute("CREATE TABLE t (x BIGINT) WITH (connector = 'push')")
        e.sql("SELECT x FROM t", stream=True)
        e.close_push("t")
        e.await_all(30)
    assert any(line.startswith("[job] job-1 FINISHED") for _, line in lines), lines


def test_kafka_topic_through_a_window():
    brokers = os.environ.get("CLINK_KAFKA_BROKERS")
    if not brokers:
        pytest.fail('CLINK_KAFKA_BROKERS is unset: eval "$(scripts/services.sh env)" first',
                    pytrace=False)
    from confluent_kafka import Producer
    from kafka_topic import create_topic
    topic = "pyclink_%s" % RUN_ID
    create_topic(brokers, topic, partitions=3)
    rows = readings(3000, seed=5)
    prod = Producer({"bootstrap.servers": brokers})
    for i, (s, t, v) in enumerate(zip(rows["sensor"], rows["ts"], rows["temp"])):
        prod.produce(topic, json.dumps({"sensor": s, "ts": t, "temp": v}).encode(),
                     partition=i % 3)
    prod.flush(30)
    with pyclink.Engine(parallelism=2) as e:
        got = e.sql("""
            CREATE TABLE readings (sensor VARCHAR, ts BIGINT, temp DOUBLE) WITH (
              connector = 'kafka', format = 'json', brokers = '%s', topic = '%s',
              auto_offset_reset = 'earliest', scan.bounded = 'latest',
              event_time_column = 'ts', watermark_lag_ms = '5000');
            SELECT window_start, sensor, COUNT(*) AS n, SUM(temp) AS total, MAX(temp) AS hi
            FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), sensor""" % (brokers, topic))
    d = got.to_pydict()
    windows = {(int(ws.replace(tzinfo=timezone.utc).timestamp() * 1000), s): (n, round(tot, 6), hi)
               for ws, s, n, tot, hi in zip(d["window_start"], d["sensor"], d["n"], d["total"],
                                            d["hi"])}
    assert len(windows) == got.num_rows
    assert windows == tumble_oracle(rows, 1000)


def test_library_exports_only_clink_symbols():
    lib = Path(pyclink.__file__).parent / "libclink.so.1"
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    names = [line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()]
    functions = [n for n in names if n != "CLINK_1"]
    assert functions and all(n.startswith("clink_") for n in functions), \
        [n for n in functions if not n.startswith("clink_")][:10]
    for needed in ("clink_engine_open", "clink_exec", "clink_query", "clink_collect",
                   "clink_push", "clink_job_wait", "clink_abi_version"):
        assert needed in functions
    soname = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                            check=True).stdout
    assert "Library soname: [libclink.so.%d]" % pyclink.abi_version() in soname


def test_the_example_runs():
    """examples/python/window_pandas_and_kafka.py, as a script: it checks its own windows
    against pandas and its Kafka window counts against what it produced."""
    p = subprocess.run([sys.executable, str(REPO / "examples" / "python" /
                                            "window_pandas_and_kafka.py")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "pandas agrees on" in p.stdout
    assert "windows from Kafka, rows: 10000" in p.stdout, p.stdout


def test_a_dropped_reader_fails_its_job_instead_of_blocking_it():
    import gc
    with pyclink.Engine(collect_batches=2) as e:
        (job,) = e.execute("""
            CREATE TABLE src (x BIGINT) WITH (connector = 'push');
            CREATE TABLE out (x BIGINT) WITH (connector = 'collect');
            INSERT INTO out SELECT x FROM src""")
        reader = e.collect("out")
        del reader  # never read
        gc.collect()
        with pytest.raises(pyclink.ClinkError, match="the job reading this table ended"):
            for i in range(1000):
                e.push("src", pa.table({"x": list(range(i * 100, i * 100 + 100))}))
        with pytest.raises(pyclink.ClinkError, match="released before its end"):
            job.wait(30)
        assert job.status == pyclink.JobStatus.FAILED


GROUPS = """
CREATE TABLE src (k VARCHAR, v BIGINT) WITH (connector = 'push');
CREATE TABLE totals (k VARCHAR, total BIGINT, n BIGINT) WITH (connector = 'collect');
INSERT INTO totals SELECT k, SUM(v) AS total, COUNT(*) AS n FROM src GROUP BY k
  HAVING SUM(v) > 0;
"""


def final_totals(rows):
    """The oracle: each key's sum and count over every row, kept where the sum is positive."""
    acc = defaultdict(lambda: [0, 0])
    for k, v in rows:
        acc[k][0] += v
        acc[k][1] += 1
    return {k: (t, n) for k, (t, n) in acc.items() if t > 0}


def apply_changelog(changes):
    """The changelog applied by hand, row by row: +I/+U set the key's row, -U/-D remove it."""
    live = {}
    for op, k, total, n in changes:
        if op in ("+I", "+U"):
            assert (k in live) == (op == "+U"), "%s for %r, live: %s" % (op, k, k in live)
            live[k] = (total, n)
        else:
            assert k in live, "%s for %r, which has no row" % (op, k)
            del live[k]
    return live


@pytest.mark.parametrize("parallelism", [1, 2])
def test_group_by_through_collect_carries_row_kinds(parallelism):
    import threading
    rng = random.Random(11)
    with pyclink.Engine(parallelism=parallelism) as e:
        (job,) = e.execute(GROUPS)
        watchdog = threading.Timer(120, job.cancel)  # a hung read ends instead of hanging
        watchdog.start()
        try:
            reader = e.collect("totals")
            assert reader.schema.names == ["__op", "k", "total", "n"]
            assert pa.types.is_dictionary(reader.schema.field("__op").type)
            assert json.loads(reader.schema.metadata[b"clink.upsert_key"]) == ["k"]
            changes, pushed = [], []

            def push_and_read(rows, expect):
                e.push("src", pa.table({"k": [k for k, _ in rows], "v": [v for _, v in rows]}))
                pushed.extend(rows)
                got = 0
                while got < expect:
                    b = reader.read_next_batch().to_pydict()
                    changes.extend(zip(b["__op"], b["k"], b["total"], b["n"]))
                    got += len(b["k"])
            keys = ["k%d" % i for i in range(8)]
            push_and_read([(k, 5) for k in keys], 8)                       # eight +I
            push_and_read([(k, -20 if i < 4 else 1) for i, k in enumerate(keys)], 8)  # -D, +U
            ops = [c[0] for c in changes]
            assert ops.count("+I") == 8 and ops.count("-D") == 4 and ops.count("+U") == 4
            more = [(rng.choice(keys), rng.randrange(-9, 10)) for _ in range(3000)]
            e.push("src", pa.table({"k": [k for k, _ in more], "v": [v for _, v in more]}),
                   close=True)
            pushed.extend(more)
            for b in reader:
                d = b.to_pydict()
                changes.extend(zip(d["__op"], d["k"], d["total"], d["n"]))
            assert job.wait(timeout=60)
        finally:
            watchdog.cancel()
    want = final_totals(pushed)
    assert 0 < len(want) < len(keys)  # the data leaves keys both in and out of HAVING
    assert apply_changelog(changes) == want
    assert set(c[0] for c in changes) <= set(pyclink.ROW_KINDS)
    # the package's own materialisation of the same changelog agrees
    t = pa.table({"__op": pa.array([c[0] for c in changes]).dictionary_encode(),
                  "k": [c[1] for c in changes], "total": [c[2] for c in changes],
                  "n": [c[3] for c in changes]})
    m = pyclink.materialize(t, key=["k"]).to_pydict()
    assert dict(zip(m["k"], zip(m["total"], m["n"]))) == want


def test_materialize_collect_and_sql():
    rng = random.Random(5)
    rows = [("k%d" % rng.randrange(6), rng.randrange(-5, 8)) for _ in range(2000)]
    data = pa.table({"k": [k for k, _ in rows], "v": [v for _, v in rows]})
    want = final_totals(rows)
    with pyclink.Engine(parallelism=2) as e:
        (job,) = e.execute(GROUPS)
        e.push("src", data, close=True)
        t = e.collect("totals", materialize=True)
        assert t.schema.names == ["k", "total", "n"]
        assert dict(zip(t.column("k").to_pylist(),
                        zip(t.column("total").to_pylist(), t.column("n").to_pylist()))) == want
        assert job.wait(timeout=60)
    with pyclink.Engine() as e:
        e.execute("CREATE TABLE s (k VARCHAR, v BIGINT) WITH (connector = 'push')")
        reader = e.sql("SELECT COUNT(*) AS n, SUM(v) AS total FROM s", stream=True)
        e.push("s", data, close=True)
        t = pyclink.materialize(reader)
        assert t.to_pydict() == {"n": [len(rows)], "total": [sum(v for _, v in rows)]}
    # an append-only result: no __op, and materialize leaves it as it is
    with pyclink.Engine() as e:
        e.execute("CREATE TABLE s (k VARCHAR, v BIGINT) WITH (connector = 'push')")
        reader = e.sql("SELECT k, v FROM s WHERE v > 0", stream=True)
        e.push("s", data, close=True)
        t = reader.read_all()
        assert t.schema.names == ["k", "v"]
        assert pyclink.materialize(t).to_pydict() == t.to_pydict()
        assert t.column("v").to_pylist() == [v for _, v in rows if v > 0]
