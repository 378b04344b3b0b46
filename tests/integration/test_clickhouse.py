"""ClickHouse smoke tests: the server started by scripts/services.sh is real,
speaks the native protocol on its own port, has the `clink` user and profile,
and deduplicates repeated insert blocks in ReplicatedMergeTree (ZooKeeper)."""

import datetime
import urllib.parse
import urllib.request

import pytest
from clickhouse_driver import Client


@pytest.fixture
def ch(clickhouse_settings):
    s = clickhouse_settings
    client = Client(host=s["host"], port=s["port"], user=s["user"], password=s["password"],
                    connect_timeout=5, send_receive_timeout=60)
    yield client
    client.disconnect()


def test_server_identity(ch, clickhouse_settings):
    (version,), = ch.execute("SELECT version()")
    assert version.startswith("18.16."), "expected Debian's ClickHouse 18.16, got %s" % version
    # The HTTP port answers too, for the same user.
    s = clickhouse_settings
    query = urllib.parse.urlencode({"user": s["user"], "password": s["password"], "query": "SELECT 1 + 1"})
    with urllib.request.urlopen("http://%s:%d/?%s" % (s["host"], s["http_port"], query), timeout=10) as r:
        assert r.read().decode().strip() == "2"


def test_mergetree_insert_and_read_back(ch, unique):
    table = unique("mt")
    # LowCardinality needs allow_experimental_low_cardinality_type=1 from the profile.
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


def test_replicated_mergetree_drops_repeated_block(ch, unique):
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
