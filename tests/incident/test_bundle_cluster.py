"""Incident bundles of a cluster job (docs/incidents.md, "Collect"): its checkpoints are under
the coordinator's <checkpoint-dir>/job-<id>, its captures in the workers' capture directory.
A job on two workers, one SIGKILLed mid-stream and replaced (the job restores its last
completed checkpoint), collected with --job: verify passes, the manifest says cluster and the
job's id, the job manifest came from the coordinator; without --job the directory is refused
with the way out; a scope of another job is refused."""

import importlib
import json
import sys

from .conftest import REPO, run_clink


def harness():
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return importlib.import_module("tests.cluster.conftest")


def test_a_cluster_job_killed_and_restarted_collects_and_verifies(tmp_path):
    h = harness()
    c = h.Cluster(tmp_path, interval_ms=200)
    cap = tmp_path / "cap"
    out = tmp_path / "out.ndjson"
    sql = tmp_path / "job.sql"
    sql.write_text("""
        CREATE TABLE g (id BIGINT, s VARCHAR) WITH (connector = 'datagen', rows = '4000',
            rows_per_second = '1000', 'fields.id.kind' = 'sequence');
        CREATE TABLE o (id BIGINT, s VARCHAR) WITH (connector = 'file', path = '%s');
        INSERT INTO o SELECT id, s FROM g WHERE id %% 3 <> 0;
        """ % out)
    try:
        c.start_coordinator(extra=("--checkpoints-retained", "1000000"))
        for wid in ("w1", "w2"):
            c.start_worker(wid, slots=1, extra=("--capture-dir", str(cap)))
        jid = c.submit(sql, parallelism=2)
        meta = c.ckpt / ("job-%d" % jid) / "v1" / "_meta"
        h.wait_for(lambda: meta.is_dir() and len(list(meta.glob("completed-*"))) >= 2, 90,
                   "two completed checkpoints")
        c.workers["w2"].kill()
        c.start_worker("w3", slots=1, extra=("--capture-dir", str(cap)))
        job = c.wait_status(jid, ("FINISHED", "FAILED"), timeout=180)
        assert job["status"] == "FINISHED", job
    finally:
        c.stop()
    r = run_clink("incident", "collect", "--checkpoint-dir", c.ckpt, "--capture-dir", cap,
                  "--include-captures", "--include-state", "--out", tmp_path / "nojob")
    assert r.returncode == 2 and "--job" in r.stderr, r.stderr
    b = tmp_path / "bundle"
    r = run_clink("incident", "collect", "--checkpoint-dir", c.ckpt, "--job", jid,
                  "--capture-dir", cap, "--include-captures", "--include-state", "--out", b)
    assert r.returncode == 0, r.stderr
    m = json.loads((b / "manifest.json").read_text())
    assert m["job"] == {"id": jid, "shape": "cluster", "manifest": "job.json"}, m["job"]
    assert len(m["runs"]) >= 2 and m["runs"][-1]["restored_from"] > 0, m["runs"]
    jm = json.loads((b / "job.json").read_text())
    assert jm["job"]["id"] == jid and jm["job"]["shape"] == "cluster" and jm["parallelism"] == 2
    v = run_clink("incident", "verify", b, "--json", timeout=600)
    doc = json.loads(v.stdout)
    assert v.returncode == 0, json.dumps(doc, indent=1)[-4000:]
    assert all(ch["status"] == "pass" for ch in doc["checks"]), doc
    n = m["checkpoints"]["completed"][-1]
    s = run_clink("incident", "scope", b, "--checkpoint", n, "--job", jid + 1)
    assert s.returncode == 2 and "not job %d" % (jid + 1) in s.stderr, s.stderr
    s = run_clink("incident", "scope", b, "--checkpoint", n, "--job", jid, "--json")
    doc = json.loads(s.stdout)
    assert doc["job"]["id"] == jid and doc["checkpoint"] == n, doc
    assert s.returncode == 3 and "not a Kafka source" in " ".join(doc["unavailable"]), doc
