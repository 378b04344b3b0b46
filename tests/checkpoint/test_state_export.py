"""Issue 14: `clink state-export --format=iceberg` (docs/state.md, "Export").

- A running Kafka job's state at two checkpoints, exported while it runs into one Iceberg v2
  table: pyiceberg (a StaticTable on the directory, no catalog, no network) reads every
  snapshot, time travel to the first gives the first checkpoint's rows, and the rows are what
  `clink state-cat` and pyarrow read from the same .snap files and what this file recomputes
  from the records it produced and the offsets in each checkpoint (read from the raw bytes).
  DuckDB and Polars read the table's Parquet data files as they are.
- Damaged table directories (a version hint that is not a number or names a missing file,
  truncated metadata, a table moved elsewhere, a checkpoint already in the table) and
  unwritable output paths are errors naming the path; a commit that finds its metadata
  version taken (a concurrent export) fails and leaves the table as it was.
- The Avro writer's container files (tests/unit/test_base_avro.c) read by fastavro; the
  Parquet export's codec; --help and the options table in docs/state.md agree.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .conftest import CLINK, REPO
from .test_eos_kafka import brokers, produce, topic, create_topic  # noqa: F401
from .test_state import checkpoint_rows, clink_run, completed, read_snapshot, run, uvarints

pyiceberg = pytest.importorskip("pyiceberg")
from pyiceberg.table import StaticTable  # noqa: E402

DEADLINE_S = 120
KEYS = 6
# the table's columns: the projection, the Parquet export's others, Iceberg types
ICEBERG_COLUMNS = [("checkpoint", pa.int64(), False), ("task", pa.int32(), False),
                   ("op_id", pa.int32(), False), ("operator", pa.large_string(), False),
                   ("kind", pa.large_string(), False), ("key_group", pa.int32(), False),
                   ("slot", pa.large_string(), False), ("user_key", pa.large_string(), True),
                   ("value", pa.large_binary(), False), ("decoded", pa.large_string(), False)]


def unit_binary(name):
    """A unit test executable beside CLINK_BIN's build, or in build-san/ or build/."""
    here = Path(CLINK).resolve().parents  # <build>/src/cli/clink
    found = [d / "tests" / name for d in
             ([here[2]] if len(here) > 2 else []) + [REPO / "build-san", REPO / "build"]]
    found = [u for u in found if u.exists()]
    assert found, f"build the unit tests first ({name}, beside CLINK_BIN's build)"
    return found[0]


def wait_for(what, cond, timeout=DEADLINE_S):
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)


# ---------------------------------------------------------------- a running Kafka job

def records(batch, n):
    """Batch b's records: (partition, value), k and v from the record's global index."""
    out = []
    for j in range(n):
        i = batch * 100000 + j
        out.append(((i * 7) % 4, {"k": i % KEYS, "v": i}))
    return out


def kafka_offsets(rows):
    """{partition: next offset} of the checkpoint's Kafka source rows, from the raw bytes
    (u8 version, uvarint topic length, topic, uvarint n, per partition uvarint partition and
    next offset, and from version 2 the run start; docs/state.md)."""
    out = {}
    for r in rows:
        if r["name"] != "kafka_source":
            continue
        v = r["value"]
        assert v[0] in (1, 2)
        per = 2 if v[0] == 1 else 3
        (tlen,), at = uvarints(v, 1, 1)
        (n,), at = uvarints(v, at + tlen, 1)
        vals, _ = uvarints(v, at, per * n)
        for p, off in zip(vals[::per], vals[1::per]):
            out[p] = off
    return out


def recompute(produced, offsets):
    """COUNT(*) and SUM(v) per key over the records each partition held below its offset."""
    per_part = defaultdict(list)
    for p, rec in produced:
        per_part[p].append(rec)
    acc = defaultdict(lambda: [0, 0])
    for p, recs in per_part.items():
        for rec in recs[:offsets.get(p, 0)]:
            acc[rec["k"]][0] += 1
            acc[rec["k"]][1] += rec["v"]
    return {k: tuple(v) for k, v in acc.items()}


def group_state(rows):
    """{key: (count, sum)} of the table rows (dicts) of slot 'group', from their decoded JSON."""
    out = {}
    for r in rows:
        if r["slot"] == "group":
            aggs = json.loads(r["decoded"])["aggregates"]
            key = json.loads(r["user_key"])[0] if r["user_key"].startswith("[") else \
                json.loads(r["user_key"])
            out[key] = (aggs[0]["count"], aggs[1]["sum"])
    return out


def row_key(r):
    return (r["checkpoint"], r["task"], r["op_id"], r["slot"], r["key_group"], r["user_key"],
            bytes(r["value"]), r["decoded"])


def test_iceberg_history_of_a_running_kafka_job(brokers, topic, tmp_path):  # noqa: F811
    src = topic("in", 4)
    table = tmp_path / "table"
    ckpt = tmp_path / "ckpt"
    produced = records(0, 600)
    produce(brokers, src, produced)
    (tmp_path / "job.sql").write_text(f"""
CREATE TABLE ev (k BIGINT, v BIGINT) WITH (
  connector = 'kafka', brokers = '{brokers}', topic = '{src}', auto_offset_reset = 'earliest');
CREATE TABLE out (k BIGINT, n BIGINT, s BIGINT) WITH (connector = 'blackhole');
INSERT INTO out SELECT k, COUNT(*) AS n, SUM(v) AS s FROM ev GROUP BY k;
""")
    log = open(tmp_path / "run.log", "w")
    job = subprocess.Popen([CLINK, "run", str(tmp_path / "job.sql"), "--checkpoint-dir",
                            str(ckpt), "--checkpoint-interval-ms", "300", "--parallelism", "2"],
                           stdout=subprocess.DEVNULL, stderr=log)
    snaps = tmp_path / "snaps"  # the exported checkpoints' files, kept from pruning
    exported = []
    try:
        for batch, total in ((0, 600), (1, 400)):
            if batch:
                more = records(1, total)
                produce(brokers, src, more)
                produced += more
            want = defaultdict(int)
            for p, _ in produced:
                want[p] += 1

            def caught_up():
                assert job.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
                done = completed(ckpt) if (ckpt / "v1" / "_meta").exists() else []
                for n in reversed(done):
                    try:
                        rows = checkpoint_rows(ckpt, n)
                        if kafka_offsets(rows) == dict(want):
                            return n
                    except (FileNotFoundError, OSError):
                        pass  # pruned while read: a newer one follows
                    break
                return None

            def export():
                n = caught_up()
                if not n:
                    return None
                dst = snaps / str(n)
                try:
                    for f in (ckpt / "v1").glob(f"*/checkpoint-{n}.snap"):
                        (dst / f.parent.name).mkdir(parents=True, exist_ok=True)
                        shutil.copy(f, dst / f.parent.name / f.name)
                except FileNotFoundError:
                    return None
                # the export reads the live job's directory, the checkpoint named
                x = run(["state-export", f"--dir={ckpt}", f"--id={n}", f"--out={table}",
                         "--format=iceberg"])
                if x.returncode != 0 and "could not open" in x.stderr:
                    return None  # pruned between the check and the export: the next one
                assert x.returncode == 0, x.stderr
                assert f"checkpoint {n} appended" in x.stderr and \
                    f"metadata version {batch + 1}" in x.stderr, x.stderr
                return n
            exported.append(wait_for(f"a checkpoint holding batch {batch}", export))
    finally:
        job.send_signal(signal.SIGTERM)
        try:
            job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait()
        log.close()
    first, second = exported
    assert first < second

    # what pyarrow and state-cat read from the same .snap files, and the recomputation
    snap_rows, cat_rows, want_state = {}, {}, {}
    for n in exported:
        files = sorted((snaps / str(n)).glob("*/checkpoint-*.snap"))
        assert files
        rows, cat = [], []
        for f in files:
            meta, ops, rs = read_snapshot(f)
            assert meta["clink.checkpoint_id"] == str(n)
            for r in rs:
                r.update(task=int(f.parent.name), name=ops[r["op_id"]]["name"])
                rows.append(r)
            c = run(["state-cat", f"--from={f}"])
            assert c.returncode == 0, c.stderr
            cat += [json.loads(x) for x in c.stdout.splitlines()]
        snap_rows[n], cat_rows[n] = rows, cat
        want_state[n] = recompute(produced if n == second else produced[:600],
                                  kafka_offsets(rows))
    assert sum(c for c, _ in want_state[first].values()) == 600
    assert sum(c for c, _ in want_state[second].values()) == 1000

    # pyiceberg: the directory (through version-hint.text) and every snapshot
    t = StaticTable.from_metadata(f"file://{table}")
    snapshots = t.snapshots()
    assert len(snapshots) == 2
    assert [s.summary["clink.checkpoint-id"] for s in snapshots] == [str(first), str(second)]
    assert [s.summary.operation.value for s in snapshots] == ["append", "append"]
    assert snapshots[1].parent_snapshot_id == snapshots[0].snapshot_id
    assert t.current_snapshot().snapshot_id == snapshots[1].snapshot_id
    schema = t.scan().to_arrow().schema
    assert [(f.name, f.nullable) for f in schema] == [(n, o) for n, _, o in ICEBERG_COLUMNS]
    by_snap = {}
    for s in snapshots:
        by_snap[s.snapshot_id] = t.scan(snapshot_id=s.snapshot_id).to_arrow().to_pylist()
    old, new = (by_snap[s.snapshot_id] for s in snapshots)
    # time travel to the first snapshot: the first checkpoint's rows, nothing else
    assert {r["checkpoint"] for r in old} == {first}
    # the current one: the history, both checkpoints' rows
    assert sorted(map(row_key, new)) == sorted(map(row_key, old + [r for r in new
                                                                   if r["checkpoint"] == second]))
    assert {r["checkpoint"] for r in new} == {first, second}
    for n, rows in ((first, old), (second, [r for r in new if r["checkpoint"] == second])):
        # every row is the snapshot files' entry: raw bytes as pyarrow reads them ...
        assert sorted((r["op_id"], r["task"], r["key_group"], r["slot"], bytes(r["value"]))
                      for r in rows) == \
            sorted((r["op_id"], r["task"], r["key_group"], r["slot"], r["value"])
                   for r in snap_rows[n])
        # ... decoded as state-cat decodes it, with user_key NULL where state-cat prints null
        assert sorted((r["op_id"], r["task"], r["slot"], r["user_key"], r["decoded"])
                      for r in rows) == \
            sorted((c["op_id"], c["task"], c["slot"],
                    None if c["user_key"] is None else json.dumps(c["user_key"],
                                                                  separators=(",", ":")),
                    json.dumps(c["value"], separators=(",", ":"))) for c in cat_rows[n]), n
        # ... and the group state is the workload's recomputation at that checkpoint's offsets
        assert group_state(rows) == want_state[n], n
        assert all((r["user_key"] is None) == (r["slot"] == "<raw>") for r in rows)
    # a filtered scan (Iceberg's own row filter) gives one checkpoint's rows
    only = t.scan(row_filter=f"checkpoint == {second}").to_arrow()
    assert only.num_rows == len(snap_rows[second])
    # the first metadata version, read as a file: the table as it was after the first export
    v1 = StaticTable.from_metadata(f"file://{table}/metadata/v1.metadata.json")
    assert len(v1.snapshots()) == 1
    assert sorted(map(row_key, v1.scan().to_arrow().to_pylist())) == sorted(map(row_key, old))

    # the data files as they are: DuckDB and Polars, and Iceberg's field ids in the schema
    import polars as pl
    data = sorted((table / "data").glob("*.parquet"))
    assert len(data) == 2
    for f, n in zip(data, exported):
        ids = [int(x.metadata[b"PARQUET:field_id"]) for x in pq.read_schema(f)]
        assert ids == list(range(1, len(ICEBERG_COLUMNS) + 1))
        assert pq.ParquetFile(f).metadata.row_group(0).column(0).compression == "ZSTD"
    total, nulls, groups = duckdb.sql(
        f"SELECT count(*), count(*) - count(user_key), "
        f"count(*) FILTER (WHERE slot = 'group') FROM read_parquet({[str(f) for f in data]})"
    ).fetchall()[0]
    assert total == len(new)
    assert nulls == sum(1 for r in new if r["slot"] == "<raw>") > 0
    assert groups == len(want_state[first]) + len(want_state[second])
    pl_rows = pl.concat([pl.read_parquet(f) for f in data]).to_dicts()
    assert sorted(map(row_key, pl_rows)) == sorted(map(row_key, new))
    print(f"exported checkpoints {first} and {second}: {len(old)} and {len(new) - len(old)} "
          f"rows, groups {want_state[first]} then {want_state[second]}")


# ---------------------------------------------------------------- errors and the commit

@pytest.fixture(scope="module")
def bounded_job(tmp_path_factory):
    """A small bounded datagen job's checkpoint directory (one final checkpoint)."""
    tmp = tmp_path_factory.mktemp("export_bounded")
    sql = f"""
CREATE TABLE g (k BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '3000',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '{KEYS - 1}',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.step' = '1',
  'fields.v.end' = '1000000000');
CREATE TABLE out (k BIGINT, n BIGINT) WITH (connector = 'blackhole');
INSERT INTO out SELECT k, COUNT(*) AS n FROM g GROUP BY k;
"""
    r = clink_run(tmp, sql, 2)
    assert r.returncode == 0, r.stderr[-3000:]
    return tmp / "ckpt", completed(tmp / "ckpt")[-1]


def export(ckpt, out, *extra):
    return run(["state-export", f"--dir={ckpt}", f"--out={out}", "--format=iceberg", *extra])


def test_unwritable_and_damaged_table_directories_are_named(bounded_job, tmp_path):
    ckpt, n = bounded_job
    # the output is a file, or under one
    f = tmp_path / "a-file"
    f.write_text("x")
    x = export(ckpt, f)
    assert x.returncode == 1 and f"'{f}' is not a directory" in x.stderr, x.stderr
    x = export(ckpt, f / "table")
    assert x.returncode == 1 and f"could not create the directory '{f / 'table'}'" in x.stderr
    # the metadata directory is a file
    bad = tmp_path / "bad-meta"
    bad.mkdir()
    (bad / "metadata").write_text("")
    x = export(ckpt, bad)
    assert x.returncode == 1 and f"'{bad / 'metadata'}' is not a directory" in x.stderr
    # a good table, then damage: each error names the file at fault, and nothing is added
    good = tmp_path / "table"
    assert export(ckpt, good).returncode == 0
    meta = good / "metadata"
    hint = meta / "version-hint.text"
    assert hint.read_text() == "1"
    before = sorted(p.name for p in meta.iterdir())

    hint.write_text("one")
    x = export(ckpt, good, f"--id={n}")
    assert x.returncode == 1 and f"'{hint}' is damaged" in x.stderr and \
        "version number" in x.stderr, x.stderr
    hint.write_text("5")
    x = export(ckpt, good)
    assert x.returncode == 1 and str(meta / "v5.metadata.json") in x.stderr, x.stderr
    hint.write_text("1")
    v1 = meta / "v1.metadata.json"
    text = v1.read_text()
    v1.write_text(text[: len(text) // 2])
    x = export(ckpt, good)
    assert x.returncode == 1 and f"'{v1}' is damaged" in x.stderr, x.stderr
    v1.write_text(text)
    hint.unlink()
    x = export(ckpt, good)
    assert x.returncode == 1 and f"'{hint}' is damaged" in x.stderr and "missing" in x.stderr
    hint.write_text("1")
    assert sorted(p.name for p in meta.iterdir()) == before
    # the same checkpoint again: refused, naming it
    x = export(ckpt, good)
    assert x.returncode == 1 and f"checkpoint {n}" in x.stderr and "already" in x.stderr
    # a table moved elsewhere: its paths are absolute, so it is refused rather than read wrong
    moved = tmp_path / "moved"
    shutil.copytree(good, moved)
    x = export(ckpt, moved)
    assert x.returncode == 1 and f"it was written at 'file://{good}'" in x.stderr, x.stderr
    assert StaticTable.from_metadata(f"file://{good}").scan().to_arrow().num_rows > 0
    # a directory name that JSON escapes: the next export reads its metadata back (and stops
    # only because the checkpoint is there already)
    odd = tmp_path / 'odd "name" \\ tab\there'
    assert export(ckpt, odd).returncode == 0
    x = export(ckpt, odd)
    assert x.returncode == 1 and "already" in x.stderr, x.stderr


def test_a_commit_that_finds_its_version_taken_leaves_the_table_as_it_was(bounded_job, tmp_path):
    """Two exports racing: the one that links v<N+1>.metadata.json second gets an error and
    does not touch version-hint.text; a reader keeps reading version N whole. (The other
    export is stood in for by a v2.metadata.json that is there already.)"""
    ckpt, n = bounded_job
    table = tmp_path / "table"
    assert export(ckpt, table).returncode == 0
    meta = table / "metadata"
    rows = StaticTable.from_metadata(f"file://{table}").scan().to_arrow().num_rows
    # a second checkpoint: the same job run again in a copy of its directory (ids go on)
    job2 = tmp_path / "job2"
    shutil.copytree(ckpt.parent, job2)
    r = clink_run(job2, (job2 / "job.sql").read_text(), 2)
    assert r.returncode == 0, r.stderr[-3000:]
    m = completed(job2 / "ckpt")[-1]
    assert m > n
    (meta / "v2.metadata.json").write_text((meta / "v1.metadata.json").read_text())
    x = export(job2 / "ckpt", table)
    assert x.returncode == 1 and "another export committed version 2 first" in x.stderr, x.stderr
    assert (meta / "version-hint.text").read_text() == "1"
    assert not list(meta.glob(".*tmp"))
    (meta / "v2.metadata.json").unlink()
    t = StaticTable.from_metadata(f"file://{table}")
    assert len(t.snapshots()) == 1 and t.scan().to_arrow().num_rows == rows
    # with the version free again the same export commits: both checkpoints, in order
    x = export(job2 / "ckpt", table)
    assert x.returncode == 0, x.stderr
    t = StaticTable.from_metadata(f"file://{table}")
    assert [s.summary["clink.checkpoint-id"] for s in t.snapshots()] == [str(n), str(m)]
    assert {r["checkpoint"] for r in t.scan().to_arrow().to_pylist()} == {n, m}
    log = json.loads((meta / "v2.metadata.json").read_text())["metadata-log"]
    assert [e["metadata-file"] for e in log] == [f"file://{meta / 'v1.metadata.json'}"]


# ---------------------------------------------------------------- Avro, Parquet, --help

def test_avro_writer_files_read_by_fastavro(tmp_path):
    """tests/unit/test_base_avro.c writes container files (null and deflate codec, several
    blocks, ints, longs at their extremes, strings, bytes, a union, booleans, doubles, an empty
    record) and the records each must hold; fastavro reads them."""
    import fastavro
    r = subprocess.run([str(unit_binary("test_base_avro"))], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, CK_AVRO_OUT_DIR=str(tmp_path)))
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted(tmp_path.glob("avro-*.avro"))
    assert len(files) == 8
    codecs = set()
    for f in files:
        want = json.loads(f.with_suffix(".json").read_text())
        for w in want:
            w["b"] = w["b"].encode()
        with open(f, "rb") as fh:
            reader = fastavro.reader(fh)
            codecs.add(reader.codec)
            assert reader.metadata["file"] == "x"
            got = list(reader)
        assert got == want, f
    assert codecs == {"null", "deflate"}


def test_parquet_export_compression(bounded_job, tmp_path):
    ckpt, n = bounded_job
    a, b = tmp_path / "z.parquet", tmp_path / "plain.parquet"
    assert run(["state-export", f"--dir={ckpt}", f"--out={a}", "--format=parquet"]).returncode == 0
    assert run(["state-export", f"--dir={ckpt}", f"--out={b}", "--format=parquet",
                "--compression=none"]).returncode == 0
    assert pq.ParquetFile(a).metadata.row_group(0).column(9).compression == "ZSTD"
    assert pq.ParquetFile(b).metadata.row_group(0).column(9).compression == "UNCOMPRESSED"
    assert pq.read_table(a).equals(pq.read_table(b))
    x = run(["state-export", f"--dir={ckpt}", f"--out={a}", "--compression=zstd"])
    assert x.returncode == 2 and "--compression applies to" in x.stderr
    x = run(["state-export", f"--dir={ckpt}", f"--out={a}", "--format=parquet",
             "--compression=lz4"])
    assert x.returncode == 2 and "zstd or none, not 'lz4'" in x.stderr


def test_help_and_the_options_table_in_docs_state_md():
    doc = (REPO / "docs" / "state.md").read_text()
    m = re.search(r"<!-- generated: clink state-export --options-markdown -->\n(.*?)<!-- end -->",
                  doc, re.S)
    assert m, "docs/state.md has no generated options table for state-export"
    x = run(["state-export", "--options-markdown"])
    assert x.returncode == 0
    assert m.group(1) == x.stdout, "docs/state.md's state-export table differs from " \
        "`clink state-export --options-markdown`; paste the command's output there"
    h = run(["state-export", "--help"])
    assert h.returncode == 0 and "iceberg" in h.stdout and "--compression" in h.stdout
