"""Jobs on a coordinator/worker cluster: a bounded job finishes with the oracle's output; a
keyed window at parallelism 2 across two workers stays exactly right when either worker is
SIGKILLed and started again (restart from the restore point the coordinator logs); the
restart budget fails a job that cannot run; cancel and list work from the CLI.
"""
import re
import subprocess

import pytest

from .conftest import CLINK, ckjob, wait_for

EOS = ", delivery_guarantee = 'exactly_once'"


def write_job(tmp_path, rows, rate, sink_options=EOS):
    out = tmp_path / "out.json"
    sql = tmp_path / "job.sql"
    sql.write_text(ckjob.job_sql(out, rows, rate, sink_options))
    return sql, out


def outputs(out, parallelism):
    return [out] if parallelism == 1 else [out.parent / f"{out.name}-{s}" for s in range(parallelism)]


def check(out, parallelism, rows, exactly_once=True):
    got, want = ckjob.read_rows(outputs(out, parallelism)), ckjob.expected_windows(rows)
    distinct = set(got)
    missing = set(want) - distinct
    unexpected = distinct - set(want)
    assert not missing, f"{len(missing)} windows missing, e.g. {sorted(missing)[:3]}"
    assert not unexpected, f"windows that should not exist: {sorted(unexpected)[:3]}"
    if exactly_once:
        dup = {w: c for w, c in got.items() if c > 1}
        assert not dup, f"{len(dup)} windows written more than once, e.g. {list(dup.items())[:3]}"


def test_bounded_job_runs_to_the_oracle_output_and_states_its_guarantee(cluster, tmp_path):
    c = cluster()
    c.start_coordinator()
    c.start_worker("worker-1")
    sql, out = write_job(tmp_path, rows=6000, rate=20000)
    jid = c.submit(sql, name="windows")
    assert jid == 1
    job = c.wait_status(jid, {"FINISHED", "FAILED"})
    assert job["status"] == "FINISHED", job
    assert job["name"] == "windows" and job["error_count"] == 0
    check(out, 1, 6000)
    log = c.coordinator.text()
    assert "[coordinator.guarantee] job_id=1 job delivery guarantee: STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE" in log, log
    listing = subprocess.run([CLINK, "list", "--coordinator-port", str(c.port)],
                             capture_output=True, text=True, timeout=30)
    assert listing.returncode == 0, listing.stderr
    assert re.search(r"^1\s+FINISHED\s+0\s+windows$", listing.stdout, re.M), listing.stdout
    # a new coordinator (no --ha-dir) on the same checkpoint directory never hands out id 1
    # again: a new submission must not resume the checkpoints of the old job 1
    c.coordinator.stop()
    c.start_coordinator()
    wait_for(lambda: any(w["status"] == "REGISTERED" for w in c.get("/api/v1/workers")[1]["workers"]),
             20, "the worker to register again")
    assert c.submit(sql, name="again") == 2
    job = c.wait_status(2, {"FINISHED", "FAILED"})
    assert job["status"] == "FINISHED", job
    assert "job_id=2 starting fresh" in c.coordinator.text()


@pytest.mark.parametrize("victim", ["worker-1", "worker-2"])
def test_parallelism_two_across_two_workers_survives_a_worker_kill(cluster, tmp_path, victim):
    c = cluster(interval_ms=200)
    c.start_coordinator()
    c.start_worker("worker-1")
    c.start_worker("worker-2")
    rows = 40000
    sql, out = write_job(tmp_path, rows=rows, rate=6000)
    jid = c.submit(sql, parallelism=2)
    job = c.wait_status(jid, {"RUNNING"})
    assert sorted(job["workers"]) == ["worker-1", "worker-2"], job  # spread over both
    wait_for(lambda: c.job(jid)["last_checkpoint"] >= 2, 60, "two checkpoints")
    c.workers[victim].kill()
    log = wait_for(lambda: "restart waiting for capacity" in c.coordinator.text() and
                   c.coordinator.text(), 20, "the restart to wait for capacity")
    assert f"worker lost: {victim}" in log
    # the first failure reported may be the loss itself or a survivor's broken data connection
    # to the victim, whichever the coordinator hears first: either way one restart, by the policy
    assert re.search(r"job_id=1 the job failed \((worker lost: [\w-]+|worker-\d+: .+)\); "
                     r"restarting from its last checkpoint \(attempt 1/10\) in 0 ms", log), log
    assert "attempt 2/10" not in log, log
    assert c.job(jid)["status"] == "RESTARTING"
    c.start_worker(victim)
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=120)
    assert job["status"] == "FINISHED", job
    log = c.coordinator.text()
    m = re.search(r"job_id=1 restore point: checkpoint (\d+) \(latest_completed=(\d+) "
                  r"latest_confirmed=\d+ run_base=\d+\)", log)
    assert m and int(m.group(1)) >= 2, log
    assert re.search(r"job_id=1 attempt=1 survivors=2 tasks=\d+", log), log
    check(out, 2, rows)


def test_a_job_that_keeps_failing_uses_its_restart_budget_then_fails(cluster, tmp_path):
    c = cluster(max_restarts=2)
    c.start_coordinator()
    # the worker dies at its first snapshot write, every time; a supervisor (as a container
    # runtime would) starts it again each time, so the job always has capacity to restart
    crash = {"CLINK_FAULT": "before_snapshot_write:exit"}
    c.start_worker("worker-1", env=crash)
    sql, _ = write_job(tmp_path, rows=10_000_000, rate=20000)
    jid = c.submit(sql)
    deaths = 0
    while True:
        assert deaths < 6, c.coordinator.text()
        wait_for(lambda: c.workers["worker-1"].p.poll() is not None, 60, "the worker to die")
        assert c.workers["worker-1"].p.returncode == ckjob.FAULT_EXIT
        deaths += 1
        wait_for(lambda: c.coordinator.text().count("worker lost: worker-1 (") == deaths, 20,
                 "the coordinator to see the loss")
        if wait_for(lambda: c.job(jid)["status"] in ("RESTARTING", "FAILED") and
                    c.job(jid)["status"], 20, "the job to react") == "FAILED":
            break
        c.start_worker("worker-1", env=crash)
    job = c.job(jid)
    assert deaths == 3, (deaths, job)
    assert job["restarts"] == 3 and "gave up after 2 restarts" in job["error"], job
    assert "worker lost: worker-1" in job["error"], job
    log = c.coordinator.text()
    assert "restarting from its last checkpoint (attempt 2/2)" in log and "attempt 3/2" not in log, log
    assert "not restarting: its 2 restart(s) are used up" in log, log


def test_bad_sql_is_refused_at_submission_with_its_position(cluster, tmp_path):
    c = cluster()
    c.start_coordinator()
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE t (a BIGINT) WITH (connector = 'datagen');\nSELEC a FROM t;\n")
    r = subprocess.run([CLINK, "run", str(bad), "--coordinator-port", str(c.port)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "bad.sql:2:1" in r.stderr, r.stderr
    assert c.get("/api/v1/jobs")[1] == {"jobs": []}


def test_cancel_stops_a_running_job(cluster, tmp_path):
    c = cluster()
    c.start_coordinator()
    c.start_worker("worker-1")
    sql, _ = write_job(tmp_path, rows=10_000_000, rate=5000)
    jid = c.submit(sql)
    c.wait_status(jid, {"RUNNING"})
    r = subprocess.run([CLINK, "cancel", str(jid), "--coordinator-port", str(c.port)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    c.wait_status(jid, {"CANCELLED"}, timeout=30)
    assert c.get("/api/v1/workers")[1]["workers"][0]["free_slots"] == 1
    r = subprocess.run([CLINK, "cancel", "99", "--coordinator-port", str(c.port)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "no job 99" in r.stderr


def test_parallelism_three_on_uneven_workers(cluster, tmp_path):
    """Three slots over a 2-slot and a 1-slot worker: the job spreads over both, and after the
    2-slot worker dies it runs again on the 1-slot survivor plus a new 2-slot worker."""
    c = cluster(interval_ms=200)
    c.start_coordinator()
    c.start_worker("big", slots=2)
    c.start_worker("small", slots=1)
    rows = 30000
    sql, out = write_job(tmp_path, rows=rows, rate=6000)
    jid = c.submit(sql, parallelism=3)
    job = c.wait_status(jid, {"RUNNING"})
    assert sorted(job["workers"]) == ["big", "small"], job
    workers = {w["id"]: w for w in c.get("/api/v1/workers")[1]["workers"]}
    assert workers["big"]["free_slots"] == 0 and workers["small"]["free_slots"] == 0, workers
    wait_for(lambda: c.job(jid)["last_checkpoint"] >= 2, 60, "two checkpoints")
    c.workers["big"].kill()
    wait_for(lambda: "restart waiting for capacity" in c.coordinator.text(), 20, "the wait")
    c.start_worker("big2", slots=2)
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=120)
    assert job["status"] == "FINISHED", job
    check(out, 3, rows)
