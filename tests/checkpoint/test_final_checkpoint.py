"""The final checkpoint (taken once every source reached the end of its input) that is
abandoned — timed out, or failed — must never leave the job waiting for ever: its sources have
ended after taking its barrier, so the deployment cannot take it again. The job's restart
policy takes it again in a new deployment (from the last completed checkpoint), or, with the
budget spent, the job fails with an error that names the checkpoint — and leaves no
clean-finish record, so a rerun still delivers every window exactly once.

The timeout is made to happen with a fault point: after_snapshot_write:stall=MS holds the
writer thread (before the acknowledgement) longer than --checkpoint-timeout-ms. The interval
is long, so the only checkpoint a deployment takes is the final one.
"""
import subprocess

import pytest

TIMEOUT_MS = "1000"
STALL = "after_snapshot_write:stall=4000"
DEADLINE_S = 150  # several deployments, each with one stall, on a busy ASan build


def run_bounded(j, *extra, fault):
    try:
        return j.run("--checkpoint-timeout-ms", TIMEOUT_MS, *extra, fault=fault,
                     timeout=DEADLINE_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail("the job did not end within %d s after its final checkpoint was abandoned "
                    "(it waits for ever); stderr's end:\n%s"
                    % (DEADLINE_S, (e.stderr or b"")[-3000:].decode(errors="replace")))


def small_job(job):
    # parallelism 2: the sources are subtasks of their own (a keyed exchange follows them), so
    # they end once they took the final barrier; one chain of source and sink would wait
    return job(rows=3000, rate=1000000, interval_ms=3600000, parallelism=2)


def test_a_timed_out_final_checkpoint_is_taken_again_by_a_restart(job):
    j = small_job(job)
    r = run_bounded(j, fault=STALL + ":1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "checkpoint 1 did not complete within 1000 ms" in r.stderr, r.stderr[-3000:]
    assert "could not complete the final checkpoint 1" in r.stderr, r.stderr[-3000:]
    assert "restarting from its last checkpoint (attempt 1/10)" in r.stderr, r.stderr[-3000:]
    assert "checkpoint 1 completed" not in r.stderr
    assert "checkpoint 2 completed" in r.stderr, r.stderr[-3000:]
    assert "clean-finish" in {p.name for p in (j.ckpt / "v1/_meta").iterdir()}
    j.check(exactly_once=True)


def test_a_failed_final_checkpoint_is_taken_again_by_a_restart(job):
    j = small_job(job)
    r = run_bounded(j, fault="before_snapshot_write:fail:1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "restarting from its last checkpoint (attempt 1/10)" in r.stderr, r.stderr[-3000:]
    assert "checkpoint 2 completed" in r.stderr, r.stderr[-3000:]
    j.check(exactly_once=True)


def test_a_final_checkpoint_that_never_completes_fails_the_job_naming_it(job):
    j = small_job(job)
    r = run_bounded(j, "--max-restarts", "1", fault=STALL + ":1+")
    assert r.returncode == 1, r.stderr[-3000:]
    # the second deployment's final checkpoint is 2: the first's id stays used
    assert "gave up after 1 restarts; the last failure: could not complete the final " \
           "checkpoint 2" in r.stderr, r.stderr[-3000:]
    assert "[job] failed:" in r.stderr, r.stderr[-3000:]
    # honest: no clean finish is recorded, nothing was committed, and a rerun delivers it all
    assert "clean-finish" not in {p.name for p in (j.ckpt / "v1/_meta").iterdir()}
    r = run_bounded(j, fault=None)
    assert r.returncode == 0, r.stderr[-3000:]
    j.check(exactly_once=True)
