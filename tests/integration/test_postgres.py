"""PostgreSQL smoke test: prepared transactions (two-phase commit, what
clink's PostgreSQL sink builds on) survive a crash-like server restart, then
COMMIT PREPARED applies one and ROLLBACK PREPARED discards another.

The test restarts the server through scripts/services.sh (`restart postgres
--immediate`, a stop without a shutdown checkpoint, as after a crash), so it
must not run while another test uses that server."""

import subprocess

import psycopg


GID_PREFIX = "clink_smoke_"


def rollback_leftovers(conn, run_id):
    """A run killed between PREPARE and COMMIT PREPARED leaves its prepared
    transactions behind, and they count against max_prepared_transactions:
    roll back this test's own leftovers from earlier runs."""
    for (gid,) in conn.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s AND database = current_database()",
                               (GID_PREFIX + "%",)).fetchall():
        if not gid.endswith(run_id):
            conn.execute("ROLLBACK PREPARED '%s'" % gid)


def test_prepared_transaction_survives_restart(pg_dsn, services_script, unique, run_id):
    table = unique("prep")
    gid_commit, gid_rollback = unique(GID_PREFIX + "commit"), unique(GID_PREFIX + "rollback")

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        rollback_leftovers(conn, run_id)
        (max_prepared,), = conn.execute("SHOW max_prepared_transactions").fetchall()
        assert int(max_prepared) > 0, "max_prepared_transactions is %s" % max_prepared
        conn.execute("CREATE TABLE %s (id int PRIMARY KEY, tag text)" % table)
        for gid, tag, first, last in ((gid_commit, "commit", 1, 100), (gid_rollback, "rollback", 101, 150)):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO %s SELECT g, %%s FROM generate_series(%%s::int, %%s::int) g" % table,
                         (tag, first, last))
            conn.execute("PREPARE TRANSACTION '%s'" % gid)
        assert conn.execute("SELECT count(*) FROM %s" % table).fetchone()[0] == 0

    subprocess.run([services_script, "restart", "postgres", "--immediate"], check=True, timeout=120)

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        prepared = {r[0] for r in conn.execute("SELECT gid FROM pg_prepared_xacts")}
        assert {gid_commit, gid_rollback} <= prepared, "prepared after restart: %s" % sorted(prepared)
        assert conn.execute("SELECT count(*) FROM %s" % table).fetchone()[0] == 0
        conn.execute("COMMIT PREPARED '%s'" % gid_commit)
        conn.execute("ROLLBACK PREPARED '%s'" % gid_rollback)
        rows = conn.execute("SELECT tag, count(*), min(id), max(id) FROM %s GROUP BY tag" % table).fetchall()
        assert rows == [("commit", 100, 1, 100)]
        left = {r[0] for r in conn.execute("SELECT gid FROM pg_prepared_xacts")}
        assert not ({gid_commit, gid_rollback} & left)
        conn.execute("DROP TABLE %s" % table)
