"""ClickHouse smoke tests, on both tested lines: each server started by
scripts/services.sh is real and of its line (18.16 from Debian, 26.9 from the
chdb-core wheel), speaks the native protocol and HTTP on its own ports, has the
`clink` user, and deduplicates repeated insert blocks where it can: 18.16 in
ReplicatedMergeTree (ZooKeeper), 26.9 also in a plain MergeTree with a
deduplication window, by block hash and by insert_deduplication_token."""

import datetime
import urllib.parse
import urllib.request

import pytest
from clickhouse_driver import Client

from .conftest import CLICKHOUSE_LINES, clickhouse_line


@pytest.fixture(params=sorted(CLICKHOUSE_LINES))
def line(request):
    s = clickhouse_line(request.param)
    s["user"], s["password"] = "clink", "clink"
    return s


@pytest.fixture
def ch(line):
    s = line
    client = Client(host=s["host"], port=s["port"], user=s["user"], password=s["password"],
                    connect_timeout=5, send_receive_timeout=60)
    yield client
    client.disconnect()


def test_server_identity(ch, line):
    (version,), = ch.execute("SELECT version()")
    assert version.startswith(line["line"] + "."), "expected ClickHouse %s, got %s" % (line["line"], version)
    # The HTTP port answers too, for the same user.
    s = line
    query = urllib.parse.urlencode({"user": s["user"], "password": s["password"], "query": "SELECT 1 + 1"})
    with urllib.request.urlopen("http://%s:%d/?%s" % (s["host"], s["http_port"], query), timeout=10) as r:
        assert r.read().decode().strip() == "2"


def test_mergetree_insert_and_read_back(ch, unique):
    table = unique("mt")
    # LowCardinality needs allow_experimental_low_cardinality_type=1 from 18.16's profile.
    ch.execute("CREATE TABLE %s (id UInt64, name LowCardinality(String), ts DateTime) "
               "ENGINE = MergeTree ORDER BY id" % table)
    try:
        rows = [(i, "name-%d" % (i % 7), 1700000000 + i) for i in range(1000)]
        ch.execute("INSERT INTO %s (id, name, ts) VALUES" % table,
                   [(i, n, datetime.datetime.fromtimestamp(t, datetime.timezone.utc)) for i, n, t in rows])
        (count, total, names), = ch.execute(
            "SELECT count(), sum(id), uniqExact(name) FROM %s" % table)
        assert (count, total, names) == (1000, sum(range(1000)), 7)
        got = ch.execute("SELECT id, name, toUnixTimestamp(ts) FROM %s ORDER BY id" % table)
        assert [tuple(r) for r in got] == rows
    finally:
        ch.execute("DROP TABLE IF EXISTS %s" % table)


@pytest.fixture
def ch_1816():
    """18.16 alone: the line with ZooKeeper (26.9 from chdb-core runs without one)."""
    s = clickhouse_line("18.16")
    client = Client(host=s["host"], port=s["port"], user="clink", password="clink",
                    connect_timeout=5, send_receive_timeout=60)
    yield client
    client.disconnect()


def test_replicated_mergetree_drops_repeated_block(ch_1816, unique):
    ch = ch_1816
    table = unique("rmt")
    ch.execute("CREATE TABLE %s (id UInt64, v String) "
               "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/clink_smoke/%s', '{replica}') "
               "ORDER BY id" % (table, table))
    try:
        block = [(i, "v%d" % i) for i in range(100)]
        ch.execute("INSERT INTO %s (id, v) VALUES" % table, block)
        ch.execute("INSERT INTO %s (id, v) VALUES" % table, block)  # identical block: dropped
        assert ch.execute("SELECT count() FROM %s" % table)[0][0] == 100
        other = [(i, "w%d" % i) for i in range(100, 150)]
        ch.execute("INSERT INTO %s (id, v) VALUES" % table, other)  # a different block is kept
        assert ch.execute("SELECT count() FROM %s" % table)[0][0] == 150
        # The table really lives in the private ZooKeeper.
        (replicas,), = ch.execute(
            "SELECT count() FROM system.zookeeper WHERE path = '/clickhouse/tables/01/clink_smoke/%s/replicas'"
            % table)
        assert replicas == 1
    finally:
        ch.execute("DROP TABLE IF EXISTS %s" % table)


def test_mergetree_deduplication_window_and_tokens(ch, line, unique):
    """What 26.x offers a plain MergeTree: with non_replicated_deduplication_window > 0 a
    repeated block is dropped (by its hash, or by the insert_deduplication_token it was sent
    under); without the window nothing is."""
    if line["line"] == "18.16":
        with pytest.raises(Exception, match="non_replicated_deduplication_window"):
            ch.execute("CREATE TABLE %s (id UInt64) ENGINE = MergeTree ORDER BY id "
                       "SETTINGS non_replicated_deduplication_window = 100" % unique("nodw"))
        return
    table, plain = unique("dw"), unique("nodw")
    ch.execute("CREATE TABLE %s (id UInt64, v String) ENGINE = MergeTree ORDER BY id "
               "SETTINGS non_replicated_deduplication_window = 100" % table)
    ch.execute("CREATE TABLE %s (id UInt64, v String) ENGINE = MergeTree ORDER BY id" % plain)
    try:
        sync = {"async_insert": 0}
        block = [(i, "v%d" % i) for i in range(100)]
        for t in (table, plain):
            ch.execute("INSERT INTO %s (id, v) VALUES" % t, block, settings=sync)
            ch.execute("INSERT INTO %s (id, v) VALUES" % t, block, settings=sync)
        assert ch.execute("SELECT count() FROM %s" % table)[0][0] == 100
        assert ch.execute("SELECT count() FROM %s" % plain)[0][0] == 200
        # a token names the block: different rows under a used token are dropped, the same rows
        # under a new token are kept
        tok = dict(sync, insert_deduplication_token="clink-smoke-1")
        ch.execute("INSERT INTO %s (id, v) VALUES" % table, [(1000, "a")], settings=tok)
        ch.execute("INSERT INTO %s (id, v) VALUES" % table, [(1001, "b")], settings=tok)
        ch.execute("INSERT INTO %s (id, v) VALUES" % table, [(1000, "a")],
                   settings=dict(sync, insert_deduplication_token="clink-smoke-2"))
        assert ch.execute("SELECT id, count() FROM %s WHERE id >= 1000 GROUP BY id ORDER BY id"
                          % table) == [(1000, 2)]
    finally:
        for t in (table, plain):
            ch.execute("DROP TABLE IF EXISTS %s" % t)
