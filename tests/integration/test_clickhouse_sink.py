"""The clickhouse sink against real ClickHouse servers of both tested lines (18.16 and 26.9),
through the `clink` binary. Every test runs once per line.

What these tests hold the sink to (src/connectors/clickhouse/ch_sink.c):
  (a) every supported ClickHouse type round-trips: the rows clink inserts read back through
      clickhouse-driver (an independent client) equal the inputs, NULLs and edge values
      included, with and without LZ4 compression, in one block or a block per row;
  (b) ClickHouse stopped for ten seconds in the middle of a paced stream, then started again:
      the job waits, says so in its log ("retrying in N ms" with the reason), goes on, and no
      row is lost; a SIGKILL after a checkpoint completed loses no row from before its barrier;
  (c) an unknown column and a narrowing conversion are refused at plan time, naming both types;
  (d) delivery_guarantee = 'exactly_once' is refused by the planner, naming the sink;
  (e) a password appears in no log line and no error, wrong or right, plain or from the
      environment, at debug level.

The binary is $CLINK_BIN, or build/src/cli/clink. Tables are named after the run id.
"""

import decimal
import math
import os
import re
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from clickhouse_driver import Client

from .conftest import CLICKHOUSE_LINES, REPO, clickhouse_line

CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build" / "src" / "cli" / "clink")
SERVICES = os.environ.get("CLINK_SERVICES") or str(REPO / "scripts" / "services.sh")


@pytest.fixture(scope="module", params=sorted(CLICKHOUSE_LINES))
def ch_conf(request):
    return clickhouse_line(request.param)


@pytest.fixture
def ch(ch_conf):
    client = Client(host=ch_conf["host"], port=ch_conf["port"], user="default", password="",
                    connect_timeout=5, send_receive_timeout=60)
    yield client
    client.disconnect()


@pytest.fixture
def table(ch, unique):
    """A fresh table name; dropped afterwards."""
    names = []

    def make(prefix, columns, engine="MergeTree ORDER BY tuple()"):
        name = unique(prefix)
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)
        ch.execute("CREATE TABLE default.%s (%s) ENGINE = %s" % (name, columns, engine))
        names.append(name)
        return name

    yield make
    for n in names:
        try:
            ch.execute("DROP TABLE IF EXISTS default.%s" % n)
        except Exception:  # the server may be down after a failed restart test
            pass


def run_clink(sql, *args, env=None, timeout=120, log_level="info"):
    e = dict(os.environ)
    e.update(env or {})
    cmd = [CLINK, "run", "-e", sql, "--log-level", log_level] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    # a sanitizer build reports leaks and undefined behaviour on stderr, failing paths included
    assert "LeakSanitizer" not in r.stderr and "runtime error:" not in r.stderr, r.stderr
    return r


def sink_opts(ch_conf, table, **extra):
    opts = {"connector": "clickhouse", "host": ch_conf["host"], "port": str(ch_conf["port"]),
            "database": "default", "table": table}
    opts.update(extra)
    # one option a line: an error's source excerpt shows the line of the table's name only
    return ",\n    ".join("%s = '%s'" % (k, v) for k, v in opts.items())


# --------------------------------------------------------------- (a) round trip ----

COLUMNS = [
    # name, ClickHouse type, SQL type, read-back expression
    ("i8", "Int8", "INT", "i8"),
    ("i16", "Int16", "INT", "i16"),
    ("i32", "Int32", "INT", "i32"),
    ("i64", "Int64", "BIGINT", "i64"),
    ("u8", "UInt8", "INT", "u8"),
    ("u16", "UInt16", "INT", "u16"),
    ("u32", "UInt32", "BIGINT", "u32"),
    ("u64", "UInt64", "DECIMAL(20, 0)", "toString(u64)"),
    ("f32", "Float32", "FLOAT", "f32"),
    ("f64", "Float64", "DOUBLE", "f64"),
    ("s", "String", "VARCHAR", "s"),
    ("fs", "FixedString(6)", "VARCHAR", "fs"),
    ("d", "Date", "INT", "toUInt16(d)"),
    ("dt", "DateTime", "BIGINT", "toUInt32(dt)"),
    ("d32", "Decimal(9, 2)", "DECIMAL(9, 2)", "toString(d32)"),
    ("d64", "Decimal(18, 6)", "DECIMAL(18, 6)", "toString(d64)"),
    ("d128", "Decimal(38, 10)", "DECIMAL(38, 10)", "toString(d128)"),
    ("dw", "Decimal(12, 4)", "DECIMAL(10, 2)", "toString(dw)"),  # wider on both sides
    ("ns", "Nullable(String)", "VARCHAR", "ns"),
    ("ni", "Nullable(Int64)", "BIGINT", "ni"),
    ("nd", "Nullable(Decimal(38, 2))", "DECIMAL(38, 2)", "toString(nd)"),
    ("nf", "Nullable(Float64)", "DOUBLE", "nf"),
    ("lc", "LowCardinality(String)", "VARCHAR", "toString(lc)"),
    ("lcn", "LowCardinality(Nullable(String))", "VARCHAR", "toString(lcn)"),
    ("b", "UInt8", "BOOLEAN", "b"),
    ("ts", "Int64", "TIMESTAMP", "ts"),  # epoch milliseconds
]

I64MIN, I64MAX = -(2 ** 63), 2 ** 63 - 1
D38 = "9" * 28 + "." + "9" * 10


def json_value(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"%s"' % (v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                         .replace("\t", "\\t"))
    return str(v)


def round_trip_rows():
    """(row dict of inputs, expected read-back tuple) for a set of edge values."""
    rows = [
        dict(id=1, i8=-128, i16=-32768, i32=-2147483648, i64=I64MIN, u8=0, u16=0, u32=0,
             u64="0", f32=-1.5, f64=-1e308, s="", fs="", d=0, dt=0, d32="-9999999.99",
             d64="-999999999999.999999", d128="-" + D38, dw="-99999999.99", ns=None, ni=None,
             nd=None, nf=None, lc="", lcn=None, b=False, ts=0),
        dict(id=2, i8=127, i16=32767, i32=2147483647, i64=I64MAX, u8=255, u16=65535,
             u32=4294967295, u64="18446744073709551615", f32=3.4028234663852886e38,
             f64=5e-324, s="h\u00e9llo \u2713 \U0001F600", fs="abcdef", d=65535, dt=4294967295,
             d32="9999999.99", d64="999999999999.999999", d128=D38, dw="99999999.99",
             ns="x" * 1000, ni=I64MAX, nd="-" + "9" * 36 + ".99", nf=2.5, lc="a", lcn="a",
             b=True, ts=1772352000123),
        dict(id=3, i8=0, i16=0, i32=0, i64=0, u8=1, u16=1, u32=1, u64="1", f32=0.0, f64=0.1,
             s='quote " backslash \\ newline \n tab \t', fs="\u00e9", d=19000, dt=1700000000,
             d32="0.01", d64="-0.000001", d128="0.0000000001", dw="0.01", ns="", ni=-1,
             nd="0.00", nf=-0.0, lc="b", lcn="", b=False, ts=-1),
    ]
    for i in range(4, 604):  # many rows: LowCardinality dictionaries over 256 keys
        rows.append(dict(id=i, i8=i % 256 - 128, i16=i * 50 - 30000, i32=i * 7919, i64=i * 10 ** 15,
                         u8=i % 256, u16=i * 100, u32=i * 7000000, u64=str(i * 10 ** 16),
                         f32=i / 4, f64=i / 3, s="row %d" % i, fs="r%d" % i, d=i * 30,
                         dt=i * 3600000, d32="%d.%02d" % (i, i % 100), d64="%d.000001" % i,
                         d128="-%d.5" % i, dw="%d.25" % i, ns=None if i % 5 == 0 else "n%d" % i,
                         ni=None if i % 3 == 0 else -i, nd=None if i % 7 == 0 else "%d.5" % i,
                         nf=None if i % 2 else i / 8, lc="k%d" % (i % 300),
                         lcn=None if i % 11 == 0 else "v%d" % (i % 280), b=i % 2 == 0,
                         ts=i * 1000))
    return rows


def dec_text(text, scale):
    """ClickHouse's toString of a Decimal: the value at its scale."""
    neg = text.startswith("-")
    digits = text.lstrip("-")
    whole, _, frac = digits.partition(".")
    frac = (frac + "0" * scale)[:scale]
    whole = whole.lstrip("0") or "0"
    s = whole + ("." + frac if scale else "")
    if neg and set(s) - {"0", "."}:
        s = "-" + s
    return s


def expected(row):
    out = [row["id"]]
    for name, chtype, _, _ in COLUMNS:
        v = row[name]
        if name == "u64":
            v = str(int(v))
        elif name == "fs":
            v = v.encode()
            v = (v + b"\0" * 6)[:6].decode("utf-8", "surrogateescape") if v else "\0" * 6
        elif name in ("d32", "d64", "d128", "dw", "nd") and v is not None:
            v = dec_text(v, int(re.search(r", (\d+)\)", chtype).group(1)))
        elif name == "f32":
            v = struct.unpack("<f", struct.pack("<f", v))[0]
        elif name == "b":
            v = int(v)
        elif name == "lcn" and v is None:
            v = None
        out.append(v)
    return tuple(out)


DECIMALS = ("u64", "d32", "d64", "d128", "dw", "nd")


def same(a, b, name=None):
    if name in DECIMALS and a is not None and b is not None:
        # the value, not its text: 26.x's toString drops a decimal's trailing zeros, 18.16
        # prints its scale
        return decimal.Decimal(a) == decimal.Decimal(b)
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


@pytest.mark.parametrize("compression,batch_rows", [("lz4", "65536"), ("none", "1"), ("lz4", "7")])
def test_every_type_round_trips(ch, ch_conf, table, tmp_path, compression, batch_rows):
    cols = ", ".join("%s %s" % (n, t) for n, t, _, _ in COLUMNS)
    name = table("rt", "id Int64, %s, extra String DEFAULT 'filled-by-default'" % cols, "MergeTree ORDER BY id")
    rows = round_trip_rows()
    data = tmp_path / "rows.json"
    raw = {"u64", "d32", "d64", "d128", "dw", "nd"}  # decimals: JSON numbers, full precision
    data.write_text("".join("{%s}\n" % ", ".join('"%s": %s' % (k, v if k in raw and v is not None
                                                                 else json_value(v))
                                                 for k, v in r.items())
                            for r in rows))
    sql_cols = "id BIGINT, " + ", ".join("%s %s" % (n, s) for n, _, s, _ in COLUMNS)
    sql = """
        CREATE TABLE src (%s) WITH (connector = 'file', path = '%s', format = 'json');
        CREATE TABLE snk (%s) WITH (%s);
        INSERT INTO snk SELECT * FROM src;
        """ % (sql_cols, data, sql_cols, sink_opts(ch_conf, name, user="clink", password="clink",
                                                   compression=compression, batch_rows=batch_rows,
                                                   narrowing="checked", format="json"))
    r = run_clink(sql)
    assert r.returncode == 0, r.stderr
    assert "[clickhouse] table 'snk'" in r.stderr and "compression %s" % compression in r.stderr
    got = ch.execute("SELECT id, %s FROM default.%s ORDER BY id" % (", ".join(e for _, _, _, e in COLUMNS), name))
    assert len(got) == len(rows)
    for g, row in zip(got, rows):
        want = expected(row)
        for i, (gv, wv) in enumerate(zip(g, want)):
            label = "id" if i == 0 else COLUMNS[i - 1][0]
            if isinstance(gv, bytes):
                gv = gv.decode("utf-8", "surrogateescape")
            if label == "fs":  # the driver may strip FixedString's zero padding
                gv, wv = gv.rstrip("\0"), wv.rstrip("\0")
            assert same(gv, wv, label), "row %d column %s: got %r, want %r" % (row["id"], label, gv, wv)
    # the column the SQL table does not declare got its default
    assert ch.execute("SELECT DISTINCT extra FROM default.%s" % name) == [("filled-by-default",)]
    # an INSERT once batch_rows rows are buffered (an incoming batch is not split), and one at
    # the end of the input for the rest
    inserts = int(re.search(r"(\d+) rows written to .* in (\d+) inserts", r.stderr).group(2))
    assert 1 <= inserts <= -(-len(rows) // int(batch_rows))
    if batch_rows == "65536":
        assert inserts == 1


def test_extreme_doubles_and_defaults(ch, ch_conf, table):
    """The largest and smallest finite doubles and floats, negative zero and a subnormal
    round-trip bit for bit; a column the SQL table does not declare takes its DEFAULT. (No
    Infinity or NaN reaches a sink: an expression that would make one fails the job, see
    docs/sql.md, and no input format reads one.)"""
    name = table("ext", "a Float64, b Float32, c Nullable(Float64), z Float64, d String DEFAULT 'dflt'")
    sql = """
        CREATE TABLE g (x BIGINT) WITH (connector = 'datagen', rows = '1');
        CREATE TABLE snk (a DOUBLE, b FLOAT, c DOUBLE, z DOUBLE) WITH (%s);
        INSERT INTO snk SELECT CAST('1.7976931348623157e308' AS DOUBLE) AS a,
                               CAST('-3.4028234e38' AS FLOAT) AS b,
                               CAST('4.9e-324' AS DOUBLE) AS c, CAST('-0.0' AS DOUBLE) AS z FROM g;
        """ % sink_opts(ch_conf, name)
    r = run_clink(sql)
    assert r.returncode == 0, r.stderr
    (a, b, c, z, d), = ch.execute("SELECT a, b, c, z, d FROM default.%s" % name)
    assert a == 1.7976931348623157e308 and c == 5e-324 and d == "dflt"
    assert b == struct.unpack("<f", struct.pack("<f", -3.4028234e38))[0]
    assert z == 0.0 and math.copysign(1, z) == -1.0
    # and a NaN is refused before it could reach the table
    r = run_clink(sql.replace("'1.7976931348623157e308'", "'NaN'"))
    assert r.returncode != 0 and "could not cast 'NaN' to DOUBLE" in r.stderr, r.stderr


def test_null_into_non_nullable_column_fails_naming_it(ch, ch_conf, table, tmp_path):
    name = table("nn", "id Int64, v String")
    data = tmp_path / "rows.json"
    data.write_text('{"id": 1, "v": "a"}\n{"id": 2, "v": null}\n')
    sql = """
        CREATE TABLE src (id BIGINT, v VARCHAR) WITH (connector = 'file', path = '%s', format = 'json');
        CREATE TABLE snk (id BIGINT, v VARCHAR) WITH (%s);
        INSERT INTO snk SELECT * FROM src;
        """ % (data, sink_opts(ch_conf, name))
    r = run_clink(sql)
    assert r.returncode != 0
    assert "column 'v'" in r.stderr and "not Nullable" in r.stderr, r.stderr
    assert ch.execute("SELECT count() FROM default.%s" % name) == [(0,)]


# ----------------------------------------------------- (b) server down mid-stream ----

def services(*args):
    r = subprocess.run([SERVICES] + list(args), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, "services.sh %s failed:\n%s%s" % (" ".join(args), r.stdout, r.stderr)


def wait_for_rows(ch, name, n, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        (c,), = ch.execute("SELECT count() FROM default.%s" % name)
        if c >= n:
            return c
        time.sleep(0.2)
    return c


def test_clickhouse_down_for_ten_seconds_loses_nothing(ch, ch_conf, table, tmp_path):
    name = table("down", "id Int64, v Int64", "MergeTree ORDER BY id")
    total = 3000
    sql = """
        CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rows = '%d', rows_per_second = '150',
                                        'fields.id.kind' = 'sequence');
        CREATE TABLE snk (id BIGINT, v BIGINT) WITH (%s);
        INSERT INTO snk SELECT id, id * 3 + 1 AS v FROM g;
        """ % (total, sink_opts(ch_conf, name, user="clink", password="clink", batch_rows="20",
                                retry_backoff_max_ms="2000"))
    log = open(tmp_path / "clink.log", "w+")
    proc = subprocess.Popen([CLINK, "run", "-e", sql, "--checkpoint-dir", str(tmp_path / "ckpt"),
                             "--checkpoint-interval-ms", "500"], stdout=log, stderr=subprocess.STDOUT)
    stopped = False
    try:
        assert wait_for_rows(ch, name, 300, 30) >= 300, "no rows arrived before the stop"
        ch.disconnect()
        services("stop", ch_conf["service"])
        stopped = True
        stop_at = time.time()
        time.sleep(10)
        services("start", ch_conf["service"])
        stopped = False
        down_for = time.time() - stop_at
        assert proc.wait(timeout=120) == 0
    finally:
        if stopped:
            services("start", ch_conf["service"])
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log.seek(0)
    out = log.read()
    assert "LeakSanitizer" not in out and "runtime error:" not in out, out[-3000:]
    retries = re.findall(r"\[clickhouse\] (?:warning: )?table 'snk': could not insert \d+ rows into `default`.`%s`: "
                         r"(.+); retrying in (\d+) ms" % name, out)
    assert retries, "the wait was not logged:\n" + out[-3000:]
    assert any("could not connect" in reason or "connection" in reason for reason, _ in retries)
    assert max(int(ms) for _, ms in retries) <= 2000  # the cap holds
    assert "succeeded at attempt" in out
    got = dict(ch.execute("SELECT id, any(v) FROM default.%s GROUP BY id" % name))
    missing = [i for i in range(total) if i not in got]
    assert not missing, "lost %d rows, first %s" % (len(missing), missing[:10])
    assert all(v == 3 * i + 1 for i, v in got.items())
    (count,), = ch.execute("SELECT count() FROM default.%s" % name)
    # at least once: an insert in flight when the server went away may have landed twice
    assert count >= total
    print("server down %.1f s; %d retries logged; %d rows for %d ids" % (down_for, len(retries), count, total))


def snapshot_position(path):
    """The datagen source's next row index from a checkpoint-<N>.snap, an Arrow IPC stream
    (docs/state.md): the source's row holds u8 version, uvarint parallelism, uvarint next."""
    import json
    import pyarrow.ipc
    reader = pyarrow.ipc.open_stream(Path(path).read_bytes())
    ops = json.loads(reader.schema.metadata[b"clink.operators"])
    sources = {o["op_id"] for o in ops if o["kind"] == "source"}
    for row in reader.read_all().to_pylist():
        if row["op_id"] in sources:
            body = row["value"]
            vals, shift, cur, i = [], 0, 0, 1
            while len(vals) < 2:
                b = body[i]
                cur |= (b & 0x7F) << shift
                shift += 7
                i += 1
                if not b & 0x80:
                    vals.append(cur)
                    cur, shift = 0, 0
            return vals[1]
    raise AssertionError("no source row in %s" % path)


def completed_ids(ckpt):
    """Ids of the completed markers in a checkpoint directory; a marker being written (its
    temporary name, completed-<N>.tmp) is not one yet."""
    meta = ckpt / "v1" / "_meta"
    names = [p.name.split("-", 1)[1] for p in meta.glob("completed-*")] if meta.exists() else []
    return sorted(int(n) for n in names if n.isdigit())


def test_kill_after_checkpoint_loses_no_buffered_row(ch, ch_conf, table, tmp_path):
    """Rows wait in the sink's buffer (a large batch, no timer); a checkpoint's prepare must
    have inserted and acknowledged all of them before it completed, so a SIGKILL right after
    loses none of the rows before that checkpoint's barrier."""
    name = table("kill", "id Int64", "MergeTree ORDER BY id")
    ckpt = tmp_path / "ckpt"
    sql = """
        CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rows_per_second = '400',
                                        'fields.id.kind' = 'sequence');
        CREATE TABLE snk (id BIGINT) WITH (%s);
        INSERT INTO snk SELECT id FROM g;
        """ % sink_opts(ch_conf, name, batch_rows="1000000", batch_interval_ms="0")
    proc = subprocess.Popen([CLINK, "run", "-e", sql, "--checkpoint-dir", str(ckpt),
                             "--checkpoint-interval-ms", "700"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            done = completed_ids(ckpt)
            if done and done[-1] >= 4:  # by id: retention keeps only the newest markers
                break
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = completed_ids(ckpt)
    assert done and done[-1] >= 4, "checkpoints did not complete"
    last = done[-1]
    snap = ckpt / "v1" / "0" / ("checkpoint-%d.snap" % last)
    upto = snapshot_position(snap)
    assert upto > 0
    got = {r[0] for r in ch.execute("SELECT DISTINCT id FROM default.%s WHERE id < %d" % (name, upto))}
    assert len(got) == upto, "checkpoint %d covers ids below %d, %d are in ClickHouse" % (last, upto, len(got))


# ------------------------------------------------------- (c), (d) plan time ----

def plan_only(ch_conf, name, sql_cols, query, **opts):
    sql = """
        CREATE TABLE g (a BIGINT, b VARCHAR, c DOUBLE) WITH (connector = 'datagen', rows = '5');
        CREATE TABLE snk (%s) WITH (%s);
        %s;
        """ % (sql_cols, sink_opts(ch_conf, name, **opts), query)
    return run_clink(sql, timeout=60)


def test_unknown_column_refused_at_plan_time(ch, ch_conf, table):
    name = table("uc", "a Int64, value String")
    r = plan_only(ch_conf, name, "a BIGINT, valeu VARCHAR", "INSERT INTO snk SELECT a, b AS valeu FROM g")
    assert r.returncode != 0
    assert "has no column 'valeu'" in r.stderr and "did you mean 'value'" in r.stderr, r.stderr
    assert "[clickhouse] table 'snk': writing" not in r.stderr  # nothing started
    assert ch.execute("SELECT count() FROM default.%s" % name) == [(0,)]


@pytest.mark.parametrize("sql_type,ch_type", [("BIGINT", "Int32"), ("VARCHAR", "Int32"),
                                              ("DOUBLE", "Int64"), ("BIGINT", "UInt64"),
                                              ("TIMESTAMP(3)", "DateTime"),
                                              ("DECIMAL(10, 2)", "Decimal(10, 4)")])
def test_narrowing_refused_at_plan_time_naming_both_types(ch, ch_conf, table, sql_type, ch_type):
    name = table("nw", "a Int64, v %s" % ch_type)
    r = plan_only(ch_conf, name, "a BIGINT, v %s" % sql_type, "INSERT INTO snk SELECT a, NULL AS v FROM g")
    assert r.returncode != 0
    shown = {"TIMESTAMP(3)": "TIMESTAMP(3)", "DECIMAL(10, 2)": "DECIMAL(10, 2)"}.get(sql_type, sql_type)
    assert "cannot write %s column 'v'" % shown in r.stderr and "which is %s" % ch_type in r.stderr, r.stderr
    assert "[clickhouse] table 'snk': writing" not in r.stderr


def test_unreachable_server_does_not_fail_the_plan(ch_conf, tmp_path):
    """At plan time an unreachable server is only a warning; open() retries, and gives up
    after retry_timeout_ms with the reason."""
    sql = """
        CREATE TABLE g (a BIGINT) WITH (connector = 'datagen', rows = '5');
        CREATE TABLE snk (a BIGINT) WITH (connector = 'clickhouse', host = '127.0.0.1', port = '1',
                                          table = 't', retry_timeout_ms = '1500', retry_backoff_ms = '200');
        INSERT INTO snk SELECT a FROM g;
        """
    r = run_clink(sql, timeout=60)
    assert r.returncode != 0
    assert "could not check ClickHouse table `default`.`t` at plan time" in r.stderr
    assert "retrying in 200 ms" in r.stderr and "retrying in 400 ms" in r.stderr
    assert "in " in r.stderr and "ms of retrying" in r.stderr and "Connection refused" in r.stderr


def test_exactly_once_refused_where_the_server_or_table_cannot_give_it(ch, ch_conf, table):
    """delivery_guarantee = 'exactly_once' is refused at plan time, naming what is missing: on
    18.16 the server (no insert_deduplication_token); on 26.9 a table that is not of the
    MergeTree family, and one a materialized view reads. (tests/checkpoint/test_eos_clickhouse.py
    has what it does where it is accepted.)"""
    name = table("eo", "a Int64")
    if ch_conf["line"] == "18.16":
        r = plan_only(ch_conf, name, "a BIGINT", "INSERT INTO snk SELECT a FROM g",
                      delivery_guarantee="exactly_once", user="clink", password="clink")
        assert r.returncode != 0
        assert "cannot take delivery_guarantee = 'exactly_once': it has no " \
               "insert_deduplication_token (22.2 and later have)" in r.stderr, r.stderr
        assert "18.16" in r.stderr and "<-e>:" in r.stderr  # the server's version, the position
        return
    mem = table("eo_mem", "a Int64", "Memory")
    r = plan_only(ch_conf, mem, "a BIGINT", "INSERT INTO snk SELECT a FROM g",
                  delivery_guarantee="exactly_once", user="clink", password="clink")
    assert r.returncode != 0
    assert "is Memory, which delivery_guarantee = 'exactly_once' cannot write" in r.stderr, r.stderr
    viewed = table("eo_viewed", "a Int64", "MergeTree ORDER BY a")
    ch.execute("CREATE MATERIALIZED VIEW default.%s_mv ENGINE = MergeTree ORDER BY a AS "
               "SELECT a FROM default.%s" % (viewed, viewed))
    try:
        r = plan_only(ch_conf, viewed, "a BIGINT", "INSERT INTO snk SELECT a FROM g",
                      delivery_guarantee="exactly_once", user="clink", password="clink")
        assert r.returncode != 0
        assert "has 1 materialized view reading it" in r.stderr, r.stderr
    finally:
        ch.execute("DROP TABLE IF EXISTS default.%s_mv" % viewed)


@pytest.mark.parametrize("option,value,message", [
    ("insert_format", "json_each_row", "insert_format 'json_each_row' is not supported"),
    ("format", "csv", "format 'csv' does not apply to the clickhouse sink"),
    ("batch_rows", "0", "batch_rows must be between"),
])
def test_bad_options_refused(ch, ch_conf, table, option, value, message):
    name = table("opt", "a Int64")
    r = plan_only(ch_conf, name, "a BIGINT", "INSERT INTO snk SELECT a FROM g", **{option: value})
    assert r.returncode != 0 and message in r.stderr, r.stderr


# ---------------------------------------------------------------- (e) secrets ----

def test_password_never_in_logs_or_errors(ch, ch_conf, table, run_id):
    name = table("pw", "a Int64")
    secret = "S3cr3t-%s" % run_id
    outputs = []
    # a wrong password, given plainly: refused at plan time
    # the server's own words: 18.16 says code 193, 26.x code 516
    code, words = {"18.16": ("193", "Wrong password"),
                   "26.9": ("516", "Authentication failed")}[ch_conf["line"]]
    r = plan_only(ch_conf, name, "a BIGINT", "INSERT INTO snk SELECT a FROM g", user="clink", password=secret)
    assert r.returncode != 0 and code in r.stderr and words in r.stderr, r.stderr
    outputs.append(r.stdout + r.stderr)
    # the same from the environment, at debug level
    sql = """
        CREATE TABLE g (a BIGINT) WITH (connector = 'datagen', rows = '5');
        CREATE TABLE snk (a BIGINT) WITH (%s);
        INSERT INTO snk SELECT a FROM g;
        """
    r = run_clink(sql % sink_opts(ch_conf, name, user="clink", password_env="CK_TEST_PW"),
                  env={"CK_TEST_PW": secret}, log_level="debug")
    assert r.returncode != 0 and words in r.stderr
    outputs.append(r.stdout + r.stderr)
    # an unset variable is named, not guessed at
    r = run_clink(sql % sink_opts(ch_conf, name, user="clink", password_env="CK_TEST_PW_UNSET"))
    assert r.returncode != 0 and "'CK_TEST_PW_UNSET', which is not set" in r.stderr
    # the right password from the environment works, at debug level, and is not printed either
    r = run_clink(sql % sink_opts(ch_conf, name, user="clink", password_env="CK_TEST_PW"),
                  env={"CK_TEST_PW": "clink"}, log_level="debug")
    assert r.returncode == 0, r.stderr
    assert ch.execute("SELECT count() FROM default.%s" % name) == [(5,)]
    assert "'clink'" in r.stderr  # the user is named
    assert "CK_TEST_PW" not in r.stderr
    outputs.append(r.stdout + r.stderr)
    # a wrong password at open() (the server was unreachable at plan time is not needed: the
    # plan-time check fails first); and both together are refused
    r = plan_only(ch_conf, name, "a BIGINT", "INSERT INTO snk SELECT a FROM g", user="clink",
                  password=secret, password_env="CK_TEST_PW")
    assert r.returncode != 0 and "password or password_env, not both" in r.stderr
    outputs.append(r.stdout + r.stderr)
    for text in outputs:
        assert secret not in text, "the password leaked:\n" + text


# ----------------------------------------------- (f) in-doubt resends, deduplicated ----

def test_in_doubt_resend_lands_once_where_the_table_deduplicates(ch, ch_conf, table):
    """The connection is cut after the INSERT's blocks were sent and written, before the
    server's answer reaches the sink (chproxy.CutProxy). The sink resends the block: where the
    table keeps a deduplication log (26.9: MergeTree with non_replicated_deduplication_window,
    under the insert's token; 18.16: ReplicatedMergeTree, by block hash) exactly one copy is
    there and the log says the resend is deduplicated; where it does not (a plain MergeTree on
    either line), the log says the resend may duplicate, and it did (which also shows the first
    attempt had landed)."""
    engines = {"18.16": ["plain", "replicated"], "26.9": ["window", "plain"]}[ch_conf["line"]]
    for engine in engines:
        in_doubt_case(ch, ch_conf, table, engine)


def in_doubt_case(ch, ch_conf, table, engine):
    from .chproxy import CutProxy
    name = table("doubt_" + engine, "id Int64, s String")
    ddl = {"window": "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100",
           "plain": "MergeTree ORDER BY id",
           "replicated": "ReplicatedMergeTree('/clickhouse/tables/{shard}/clink_doubt/%s', "
                         "'{replica}') ORDER BY id" % name}[engine]
    ch.execute("DROP TABLE default.%s" % name)
    ch.execute("CREATE TABLE default.%s (id Int64, s String) ENGINE = %s" % (name, ddl))
    proxy = CutProxy(ch_conf["host"], ch_conf["port"])
    try:
        rows = 20000  # one INSERT of about 1 MB at the end of the input
        proxy.cut_answer_after(200000)
        sql = """
            CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rows = '%d',
                                            'fields.id.kind' = 'sequence');
            CREATE TABLE snk (id BIGINT, s VARCHAR) WITH (%s);
            INSERT INTO snk SELECT id, CONCAT('row-', CAST(id AS VARCHAR), '-padding-padding-padding') AS s FROM g;
            """ % (rows, sink_opts({"host": "127.0.0.1", "port": proxy.port}, name, user="clink",
                                   password="clink", compression="none", retry_backoff_ms="50"))
        r = run_clink(sql)
    finally:
        proxy.close()
    assert r.returncode == 0, r.stderr
    assert proxy.cuts == 1, "%s: the proxy never cut an answer" % engine
    assert "may have been written" in r.stderr, r.stderr
    (count,), = ch.execute("SELECT count() FROM default.%s" % name)
    (distinct,), = ch.execute("SELECT uniqExact(id) FROM default.%s" % name)
    assert distinct == rows
    if engine == "plain":
        assert "may duplicate (the table keeps no deduplication log" in r.stderr, r.stderr
        assert count == 2 * rows, "the first attempt had not landed: the cut came too early"
        assert "0 deduplicated if landed, 1 may duplicate" in r.stderr
    else:
        assert "deduplicated if the first attempt landed" in r.stderr, r.stderr
        assert count == rows, "%s: the resend landed twice" % engine
        assert "(resent: 1 deduplicated if landed, 0 may duplicate)" in r.stderr
        if engine == "window":
            assert "under insert_deduplication_token clink:" in r.stderr
        else:
            assert "(block hash)" in r.stderr


def test_uuid_from_varchar_on_both_lines(ch, ch_conf, table, tmp_path):
    """VARCHAR holding a UUID's text goes into a UUID column (both lines have the type): read
    back by clickhouse-driver as the same UUID; a value that is not one stops the job naming
    the column and the value; another SQL type is refused at plan time naming UUID."""
    import uuid
    name = table("uuid", "id Int64, u UUID, nu Nullable(UUID)")
    want = [uuid.UUID(int=0), uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"),
            uuid.UUID(int=(1 << 128) - 1), uuid.uuid4()]
    data = tmp_path / "rows.json"
    data.write_text("".join('{"id": %d, "u": "%s", "nu": %s}\n'
                            % (i, str(u).upper() if i == 1 else u, "null" if i % 2 else '"%s"' % u)
                            for i, u in enumerate(want)))
    sql = """
        CREATE TABLE src (id BIGINT, u VARCHAR, nu VARCHAR) WITH (connector = 'file', path = '%s', format = 'json');
        CREATE TABLE snk (id BIGINT, u VARCHAR, nu VARCHAR) WITH (%s);
        INSERT INTO snk SELECT * FROM src;
        """ % (data, sink_opts(ch_conf, name, user="clink", password="clink"))
    r = run_clink(sql)
    assert r.returncode == 0, r.stderr
    got = ch.execute("SELECT id, u, nu, toString(u) FROM default.%s ORDER BY id" % name)
    assert [(g[0], g[1], g[2]) for g in got] == [(i, u, None if i % 2 else u) for i, u in enumerate(want)]
    assert [g[3] for g in got] == [str(u) for u in want]  # the server's own text of it
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": 9, "u": "not-a-uuid", "nu": null}\n')
    r = run_clink(sql.replace(str(data), str(bad)))
    assert r.returncode != 0
    assert "column 'u'" in r.stderr and "'not-a-uuid' is not a UUID" in r.stderr, r.stderr
    r = plan_only(ch_conf, name, "id BIGINT, u BIGINT", "INSERT INTO snk SELECT a AS id, a AS u FROM g")
    assert r.returncode != 0 and "which is UUID" in r.stderr and "VARCHAR" in r.stderr, r.stderr


def test_types_only_the_new_line_has_round_trip(ch, ch_conf, table, tmp_path):
    """DateTime64 at two precisions, Bool and LowCardinality without the experimental flag:
    18.16 has none of them (its server refuses the table), 26.9 takes what clink writes, read
    back exactly by clickhouse-driver."""
    cols = ("ts3 DateTime64(3, 'UTC'), ts6 DateTime64(6, 'UTC'), b Bool, nb Nullable(Bool), "
            "lc LowCardinality(String)")
    if ch_conf["line"] == "18.16":
        with pytest.raises(Exception, match="DateTime64"):
            table("new", cols)
        return
    name = table("new", cols)
    data = tmp_path / "rows.json"
    rows = [(1772352000123, True, None, "a"), (-1, False, True, "b"), (4102444800999, True, False, "a")]
    data.write_text("".join('{"ts": %d, "b": %s, "nb": %s, "lc": "%s"}\n'
                            % (t, str(b).lower(), "null" if nb is None else str(nb).lower(), lc)
                            for t, b, nb, lc in rows))
    sql = """
        CREATE TABLE src (ts TIMESTAMP, b BOOLEAN, nb BOOLEAN, lc VARCHAR)
          WITH (connector = 'file', path = '%s', format = 'json');
        CREATE TABLE snk (ts3 TIMESTAMP, ts6 TIMESTAMP, b BOOLEAN, nb BOOLEAN, lc VARCHAR) WITH (%s);
        INSERT INTO snk SELECT ts AS ts3, ts AS ts6, b, nb, lc FROM src;
        """ % (data, sink_opts(ch_conf, name, user="clink", password="clink"))
    r = run_clink(sql)
    assert r.returncode == 0, r.stderr
    got = ch.execute("SELECT toUnixTimestamp64Milli(ts3), toUnixTimestamp64Micro(ts6), b, nb, lc "
                     "FROM default.%s ORDER BY ts3" % name)
    want = sorted((t, t * 1000, b, nb, lc) for t, b, nb, lc in rows)
    assert [tuple(g) for g in got] == want
