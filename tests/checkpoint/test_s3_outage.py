"""The checkpoint store unreachable while a job runs: the job's S3 traffic goes through a TCP
relay of this test's own in front of the shared SeaweedFS (the server itself is never
stopped), and the test cuts the relay — every open connection closed, new ones refused — for
longer than the longest restart backoff (job/policy.h: 5 s). The checkpoints in flight abort
(`--tolerable-failed-checkpoints`, Flink's name), the job neither fails nor restarts, a later
checkpoint completes once the relay is back, and the exactly-once file sink's output holds
every window once (conftest's recomputation of the generator)."""
import re
import socket
import subprocess
import threading
import time
import urllib.parse

from .test_s3_store import S3Job, s3_env, shared_bucket

OUTAGE_S = 7  # longer than CK_JOB_BACKOFF_MAX_MS


class Relay:
    """127.0.0.1:<port> → the S3 endpoint, byte for byte, until cut; cut() closes every
    connection and the listener (connections are refused), heal() listens again."""

    def __init__(self, target):
        u = urllib.parse.urlparse(target)
        self.target = (u.hostname, u.port)
        self.lock = threading.Lock()
        self.conns = []
        self.listener = None
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.heal()

    def heal(self):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(64)
        self.listener = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def cut(self):
        with self.lock:
            ls, self.listener = self.listener, None
            conns, self.conns = self.conns, []
        ls.close()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def _accept(self, ls):
        while True:
            try:
                a, _ = ls.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(self.target, timeout=10)
            except OSError:
                a.close()
                continue
            b.settimeout(None)
            with self.lock:
                if self.listener is not ls:
                    a.close(), b.close()
                    return
                self.conns += [a, b]
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pipe, args=(x, y), daemon=True).start()

    @staticmethod
    def _pipe(x, y):
        try:
            while True:
                d = x.recv(65536)
                if not d:
                    break
                y.sendall(d)
        except OSError:
            pass
        for s in (x, y):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        if self.listener:
            self.cut()


def completed_ids(j):
    return sorted(int(m.group(1)) for k in j.keys()
                  if (m := re.search(r"/_meta/completed-(\d+)$", k)))


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_store_outage_aborts_checkpoints_and_the_job_runs_on(tmp_path):
    bucket = shared_bucket()
    relay = Relay(s3_env()["AWS_ENDPOINT_URL_S3"])
    # ~25 s of input at 2000 rows/s: the outage falls well inside the run
    j = S3Job(tmp_path, bucket, rate=2000, rows=50000, interval_ms=300)
    env = j.env()
    env["AWS_ENDPOINT_URL_S3"] = f"http://127.0.0.1:{relay.port}"
    p = subprocess.Popen(j.args("--tolerable-failed-checkpoints=1000"), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(completed_ids(j)) >= 2, 60, "two checkpoints on S3 before the cut")
        assert p.poll() is None, "the job ended before the outage"
        relay.cut()
        cut_at = time.monotonic()
        before = completed_ids(j)
        time.sleep(OUTAGE_S)  # the outage itself: a duration, not a synchronisation
        assert p.poll() is None, "the job ended during the outage"
        during = completed_ids(j)  # read straight from SeaweedFS, not through the relay
        relay.heal()
        # (one marker may have been on its way when the relay was cut)
        assert max(during) <= max(before) + 1, "checkpoints completed while the store was cut"
        healed = during
        wait_for(lambda: max(completed_ids(j)) > max(healed), 60,
                 "a checkpoint completed after the store came back")
        assert time.monotonic() - cut_at >= OUTAGE_S
        _, err = p.communicate(timeout=180)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        relay.close()
    j.logs.append(err)
    assert p.returncode == 0, err[-3000:]
    assert re.search(r"checkpoint \d+ aborted: it could not be stored", err), err[-3000:]
    assert "restarting from its last checkpoint" not in err, err[-3000:]
    j.check(exactly_once=True)


def test_with_none_tolerated_the_outage_fails_the_job(tmp_path):
    """--tolerable-failed-checkpoints=0 (Flink's default, and clink's behaviour before the
    option): the first snapshot that cannot be stored fails the deployment, and its restart
    cannot open the store while it is cut, so the job fails naming the store — what the test
    above shows no longer happens by default."""
    bucket = shared_bucket()
    relay = Relay(s3_env()["AWS_ENDPOINT_URL_S3"])
    j = S3Job(tmp_path, bucket, rate=2000, rows=30000, interval_ms=300)
    env = j.env()
    env["AWS_ENDPOINT_URL_S3"] = f"http://127.0.0.1:{relay.port}"
    p = subprocess.Popen(j.args("--tolerable-failed-checkpoints=0"), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(completed_ids(j)) >= 2, 60, "two checkpoints on S3 before the cut")
        relay.cut()
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        relay.close()
    assert p.returncode != 0, err[-3000:]
    assert re.search(r"could not write s3://\S+/checkpoint-\d+\.snap", err), err[-3000:]
    assert "the checkpoint store is " + j.ckpt in err, err[-3000:]
