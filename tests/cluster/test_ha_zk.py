"""Coordinator HA on ZooKeeper (--ha zookeeper://…, src/cluster/ha_zk.c): two coordinators on
the shared ZooKeeper service, each under a znode path of its own test; the leader killed with
SIGKILL or frozen with SIGSTOP past the session timeout; the standby takes over, workers follow
the leader through ZooKeeper, and the job's windows are judged against the Python oracle
(exactly once). The shared ZooKeeper is never stopped.
"""
import os
import re
import signal
import time
import uuid
from pathlib import Path

import pytest

from .conftest import CLINK, Proc, free_port, wait_for
from .test_cluster_jobs import check, write_job

SESSION_MS = 4000  # the server's smallest session (2 × tickTime 2000 ms)
# the ZooKeeper client library's own leak on an expired session (see the file)
LSAN = str(Path(__file__).with_name("lsan-zookeeper.supp"))


def zk_url(what):
    zk = os.environ.get("CLINK_ZOOKEEPER")
    if not zk:
        pytest.skip("CLINK_ZOOKEEPER is not set (eval \"$(scripts/services.sh env)\")")
    return f"zookeeper://{zk}/clink-tests/{what}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def start_coordinator(c, url, port, http, log):
    args = [CLINK, "coordinator", "--port", str(port), "--http-port", str(http),
            "--checkpoint-dir", str(c.ckpt), "--checkpoint-interval-ms", str(c.interval_ms),
            "--max-restarts", "10", "--ha", url, "--ha-session-timeout-ms", str(SESSION_MS)]
    lsan = ":".join(filter(None, [os.environ.get("LSAN_OPTIONS"), f"suppressions={LSAN}"]))
    return Proc(args, c.dir / log, dict(c.env, LSAN_OPTIONS=lsan))


def lead(c, proc, port, http):
    """Points the harness (REST, submissions) at the coordinator that leads now."""
    c.coordinator, c.port, c.http = proc, port, http
    wait_for(lambda: c.get("/api/v1/health", auth=False)[0] == 200, 20, "the leader's health")


def epoch_of(proc):
    m = re.search(r"on ZooKeeper as member-\d+ with epoch (\d+)", proc.text())
    return int(m.group(1)) if m else None


def two_coordinators(c, url, tmp_path, rows):
    a_port, a_http = c.port, c.http
    a = start_coordinator(c, url, a_port, a_http, "coordinator.log")
    lead(c, a, a_port, a_http)
    c.start_worker("worker-1", extra=["--ha", url])
    sql, out = write_job(tmp_path, rows=rows, rate=5000)
    jid = c.submit(sql)
    c.wait_status(jid, {"RUNNING"})
    b_port, b_http = free_port(), free_port()
    b = start_coordinator(c, url, b_port, b_http, "standby.log")
    wait_for(lambda: "standing by as member-" in b.text(), 20, "the standby")
    wait_for(lambda: c.job(jid)["last_checkpoint"] >= 2, 60, "two checkpoints")
    assert b.p.poll() is None and "listening" not in b.text()
    return a, b, (b_port, b_http), jid, out


def test_the_standby_takes_over_a_killed_leader_within_the_session_timeout(cluster, tmp_path):
    c = cluster(interval_ms=200)
    url = zk_url("kill")
    rows = 30000
    a, b, (b_port, b_http), jid, out = two_coordinators(c, url, tmp_path, rows)
    a_epoch = epoch_of(a)
    a.kill()
    killed = time.monotonic()
    wait_for(lambda: epoch_of(b), SESSION_MS / 1000 + 10, "the standby to lead")
    took = time.monotonic() - killed
    # ZooKeeper expires a session between one and two timeouts after its last heartbeat
    assert took < 2 * SESSION_MS / 1000 + 1, f"took over after {took:.1f} s"
    assert epoch_of(b) > a_epoch, (a_epoch, epoch_of(b))
    lead(c, b, b_port, b_http)
    wait_for(lambda: "job_id=1 recovered from the HA manifests on ZooKeeper" in b.text(), 20,
             "the job's recovery")
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=120)
    assert job["status"] == "FINISHED", job
    assert re.search(r"job_id=1 restore point: checkpoint \d+", b.text()), b.text()
    # the worker found the new leader through ZooKeeper (a port it was never given)
    assert re.search(rf"registered with the coordinator at 127\.0\.0\.1:{b_port} ",
                     c.workers["worker-1"].text())
    check(out, 1, rows)


def test_a_deposed_leader_is_fenced_when_it_wakes_up(cluster, tmp_path):
    c = cluster(interval_ms=200)
    url = zk_url("fence")
    rows = 30000
    a, b, (b_port, b_http), jid, out = two_coordinators(c, url, tmp_path, rows)
    a_epoch = epoch_of(a)
    a.p.send_signal(signal.SIGSTOP)  # still running, holding its sockets, but silent
    try:
        wait_for(lambda: epoch_of(b), SESSION_MS / 1000 + 15, "the standby to lead")
        assert epoch_of(b) > a_epoch
        lead(c, b, b_port, b_http)
        wait_for(lambda: "job_id=1 recovered from the HA manifests on ZooKeeper" in b.text(),
                 20, "the job's recovery")
        # the worker left the frozen leader for the new one, found through ZooKeeper
        wait_for(lambda: re.search(rf"registered with the coordinator at 127\.0\.0\.1:{b_port} ",
                                   c.workers["worker-1"].text()), 30, "the worker to follow")
        wait_for(lambda: c.job(jid).get("status") == "RUNNING", 60, "the job on the new leader")
    finally:
        a.p.send_signal(signal.SIGCONT)
    # awake, the old leader finds its worker gone and writes the job's manifest: refused
    rc = a.p.wait(timeout=30)
    text = a.text()
    assert rc == 1, text[-3000:]
    assert re.search(r"job_id=1: could not save the job manifest: could not write "
                     r"'/clink-tests/fence-[^']*/jobs/job-1\.manifest' to ZooKeeper: refused, "
                     r"fenced", text), text[-3000:]
    assert "could not stay the leader of" in text, text[-3000:]
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=120)
    assert job["status"] == "FINISHED", job
    check(out, 1, rows)
