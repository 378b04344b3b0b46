"""Shared fixtures for the `clink` command-line tests.

The binary under test comes from CLINK_BIN (ctest sets it to the build's `clink`):

    CLINK_BIN=build/src/cli/clink python3 -m pytest -q -p no:cacheprovider tests/cli

A missing or unusable CLINK_BIN fails every test that needs it, loudly: nothing is skipped.
Every process a test starts is killed at teardown if it is still running, so a hung `clink`
fails its own test instead of the whole run.
"""

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Generous: the tests also run against the ASan+UBSan build on a busy machine.
DEADLINE_S = 30.0


def _env(extra=None):
    env = dict(os.environ)
    env.pop("CLINK_LOG_LEVEL", None)  # the tests choose --log-level themselves
    env.pop("CLINK_FAULT", None)
    env.update(extra or {})
    return env


@pytest.fixture(scope="session")
def clink_bin():
    path = os.environ.get("CLINK_BIN")
    if not path:
        pytest.fail("CLINK_BIN is not set; point it at the built binary, e.g.\n"
                    "    CLINK_BIN=build/src/cli/clink python3 -m pytest tests/cli",
                    pytrace=False)
    if not os.access(path, os.X_OK):
        pytest.fail("CLINK_BIN=%s is not an executable file" % path, pytrace=False)
    return path


@pytest.fixture
def clink(clink_bin, tmp_path):
    """Runs `clink ARGS…` to completion: returns CompletedProcess (text, stdout and stderr)."""
    def run(*args, timeout=DEADLINE_S, input=None):
        return subprocess.run([clink_bin, *args], capture_output=True, text=True, input=input,
                              timeout=timeout, cwd=tmp_path, env=_env())
    return run


class Running:
    """A `clink` process whose stdout is read line by line on a helper thread."""

    def __init__(self, argv, cwd, stdout=None, env=None):
        self.lines = []
        self.partial = ""
        self.cond = threading.Condition()
        self.eof = False
        self.stderr_eof = False
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=_env(env), stdin=subprocess.DEVNULL,
            stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE)
        self.stderr_chunks = []
        self._threads = [threading.Thread(target=self._drain_stderr, daemon=True)]
        if stdout is None:
            self._threads.append(threading.Thread(target=self._read_stdout, daemon=True))
        for t in self._threads:
            t.start()

    def _read_stdout(self):
        buf = b""
        while True:
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                break
            buf += chunk
            *done, buf = buf.split(b"\n")
            with self.cond:
                self.lines.extend(x.decode() for x in done)
                self.cond.notify_all()
        with self.cond:
            self.partial = buf.decode(errors="replace")
            self.eof = True
            self.cond.notify_all()

    def _drain_stderr(self):
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            with self.cond:
                self.stderr_chunks.append(chunk)
                self.cond.notify_all()
        with self.cond:
            self.stderr_eof = True
            self.cond.notify_all()

    def wait_stderr(self, text, timeout=DEADLINE_S):
        """Waits until stderr contains text; False at the deadline or when stderr closed."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while text not in self.stderr and not self.stderr_eof:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            return text in self.stderr

    def wait_lines(self, n, timeout=DEADLINE_S):
        """Waits until at least n complete lines arrived; False at the deadline or EOF."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.lines) < n and not self.eof:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            return len(self.lines) >= n

    def signal(self, sig=signal.SIGINT):
        self.proc.send_signal(sig)

    def wait(self, timeout=DEADLINE_S):
        """The exit status, after every pipe was read to its end."""
        rc = self.proc.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout)
        return rc

    @property
    def stderr(self):
        return b"".join(self.stderr_chunks).decode(errors="replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def start_clink(clink_bin, tmp_path):
    """Starts `clink ARGS…` in the background; every process is killed at teardown."""
    started = []

    def start(*args, stdout=None, env=None):
        r = Running([clink_bin, *args], tmp_path, stdout=stdout, env=env)
        started.append(r)
        return r

    yield start
    for r in started:
        r.kill()
