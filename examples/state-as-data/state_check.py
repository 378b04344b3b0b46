#!/usr/bin/env python3
"""The state-as-data checks, with no clink involved in the reading: what a checkpoint of the
tutorial pipeline holds, read from the files alone, against the workload's own recomputation
of the windows open at that checkpoint (examples/kafka-to-clickhouse/scripts/workload.py).

  state_check.py exports DIR N [--iceberg PREV]
      DIR/state.arrow and DIR/state.parquet (and DIR/iceberg, a table of checkpoints PREV and N)
      exported from checkpoint N: read with pyarrow, DuckDB and Polars (and pyiceberg), the
      three agree, and the open windows they hold are the recomputation's
  state_check.py snapshots CKPT_V1 N
      the snapshot files of checkpoint N, read with pyarrow: the recomputation holds
  state_check.py query CKPT_V1 QUERY_OUT QUERY_ERR [--export PARQUET]
      a `state-query` answer (`SELECT slot, COUNT(*) AS entries FROM state WHERE value_hex <> ''
      GROUP BY slot`, its standard output and error): the checkpoint it names, read with
      pyarrow, has the recomputation's open windows, and the answer counts them and the two
      raw states (the Kafka position, the window operator's watermark); with --export, a
      Parquet export made right after is read instead when it is of the same checkpoint (a
      running job keeps only its three newest checkpoints' files); exit 3 when neither holds
      the checkpoint the answer names any more (the caller asks again)

The recomputation: a checkpoint's Kafka position says how many readings the source had read
(offsets start at 0 on the fresh topic, the producer is idempotent: one offset per reading, in
workload.arrival_order()), and the window operator's watermark which windows had fired (end <=
watermark). Every window of those readings that had not fired is open, with the count, minimum
and maximum of its readings among them. The position and the watermark are read from the raw
bytes of the entries (docs/state.md, "Slots and value encodings"), not from clink's decoding.
"""
import glob
import json
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "kafka-to-clickhouse", "scripts"))
import workload  # noqa: E402


def uvarint(b, at):
    v, shift = 0, 0
    while True:
        x = b[at]
        at += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, at


def kafka_position(value):
    """The readings consumed: the next offsets of a kafka_source's raw value, summed (u8
    version, uvarint topic length, topic, uvarint n, per partition uvarint partition, uvarint
    next offset, and from version 2 uvarint run start + 1; then version 2's log identity,
    which this does not need; docs/state.md)."""
    assert value[0] in (1, 2), value[:4]
    n, at = uvarint(value, 1)
    at += n
    parts, at = uvarint(value, at)
    total = 0
    for _ in range(parts):
        _, at = uvarint(value, at)
        nxt, at = uvarint(value, at)
        if value[0] >= 2:
            _, at = uvarint(value, at)  # where the run began reading the partition
        total += nxt
    return total


def watermark(header):
    """The aggregation header's watermark: the i64 before its final u64 entry count."""
    assert header[:4] == b"CKAG", header[:4]
    return int.from_bytes(header[-16:-8], "little", signed=True)


def window(value):
    """(start, end, count, min, max) of one 'win' entry of the tutorial's aggregation (snapshot
    format 3.0: the key group and the key are their own columns, not in the value): i64 start,
    i64 end, COUNT(*) i64, AVG (f64 hi, f64 lo, i64 n, i64 big), MIN and MAX (u8 has, f64)."""
    import struct
    start = int.from_bytes(value[0:8], "little", signed=True)
    end = int.from_bytes(value[8:16], "little", signed=True)
    at = 16
    count = int.from_bytes(value[at:at + 8], "little", signed=True)
    at += 8 + 32
    assert value[at] == 1 and value[at + 9] == 1
    mn = struct.unpack("<d", value[at + 1:at + 9])[0]
    mx = struct.unpack("<d", value[at + 10:at + 18])[0]
    return start, end, count, mn, mx


def recompute(consumed, wm):
    """{(sensor, window_start): (count, min, max)} of the windows open after `consumed`
    readings with the operator at watermark wm."""
    acc = defaultdict(list)
    for s, ts, t in workload.arrival_order()[:consumed]:
        ws = ts - ts % workload.WINDOW_MS
        if ws + workload.WINDOW_MS > wm:
            acc[(s, ws)].append(t / 10)
    return {k: (len(v), min(v), max(v)) for k, v in acc.items()}


def held(rows):
    """The open windows and the raw states in rows (dicts with name/operator, slot, user_key,
    value): ({(sensor, start): (count, min, max)}, consumed, watermark)."""
    wins, consumed, wms = {}, None, []
    for r in rows:
        name = r.get("operator") or r.get("name")
        if r["slot"] == "win":
            key = r["user_key"]
            sensor = json.loads(key.decode() if isinstance(key, bytes) else key)
            start, end, count, mn, mx = window(r["value"])
            assert end == start + workload.WINDOW_MS
            assert (sensor, start) not in wins
            wins[(sensor, start)] = (count, mn, mx)
        elif name == "kafka_source":
            consumed = kafka_position(r["value"])
        elif name == "window_agg" and r["slot"] == "<raw>":
            wms.append(watermark(r["value"]))
    assert consumed is not None and len(wms) == 1, (consumed, wms)
    return wins, consumed, wms[0]


def check_held(rows, what):
    wins, consumed, wm = held(rows)
    want = recompute(consumed, wm)
    assert wins == want, f"{what}: held {sorted(wins.items())[:5]}, recomputed {sorted(want.items())[:5]}"
    print(f"state_check: {what}: {len(wins)} open windows after {consumed} readings at watermark "
          f"{wm}, each with the recomputed count, minimum and maximum")
    return wins, consumed, wm


def snapshot_rows(v1, n):
    import pyarrow.ipc as ipc
    rows = []
    for f in sorted(glob.glob(os.path.join(v1, "*", f"checkpoint-{n}.snap"))):
        reader = ipc.open_stream(open(f, "rb").read())
        ops = {o["op_id"]: o for o in json.loads(reader.schema.metadata[b"clink.operators"])}
        for r in reader.read_all().to_pylist():
            r["name"] = ops[r["op_id"]]["name"]
            rows.append(r)
    assert rows, f"no snapshot file of checkpoint {n} under {v1}"
    return rows


def cmd_exports(d, n, prev):
    import duckdb
    import polars as pl
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq
    arrow = ipc.open_stream(open(os.path.join(d, "state.arrow"), "rb").read()).read_all()
    parquet = pq.read_table(os.path.join(d, "state.parquet"))
    by_duckdb = duckdb.sql(f"SELECT operator, slot, user_key, value, checkpoint FROM "
                           f"'{os.path.join(d, 'state.parquet')}'").fetchall()
    by_polars = pl.read_parquet(os.path.join(d, "state.parquet")).to_dicts()
    sets = {}
    for what, rows in (("pyarrow (arrow)", arrow.to_pylist()), ("pyarrow (parquet)", parquet.to_pylist()),
                       ("duckdb", [dict(zip(("operator", "slot", "user_key", "value", "checkpoint"), r))
                                   for r in by_duckdb]),
                       ("polars", by_polars)):
        assert all(r["checkpoint"] == n for r in rows), what
        norm = [dict(r, user_key=r["user_key"] or "", value=bytes(r["value"])) for r in rows]
        sets[what] = sorted((r["operator"], r["slot"], r["user_key"], r["value"]) for r in norm)
        check_held(norm, f"checkpoint {n} exported, read by {what}")
    first = next(iter(sets.values()))
    assert all(s == first for s in sets.values()), "the readers disagree"
    if prev is not None:
        from pyiceberg.table import StaticTable
        meta = sorted(glob.glob(os.path.join(d, "iceberg", "metadata", "v*.metadata.json")),
                      key=lambda p: int(re.search(r"v(\d+)\.metadata", p).group(1)))[-1]
        t = StaticTable.from_metadata(meta)
        snaps = t.metadata.snapshots
        assert len(snaps) == 2, snaps
        for i, snap in enumerate(snaps):
            rows = t.scan(snapshot_id=snap.snapshot_id).to_arrow().to_pylist()
            ids = sorted({r["checkpoint"] for r in rows})
            assert ids == [prev, n][:i + 1], (i, ids)  # each export appended one checkpoint
        latest = [dict(r, user_key=r["user_key"] or "", value=bytes(r["value"]))
                  for r in t.scan().to_arrow().to_pylist() if r["checkpoint"] == n]
        assert sorted((r["operator"], r["slot"], r["user_key"], r["value"]) for r in latest) == first
        check_held(latest, f"checkpoint {n} in the Iceberg table (pyiceberg, 2 snapshots)")


def cmd_query(v1, out, err, export=None):
    said = open(err).read()
    m = re.search(r"state-query: (?:job \d+, )?checkpoint (\d+)", said)
    assert m, said
    n = int(m.group(1))
    rows = None
    if export:  # the same checkpoint exported right after the query (the files may be gone:
        import pyarrow.parquet as pq  # a running job keeps its three newest)
        t = pq.read_table(export).to_pylist()
        if t and t[0]["checkpoint"] == n:
            rows, what = t, f"checkpoint {n} exported to Parquet, read by pyarrow"
    if rows is None:
        if not glob.glob(os.path.join(v1, "*", f"checkpoint-{n}.snap")):
            print(f"state_check: checkpoint {n} is no longer on disk (a running job keeps its "
                  f"three newest) and the export is of another: not checkable, ask again")
            sys.exit(3)
        rows, what = snapshot_rows(v1, n), f"checkpoint {n} read by pyarrow"
    wins, _, _ = check_held(rows, what)
    got = {}
    for line in open(out):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            if set(r) == {"slot", "entries"}:  # the answer's rows (the output may hold more)
                got[r["slot"]] = r["entries"]
    assert got == {"<raw>": 2, "win": len(wins)}, (got, len(wins))
    print(f"state_check: state-query read checkpoint {n}: {got['win']} open windows and 2 raw "
          f"states (the Kafka position, the window operator's watermark), as recomputed")


def main():
    cmd = sys.argv[1]
    if cmd == "exports":
        prev = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--iceberg" else None
        cmd_exports(sys.argv[2], int(sys.argv[3]), prev)
    elif cmd == "snapshots":
        check_held(snapshot_rows(sys.argv[2], int(sys.argv[3])), f"checkpoint {sys.argv[3]} read by pyarrow")
    elif cmd == "query":
        cmd_query(sys.argv[2], sys.argv[3], sys.argv[4],
                  sys.argv[6] if len(sys.argv) > 6 and sys.argv[5] == "--export" else None)
    else:
        sys.exit(__doc__)
    print("state_check: PASS")


if __name__ == "__main__":
    main()
