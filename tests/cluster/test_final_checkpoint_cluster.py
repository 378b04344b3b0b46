"""A cluster job whose final checkpoint is abandoned (timed out after every source ended)
never waits for ever (issue 13): the coordinator ends the deployment with an error that names
the checkpoint, and the job's restart policy (src/job/policy.h, the embedded run's) takes the
final checkpoint again in a new deployment — or, with the budget spent, fails the job with
that error. tests/checkpoint/test_final_checkpoint.py holds the embedded run to the same.

The timeout: the worker's writer thread stalls after a snapshot write (fault point
after_snapshot_write:stall=MS) longer than the coordinator's --checkpoint-timeout-ms; the
interval is long, so a deployment's only checkpoint is its final one.
"""
import pytest

from .conftest import ckjob

ROWS = 3000
COORD = ["--checkpoint-timeout-ms", "1000"]
STALL = "after_snapshot_write:stall=4000"


def start(cluster, tmp_path, fault, max_restarts=10):
    c = cluster(interval_ms=3600000, max_restarts=max_restarts)
    c.start_coordinator(extra=COORD)
    c.start_worker("worker-1", slots=2, env={"CLINK_FAULT": fault})
    out = tmp_path / "out.json"
    sql = tmp_path / "job.sql"
    sql.write_text(ckjob.job_sql(out, ROWS, 1000000, ", delivery_guarantee = 'exactly_once'"))
    # parallelism 2: the sources are subtasks of their own, which end after the final barrier
    return c, c.submit(sql, parallelism=2), [tmp_path / f"out.json-{s}" for s in range(2)]


def test_a_timed_out_final_checkpoint_is_taken_again_by_a_restart(cluster, tmp_path):
    c, jid, outs = start(cluster, tmp_path, STALL + ":1")
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=120)
    log = c.coordinator.text()
    assert job["status"] == "FINISHED", (job, log[-3000:])
    assert job["restarts"] == 1, job
    assert "could not complete the final checkpoint 1" in log, log[-3000:]
    assert "restarting from its last checkpoint (attempt 1/10)" in log, log[-3000:]
    got, want = ckjob.read_rows(outs), ckjob.expected_windows(ROWS)
    assert got == want, (f"missing {list((want - got).items())[:3]}, "
                         f"unexpected or repeated {list((got - want).items())[:3]}")


def test_a_final_checkpoint_that_never_completes_fails_the_job_naming_it(cluster, tmp_path):
    c, jid, outs = start(cluster, tmp_path, STALL + ":1+", max_restarts=1)
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=120)
    assert job["status"] == "FAILED", (job, c.coordinator.text()[-3000:])
    assert job["error"].startswith("gave up after 1 restarts; the last failure: could not "
                                   "complete the final checkpoint 2"), job
    # no clean finish recorded: the job's checkpoints stay resumable
    meta = c.ckpt / f"job-{jid}" / "v1/_meta"
    assert not (meta / "clean-finish").exists()
