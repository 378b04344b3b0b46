"""Workers on separate hosts: the coordinator and two workers each in a network namespace of its
own (ip netns), joined by veth pairs to a bridge on a private test range (10.231.N.0/24) with no
default route anywhere, so nothing leaves this machine. The keyed job runs at parallelism 2 with
one slot per worker, so its exchange crosses hosts; a worker host is killed and replaced, and
the windows are judged against the Python oracle (exactly once).

The namespaces share this machine's filesystem (a network namespace is not a mount namespace):
the checkpoints are a directory both workers reach, as --checkpoint-dir requires of a shared
filesystem; S3 from namespaces is not exercised here. Everything made is torn down, even on
failure. Needs root (CAP_NET_ADMIN); skipped, saying why, where `ip netns add` is refused.
"""
import os
import re
import subprocess
import urllib.error
import urllib.request

import pytest

from .conftest import CLINK, Cluster, Proc, free_port, wait_for
from .test_cluster_jobs import check, write_job
from .test_ha_zk import LSAN
from .netns import Forwarder, Hosts, NetnsRefused, ip


class HostCluster(Cluster):
    """The harness's Cluster with the coordinator on another host's address."""

    def __init__(self, tmp_path, host, token):
        super().__init__(tmp_path, token=token, interval_ms=200)
        self.host = host

    def request(self, method, path, body=None, auth=True, token=None):
        req = urllib.request.Request(f"http://{self.host}:{self.http}{path}", method=method,
                                     data=body.encode() if isinstance(body, str) else body)
        if method == "POST":
            req.add_header("Content-Type", "application/json")
        if auth and self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            return 0, str(e), {}

    def submit(self, sql_path, parallelism=1, name=None):
        args = [CLINK, "run", str(sql_path), "--coordinator-host", self.host,
                "--coordinator-port", str(self.port), "--parallelism", str(parallelism)]
        r = subprocess.run(args, capture_output=True, text=True, timeout=30, env=self.env)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split()[-1])


@pytest.fixture
def hosts():
    try:
        Hosts.probe()
    except NetnsRefused as e:
        pytest.skip(str(e))
    h = Hosts(str(20 + os.getpid() % 200))
    made = []
    yield h, made
    for c in made:  # processes first: a namespace with a process in it lingers
        for w in c.workers.values():
            w.kill()
        if c.coordinator:
            c.coordinator.kill()
    h.down()


def start_worker(c, wid, ns, addr, log=None):
    args = ["ip", "netns", "exec", ns, CLINK, "worker", "--coordinator-host", c.host,
            "--coordinator-port", str(c.port), "--slots", "1", "--id", wid, "--host", addr]
    c.workers[wid] = Proc(args, c.dir / (log or f"{wid}.log"), c.env)
    wait_for(lambda: any(w["id"] == wid and w["status"] == "REGISTERED"
                         for w in c.get("/api/v1/workers")[1].get("workers", [])),
             30, f"{wid} to register")


def host_cluster(hosts, tmp_path):
    h, made = hosts
    addrs = h.up(["co", "w1", "w2"])
    co_ns, co_addr = addrs["co"]
    c = HostCluster(tmp_path, co_addr, token="hosts-test-token")
    made.append(c)
    c.coordinator = Proc(["ip", "netns", "exec", co_ns, CLINK, "coordinator", "--host", co_addr,
                          "--port", str(c.port), "--http-port", str(c.http), "--checkpoint-dir",
                          str(c.ckpt), "--checkpoint-interval-ms", "200", "--max-restarts",
                          "10"], tmp_path / "coordinator.log", c.env)
    wait_for(lambda: c.get("/api/v1/health", auth=False)[0] == 200, 20, "the coordinator")
    for wid in ("w1", "w2"):
        start_worker(c, wid, *addrs[wid])
    return c, addrs


def run_job(c, tmp_path, rows):
    sql, out = write_job(tmp_path, rows=rows, rate=4000)
    jid = c.submit(sql, parallelism=2)
    c.wait_status(jid, {"RUNNING"})
    wait_for(lambda: c.job(jid)["last_checkpoint"] >= 2, 60, "two checkpoints")
    # one slot per worker at parallelism 2: each host runs one subtask of every operator, so
    # the keyed exchange crosses hosts, and each reached the coordinator on its address
    for wid in ("w1", "w2"):
        assert f"registered with the coordinator at {c.host}:{c.port} as {wid}" in \
            c.workers[wid].text()
    workers = {w["id"]: w for w in c.get("/api/v1/workers")[1]["workers"]}
    assert all(workers[w]["free_slots"] == 0 for w in ("w1", "w2")), workers
    return jid, out


def finish(c, jid, out, rows):
    job = c.wait_status(jid, {"FINISHED", "FAILED"}, timeout=150)
    assert job["status"] == "FINISHED", job
    co_log = c.coordinator.text()
    assert re.search(r"job_id=1 restore point: checkpoint \d+", co_log), co_log[-3000:]
    check(out, 2, rows)
    c.stop()


def test_workers_on_separate_hosts_survive_a_worker_host_killed_and_replaced(hosts, tmp_path):
    c, addrs = host_cluster(hosts, tmp_path)
    rows = 30000
    jid, out = run_job(c, tmp_path, rows)
    c.workers["w2"].kill()  # the host's worker dies; a new one comes up on the same host
    wait_for(lambda: c.job(jid).get("status") == "RESTARTING" or
             any(w["id"] == "w2" and w["status"] != "REGISTERED"
                 for w in c.get("/api/v1/workers")[1].get("workers", [])), 20, "the loss")
    start_worker(c, "w2", *addrs["w2"], log="w2-replaced.log")
    finish(c, jid, out, rows)


def test_a_worker_host_cut_off_and_healed_rejoins_and_the_job_holds_every_window_once(
        hosts, tmp_path):
    c, addrs = host_cluster(hosts, tmp_path)
    rows = 30000
    jid, out = run_job(c, tmp_path, rows)
    ns, _ = addrs["w2"]
    inner = f"ck{hosts[0].tag}i2"
    ip("link", "set", inner, "down", ns=ns)  # the host's link cut: its process lives on
    try:
        wait_for(lambda: any(w["id"] == "w2" and w["status"] != "REGISTERED"
                             for w in c.get("/api/v1/workers")[1].get("workers", [])), 20,
                 "the coordinator to declare the cut-off worker lost")
    finally:
        ip("link", "set", inner, "up", ns=ns)
    assert c.workers["w2"].p.poll() is None  # never restarted: it registers again by itself
    wait_for(lambda: c.job(jid).get("status") in ("RUNNING", "FINISHED"), 60, "the job again")
    finish(c, jid, out, rows)


def test_the_leader_host_cut_off_is_replaced_and_stays_deposed_when_healed(hosts, tmp_path):
    zk = os.environ.get("CLINK_ZOOKEEPER")
    if not zk:
        pytest.skip("CLINK_ZOOKEEPER is not set (eval \"$(scripts/services.sh env)\")")
    h, made = hosts
    addrs = h.up(["c1", "c2", "w1", "w2"])
    zk_host, zk_port = zk.rsplit(":", 1)
    fwd = Forwarder(f"{h.net}.1", (zk_host, int(zk_port)))
    try:
        url = f"zookeeper://{h.net}.1:{fwd.port}/clink-tests/hosts-{os.getpid()}-{h.tag}"
        c = HostCluster(tmp_path, addrs["c1"][1], token="hosts-test-token")
        made.append(c)
        c.env["LSAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("LSAN_OPTIONS"),
                                                      f"suppressions={LSAN}"]))
        coords = {}
        for name, log in (("c1", "coordinator.log"), ("c2", "standby.log")):
            ns, addr = addrs[name]
            http = free_port()
            coords[name] = (Proc(["ip", "netns", "exec", ns, CLINK, "coordinator", "--host",
                                  addr, "--port", str(c.port), "--http-port", str(http),
                                  "--checkpoint-dir", str(c.ckpt), "--checkpoint-interval-ms",
                                  "200", "--max-restarts", "10", "--ha", url,
                                  "--ha-session-timeout-ms", "4000"], tmp_path / log, c.env),
                            addr, http)
            if name == "c1":
                c.coordinator, c.host, c.http = coords["c1"]
                wait_for(lambda: c.get("/api/v1/health", auth=False)[0] == 200, 20, "c1")
        standby = coords["c2"][0]
        wait_for(lambda: "standing by as member-" in standby.text(), 20, "the standby")
        for wid in ("w1", "w2"):
            ns, addr = addrs[wid]
            args = ["ip", "netns", "exec", ns, CLINK, "worker", "--ha", url, "--slots", "1",
                    "--id", wid, "--host", addr]
            c.workers[wid] = Proc(args, tmp_path / f"{wid}.log", c.env)
        wait_for(lambda: sum(w["status"] == "REGISTERED"
                             for w in c.get("/api/v1/workers")[1].get("workers", [])) == 2,
                 30, "both workers")
        rows = 30000
        jid, out = run_job(c, tmp_path, rows)
        old = c.coordinator
        inner = f"ck{h.tag}i0"  # c1's link
        ip("link", "set", inner, "down", ns=addrs["c1"][0])
        try:
            wait_for(lambda: "on ZooKeeper as member-" in standby.text() and
                     "with epoch" in standby.text(), 30, "the standby to lead")
            c.coordinator, c.host, c.http = coords["c2"]
            wait_for(lambda: sum(w["status"] == "REGISTERED"
                                 for w in c.get("/api/v1/workers")[1].get("workers", [])) == 2,
                     30, "both workers to follow the new leader")
        finally:
            ip("link", "set", inner, "up", ns=addrs["c1"][0])
        # healed, the old leader finds its session expired: it stops, without acting
        assert old.p.wait(timeout=40) == 1, old.text()[-3000:]
        assert "could not stay the leader of" in old.text(), old.text()[-3000:]
        finish(c, jid, out, rows)
    finally:
        fwd.close()
