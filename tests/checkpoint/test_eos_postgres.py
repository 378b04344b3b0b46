"""Exactly-once output of the PostgreSQL sink (delivery_guarantee = 'exactly_once', prepared
transactions committed with each checkpoint): kill `clink run` at every fault point of the
checkpoint protocol, or with SIGKILL at random moments, run the same command again until it
finishes, and the table must hold every window of the job exactly once — no duplicate, nothing
missing, exact values — and no prepared transaction of the job may be left on the server.

The oracle is independent of the engine: the job reads datagen with *random* keys and values,
and this file replicates datagen's documented generator (a splitmix64 finaliser over seed, row
and column; uniform = lo + (draw * range) >> 64) to recompute every window in Python.
test_generator_replica_matches_datagen checks the replica against the engine's own rows, so a
drift in either shows up there, not as a mysterious recovery failure.

The server comes from scripts/services.sh (CLINK_PG_DSN, or `services.sh env`); if PostgreSQL
is not running this module starts it and stops it afterwards (only what it started).
"""
import hashlib
import json
import os
import random
import re
import subprocess
from collections import Counter

import pytest

from .conftest import CLINK, die_at, FAULT_EXIT, fault_points, Job, REPO

psycopg = pytest.importorskip("psycopg")

SERVICES = os.environ.get("CLINK_SERVICES") or str(REPO / "scripts" / "services.sh")

SEED, KEYS, BASE_TS, STEP_MS = 4242, 9, 1772352000000, 7
V_LO, V_HI = -50, 1000

# ---------------------------------------------------------------- the oracle

M64 = (1 << 64) - 1


def _hash_u64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & M64
    x ^= x >> 33
    return x


def _draw(seed, row, col, k):
    x = ((seed * 0x9E3779B97F4A7C15) & M64) ^ _hash_u64((row + 0x632BE59BD9B4E019) & M64)
    x ^= _hash_u64((((col << 32) | k) + 0x8CB92BA72F3D8DD7) & M64)
    return _hash_u64(x)


def _uniform(seed, row, col, lo, hi):
    return lo + ((_draw(seed, row, col, 1) * (hi - lo + 1)) >> 64)


def generated(rows):
    """Row i of the job's datagen table g (k, ts, v): columns 0, 1 and 2."""
    for i in range(rows):
        k, v = _uniform(SEED, i, 0, 0, KEYS - 1), _uniform(SEED, i, 2, V_LO, V_HI)
        yield k, BASE_TS + STEP_MS * i, v


def expected_windows(rows):
    acc = {}
    for k, ts, v in generated(rows):
        ws = ts - ts % 1000
        n, total = acc.get((k, ws), (0, 0))
        acc[(k, ws)] = (n + 1, total + v)
    return Counter((k, ws, ws + 1000, n, t) for (k, ws), (n, t) in acc.items())


def source_sql(rows, rate):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}', rows_per_second = '{rate}', seed = '{SEED}',
  'fields.k.start' = '0', 'fields.k.end' = '{KEYS - 1}',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{BASE_TS}', 'fields.ts.step' = '{STEP_MS}',
  'fields.v.start' = '{V_LO}', 'fields.v.end' = '{V_HI}',
  event_time_column = 'ts', watermark_lag_ms = '0');
"""


def job_sql(dsn, table, rows, rate, sink_options=", delivery_guarantee = 'exactly_once'"):
    return source_sql(rows, rate) + f"""
CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT)
WITH (connector = 'postgres', dsn = '{dsn}', table = '{table}'{sink_options});
INSERT INTO out
SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total
FROM g
GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""

# ---------------------------------------------------------------- the server


@pytest.fixture(scope="module")
def pg_dsn():
    """CLINK_PG_DSN, starting PostgreSQL through services.sh if it is not running (and then
    stopping it again when the module is done)."""
    dsn = os.environ.get("CLINK_PG_DSN")
    if not dsn:
        env = subprocess.run([SERVICES, "env"], capture_output=True, text=True, check=True).stdout
        m = re.search(r"CLINK_PG_DSN=(\S+)", env)
        assert m, f"services.sh env printed no CLINK_PG_DSN:\n{env}"
        dsn = m.group(1).strip("'\"")
    started = False
    if subprocess.run([SERVICES, "status", "postgres"], capture_output=True).returncode != 0:
        subprocess.run([SERVICES, "start", "postgres"], check=True, timeout=180)
        started = True
    yield dsn
    if started:
        subprocess.run([SERVICES, "stop", "postgres"], check=True, timeout=180)


@pytest.fixture
def pg(pg_dsn):
    conn = psycopg.connect(pg_dsn, autocommit=True)
    conn.execute("SET lock_timeout = '30s'")  # a leftover lock fails a test, never hangs it
    yield conn
    conn.close()


@pytest.fixture
def table(pg, request):
    node = request.node.name
    name = "eos_%s_%s_%d" % (re.sub(r"\W", "_", node)[5:25].lower(),
                             hashlib.sha1(node.encode()).hexdigest()[:8], os.getpid())
    pg.execute(f"DROP TABLE IF EXISTS {name}")
    pg.execute(f"CREATE TABLE {name} (k bigint, window_start bigint, window_end bigint, "
               f"n bigint, total bigint)")
    yield name
    for gid in prepared_on(pg, name):  # a failed test's leftovers, so the DROP cannot block
        pg.execute(f"ROLLBACK PREPARED '{gid}'")
    pg.execute(f"DROP TABLE IF EXISTS {name}")


def prepared_on(pg, table):
    """Names of prepared transactions holding a lock on `table` (ours or anyone's)."""
    return [r[0] for r in pg.execute(
        "SELECT x.gid FROM pg_prepared_xacts x WHERE EXISTS (SELECT 1 FROM pg_locks t JOIN "
        "pg_locks l ON l.virtualtransaction = t.virtualtransaction WHERE t.locktype = "
        "'transactionid' AND t.transactionid = x.transaction AND l.locktype = 'relation' AND "
        "l.relation = to_regclass(%s))", (table,)).fetchall()]


def table_rows(pg, table):
    return Counter(tuple(r) for r in pg.execute(
        f"SELECT k, window_start, window_end, n, total FROM {table}").fetchall())


class PgJob(Job):
    """conftest's Job (run, kill, rerun) with the PostgreSQL sink and this file's oracle."""

    def __init__(self, tmp_path, pg, dsn, table, rows=20000, rate=8000, parallelism=1,
                 interval_ms=100, sink_options=", delivery_guarantee = 'exactly_once'"):
        super().__init__(tmp_path, rows=rows, rate=rate, parallelism=parallelism,
                         interval_ms=interval_ms)
        self.pg, self.table = pg, table
        self.sql.write_text(job_sql(dsn, table, rows, rate, sink_options))

    def check(self, exactly_once=True):
        got, want = table_rows(self.pg, self.table), expected_windows(self.rows)
        distinct = Counter(set(got))
        missing, unexpected = want - distinct, distinct - want
        assert not missing, f"{sum(missing.values())} windows missing, e.g. {list(missing)[:3]}"
        assert not unexpected, f"windows that should not exist: {list(unexpected)[:3]}"
        if exactly_once:
            dup = {w: c for w, c in got.items() if c > 1}
            assert not dup, \
                f"{len(dup)} windows written more than once, e.g. {list(dup.items())[:3]}"
            assert got == want
        left = prepared_on(self.pg, self.table)
        assert not left, f"prepared transactions left on the server: {left}"
        return got


@pytest.fixture
def pgjob(tmp_path, pg, pg_dsn, table):
    return lambda **kw: PgJob(tmp_path, pg, pg_dsn, table, **kw)

# ---------------------------------------------------------------- tests


def test_generator_replica_matches_datagen(tmp_path):
    sql = source_sql(300, 0) + "SELECT k, ts, v FROM g;"
    r = subprocess.run([CLINK, "run", "-e", sql], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = [tuple(json.loads(line)[c] for c in ("k", "ts", "v")) for line in r.stdout.splitlines()]
    assert got == list(generated(300))
    assert len({k for k, _, _ in got}) == KEYS  # the keys really are spread


def test_uninterrupted_run_is_exact_and_says_exactly_once(pgjob):
    j = pgjob(rate=0)
    r = j.run()
    assert r.returncode == 0, r.stderr[-2000:]
    assert "job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE" in r.stderr
    j.check()


@pytest.mark.parametrize("point", fault_points())
def test_killed_at_each_fault_point_then_rerun_exactly_once(pgjob, point):
    j = pgjob()
    r = die_at(j, point)
    if point in ("after_prepare", "before_snapshot_write", "after_snapshot_write",
                 "before_completed", "after_completed", "before_commit"):
        # the dead process left its interval prepared on the server
        assert prepared_on(j.pg, j.table), "nothing prepared at " + point
    j.run_to_end()
    j.check()
    reruns = "\n".join(j.logs[1:])
    if point in ("after_completed", "before_commit"):
        assert re.search(r"recovered at checkpoint \d+: committed [1-9]", reruns), reruns[-2000:]
    if point in ("after_prepare", "before_snapshot_write", "after_snapshot_write",
                 "before_completed"):
        assert re.search(r"rolled back [1-9]\d* of checkpoints that never completed", reruns), \
            reruns[-2000:]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_random_sigkills_then_finish_exactly_once(pgjob, parallelism):
    rnd = random.Random(2000 + parallelism)
    j = pgjob(parallelism=parallelism, rows=60000, rate=10000)
    j.kill_randomly_then_finish(rnd)
    j.check()


def test_two_inserts_into_one_table_keep_their_transactions_apart(pgjob):
    """Two sink nodes of one job write the same table: each prepares its own transaction per
    checkpoint, and a rerun after a kill between COMPLETED and commit commits both."""
    j = pgjob()
    sql = j.sql.read_text()
    second = sql[sql.index("INSERT INTO out"):].replace("SELECT k,", "SELECT k + 100 AS k,")
    j.sql.write_text(sql + second)
    r = j.run(fault="after_completed:exit:3")
    assert r.returncode == FAULT_EXIT, r.stderr[-2000:]
    assert len(prepared_on(j.pg, j.table)) == 2, "one prepared transaction per sink node"
    j.run_to_end()
    want = expected_windows(j.rows)
    want += Counter((k + 100, ws, we, n, t) for (k, ws, we, n, t) in want.elements())
    assert table_rows(j.pg, j.table) == want
    assert not prepared_on(j.pg, j.table)


def test_a_failed_checkpoint_rewinds_in_process_exactly_once(pgjob):
    j = pgjob()
    r = j.run(fault="before_snapshot_write:fail:3")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "restarting from its last checkpoint (attempt 1/10)" in r.stderr
    j.check()


def test_fresh_start_rolls_back_what_a_dead_run_prepared(pgjob):
    j = pgjob()
    r = j.run(fault="after_prepare:exit:3")
    assert r.returncode == FAULT_EXIT
    assert len(prepared_on(j.pg, j.table)) == 1
    # what the dead run committed stays (a fresh start does not empty the user's table): take
    # it away by hand, so that the fresh run alone must make the table exact
    j.pg.execute(f"DELETE FROM {j.table}")
    r = j.run("--fresh")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "rolled back 1 prepared transaction an earlier run of this job left" in r.stderr
    j.check()


def test_at_least_once_by_default_every_window_present(pgjob):
    rnd = random.Random(5)
    j = pgjob(sink_options="", rows=40000, rate=10000)
    for _ in range(3):
        assert j.run_killed(rnd.uniform(0.4, 1.0)) != 0, "finished before the kill"
    r = j.run_to_end()
    assert ("job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink"
            in r.stderr)
    j.check(exactly_once=False)


def run_clink(tmp_path, sql, *extra, env=None):
    path = tmp_path / "job.sql"
    path.write_text(sql)
    return subprocess.run([CLINK, "run", str(path), *extra], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, **(env or {})))


def test_errors_name_the_table_the_column_and_both_types(tmp_path, pg, pg_dsn, table):
    r = run_clink(tmp_path, job_sql(pg_dsn, "no_such_table_eos", 10, 0))
    assert r.returncode == 1
    assert "table 'no_such_table_eos' does not exist" in r.stderr
    pg.execute(f"ALTER TABLE {table} ALTER COLUMN total TYPE integer")
    r = run_clink(tmp_path, job_sql(pg_dsn, table, 10, 0))
    assert r.returncode == 1
    assert "column 'total'" in r.stderr and "is integer" in r.stderr and "BIGINT" in r.stderr
    pg.execute(f"ALTER TABLE {table} RENAME COLUMN total TO sum_v")
    r = run_clink(tmp_path, job_sql(pg_dsn, table, 10, 0))
    assert r.returncode == 1
    assert "has no column 'total'" in r.stderr and "sum_v" in r.stderr


def test_password_is_never_printed(tmp_path, pg, pg_dsn, table):
    info = pg.info
    # the refusal quotes the role, which is named like the password: it must be masked
    bad = (f"host={info.host} port={info.port} dbname={info.dbname} user=S3cretPw_eos "
           f"password=S3cretPw_eos connect_timeout=5")
    r = run_clink(tmp_path, job_sql(bad, table, 10, 0), "--checkpoint-dir", str(tmp_path / "ck"),
                  "--max-restarts", "0")
    assert r.returncode == 1
    assert "could not connect to PostgreSQL" in r.stderr
    assert "S3cretPw_eos" not in r.stderr + r.stdout
    # password_env: taken from the environment; an unset variable is named
    envsql = job_sql(f"host={info.host} port={info.port} dbname={info.dbname} user={info.user}",
                     table, 500, 0, ", password_env = 'EOS_PG_PW'")
    r = run_clink(tmp_path, envsql, env={"EOS_PG_PW": info.password or ""})
    assert r.returncode == 0, r.stderr[-2000:]
    assert pg.execute(f"SELECT sum(n) FROM {table}").fetchone()[0] == 500
    r = run_clink(tmp_path, envsql)
    assert r.returncode == 1 and "'EOS_PG_PW'" in r.stderr


def test_update_streams_are_refused(tmp_path, pg_dsn, table):
    sql = source_sql(100, 0) + f"""
CREATE TABLE out (k BIGINT, n BIGINT) WITH (connector = 'postgres', dsn = '{pg_dsn}',
  table = '{table}');
INSERT INTO out SELECT k, COUNT(*) AS n FROM g GROUP BY k;
"""
    r = run_clink(tmp_path, sql)
    assert r.returncode == 1
    assert "cannot write an update stream" in r.stderr
