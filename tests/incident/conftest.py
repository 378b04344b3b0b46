"""Shared pieces of the incident tests (docs/incidents.md): the binary, and a runner that
kills what it started when a test ends. The binary is $CLINK_BIN, or build/src/cli/clink."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLINK = os.environ.get("CLINK_BIN") or str(REPO / "build" / "src" / "cli" / "clink")


def env(extra=None):
    e = dict(os.environ)
    e.pop("CLINK_FAULT", None)
    e.pop("CLINK_LOG_LEVEL", None)
    e.update(extra or {})
    return e


def run_clink(*args, timeout=300, extra_env=None):
    """clink ARGS to its end: the CompletedProcess (text). Sanitizer reports fail the test."""
    r = subprocess.run([CLINK, *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env(extra_env))
    assert "LeakSanitizer" not in r.stderr and "runtime error:" not in r.stderr, r.stderr
    return r


@pytest.fixture
def procs():
    """Processes a test starts (append Popen objects): killed at teardown if still running."""
    started = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()
