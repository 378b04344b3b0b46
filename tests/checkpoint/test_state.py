"""Issue 14: a checkpoint is an Arrow IPC stream that pyarrow and DuckDB open as it is
(docs/state.md), and the state tools read it.

- Every state kind read by pyarrow, at parallelism 1 and 4: the datagen, file and Kafka source
  positions, window and group state, the exactly-once file and Kafka sinks' pre-commit state.
  The open windows of a checkpoint taken mid-stream are checked against a recomputation from
  the generator's definition and the checkpoint's own source positions (read from the raw
  bytes here, not by clink), never against what clink decodes.
- DuckDB reads the same file; `clink state-cat` decodes it (counts, sums, offsets).
- `clink state-diff` exits 0 for the same state, 1 for different, 2 for an error;
  `clink checkpoint-verify` exits 0 for a good directory and 1 naming a damaged file.
- Damaged files, an old version-1 binary file and an unknown major version are refused with
  the file's path (and the version).
"""
import json
import subprocess
from collections import defaultdict
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.ipc
import pytest

from .conftest import BASE_TS, CLINK, FAULT_EXIT
from .test_eos_kafka import brokers, produce, topic, create_topic, read_committed  # noqa: F401

KEYS = 8
COLUMNS = [("op_id", pa.uint32()), ("key_group", pa.uint16()),
           ("slot", pa.dictionary(pa.int8(), pa.string())),
           ("user_key", pa.binary()), ("value", pa.binary())]


def run(args, env=None, timeout=120):
    return subprocess.run([CLINK, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def clink_run(tmp_path, sql, parallelism, fault=None):
    import os
    (tmp_path / "job.sql").write_text(sql)
    env = dict(os.environ)
    env.pop("CLINK_FAULT", None)
    if fault:
        env["CLINK_FAULT"] = fault
    return run(["run", str(tmp_path / "job.sql"), "--checkpoint-dir", str(tmp_path / "ckpt"),
                "--checkpoint-interval-ms", "100", "--parallelism", str(parallelism)], env=env)


def completed(ckpt):
    meta = ckpt / "v1" / "_meta"
    return sorted(int(p.name.split("-")[1]) for p in meta.glob("completed-*")
                  if p.name.split("-")[1].isdigit())


def read_snapshot(path):
    """(metadata dict, operators by op_id, rows) of one snapshot file, by pyarrow alone."""
    reader = pyarrow.ipc.open_stream(Path(path).read_bytes())
    schema = reader.schema
    assert [(f.name, f.type) for f in schema] == COLUMNS, schema
    meta = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    assert meta["clink.format_version"] == "3.0"
    ops = {o["op_id"]: o for o in json.loads(meta["clink.operators"])}
    json.loads(meta["clink.state_versions"])
    return meta, ops, reader.read_all().to_pylist()


def checkpoint_rows(ckpt, n):
    """Every row of checkpoint n, with its task and the operator's name and kind."""
    out = []
    for d in sorted((ckpt / "v1").iterdir()):
        if not d.name.isdigit():
            continue
        meta, ops, rows = read_snapshot(d / f"checkpoint-{n}.snap")
        assert meta["clink.checkpoint_id"] == str(n) and meta["clink.task_index"] == d.name
        for r in rows:
            r.update(task=int(d.name), name=ops[r["op_id"]]["name"], kind=ops[r["op_id"]]["kind"])
            out.append(r)
    return out


def uvarints(b, at, count):
    vals, shift, cur = [], 0, 0
    while len(vals) < count:
        x = b[at]
        at += 1
        cur |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            vals.append(cur)
            cur, shift = 0, 0
    return vals, at


# ---------------------------------------------------------------- datagen, windows, file sink

def window_sql(out, rows, rate, eos=True):
    sink = ", delivery_guarantee = 'exactly_once'" if eos else ""
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}', rows_per_second = '{rate}',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{KEYS - 1}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{BASE_TS}', 'fields.ts.step' = '10',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.step' = '1',
  'fields.v.end' = '1000000000',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT)
WITH (connector = 'file', path = '{out}'{sink});
INSERT INTO out
SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total
FROM g GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""


def row_of(i):
    """Row i of the generator: k, ts, v."""
    return i % KEYS, BASE_TS + 10 * i, 1 + i


@pytest.fixture(scope="module", params=[1, 4])
def windows_mid_stream(request, tmp_path_factory):
    """A windowed job stopped (exit at a fault point) after its 4th completed checkpoint,
    windows still open."""
    p = request.param
    tmp = tmp_path_factory.mktemp(f"win_p{p}")
    r = clink_run(tmp, window_sql(tmp / "out.json", 10 ** 9, 4000), p,
                  fault="after_completed:exit:4")
    assert r.returncode == FAULT_EXIT, r.stderr[-3000:]
    return p, tmp, completed(tmp / "ckpt")[-1]


def test_window_state_and_positions_read_by_pyarrow_match_a_recomputation(windows_mid_stream):
    p, tmp, n = windows_mid_stream
    rows = checkpoint_rows(tmp / "ckpt", n)
    # source positions: one raw row per source subtask (u8 version, uvarint parallelism, next)
    nexts = {}
    for r in rows:
        if r["name"] == "datagen_source":
            assert r["kind"] == "source" and r["key_group"] == 0xFFFF and r["slot"] == "<raw>"
            assert r["value"][0] == 1
            (par, nxt), _ = uvarints(r["value"], 1, 2)
            assert par == p
            nexts[r["task"]] = nxt
    assert len(nexts) == p
    # the aggregation: a raw header per subtask, then one 'win' row per open (window, key):
    # its record without the key group and key (the key_group and user_key columns hold them)
    agg = [r for r in rows if r["name"] == "window_agg"]
    headers = [r for r in agg if r["slot"] == "<raw>"]
    assert len(headers) == p and all(h["value"][:4] == b"CKAG" for h in headers)
    # the watermark is the i64 just before the u64 record count at the header's end
    wms = {int.from_bytes(h["value"][-16:-8], "little", signed=True) for h in headers}
    wins = [r for r in agg if r["slot"] == "win"]
    assert wins, "no open window in a checkpoint taken mid-stream"
    got = {}
    for w in wins:
        v = w["value"]
        assert len(v) == 41
        start = int.from_bytes(v[0:8], "little", signed=True)
        end = int.from_bytes(v[8:16], "little", signed=True)
        key = json.loads(w["user_key"])
        assert w["key_group"] < 128  # the job's maximum parallelism
        count = int.from_bytes(v[16:24], "little", signed=True)
        total = int.from_bytes(v[25:41], "little", signed=True)
        assert (key, start) not in got
        got[(key, start)] = (end, count, total)
    # recomputation: the rows every source subtask read before the barrier (row i belongs to
    # subtask i mod p). A window [s, s+1000) is open in the subtask that holds it while its end
    # is above that subtask's watermark: every window ending above the highest watermark is
    # there, none ending at or below the lowest is, and each one there has exactly the count
    # and sum of the rows read
    lo, hi = min(wms), max(wms)
    want = defaultdict(lambda: [0, 0])
    for s, nxt in nexts.items():
        for i in range(s, nxt, p):
            k, ts, v = row_of(i)
            start = ts - ts % 1000
            if start + 1000 > lo:
                want[(k, start)][0] += 1
                want[(k, start)][1] += v
    for key, (end, c, t) in got.items():
        assert end > lo, (key, end, lo)
        assert (c, t) == tuple(want[key]), key
    assert {key for key in want if key[1] + 1000 > hi} <= set(got)


def test_duckdb_reads_the_snapshot_and_state_cat_decodes_it(windows_mid_stream):
    p, tmp, n = windows_mid_stream
    ckpt = tmp / "ckpt"
    files = sorted((ckpt / "v1").glob(f"*/checkpoint-{n}.snap"))
    tables = [pyarrow.ipc.open_stream(f.read_bytes()).read_all() for f in files]
    state = pa.concat_tables(tables)  # noqa: F841 (DuckDB reads it by name)
    by_slot = dict(duckdb.sql("SELECT slot, count(*) FROM state GROUP BY slot").fetchall())
    cat = run(["state-cat", f"--dir={ckpt}", f"--id={n}"])
    assert cat.returncode == 0, cat.stderr
    lines = [json.loads(x) for x in cat.stdout.splitlines()]
    assert len(lines) == state.num_rows
    assert by_slot["win"] == sum(1 for x in lines if x["slot"] == "win")
    # the decoded values are the raw bytes' (state-cat against pyarrow, entry by entry)
    raw = {(r["op_id"], r["task"], r["user_key"], r["value"][0:8]): r
           for r in checkpoint_rows(ckpt, n) if r["slot"] == "win"}
    for x in lines:
        if x["slot"] == "win":
            v = x["value"]
            r = raw[(x["op_id"], x["task"], json.dumps(x["user_key"]).encode(),
                     v["window_start"].to_bytes(8, "little", signed=True))]
            assert v["aggregates"][0]["count"] == int.from_bytes(r["value"][16:24], "little")
            assert v["aggregates"][1]["sum"] == int.from_bytes(r["value"][25:41], "little")
            assert x["key_group"] == r["key_group"] and x["operator"] == "window_agg"
        if x["operator"] == "datagen_source":
            assert x["value"]["parallelism"] == p and x["value"]["next_row"] > 0
    assert sum(1 for x in lines if x["slot"] == "<raw>" and x["operator"] == "window_agg") == p
    # newest completed by default, and the same through v1/
    assert run(["state-cat", f"--dir={ckpt}/v1"]).stdout == cat.stdout


def test_file_sink_pre_commit_state(windows_mid_stream):
    p, tmp, n = windows_mid_stream
    rows = [r for r in checkpoint_rows(tmp / "ckpt", n) if r["kind"] == "sink"]
    assert len(rows) == p
    for r in rows:
        assert r["name"] == "file_sink" and r["slot"] == "<raw>" and r["key_group"] == 0xFFFF
        v = r["value"]
        assert v[0] == 2  # exactly-once file sink state, version 2
        (ckpt_id,), _ = uvarints(v, 1, 1)
        assert ckpt_id == n
    task = rows[0]["task"]
    cat = run(["state-cat", f"--from={tmp / 'ckpt' / 'v1' / str(task) / f'checkpoint-{n}.snap'}"])
    sinks = [json.loads(x) for x in cat.stdout.splitlines() if '"kind":"sink"' in x]
    assert sinks and sinks[0]["value"]["checkpoint"] == n
    assert sinks[0]["value"]["mode"] == "exactly_once"


def test_state_diff_exit_codes(windows_mid_stream):
    p, tmp, n = windows_mid_stream
    ckpt = tmp / "ckpt"
    same = run(["state-diff", f"{ckpt}@{n}", f"{ckpt}/v1@{n}"])
    assert same.returncode == 0 and same.stdout == "", same.stderr
    older = completed(ckpt)[-2]
    diff = run(["state-diff", f"{ckpt}@{older}", f"{ckpt}@{n}"])
    assert diff.returncode == 1, diff.stderr
    changes = [json.loads(x) for x in diff.stdout.splitlines()]
    assert any(c["change"] == "changed" and c["operator"] == "datagen_source" for c in changes)
    f = ckpt / "v1" / "0" / f"checkpoint-{n}.snap"
    assert run(["state-diff", str(f), str(f)]).returncode == 0
    missing = run(["state-diff", str(f), str(tmp / "nope.snap")])
    assert missing.returncode == 2 and "nope.snap" in missing.stderr


def test_checkpoint_verify(windows_mid_stream, tmp_path):
    p, tmp, n = windows_mid_stream
    ok = run(["checkpoint-verify", f"--dir={tmp / 'ckpt'}", "--json"])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    report = json.loads(ok.stdout)
    assert report["ok"] and report["subtasks"] == len(list((tmp / "ckpt" / "v1").glob("[0-9]*")))
    assert {c["checkpoint"] for c in report["checkpoints"]} >= {n}
    assert all(c["restorable"] for c in report["checkpoints"])
    # a damaged copy
    import shutil
    copy = tmp_path / "ckpt"
    shutil.copytree(tmp / "ckpt", copy)
    f = copy / "v1" / "0" / f"checkpoint-{n}.snap"
    data = bytearray(f.read_bytes())
    data[len(data) - 20] ^= 0x40
    f.write_bytes(bytes(data))
    bad = run(["checkpoint-verify", f"--dir={copy}"])
    assert bad.returncode == 1
    assert f"snapshot file '{f}'" in bad.stdout and "damaged" in bad.stdout
    cat = run(["state-cat", f"--from={f}"])
    assert cat.returncode == 1 and str(f) in cat.stderr and "damaged" in cat.stderr


def test_unwindowed_group_state_at_the_end(tmp_path):
    """A bounded job's final checkpoint: group rows (slot 'group') with the key as JSON, the
    values last emitted, and the counts of the whole input."""
    rows = 4000
    sql = f"""
CREATE TABLE g (k BIGINT, s VARCHAR, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{KEYS - 1}',
  'fields.s.kind' = 'choice', 'fields.s.values' = 'x',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.step' = '1',
  'fields.v.end' = '1000000000');
CREATE TABLE out (k BIGINT, s VARCHAR, n BIGINT) WITH (connector = 'blackhole');
INSERT INTO out SELECT k, s, COUNT(*) AS n FROM g GROUP BY k, s;
"""
    r = clink_run(tmp_path, sql, 4)
    assert r.returncode == 0, r.stderr[-3000:]
    n = completed(tmp_path / "ckpt")[-1]
    groups = [x for x in checkpoint_rows(tmp_path / "ckpt", n) if x["slot"] == "group"]
    assert sorted(json.loads(g["user_key"]) for g in groups) == [[k, "x"] for k in range(KEYS)]
    cat = run(["state-cat", f"--dir={tmp_path / 'ckpt'}"])
    got = {tuple(x["user_key"]): x["value"] for x in map(json.loads, cat.stdout.splitlines())
           if x["slot"] == "group"}
    assert {k: v["aggregates"][0]["count"] for k, v in got.items()} == \
        {(k, "x"): rows // KEYS for k in range(KEYS)}
    assert all(v["emitted"] == [rows // KEYS] for v in got.values())


# ---------------------------------------------------------------- file source

def test_file_source_position(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"part-{i}.json").write_text("".join(json.dumps({"k": j % 3, "v": j}) + "\n"
                                                    for j in range(100 + i)))
    sql = f"""
CREATE TABLE f (k BIGINT, v BIGINT) WITH (connector = 'file', path = '{src}/*.json', format = 'json');
CREATE TABLE out (k BIGINT, n BIGINT) WITH (connector = 'blackhole');
INSERT INTO out SELECT k, COUNT(*) AS n FROM f GROUP BY k;
"""
    for p in (1, 4):
        d = tmp_path / f"p{p}"
        d.mkdir()
        r = clink_run(d, sql, p)
        assert r.returncode == 0, r.stderr[-3000:]
        n = completed(d / "ckpt")[-1]
        srcs = [x for x in checkpoint_rows(d / "ckpt", n) if x["name"] == "file_source"]
        assert len(srcs) == p and all(x["value"][0] == 2 for x in srcs)
        cat = run(["state-cat", f"--dir={d / 'ckpt'}"])
        files = [f for x in map(json.loads, cat.stdout.splitlines())
                 if x["operator"] == "file_source" for f in x["value"]["files"]]
        assert sorted((Path(f["path"]).name, f["lines"], f["offset"], f["done"]) for f in files) == \
            [(f"part-{i}.json", 100 + i, (src / f"part-{i}.json").stat().st_size, True)
             for i in range(3)]


# ---------------------------------------------------------------- Kafka source and sink

@pytest.mark.parametrize("p", [1, 4])
def test_kafka_source_offsets_and_sink_pre_commit(brokers, topic, tmp_path, p):  # noqa: F811
    src, dst = topic("in", 4), topic()
    per = [0, 0, 0, 0]
    records = []
    for i in range(400):
        part = (i * 7) % 4
        per[part] += 1
        records.append((part, {"k": i % 5, "ts": BASE_TS + 10 * i, "v": i}))
    produce(brokers, src, records)
    sql = f"""
CREATE TABLE ev (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'kafka', brokers = '{brokers}', topic = '{src}', auto_offset_reset = 'earliest',
  'scan.bounded' = 'latest', event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE out (k BIGINT, n BIGINT) WITH (
  connector = 'kafka', brokers = '{brokers}', topic = '{dst}', delivery_guarantee = 'exactly_once');
INSERT INTO out SELECT k, COUNT(*) AS n FROM ev GROUP BY k;
"""
    r = clink_run(tmp_path, sql, p)
    assert r.returncode == 0, r.stderr[-3000:]
    n = completed(tmp_path / "ckpt")[-1]
    rows = checkpoint_rows(tmp_path / "ckpt", n)
    assert sum(1 for x in rows if x["name"] == "kafka_source") == p
    cat = [json.loads(x) for x in run(["state-cat", f"--dir={tmp_path / 'ckpt'}"]).stdout.splitlines()]
    offsets = {q["partition"]: q["next_offset"] for x in cat if x["operator"] == "kafka_source"
               for q in x["value"]["partitions"]}
    assert offsets == {i: per[i] for i in range(4)}
    assert all(x["value"]["topic"] == src for x in cat if x["operator"] == "kafka_source")
    sinks = [x for x in cat if x["operator"] == "kafka_sink"]
    assert len(sinks) == p and all(s["value"]["mode"] == "exactly_once" for s in sinks)
    assert all(s["value"]["checkpoint"] == n for s in sinks)
    groups = [x for x in cat if x["slot"] == "group"]
    assert sorted(g["user_key"] for g in groups) == list(range(5))
    assert sum(g["value"]["aggregates"][0]["count"] for g in groups) == 400


# ---------------------------------------------------------------- refusals

def test_old_and_unknown_versions_and_damage_are_refused_with_the_path(tmp_path):
    r = clink_run(tmp_path, window_sql(tmp_path / "out.json", 2000, 0, eos=False), 1)
    assert r.returncode == 0, r.stderr[-3000:]
    n = completed(tmp_path / "ckpt")[-1]
    f = tmp_path / "ckpt" / "v1" / "0" / f"checkpoint-{n}.snap"
    good = f.read_bytes()
    # an old version-1 binary file
    f.write_bytes(b"CKSNAP\x00\x01" + b"\x01\x00\x00\x00" + bytes(40))
    cat = run(["state-cat", f"--from={f}"])
    assert cat.returncode == 1 and str(f) in cat.stderr and "version-1 binary format" in cat.stderr
    # an unknown major version (the same length, so the stream stays readable)
    assert good.count(b"\x03\x00\x00\x003.0\x00") == 1
    f.write_bytes(good.replace(b"\x03\x00\x00\x003.0\x00", b"\x03\x00\x00\x009.0\x00"))
    cat = run(["state-cat", f"--from={f}"])
    assert cat.returncode == 1 and str(f) in cat.stderr and "version 9.0" in cat.stderr, cat.stderr
    # a flipped byte in the body
    data = bytearray(good)
    data[-30] ^= 1
    f.write_bytes(bytes(data))
    cat = run(["state-cat", f"--from={f}"])
    assert cat.returncode == 1 and str(f) in cat.stderr and "checksum mismatch" in cat.stderr


def test_cluster_job_directory_layout(windows_mid_stream, tmp_path):
    """A cluster job's checkpoints live in <checkpoint-dir>/job-<id>/v1 with the same layout:
    the tools take the job directory or its v1."""
    import shutil
    p, tmp, n = windows_mid_stream
    shutil.copytree(tmp / "ckpt" / "v1", tmp_path / "job-7" / "v1")
    want = run(["state-cat", f"--dir={tmp / 'ckpt'}"]).stdout
    assert want
    assert run(["state-cat", f"--dir={tmp_path / 'job-7'}"]).stdout == want
    assert run(["state-cat", f"--dir={tmp_path / 'job-7' / 'v1'}", f"--id={n}"]).stdout == want
    assert run(["checkpoint-verify", f"--dir={tmp_path / 'job-7'}"]).returncode == 0


# ---------------------------------------------------------------- state-export

def test_state_export_arrow_and_parquet_read_back_by_pyarrow_and_duckdb(tmp_path):
    """More entries than one row group / record batch holds (65536): every entry of the
    checkpoint in both files, the same as state-cat prints, and the decoded counts sum to the
    input."""
    import pyarrow.parquet as pq
    keys, rows = 70000, 140000
    sql = f"""
CREATE TABLE g (k BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{keys - 1}',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.step' = '1',
  'fields.v.end' = '1000000000');
CREATE TABLE out (k BIGINT, n BIGINT, s BIGINT) WITH (connector = 'blackhole');
INSERT INTO out SELECT k, COUNT(*) AS n, SUM(v) AS s FROM g GROUP BY k;
"""
    r = clink_run(tmp_path, sql, 2)
    assert r.returncode == 0, r.stderr[-3000:]
    ckpt = tmp_path / "ckpt"
    pq_path, ar_path = tmp_path / "state.parquet", tmp_path / "state.arrows"
    for path, fmt in ((pq_path, "parquet"), (ar_path, "arrow")):
        x = run(["state-export", f"--dir={ckpt}", f"--out={path}", f"--format={fmt}"])
        assert x.returncode == 0, x.stderr
    t = pq.read_table(pq_path)
    assert pq.ParquetFile(pq_path).metadata.num_row_groups == 2
    a = pyarrow.ipc.open_stream(ar_path.read_bytes()).read_all()
    assert a.equals(t)
    cat = [json.loads(x) for x in run(["state-cat", f"--dir={ckpt}"]).stdout.splitlines()]
    assert t.num_rows == len(cat) > 65536
    got = t.to_pylist()
    for row, line in zip(got, cat):
        assert json.loads(row["decoded"]) == line["value"]
        assert (row["op_id"], row["task"], row["slot"], row["key_group"]) == \
            (line["op_id"], line["task"], line["slot"], line["key_group"])
    # the raw value column is the snapshot files' own
    raw = sorted(r["value"] for r in checkpoint_rows(ckpt, completed(ckpt)[-1]))
    assert sorted(r["value"] for r in got) == raw
    n, total, groups = duckdb.sql(
        f"SELECT sum(CAST(json_extract(decoded, '$.aggregates[0].count') AS BIGINT)), "
        f"sum(CAST(json_extract(decoded, '$.aggregates[1].sum') AS BIGINT)), count(*) "
        f"FROM '{pq_path}' WHERE slot = 'group'").fetchall()[0]
    assert (n, total, groups) == (rows, rows * (rows + 1) // 2, keys)


def test_parquet_writer_round_trips_random_schemas_and_nulls(tmp_path):
    """tests/unit/test_base_parquet.c writes 60 files of random schemas (about half the columns
    optional), row groups, values and NULL patterns, uncompressed or zstd, with clink's Parquet
    writer, and what each must hold; pyarrow, DuckDB and Polars read them back."""
    import os
    import polars as pl
    import pyarrow.parquet as pq
    from .conftest import REPO
    here = Path(CLINK).resolve().parents  # <build>/src/cli/clink -> <build>/tests
    found = [d / "tests" / "test_base_parquet" for d in
             ([here[2]] if len(here) > 2 else []) + [REPO / "build-san", REPO / "build"]]
    found = [u for u in found if u.exists()]
    assert found, "build the unit tests first (test_base_parquet, beside CLINK_BIN's build)"
    unit = found[0]
    r = subprocess.run([str(unit)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, CK_PARQUET_FUZZ_DIR=str(tmp_path)))
    assert r.returncode == 0, r.stdout + r.stderr
    types = {0: pa.uint16(), 1: pa.uint32(), 2: pa.int64(), 3: pa.float64(), 4: pa.string(),
             5: pa.binary()}
    files = sorted(tmp_path.glob("fuzz-*.parquet"))
    assert len(files) == 60
    seen_nulls = seen_zstd = 0
    for f in files:
        want = json.loads(f.with_suffix(".json").read_text())
        cols = want["columns"]
        t = pq.read_table(f)
        assert [(x.name, x.type, x.nullable) for x in t.schema] == \
            [(n, types[k], opt) for n, k, opt in cols], f
        meta = pq.ParquetFile(f).metadata
        for g in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                assert meta.row_group(g).column(c).compression == want["codec"], f
        seen_zstd += want["codec"] == "ZSTD"
        expect = []
        for row in want["rows"]:
            out = []
            for (n, k, opt), v in zip(cols, row):
                out.append(None if v is None else bytes(v).decode() if k == 4
                           else bytes(v) if k == 5 else v)
            expect.append(out)
        seen_nulls += sum(v is None for row in expect for v in row)
        rows = [list(r.values()) for r in t.to_pylist()]
        assert rows == expect, f
        # DuckDB: the row count and every column's count of non-NULL values
        names = [n for n, _, _ in cols]
        counts = duckdb.sql(f"SELECT count(*), " + ", ".join(f'count("{n}")' for n in names) +
                            f" FROM '{f}'").fetchall()[0]
        assert list(counts) == [len(expect)] + [sum(r[i] is not None for r in expect)
                                                for i in range(len(names))], f
        # Polars: the same rows
        assert [list(r) for r in pl.read_parquet(f).rows()] == expect, f
    assert seen_nulls > 1000 and 0 < seen_zstd < len(files)
