"""Exactly-once output of the file sink (delivery_guarantee = 'exactly_once'): kill the job at
every fault point of the checkpoint protocol, or with SIGKILL at random moments, run the same
command again until it finishes, and the output file must hold every window of the job exactly
once — no duplicate, nothing missing, exact values — judged against conftest's Python
recomputation of the generator. The plain (at-least-once) file sink is tested in
test_recovery.py; here a duplicate is a failure.

Between intervals the rows of a checkpoint wait in hidden staging files beside the output
('.<name>.<N>.staging'); once the job finished none may be left.
"""
import json
import random
import re

import pytest

from .conftest import die_at, FAULT_EXIT, fault_points, Job

EOS = ", delivery_guarantee = 'exactly_once'"


def eos_job(tmp_path, **kw):
    return Job(tmp_path, sink_options=EOS, **kw)


def assert_no_staging(j):
    left = sorted(p.name for p in j.dir.iterdir() if p.name.endswith(".staging"))
    assert not left, f"staging files left after the job finished: {left}"


def assert_whole_lines(j):
    """Every output file ends with a line break and each line is one JSON object."""
    for p in j.outputs():
        data = p.read_bytes()
        assert not data or data.endswith(b"\n"), f"{p} ends in a torn line"
        for line in data.splitlines():
            json.loads(line)


def test_uninterrupted_run_is_exact_and_says_exactly_once(tmp_path):
    j = eos_job(tmp_path, rate=0)
    r = j.run()
    assert r.returncode == 0, r.stderr[-2000:]
    assert "job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE" in r.stderr
    j.check(exactly_once=True)
    assert_no_staging(j)


def test_without_the_option_the_job_says_at_least_once(tmp_path):
    j = Job(tmp_path, rate=0, rows=2000)
    r = j.run()
    assert r.returncode == 0, r.stderr[-2000:]
    assert "job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink" \
        in r.stderr


@pytest.mark.parametrize("point", fault_points())
def test_killed_at_each_fault_point_then_rerun_exactly_once(tmp_path, point):
    j = eos_job(tmp_path)
    r = die_at(j, point)
    j.run_to_end()
    j.check(exactly_once=True)
    assert_whole_lines(j)
    assert_no_staging(j)
    reruns = j.logs[1:] if point != "before_restore" else j.logs[2:]
    if point in ("after_completed", "before_commit"):
        # checkpoint N completed and was never committed: the rerun must promote it
        assert any(re.search(r"recovered at checkpoint \d+: \d+ bytes committed, 1 staged "
                             r"interval promoted again", log) for log in reruns), reruns[0][-2000:]


@pytest.mark.parametrize("parallelism", [1, 3])
def test_random_sigkills_then_finish_exactly_once(tmp_path, parallelism):
    rnd = random.Random(1000 + parallelism)
    j = eos_job(tmp_path, parallelism=parallelism, rows=60000, rate=10000)
    j.kill_randomly_then_finish(rnd)
    j.check(exactly_once=True)
    assert_whole_lines(j)
    assert_no_staging(j)


def test_a_failed_checkpoint_rewinds_in_process_exactly_once(tmp_path):
    j = eos_job(tmp_path)
    r = j.run(fault="before_snapshot_write:fail:3")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "restarting from its last checkpoint (attempt 1/10)" in r.stderr
    j.check(exactly_once=True)
    assert_no_staging(j)


def test_fresh_start_discards_what_a_killed_run_staged(tmp_path):
    j = eos_job(tmp_path)
    r = j.run(fault="after_prepare:exit:3")
    assert r.returncode == FAULT_EXIT
    assert any(p.name.endswith(".staging") for p in j.dir.iterdir())
    r = j.run("--fresh")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "staging file" in r.stderr and "a previous run left" in r.stderr
    j.check(exactly_once=True)
    assert_no_staging(j)


def test_output_changed_outside_the_job_is_refused(tmp_path):
    j = eos_job(tmp_path)
    r = j.run(fault="after_commit:exit:3")
    assert r.returncode == FAULT_EXIT
    size = j.out.stat().st_size
    assert size > 0
    with open(j.out, "r+b") as f:
        f.truncate(size // 2)
    r = j.run()
    assert r.returncode == 1
    assert "was changed outside the job" in r.stderr and "--fresh" in r.stderr
