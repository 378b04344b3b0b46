"""The flight recorder as a per-job option on a cluster (docs/cluster.md, "Per-job options";
docs/replay.md): `clink run --coordinator-host … --capture-dir DIR [--capture-records N]` and a
REST submission's "capture_dir" / "capture_records" travel in the job's DEPLOY frames, so the
workers that run the job record it under DIR whatever their own --capture-dir says, and no
other job's operators go there; a job submitted without them records where its workers' own
--capture-dir says.

Three bounded jobs run at the same time on two workers, each with a --capture-dir of its own
(the default): job A asks for its own directory and a bound through the CLI, job B for its own
through REST, job C asks for nothing. Which job a file belongs to is judged by the plan
fingerprint every op.json and .cap records against the one each job's checkpoint directory
holds (`_meta/fingerprint`, written by the coordinator), never by where the engine says it
wrote. A relative directory is refused at submission, on both paths.
"""
import json
import subprocess

import pyarrow.ipc as ipc

from .test_capture_replay import CLINK, load_cluster_harness


def job_sql(out, rows):
    return f"""
CREATE TABLE g (k BIGINT, ts BIGINT, v BIGINT) WITH (
  connector = 'datagen', rows = '{rows}', rows_per_second = '4000',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '6',
  'fields.ts.kind' = 'sequence', 'fields.ts.start' = '1772352000000', 'fields.ts.step' = '10',
  event_time_column = 'ts', watermark_lag_ms = '0');
CREATE TABLE s (k BIGINT, ws BIGINT, n BIGINT) WITH (connector = 'file', path = '{out}');
INSERT INTO s SELECT k, window_start AS ws, COUNT(*) AS n FROM g
  GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;
"""


def fingerprints(cap):
    """Every plan fingerprint recorded under cap: op.json's and each capture's header."""
    fps = set()
    for f in cap.rglob("op.json"):
        fps.add(json.loads(f.read_text())["plan_fingerprint"])
    for f in cap.rglob("*.cap"):
        meta = ipc.open_stream(f.read_bytes()).schema.metadata
        fps.add(meta[b"clink.capture.plan_fingerprint"].decode())
    return fps


def test_the_coordinator_passes_the_capture_dir_per_job(tmp_path):
    h = load_cluster_harness()
    c = h.Cluster(tmp_path, interval_ms=150)
    defaults = {w: tmp_path / f"default-{w}" for w in ("w1", "w2")}
    cap_a, cap_b = tmp_path / "cap-a", tmp_path / "cap-b"
    try:
        c.start_coordinator(extra=("--checkpoints-retained", "1000000"))
        for w, d in defaults.items():
            c.start_worker(w, slots=3, extra=("--capture-dir", str(d)))
        for name, rows in (("a", 4000), ("b", 3000), ("c", 3000)):
            (tmp_path / f"{name}.sql").write_text(job_sql(tmp_path / f"out-{name}.json", rows))
        # A: the CLI's options (the same ones `clink run` takes in one process)
        r = subprocess.run([CLINK, "run", str(tmp_path / "a.sql"), "--coordinator-host",
                            "127.0.0.1", "--coordinator-port", str(c.port), "--parallelism", "2",
                            "--capture-dir", str(cap_a), "--capture-records", "40"],
                           capture_output=True, text=True, timeout=30, env=c.env)
        assert r.returncode == 0, r.stderr
        ja = int(r.stdout.split()[-1])
        # B: a REST submission's fields
        code, text, _ = c.request("POST", "/api/v1/jobs/sql", json.dumps(
            {"sql": (tmp_path / "b.sql").read_text(), "name": "b", "parallelism": 2,
             "capture_dir": str(cap_b)}))
        assert code == 201, text
        jb = json.loads(text)["id"]
        # C: nothing asked: the workers' own directories
        jc = c.submit(tmp_path / "c.sql", parallelism=2)
        assert c.job(ja)["capture_dir"] == str(cap_a) and c.job(jb)["capture_dir"] == str(cap_b)
        assert c.job(jc)["capture_dir"] is None
        for jid in (ja, jb, jc):
            job = c.wait_status(jid, ("FINISHED", "FAILED"), timeout=180)
            assert job["status"] == "FINISHED", job

        # relative directories are refused at submission, naming the directory, on both paths
        r = subprocess.run([CLINK, "run", str(tmp_path / "c.sql"), "--coordinator-host",
                            "127.0.0.1", "--coordinator-port", str(c.port), "--capture-dir",
                            "rel/cap"], capture_output=True, text=True, timeout=30, env=c.env)
        assert r.returncode == 1 and "'rel/cap' must be an absolute path" in r.stderr, r.stderr
        code, text, _ = c.request("POST", "/api/v1/jobs/sql", json.dumps(
            {"sql": "SELECT 1", "capture_dir": "rel"}))
        assert code == 400 and "must be an absolute path" in text, text
    finally:
        c.stop()

    fp = {jid: (c.ckpt / f"job-{jid}" / "v1" / "_meta" / "fingerprint").read_text().split()[0]
          for jid in (ja, jb, jc)}
    assert len(set(fp.values())) == 3, fp  # three different jobs, told apart by their plans
    # each per-job directory holds its job's operators, and no other job's
    assert fingerprints(cap_a) == {fp[ja]}, (fingerprints(cap_a), fp)
    assert fingerprints(cap_b) == {fp[jb]}, (fingerprints(cap_b), fp)
    # the workers' own directories hold job C only (both of its subtasks, wherever placed)
    by_default = set().union(*(fingerprints(d) for d in defaults.values() if d.exists()))
    assert by_default == {fp[jc]}, (by_default, fp)
    subtasks = {p.name for d in defaults.values() for p in d.glob("op-*/subtask-*")}
    assert subtasks == {"subtask-0", "subtask-1"}, subtasks
    # A's bound is the one it asked for, not the workers' default of 10,000: its window
    # operator took more than 40 records in some interval and kept 40
    heads = [ipc.open_stream(f.read_bytes()).schema.metadata for f in cap_a.rglob("*.cap")]
    stored = [int(m[b"clink.capture.records_stored"]) for m in heads]
    assert max(stored) == 40, stored
    assert any(m[b"clink.capture.truncated"] == b"true" for m in heads)
    # and what A recorded replays from A's checkpoints
    op = max(int(p.name[3:]) for p in cap_a.glob("op-*")
             if json.loads((p / "op.json").read_text())["kind"] == "agg")
    f = sorted((cap_a / f"op-{op}" / "subtask-0").glob("epoch-[0-9]*.cap"))[0]
    r = subprocess.run([CLINK, "replay", "--capture-dir", str(cap_a), "--checkpoint-dir",
                        str(c.ckpt / f"job-{ja}"), "--op", str(op), "--subtask", "0", "--epoch",
                        f.name[6:-4], "--verify"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "two replays are byte-identical" in r.stderr, r.stderr


def test_a_takeover_keeps_the_jobs_capture_dir(tmp_path):
    """The per-job options are kept in the HA manifest: a job submitted with --capture-dir, its
    coordinator killed before any worker ran it, recovered by the next coordinator and run on a
    worker without a --capture-dir of its own, records under the directory it was given."""
    h = load_cluster_harness()
    c = h.Cluster(tmp_path, interval_ms=150)
    cap = tmp_path / "cap"
    try:
        c.start_coordinator(ha=True)
        (tmp_path / "a.sql").write_text(job_sql(tmp_path / "out.json", 2000))
        r = subprocess.run([CLINK, "run", str(tmp_path / "a.sql"), "--coordinator-host",
                            "127.0.0.1", "--coordinator-port", str(c.port), "--capture-dir",
                            str(cap), "--capture-records", "25"],
                           capture_output=True, text=True, timeout=30, env=c.env)
        assert r.returncode == 0, r.stderr
        jid = int(r.stdout.split()[-1])  # no worker yet: it waits for a slot
        manifest = c.ha / "jobs" / f"job-{jid}.manifest"
        h.wait_for(manifest.exists, 10, "the manifest")
        c.coordinator.kill()
        c.start_coordinator(ha=True, log="coordinator-2.log")
        h.wait_for(lambda: f"job_id={jid} recovered from the HA directory" in c.coordinator.text(),
                   20, "the recovery")
        assert c.job(jid)["capture_dir"] == str(cap)
        c.start_worker("w1")
        job = c.wait_status(jid, ("FINISHED", "FAILED"), timeout=180)
        assert job["status"] == "FINISHED", job
    finally:
        c.stop()
    fp = (c.ckpt / f"job-{jid}" / "v1" / "_meta" / "fingerprint").read_text().split()[0]
    assert fingerprints(cap) == {fp}
    heads = [ipc.open_stream(f.read_bytes()).schema.metadata for f in cap.rglob("*.cap")]
    assert max(int(m[b"clink.capture.records_stored"]) for m in heads) == 25
