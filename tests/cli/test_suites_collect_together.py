"""The Python suites are packages (tests/__init__.py, one per suite) whose modules import their
own conftest relatively, so one pytest invocation may hold several of them: their conftest.py
files used to clash as one top-level module 'conftest'."""
import subprocess
import sys

from .conftest import REPO


def test_checkpoint_cli_cluster_and_integration_collect_in_one_invocation():
    suites = [str(REPO / "tests" / s) for s in ("checkpoint", "cli", "cluster", "integration")]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--collect-only", *suites], capture_output=True, text=True, timeout=300,
                       cwd=REPO)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for module in ("test_damage.py::", "test_cli_usage.py::", "test_cluster_jobs.py::",
                   "test_kafka_connector.py::"):  # one of each suite
        assert module in r.stdout, module
