"""The memory guard on a worker: `clink worker --max-memory SIZE` limits each job the worker
runs (its subtask threads' memory, counted by base/alloc.c's accounts). A job whose state grows
past it fails with "job memory exceeded N MiB (limit …)" — the coordinator's job error says so —
while the worker itself stays up and registered, ready for the next job.
"""
import re

from .conftest import wait_for

GROWING = ("CREATE TABLE g (id BIGINT, v BIGINT) WITH (connector = 'datagen', "
           "rows = '200000000', fields.id.kind = 'sequence', fields.v.kind = 'sequence');\n"
           "CREATE TABLE out (id BIGINT, n BIGINT) WITH (connector = 'blackhole');\n"
           "INSERT INTO out SELECT id, COUNT(*) AS n FROM g GROUP BY id;\n")


def test_worker_memory_guard_fails_the_growing_job_and_stays_up(cluster, tmp_path):
    c = cluster(max_restarts=1)
    c.start_coordinator()
    c.start_worker("worker-1", slots=1, extra=["--max-memory", "64M"])
    sql = tmp_path / "grow.sql"
    sql.write_text(GROWING)
    jid = c.submit(sql)
    job = c.wait_status(jid, ["FAILED"], timeout=120)
    m = re.search(r"job memory exceeded (\d+) MiB \(limit 64 MiB\)", job["error"] or "")
    assert m and int(m.group(1)) > 64, job
    assert "raise --max-memory" in job["error"], job
    w = c.get("/api/v1/workers")[1]["workers"]
    assert w[0]["id"] == "worker-1" and w[0]["status"] == "REGISTERED", w
    assert c.workers["worker-1"].p.poll() is None  # the worker process is still running
    wait_for(lambda: c.get("/api/v1/workers")[1]["workers"][0]["free_slots"] == 1, 30,
             "the failed job's slot to come free")
