"""Checkpoint recovery of the embedded run: kill it anywhere, run the same command again, and
the output holds every window (at least once for the plain file sink, whose duplicates must be
identical copies); the three lineage records each do what they exist for; ids never repeat."""
import random
import re

import pytest

from .conftest import die_at, FAULT_EXIT, fault_points, REPO, sink_fault_points


def test_uninterrupted_run_matches_oracle(job):
    j = job(rate=0)
    r = j.run()
    assert r.returncode == 0, r.stderr
    j.check(exactly_once=True)
    assert "clean-finish" in {p.name for p in (j.ckpt / "v1/_meta").iterdir()}


@pytest.mark.parametrize("point", fault_points())
def test_killed_at_each_fault_point_then_rerun(job, point):
    j = job()
    r = die_at(j, point)
    j.run_to_end()
    j.check(exactly_once=False)


@pytest.mark.parametrize("parallelism", [1, 3])
def test_random_sigkills_then_finish(job, parallelism):
    rnd = random.Random(parallelism)
    j = job(parallelism=parallelism, rows=30000, rate=10000)
    for _ in range(6):
        j.run_killed(rnd.uniform(0.3, 1.2))
    j.run_to_end()
    j.check(exactly_once=False)
    restored = sum("restore point: checkpoint" in log for log in j.logs)
    assert restored >= 1, "no rerun restored a checkpoint: the kills did not exercise recovery"


def test_different_pipeline_is_refused_and_fresh_is_the_way_out(job, tmp_path):
    j = job()
    assert j.run_killed(1.0) != 0
    other = j.sql.read_text().replace("SUM(v)", "MAX(v)")
    j.sql.write_text(other)
    r = j.run()
    assert r.returncode == 1
    assert "belongs to another job" in r.stderr and "--fresh" in r.stderr
    r = j.run("--fresh")
    assert r.returncode == 0, r.stderr


def test_different_parallelism_is_refused_with_the_one_to_use(job):
    j = job(parallelism=2)
    assert j.run_killed(1.0) != 0
    j.parallelism = 3
    r = j.run()
    assert r.returncode == 1
    assert "taken at parallelism 2, not 3" in r.stderr and "--parallelism 2" in r.stderr


def test_clean_finish_makes_the_next_run_start_over(job):
    j = job(rate=0, rows=5000)
    assert j.run().returncode == 0
    r = j.run()
    assert r.returncode == 0
    assert "starting fresh (the previous run finished its input)" in r.stderr
    # the rerun published everything again, not nothing
    j.check(exactly_once=True)


def test_fresh_run_killed_before_its_first_checkpoint_never_inherits(job):
    j = job()
    assert j.run_killed(1.2) != 0          # an earlier lineage with completed checkpoints
    assert "checkpoint" in " ".join(j.logs)
    r = j.run("--fresh", fault="before_snapshot_write:exit:1")
    assert r.returncode == FAULT_EXIT      # died before any checkpoint of its own completed
    r = j.run()
    assert r.returncode == 0, r.stderr
    assert "restore point" not in r.stderr, "the rerun resumed the predecessor's checkpoint"
    assert "no checkpoint of this run completed" in r.stderr
    j.check(exactly_once=True)             # a fresh start truncates: no old output survives


def test_checkpoint_ids_are_never_reused_across_a_restart_storm(job):
    rnd = random.Random(7)
    j = job(rows=40000, rate=20000, interval_ms=50)
    for _ in range(12):
        j.run_killed(rnd.uniform(0.05, 0.6))
    j.run_to_end()
    seen = set()
    for ids in j.checkpoint_ids():
        assert not (set(ids) & seen), f"checkpoint ids reused: {sorted(set(ids) & seen)}"
        seen |= set(ids)
    assert len(seen) >= 5
    j.check(exactly_once=False)


def test_every_fault_point_has_a_call_site():
    src = "\n".join(p.read_text() for p in (REPO / "src").rglob("*.c"))
    for point in fault_points() + sink_fault_points(""):
        ident = "CK_FAULT_" + point.upper()
        assert re.search(r"ck_fault(?:_err)?\(\s*" + ident + r"\b", src), f"{point} is never called"


def test_a_failed_checkpoint_is_abandoned_and_the_job_rewinds_in_process(job):
    j = job()
    r = j.run(fault="before_snapshot_write:fail:3")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "restarting from its last checkpoint (attempt 1/10)" in r.stderr
    m = re.search(r"restore point: checkpoint (\d+)", r.stderr)
    assert m, "the restart did not restore a checkpoint"
    # checkpoint 3 failed on one subtask, so it never completed and the rewind went below it
    assert int(m.group(1)) < 3
    assert "checkpoint 3 completed" not in r.stderr
    j.check(exactly_once=False)


def test_restarts_stop_at_the_budget(job):
    j = job()
    r = j.run("--max-restarts", "1", fault="before_snapshot_write:fail:1")
    # the first failure is restarted once; the fault fires only once, so the job finishes
    assert r.returncode == 0, r.stderr[-2000:]
    r = j.run("--fresh", "--max-restarts", "0", fault="before_snapshot_write:fail:1")
    assert r.returncode == 1
    assert "injected fault at before_snapshot_write" in r.stderr
