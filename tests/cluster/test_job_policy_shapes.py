"""One restart policy, two shapes (issue 13; src/job/policy.c): an embedded `clink run` and a
cluster job that fail with the same restartable error on every deployment make the same
decisions — the same budget (the default one, and one given with --max-restarts), the same
attempts with the same backoff, the same log lines — and give up after the same count with
the same error. The failure is a fault point armed to fail every snapshot write
(`before_snapshot_write:fail:1+`, src/checkpoint/fault.h), so every deployment fails at its
first checkpoint with an I/O error.
"""
import os
import re
import subprocess

import pytest

from .conftest import CLINK, ckjob

# bounded (10 s of input): a job whose failure did not recur would finish, not hang
ROWS = 200_000
FAULT = {"CLINK_FAULT": "before_snapshot_write:fail:1+"}
DECISION = re.compile(r"^\[job\] (?:warning|error): (?:job_id=\d+ )?(the job failed \(.*\); .*)$", re.M)
RESTART = re.compile(r"restarting from its last checkpoint \(attempt (\d+)/(\d+)\) in (\d+) ms")


def backoff(attempt):
    """The documented formula (docs/cluster.md): 0, then 100 ms × (n − 1), at most 5 s."""
    return 0 if attempt <= 1 else min(100 * (attempt - 1), 5000)


def decisions(log):
    """Each decision line with the failure's text (which names a worker in a cluster) cut."""
    return [re.sub(r"^the job failed \(.*\); ", "the job failed (WHY); ", m)
            for m in DECISION.findall(log)]


def embedded(tmp_path, budget):
    out = tmp_path / "embedded.json"
    sql = tmp_path / "embedded.sql"
    sql.write_text(ckjob.job_sql(out, ROWS, 20000))
    args = [CLINK, "run", str(sql), "--checkpoint-dir", str(tmp_path / "ck-embedded"),
            "--checkpoint-interval-ms", "100", "--log-level", "info"]
    if budget is not None:
        args += ["--max-restarts", str(budget)]
    env = dict(os.environ, **FAULT)
    r = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1, r.stderr[-3000:]
    err = [l for l in r.stderr.splitlines() if l.startswith("clink run: ")]
    assert err, r.stderr[-3000:]
    return r.stderr, err[-1][len("clink run: error: "):]


def clustered(cluster, tmp_path, budget):
    c = cluster(max_restarts=budget)
    c.start_coordinator()
    c.start_worker("worker-1", env=FAULT)
    out = tmp_path / "cluster.json"
    sql = tmp_path / "cluster.sql"
    sql.write_text(ckjob.job_sql(out, ROWS, 20000))
    jid = c.submit(sql)
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=180)
    assert job["status"] == "FAILED", job
    return c.coordinator.text(), job["error"]


@pytest.mark.parametrize("budget", [None, 2], ids=["default_budget", "max_restarts_2"])
def test_embedded_and_cluster_restart_and_give_up_alike(cluster, tmp_path, budget):
    want_budget = 10 if budget is None else budget
    e_log, e_error = embedded(tmp_path, budget)
    c_log, c_error = clustered(cluster, tmp_path, budget)

    want = [(k, want_budget, backoff(k)) for k in range(1, want_budget + 1)]
    for name, log in (("embedded", e_log), ("cluster", c_log)):
        got = [tuple(map(int, m)) for m in RESTART.findall(log)]
        assert got == want, f"{name}: restarts {got}, want {want}\n{log[-3000:]}"
        assert f"not restarting: its {want_budget} restart(s) are used up" in log, (name, log[-3000:])
    # the same lines, in the same order (the failure's own text apart)
    assert decisions(e_log) == decisions(c_log), (decisions(e_log), decisions(c_log))
    assert len(decisions(e_log)) == want_budget + 1
    # the same error: "gave up after N restarts; the last failure: …"
    prefix = f"gave up after {want_budget} restarts; the last failure: "
    for error in (e_error, c_error):
        assert error.startswith(prefix), error
        assert "injected fault at before_snapshot_write" in error, error


GROWING = ("CREATE TABLE g (id BIGINT, v BIGINT) WITH (connector = 'datagen', "
           "rows = '200000000', fields.id.kind = 'sequence', fields.v.kind = 'sequence');\n"
           "CREATE TABLE out (id BIGINT, n BIGINT) WITH (connector = 'blackhole');\n"
           "INSERT INTO out SELECT id, COUNT(*) AS n FROM g GROUP BY id;\n")


def test_embedded_and_cluster_fail_alike_on_a_failure_a_restart_cannot_cure(cluster, tmp_path):
    """The memory limit (CK_ENOMEM): the restored state would pass it again, so neither shape
    restarts, and both say why in the same line."""
    sql = tmp_path / "grow.sql"
    sql.write_text(GROWING)
    r = subprocess.run([CLINK, "run", str(sql), "--checkpoint-dir", str(tmp_path / "ck-e"),
                        "--max-memory", "32M", "--log-level", "info"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 1, r.stderr[-3000:]
    c = cluster()
    c.start_coordinator()
    c.start_worker("worker-1", extra=["--max-memory", "32M"])
    jid = c.submit(sql)
    job = c.wait_status(jid, {"FAILED"}, timeout=120)
    assert job["restarts"] == 0, job
    for name, log in (("embedded", r.stderr), ("cluster", c.coordinator.text())):
        assert not RESTART.search(log), (name, log[-3000:])
        assert decisions(log) == ["the job failed (WHY); not restarting: the restored state "
                                  "would pass the same memory limit"], (name, log[-3000:])
    assert "job memory exceeded" in job["error"] and "job memory exceeded" in r.stderr
