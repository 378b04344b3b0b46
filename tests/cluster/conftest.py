"""Harness for the cluster tests: a coordinator and workers as real processes on 127.0.0.1,
jobs submitted with `clink run --coordinator-host/--coordinator-port`, observed over the REST
API, and killed with SIGKILL. Output is judged against expectations recomputed in Python from
the generator's definition (tests/checkpoint/conftest.py's job), never from the engine.
"""
import importlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build/src/cli/clink")

from ..checkpoint import conftest as ckjob  # noqa: E402 (the checkpoint tests' job and oracle)

# every process of a cluster test traces the protocol; the traces are checked together after it
protocol_trace = ckjob.protocol_trace


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


class Proc:
    def __init__(self, args, log_path, env):
        self.args, self.log_path = args, log_path
        self.log = open(log_path, "a")
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()

    def text(self):
        self.log.flush()
        return Path(self.log_path).read_text()


class Cluster:
    def __init__(self, tmp_path, token=None, interval_ms=200, max_restarts=10):
        self.dir = tmp_path
        self.port, self.http = free_port(), free_port()
        self.ckpt = tmp_path / "checkpoints"
        self.ha = tmp_path / "ha"
        self.token = token
        self.interval_ms, self.max_restarts = interval_ms, max_restarts
        self.coordinator = None
        self.workers = {}
        self.env = dict(os.environ, CLINK_LOG_LEVEL="info")
        self.env.pop("CLINK_FAULT", None)
        if token:
            self.env["CLINK_AUTH_TOKEN"] = token
        else:
            self.env.pop("CLINK_AUTH_TOKEN", None)

    # -- processes
    def start_coordinator(self, ha=False, log="coordinator.log", wait=True, env=None, extra=()):
        args = [CLINK, "coordinator", "--port", str(self.port), "--http-port", str(self.http),
                "--checkpoint-dir", str(self.ckpt), "--checkpoint-interval-ms",
                str(self.interval_ms), *extra]
        if self.max_restarts is not None:  # None: the coordinator's default budget
            args += ["--max-restarts", str(self.max_restarts)]
        if ha:
            args += ["--ha-dir", str(self.ha)]
        proc = Proc(args, self.dir / log, dict(self.env, **(env or {})))
        if not wait:
            return proc
        self.coordinator = proc
        wait_for(lambda: self.get("/api/v1/health", auth=False)[0] == 200, 20,
                 "the coordinator's health")
        return self.coordinator

    def start_worker(self, wid, slots=1, env=None, extra=()):
        args = [CLINK, "worker", "--coordinator-host", "127.0.0.1", "--coordinator-port",
                str(self.port), "--slots", str(slots), "--id", wid, *extra]
        self.workers[wid] = Proc(args, self.dir / f"{wid}.log", dict(self.env, **(env or {})))
        wait_for(lambda: any(w["id"] == wid and w["status"] == "REGISTERED"
                             for w in self.get("/api/v1/workers")[1].get("workers", [])),
                 20, f"{wid} to register")
        return self.workers[wid]

    def stop(self):
        for w in self.workers.values():
            w.stop()
        if self.coordinator:
            self.coordinator.stop()
        # a sanitizer build reports leaks and undefined behaviour in the logs: any report fails
        for log in sorted(self.dir.glob("*.log")):
            text = log.read_text(errors="replace")
            for what in ("runtime error:", "AddressSanitizer", "LeakSanitizer"):
                assert what not in text, f"{log.name}: {text[text.index(what) - 200:][:3000]}"

    # -- REST
    def request(self, method, path, body=None, auth=True, token=None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}", method=method,
                                     data=body.encode() if isinstance(body, str) else body)
        if method == "POST":  # the coordinator takes writes only as JSON (docs/security.md)
            req.add_header("Content-Type", "application/json")
        tok = token if token is not None else (self.token if auth else None)
        if tok:
            req.add_header("Authorization", f"Bearer {tok}")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            return 0, str(e), {}

    def get(self, path, auth=True):
        code, text, _ = self.request("GET", path, auth=auth)
        try:
            return code, json.loads(text) if code else {}
        except ValueError:
            return code, {"raw": text}

    def job(self, jid):
        return self.get(f"/api/v1/jobs/{jid}")[1]

    def wait_status(self, jid, statuses, timeout=90):
        return wait_for(lambda: self.job(jid).get("status") in statuses and self.job(jid), timeout,
                        f"job {jid} to reach {statuses}")

    # -- jobs
    def submit(self, sql_path, parallelism=1, name=None):
        args = [CLINK, "run", str(sql_path), "--coordinator-host", "127.0.0.1",
                "--coordinator-port", str(self.port), "--parallelism", str(parallelism)]
        if name:
            args += ["--name", name]
        r = subprocess.run(args, capture_output=True, text=True, timeout=30, env=self.env)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split()[-1])


@pytest.fixture
def cluster(tmp_path):
    made = []

    def make(**kw):
        c = Cluster(tmp_path, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


# names the cluster tests share with the checkpoint tests
BASE_TS, KEYS, V_PERIOD, FAULT_EXIT = ckjob.BASE_TS, ckjob.KEYS, ckjob.V_PERIOD, ckjob.FAULT_EXIT
expected_windows, fault_points, die_at = ckjob.expected_windows, ckjob.fault_points, ckjob.die_at


def load_checkpoint_module(name):
    """A module of tests/checkpoint (its helpers): tests.checkpoint.<name>."""
    return importlib.import_module(f"tests.checkpoint.{name}")
