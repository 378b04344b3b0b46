"""Shared fixtures for the integration smoke tests.

The services are started outside pytest, by scripts/services.sh, and found
through the environment it prints:

    scripts/services.sh start && eval "$(scripts/services.sh env)"
    "$CLINK_PYTHON" -m pytest tests/integration

A missing variable fails the test that needs it, naming the variable and the
command above: nothing is skipped.  Every test names its topics, tables,
transactional ids and prepared transactions after RUN_ID, so a rerun after a
killed run never meets the state that run left behind.
"""

import os
import secrets
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

RUN_ID = "%d_%d_%s" % (int(time.time()), os.getpid(), secrets.token_hex(3))

HOW_TO = (
    'start the services and export their settings first:\n'
    '    scripts/services.sh start && eval "$(scripts/services.sh env)"'
)


def require_env(*names):
    """Values of the environment variables `names`; fails the test if any is unset."""
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        pytest.fail(
            "integration test environment is missing %s;\n%s" % (", ".join(missing), HOW_TO),
            pytrace=False,
        )
    return [os.environ[n] for n in names]


@pytest.fixture(scope="session")
def run_id():
    return RUN_ID


@pytest.fixture
def unique(request):
    """A name unique to this test in this run: letters, digits and underscores."""
    def make(prefix):
        return "%s_%s_%s" % (prefix, request.node.name.replace("[", "_").rstrip("]")[:24], RUN_ID)
    return make


@pytest.fixture(scope="session")
def kafka_brokers():
    return require_env("CLINK_KAFKA_BROKERS")[0]


@pytest.fixture(scope="session")
def clickhouse_settings():
    host, port = require_env("CLINK_CLICKHOUSE_HOST", "CLINK_CLICKHOUSE_PORT")
    http_port, zookeeper = require_env("CLINK_CLICKHOUSE_HTTP_PORT", "CLINK_ZOOKEEPER")
    return {
        "host": host,
        "port": int(port),
        "http_port": int(http_port),
        "user": os.environ.get("CLINK_CLICKHOUSE_USER", "default"),
        "password": os.environ.get("CLINK_CLICKHOUSE_PASSWORD", ""),
        "zookeeper": zookeeper,
    }


# The ClickHouse lines every ClickHouse test runs on: Debian's 18.16 server and 26.9 from the
# chdb-core wheel (scripts/services.sh clickhouse26). Each names the variables of its address
# and the service that serves it.
CLICKHOUSE_LINES = {
    "18.16": ("CLINK_CLICKHOUSE_HOST", "CLINK_CLICKHOUSE_PORT", "CLINK_CLICKHOUSE_HTTP_PORT", "clickhouse"),
    "26.9": ("CLINK_CLICKHOUSE26_HOST", "CLINK_CLICKHOUSE26_PORT", "CLINK_CLICKHOUSE26_HTTP_PORT",
             "clickhouse26"),
}


def clickhouse_line(line):
    """Address of one ClickHouse line: host, port, http_port, service, line."""
    host_var, port_var, http_var, service = CLICKHOUSE_LINES[line]
    host, port, http_port = require_env(host_var, port_var, http_var)
    return {"host": host, "port": int(port), "http_port": int(http_port), "service": service,
            "line": line}


@pytest.fixture(scope="session")
def pg_dsn():
    return require_env("CLINK_PG_DSN")[0]


@pytest.fixture(scope="session")
def services_script():
    """scripts/services.sh, as exported by `services.sh env` (or this checkout's)."""
    path = os.environ.get("CLINK_SERVICES") or str(REPO / "scripts" / "services.sh")
    if not os.access(path, os.X_OK):
        pytest.fail("services script %s is not executable;\n%s" % (path, HOW_TO), pytrace=False)
    return path


def wait_until(what, predicate, timeout=30.0, interval=0.1):
    """Polls predicate() until it returns a true value; fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)
