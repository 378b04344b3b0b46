"""A cluster job whose checkpoints live on S3 (the coordinator's --checkpoint-dir
s3://bucket/prefix, SeaweedFS from scripts/services.sh): a worker is SIGKILLed after two
checkpoints, a new one takes its place, the job restores from S3 and finishes with every
window exactly once (conftest's recomputation); the bucket holds the job's layout under
prefix/job-<id>/v1/, read back with curl's own SigV4 signing; a coordinator restarted on the
same prefix numbers new jobs above the ones S3 holds.
"""
import uuid

from .conftest import wait_for
from .test_cluster_jobs import check, write_job
from ..checkpoint.test_s3_store import curl_s3, list_keys, s3_env, shared_bucket


def s3_cluster(cluster, tmp_path):
    bucket, top = shared_bucket(), "cluster-" + uuid.uuid4().hex[:10]
    c = cluster(interval_ms=200)
    c.ckpt = f"s3://{bucket}/{top}/jobs"
    c.env.update(s3_env())
    return c, bucket, top


def test_cluster_job_restores_from_s3_after_a_worker_is_killed(cluster, tmp_path):
    c, bucket, top = s3_cluster(cluster, tmp_path)
    c.start_coordinator()
    c.start_worker("worker-1")
    c.start_worker("worker-2")
    rows = 24000
    sql, out = write_job(tmp_path, rows=rows, rate=6000)
    jid = c.submit(sql, parallelism=2)
    job = c.wait_status(jid, {"RUNNING"})
    wait_for(lambda: c.job(jid)["last_checkpoint"] >= 2, 60, "two checkpoints")
    victim = job["workers"][0]
    c.workers[victim].kill()
    c.start_worker(victim + "-new")
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=180)
    assert job["status"] == "FINISHED", job
    assert "restore point: checkpoint" in c.coordinator.text()
    check(out, 2, rows)
    keys = list_keys(bucket, f"{top}/jobs/")
    base = f"{top}/jobs/job-{jid}/v1/"
    assert any(k.startswith(base + "_meta/completed-") for k in keys), keys[:10]
    assert any(k.startswith(base + "0/checkpoint-") for k in keys), keys[:10]
    assert all(k.startswith(base) for k in keys), keys[:10]
    assert not (tmp_path / "checkpoints").exists()


def test_a_restarted_coordinator_numbers_jobs_above_those_on_s3(cluster, tmp_path):
    c, bucket, top = s3_cluster(cluster, tmp_path)
    curl_s3("PUT", f"/{bucket}/{top}/jobs/job-7/v1/_meta/fingerprint", data=b"x")
    c.start_coordinator()
    c.start_worker("worker-1")
    sql, _ = write_job(tmp_path, rows=1000, rate=0)
    assert c.submit(sql) == 8
