"""DATE and TIME columns written to the sinks that have them, read back by the servers' own
clients: ClickHouse Date (18.16 and 26.9) and Date32 (26.9: 18.16 has none), PostgreSQL date
and time(3). A DATE into a ClickHouse column that is not Date or Date32, a TIME into any
ClickHouse column, and a date outside Date's range are refused naming the column."""
import datetime
import json
import os
import subprocess
from pathlib import Path

import psycopg
import pytest
from clickhouse_driver import Client

from .conftest import CLICKHOUSE_LINES, REPO, clickhouse_line

CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build" / "src" / "cli" / "clink")

ROWS = [
    {"id": 1, "d": "2024-02-29", "t": "12:34:56.789"},
    {"id": 2, "d": "1970-01-01", "t": "00:00:00.000"},
    {"id": 3, "d": "2149-06-06", "t": "23:59:59.999"},
    {"id": 4, "d": None, "t": None},
]
OLD_DATES = [{"id": 5, "d": "1900-01-01", "t": "01:02:03.004"}, {"id": 6, "d": "2299-12-31", "t": None}]


def day(text):
    """The day number of a date text (what Date and Date32 store), or None."""
    return None if text is None else (datetime.date.fromisoformat(text) - datetime.date(1970, 1, 1)).days


def write_input(tmp_path, rows):
    p = tmp_path / "in.json"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def run(sql):
    r = subprocess.run([CLINK, "run", "-e", sql, "--log-level", "warn"], capture_output=True,
                       text=True, timeout=120)
    assert "LeakSanitizer" not in r.stderr and "runtime error:" not in r.stderr, r.stderr
    return r


def source(path):
    return (f"CREATE TABLE src (id INT, d DATE, t TIME(3)) WITH (connector = 'file', "
            f"path = '{path}', format = 'json');\n")


@pytest.fixture(params=sorted(CLICKHOUSE_LINES))
def ch(request):
    conf = clickhouse_line(request.param)
    client = Client(host=conf["host"], port=conf["port"], user="default", password="",
                    connect_timeout=5, send_receive_timeout=60)
    yield conf, client
    client.disconnect()


def ch_sink(conf, table):
    return (f"CREATE TABLE out (id INT, d DATE) WITH (connector = 'clickhouse', "
            f"host = '{conf['host']}', port = '{conf['port']}', database = 'default', "
            f"table = '{table}');\n")


def test_date_into_clickhouse_date(ch, tmp_path, unique):
    conf, client = ch
    table = unique("dates")
    client.execute(f"CREATE TABLE default.{table} (id Int32, d Nullable(Date)) ENGINE = MergeTree ORDER BY id")
    try:
        r = run(source(write_input(tmp_path, ROWS)) + ch_sink(conf, table) +
                "INSERT INTO out SELECT id, d FROM src;")
        assert r.returncode == 0, r.stderr
        # day numbers: 18.16 shows day 0 as '0000-00-00'
        got = client.execute(f"SELECT id, toUInt16(d) FROM default.{table} ORDER BY id")
        assert got == [(r_["id"], day(r_["d"])) for r_ in ROWS]
    finally:
        client.execute(f"DROP TABLE IF EXISTS default.{table}")


def test_date_outside_clickhouse_date_range_names_it(ch, tmp_path, unique):
    conf, client = ch
    table = unique("dates_range")
    client.execute(f"CREATE TABLE default.{table} (id Int32, d Nullable(Date)) ENGINE = MergeTree ORDER BY id")
    try:
        r = run(source(write_input(tmp_path, OLD_DATES)) + ch_sink(conf, table) +
                "INSERT INTO out SELECT id, d FROM src;")
        assert r.returncode == 1
        assert "column 'd'" in r.stderr and "the date 1900-01-01 is outside Date's range" in r.stderr, r.stderr
    finally:
        client.execute(f"DROP TABLE IF EXISTS default.{table}")


def test_date_into_clickhouse_date32(tmp_path, unique):
    conf = clickhouse_line("26.9")
    client = Client(host=conf["host"], port=conf["port"], user="default", password="")
    table = unique("dates32")
    client.execute(f"CREATE TABLE default.{table} (id Int32, d Nullable(Date32)) ENGINE = MergeTree ORDER BY id")
    try:
        rows = ROWS + OLD_DATES
        r = run(source(write_input(tmp_path, rows)) + ch_sink(conf, table) +
                "INSERT INTO out SELECT id, d FROM src;")
        assert r.returncode == 0, r.stderr
        got = client.execute(f"SELECT id, toString(d) FROM default.{table} ORDER BY id")
        assert got == [(r_["id"], r_["d"]) for r_ in rows]
        got = client.execute(f"SELECT id, toInt32(d) FROM default.{table} ORDER BY id")
        assert got == [(r_["id"], day(r_["d"])) for r_ in rows]
    finally:
        client.execute(f"DROP TABLE IF EXISTS default.{table}")
        client.disconnect()


@pytest.mark.parametrize("ch_type,sql_type,words", [
    ("Int32", "DATE", "a DATE goes into Date or Date32 only"),
    ("DateTime64(3)", "DATE", "a DATE goes into Date or Date32 only"),
    ("String", "TIME(3)", "ClickHouse has no time-of-day type"),
])
def test_clickhouse_refuses_date_time_elsewhere(tmp_path, unique, ch_type, sql_type, words):
    conf = clickhouse_line("26.9")  # 18.16 has no DateTime64
    client = Client(host=conf["host"], port=conf["port"], user="default", password="")
    table = unique("dates_bad")
    client.execute(f"CREATE TABLE default.{table} (id Int32, v {ch_type}) ENGINE = MergeTree ORDER BY id")
    try:
        col = "d" if sql_type == "DATE" else "t"
        sql = (source(write_input(tmp_path, ROWS)) +
               f"CREATE TABLE out (id INT, v {sql_type}) WITH (connector = 'clickhouse', "
               f"host = '{conf['host']}', port = '{conf['port']}', database = 'default', "
               f"table = '{table}');\nINSERT INTO out SELECT id, {col} AS v FROM src;")
        r = run(sql)
        assert r.returncode == 1
        assert words in r.stderr and "'v'" in r.stderr, r.stderr
    finally:
        client.execute(f"DROP TABLE IF EXISTS default.{table}")
        client.disconnect()


def test_date_time_into_postgres(pg_dsn, tmp_path, unique):
    table = unique("dates")
    rows = ROWS + OLD_DATES
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, d date, t time(3))")
        try:
            r = run(source(write_input(tmp_path, rows)) +
                    f"CREATE TABLE out (id INT, d DATE, t TIME(3)) WITH (connector = 'postgres', "
                    f"dsn = '{pg_dsn}', table = '{table}');\nINSERT INTO out SELECT id, d, t FROM src;")
            assert r.returncode == 0, r.stderr
            got = conn.execute(f"SELECT id, d, t FROM {table} ORDER BY id").fetchall()
            want = [(x["id"], datetime.date.fromisoformat(x["d"]) if x["d"] else None,
                     datetime.time.fromisoformat(x["t"]) if x["t"] else None) for x in rows]
            assert got == want
            # a DATE into a timestamp column, a TIME(3) into time(0): refused, both named
            conn.execute(f"CREATE TABLE {table}_b (id int4, d timestamp(3), t time(0))")
            r = run(source(write_input(tmp_path, rows)) +
                    f"CREATE TABLE out (id INT, d DATE) WITH (connector = 'postgres', "
                    f"dsn = '{pg_dsn}', table = '{table}_b');\nINSERT INTO out SELECT id, d FROM src;")
            assert r.returncode == 1 and "column 'd'" in r.stderr and "DATE" in r.stderr, r.stderr
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"DROP TABLE IF EXISTS {table}_b")
