"""The cluster commands' command line: usage errors exit 2 with the reason, an unreachable
coordinator is exit 1 naming it, and docs/cluster.md's route table is the code's
(`clink coordinator --routes-markdown`), as is its list of control frames (src/cluster/proto.h).
"""
import re
import socket
import subprocess

from .conftest import REPO, _env


def run(clink_bin, *args):
    return subprocess.run([clink_bin, *args], capture_output=True, text=True, timeout=30, env=_env())


def test_docs_metrics_table_is_generated_from_the_code(clink_bin):
    """The metrics: one table in the code feeds the operators route, /metrics, the embedded
    progress line and this page."""
    r = run(clink_bin, "coordinator", "--metrics-markdown")
    assert r.returncode == 0, r.stderr
    doc = (REPO / "docs" / "cluster.md").read_text()
    m = re.search(r"<!-- metrics:begin -->\n(.*?)<!-- metrics:end -->", doc, re.S)
    assert m, "docs/cluster.md has no metrics block"
    assert m.group(1) == r.stdout, ("docs/cluster.md's metrics table differs from `clink "
                                    "coordinator --metrics-markdown`; paste the new output "
                                    "between the markers")
    for key in ("late_dropped", "decode_skipped", "no_event_time"):
        assert "| `clink_operator_%s_total` | operator | `%s` | counter |" % (key, key) in r.stdout
    for key in ("state_entries", "state_bytes"):  # counted, and exported since issue 13
        assert "| `clink_operator_%s` | operator | `%s` | gauge |" % (key, key) in r.stdout
    for name in ("clink_workers", "clink_job_status", "clink_checkpoints_completed_total"):
        assert "| `%s` |" % name in r.stdout  # the coordinator's own rows: the same table
    # the file each row says counts it exists
    where = re.findall(r"\| `(src/[^`]+)` \|", r.stdout)
    assert len(where) == r.stdout.count("\n") - 2, r.stdout
    missing = sorted({w for w in where if not (REPO / w).is_file()})
    assert not missing, f"the metrics table names files that do not exist: {missing}"


def test_docs_route_table_is_generated_from_the_code(clink_bin):
    r = run(clink_bin, "coordinator", "--routes-markdown")
    assert r.returncode == 0, r.stderr
    doc = (REPO / "docs" / "cluster.md").read_text()
    m = re.search(r"<!-- routes:begin -->\n(.*?)<!-- routes:end -->", doc, re.S)
    assert m, "docs/cluster.md has no routes block"
    assert m.group(1) == r.stdout, ("docs/cluster.md's route table differs from `clink coordinator "
                                    "--routes-markdown`; paste the new output between the markers")
    for route in ("/api/v1/health", "/api/v1/jobs/sql", "/api/v1/jobs/:id/operators", "/metrics"):
        assert f"`{route}`" in r.stdout


def test_docs_name_every_control_frame(clink_bin):
    frames = re.findall(r"X\((\w+), \d+,", (REPO / "src/cluster/proto.h").read_text())
    assert len(frames) >= 17
    doc = (REPO / "docs" / "cluster.md").read_text()
    missing = [f for f in frames if f not in doc]
    assert not missing, f"docs/cluster.md does not name the frames {missing}"


def test_usage_errors(clink_bin):
    r = run(clink_bin, "coordinator")
    assert r.returncode == 2 and "--checkpoint-dir is required" in r.stderr
    r = run(clink_bin, "coordinator", "--checkpoint-dir", "/tmp/x", "--port", "70000")
    assert r.returncode == 2 and "--port must be a port number" in r.stderr
    r = run(clink_bin, "worker", "--slots", "0")
    assert r.returncode == 2 and "--slots must be a whole number from 1 to 1024" in r.stderr
    r = run(clink_bin, "cancel", "abc")
    assert r.returncode == 2 and "give one job id" in r.stderr
    r = run(clink_bin, "run", "-e", "SELECT 1", "--coordinator-port", "6123", "--checkpoint-dir", "/x")
    assert r.returncode == 2 and "checkpoints where the coordinator's --checkpoint-dir says" in r.stderr
    r = run(clink_bin, "run", "-e", "SELECT 1", "--name", "x")
    assert r.returncode == 2 and "--name names a job on a cluster" in r.stderr


def test_an_unreachable_coordinator_is_named(clink_bin):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    for args in (["list"], ["cancel", "1"], ["run", "-e", "SELECT 1"]):
        r = run(clink_bin, *args, "--coordinator-port", str(port))
        assert r.returncode == 1, (args, r.stderr)
        assert f"could not reach the coordinator: could not connect to 127.0.0.1:{port}" in r.stderr, r.stderr
