"""Exactly-once output into ClickHouse (delivery_guarantee = 'exactly_once': each checkpoint
interval staged in a table of its own, its parts moved into the target when the checkpoint
completes): kill `clink run` at every fault point of the checkpoint protocol and inside the
publish, or with SIGKILL at random moments, run the same command again until it finishes, and
the target table, read with plain SELECTs (no FINAL, a plain MergeTree that collapses nothing),
must hold every window of the job exactly once, and no stage table of the job may be left.

Against ClickHouse 26.9 (scripts/services.sh clickhouse26); 18.16 has no
insert_deduplication_token and is refused by name (tests/integration/test_clickhouse_sink.py).
The oracle is test_eos_postgres.py's: datagen's documented generator replicated in Python.
"""
import os
import random
import re
from collections import Counter

import pytest
from clickhouse_driver import Client

from .conftest import die_at, FAULT_EXIT, fault_points, Job, sink_fault_points
from .test_eos_postgres import expected_windows, source_sql


def ch_address():
    host, port = os.environ.get("CLINK_CLICKHOUSE26_HOST"), os.environ.get("CLINK_CLICKHOUSE26_PORT")
    assert host and port, "CLINK_CLICKHOUSE26_* are not set: eval \"$(scripts/services.sh env)\""
    return host, int(port)


def job_sql(table, rows, rate, sink_options=", delivery_guarantee = 'exactly_once'"):
    host, port = ch_address()
    return source_sql(rows, rate) + f"""
CREATE TABLE out (k BIGINT, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT)
WITH (connector = 'clickhouse', host = '{host}', port = '{port}', table = '{table}',
      user = 'clink', password = 'clink', batch_rows = '500', retry_backoff_ms = '20'{sink_options});
INSERT INTO out
SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS total
FROM g
GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""


@pytest.fixture
def ch():
    host, port = ch_address()
    client = Client(host=host, port=port, user="clink", password="clink", connect_timeout=5,
                    send_receive_timeout=60)
    yield client
    client.disconnect()


def stages(ch):
    return {r[0] for r in ch.execute(
        "SELECT name FROM system.tables WHERE database = 'default' AND startsWith(name, '_clink_stage_')")}


@pytest.fixture(params=["one partition", "partitioned"])
def table(ch, request):
    name = "eos_%s_%d" % (re.sub(r"\W", "_", request.node.name)[5:40].lower(), os.getpid())
    partition = " PARTITION BY k % 3" if request.param == "partitioned" else ""
    ch.execute(f"DROP TABLE IF EXISTS default.{name}")
    ch.execute(f"CREATE TABLE default.{name} (k Int64, window_start Int64, window_end Int64, "
               f"n Int64, total Int64) ENGINE = MergeTree{partition} ORDER BY (k, window_start)")
    yield name
    ch.execute(f"DROP TABLE IF EXISTS default.{name}")


class ChJob(Job):
    """conftest's Job (run, kill, rerun) with the ClickHouse sink and the shared oracle."""

    def __init__(self, tmp_path, ch, table, rows=20000, rate=8000, parallelism=1,
                 interval_ms=100, sink_options=", delivery_guarantee = 'exactly_once'"):
        super().__init__(tmp_path, rows=rows, rate=rate, parallelism=parallelism,
                         interval_ms=interval_ms)
        self.ch, self.table = ch, table
        self.sql.write_text(job_sql(table, rows, rate, sink_options))

    def stage_prefix(self):
        """The prefix of this job's stage tables (_clink_stage_<job hash>_), as its runs
        announced it; the server may hold other jobs' stages (test runs sharing it)."""
        found = {m for log in self.logs for m in re.findall(
            r"staged in (_clink_stage_[0-9a-f]{16}_)\d+_<checkpoint>", log)}
        assert len(found) == 1, f"the runs announced stage prefixes {sorted(found)}"
        return found.pop()

    def own_stages(self):
        """This job's stage tables on the server."""
        prefix = self.stage_prefix()
        return {s for s in stages(self.ch) if s.startswith(prefix)}

    def rows_in_table(self):
        return Counter(tuple(r) for r in self.ch.execute(
            f"SELECT k, window_start, window_end, n, total FROM default.{self.table}"))

    def check(self, exactly_once=True):
        got, want = self.rows_in_table(), expected_windows(self.rows)
        distinct = Counter(set(got))
        missing, unexpected = want - distinct, distinct - want
        assert not missing, f"{sum(missing.values())} windows missing, e.g. {list(missing)[:3]}"
        assert not unexpected, f"windows that should not exist: {list(unexpected)[:3]}"
        if exactly_once:
            dup = {w: c for w, c in got.items() if c > 1}
            assert not dup, f"{len(dup)} windows written more than once, e.g. {list(dup.items())[:3]}"
            assert got == want
            left = self.own_stages()
            assert not left, f"stage tables left on the server: {sorted(left)}"
        return got


@pytest.fixture
def chjob(tmp_path, ch, table):
    jobs = []

    def make(**kw):
        jobs.append(ChJob(tmp_path, ch, table, **kw))
        return jobs[-1]
    yield make
    for j in jobs:  # a failed test's leftovers: its own stages only (the server is shared)
        if any("staged in _clink_stage_" in log for log in j.logs):
            for left in j.own_stages():
                ch.execute(f"DROP TABLE IF EXISTS default.`{left}` SYNC")


def test_uninterrupted_run_is_exact_and_says_exactly_once(chjob):
    j = chjob(rate=0)
    r = j.run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE" in r.stderr
    assert "exactly once: each checkpoint interval is staged in" in r.stderr
    j.check()


@pytest.mark.parametrize("point", fault_points() + sink_fault_points("ch_"))
def test_killed_at_each_fault_point_then_rerun_exactly_once(chjob, table, point):
    j = chjob()
    r = die_at(j, point)
    if point in ("after_prepare", "before_snapshot_write", "after_snapshot_write",
                 "before_completed", "after_completed", "before_commit"):
        # the dead process left its interval staged on the server
        assert j.own_stages(), "nothing staged at " + point
    j.run_to_end()
    j.check()
    reruns = "\n".join(j.logs[1:])
    if point in ("after_completed", "before_commit", "ch_after_move"):
        assert re.search(r"recovered at checkpoint \d+: published [1-9]", reruns), reruns[-3000:]
    if point in ("after_prepare", "before_snapshot_write", "after_snapshot_write",
                 "before_completed"):
        assert re.search(r"dropped [1-9]\d* of checkpoints that never completed", reruns), \
            reruns[-3000:]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_random_sigkills_then_finish_exactly_once(chjob, parallelism):
    rnd = random.Random(3000 + parallelism)
    j = chjob(parallelism=parallelism, rows=60000, rate=10000)
    j.kill_randomly_then_finish(rnd)
    j.check()


def test_a_failed_checkpoint_rewinds_in_process_exactly_once(chjob):
    j = chjob()
    r = j.run(fault="before_snapshot_write:fail:3")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "restarting from its last checkpoint (attempt 1/10)" in r.stderr
    j.check()


def test_fresh_start_drops_what_a_dead_run_staged(chjob):
    j = chjob()
    r = j.run(fault="after_prepare:exit:3")
    assert r.returncode == FAULT_EXIT
    assert j.own_stages()
    # what the dead run published stays (a fresh start does not empty the user's table): take
    # it away by hand, so that the fresh run alone must make the table exact
    j.ch.execute(f"TRUNCATE TABLE default.{j.table}")
    r = j.run("--fresh")
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(r"dropped [1-9]\d* stage tables? an earlier run of this job left", r.stderr), \
        r.stderr[-3000:]
    j.check()


def test_at_least_once_by_default_every_window_present(chjob):
    rnd = random.Random(6)
    j = chjob(sink_options="", rows=40000, rate=10000)
    for _ in range(3):
        assert j.run_killed(rnd.uniform(0.4, 1.0)) != 0, "finished before the kill"
    r = j.run_to_end()
    assert ("job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink"
            in r.stderr)
    j.check(exactly_once=False)


def test_the_stage_check_counts_this_jobs_stage_tables_only(chjob, ch, table):
    """Another job's stage table on the same server (a test run sharing it) is not this job's
    leftover; a stage table of this job still fails the check."""
    j = chjob(rate=0)
    foreign = "_clink_stage_%016x_0_7" % (0xfeed000000000000 + os.getpid())
    ch.execute(f"CREATE TABLE default.`{foreign}` AS default.{table}")
    try:
        r = j.run()
        assert r.returncode == 0, r.stderr[-3000:]
        assert not foreign.startswith(j.stage_prefix())
        j.check()
        mine = j.stage_prefix() + "0_999999"
        ch.execute(f"CREATE TABLE default.`{mine}` AS default.{table}")
        with pytest.raises(AssertionError, match="stage tables left on the server"):
            j.check()
    finally:
        ch.execute(f"DROP TABLE IF EXISTS default.`{foreign}` SYNC")
