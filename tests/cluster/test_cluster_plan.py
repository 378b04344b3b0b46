"""The job graph the coordinator ships (issue 13): workers build the serialised plan and never
plan SQL, so they run no plan-time connector check during deploy, and a job they build runs to
the same output as the same SQL planned and run embedded."""
import collections
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from .conftest import CLINK, REPO, wait_for
from .test_cluster_jobs import check, write_job

SQL_DIR = REPO / "tests/sql"


def socket_owner(peer_port, pids):
    """The pid among pids whose socket has local port peer_port (the client end of a
    connection accepted here), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if int(f[1].rsplit(":", 1)[1], 16) == peer_port:
                inodes.add(f[9])
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return pid
        except OSError:
            continue
    return None


def test_a_worker_never_connects_to_a_sink_during_deploy(cluster, tmp_path):
    # a "ClickHouse" at 127.0.0.1 that accepts and never answers; each accepted connection is
    # told apart by the process holding its other end, and by whether the worker had already
    # deployed (its log says so before it answers DEPLOYED, so before any subtask opens)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    accepted, held, stop = [], [], threading.Event()
    c = cluster()
    c.start_coordinator()
    worker = c.start_worker("w1")
    wlog = Path(worker.log_path)
    pids = {"coordinator": c.coordinator.p.pid, "worker": worker.p.pid}

    def hold():
        silent.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, peer = silent.accept()
            except OSError:
                continue
            held.append(conn)
            deployed = ": deployed " in wlog.read_text(errors="replace")
            owner = socket_owner(peer[1], pids.values())
            who = next((k for k, v in pids.items() if v == owner), f"pid {owner}")
            accepted.append((who, deployed))
    t = threading.Thread(target=hold, daemon=True)
    t.start()
    sql = (f"CREATE TABLE g (a BIGINT) WITH (connector = 'datagen', rows = '5');\n"
           f"CREATE TABLE snk (a BIGINT) WITH (connector = 'clickhouse', host = '127.0.0.1', "
           f"port = '{silent.getsockname()[1]}', table = 't', receive_timeout_ms = '2000', "
           f"connect_timeout_ms = '2000');\n"
           f"INSERT INTO snk SELECT a FROM g;\n")
    path = tmp_path / "silent_sink.sql"
    path.write_text(sql)
    try:
        jid = c.submit(path)  # the coordinator's plan-time check waits out its 10 s
        wait_for(lambda: ": deployed " in wlog.read_text(errors="replace"), 30,
                 "the worker to deploy the job")
        # once running, the sink opens and connects (and times out, and retries): a run-time
        # connection, after the deploy
        wait_for(lambda: any(d for _, d in accepted), 30, "the sink to connect at run time")
        before = [who for who, deployed in accepted if not deployed]
        assert before == ["coordinator"], (
            f"connections to the sink's host before the worker deployed: {before} "
            f"(all: {accepted})")
        assert all(who == "worker" for who, d in accepted if d), accepted
        c.request("DELETE", f"/api/v1/jobs/{jid}")
    finally:
        stop.set()
        t.join()
        for s in held:
            s.close()
        silent.close()


def golden_lines(text):
    return collections.Counter(line for line in text.splitlines() if line.startswith("{"))


@pytest.mark.parametrize("name,parallelism,slots", [("window_tumble", 1, [1]),
                                                     ("sum_partial_overflow", 3, [2, 1]),
                                                     # computed columns, PROCTIME(), WATERMARK
                                                     # FOR and a window offset travel in the plan
                                                     ("time_ddl", 1, [1]),
                                                     # one worker: its sources start together, so
                                                     # the late record is late on every run (see
                                                     # the note on idle subtasks in docs/sql.md)
                                                     ("time_window_offset", 3, [3]),
                                                     # a window TVF is planned as its GROUP BY
                                                     # window, window_time as an expression
                                                     ("window_tvf_time", 2, [2])])
def test_a_worker_built_from_the_serialised_plan_prints_what_the_sql_run_embedded_prints(
        cluster, tmp_path, name, parallelism, slots):
    embedded = subprocess.run([CLINK, "run", "--parallelism", str(parallelism), f"{name}.sql"],
                              cwd=SQL_DIR, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, CLINK_LOG_LEVEL="warn"))
    assert embedded.returncode == 0, embedded.stderr
    want = golden_lines(embedded.stdout)
    assert want and want == golden_lines((SQL_DIR / f"{name}.expected").read_text())
    c = cluster()
    c.start_coordinator()
    for i, n in enumerate(slots):
        c.start_worker(f"w{i + 1}", slots=n)
    # the data files are relative to the script: give the coordinator and workers their path
    sql = (SQL_DIR / f"{name}.sql").read_text().replace("'data/", f"'{SQL_DIR}/data/")
    path = tmp_path / f"{name}.sql"
    path.write_text(sql)
    jid = c.submit(path, parallelism=parallelism)
    c.wait_status(jid, ["FINISHED"], timeout=120)
    got = collections.Counter()
    for w in c.workers.values():
        got += golden_lines(w.text())
    assert got == want, f"cluster {sorted(got.elements())} != embedded {sorted(want.elements())}"


def test_a_takeover_runs_the_manifests_plan_and_keeps_its_sql_only_for_display(cluster, tmp_path):
    c = cluster()
    c.start_coordinator(ha=True)
    rows = 2000
    sql, out = write_job(tmp_path, rows=rows, rate=20000)
    jid = c.submit(sql)  # no worker yet: it waits for a slot
    manifest = c.ha / "jobs" / f"job-{jid}.manifest"
    wait_for(manifest.exists, 10, "the manifest")
    c.coordinator.kill()
    text = manifest.read_bytes()
    assert text.startswith(b"clink-job 3\n") and b"\nplan " in text and b"redacted 1" not in text
    # the SQL field is for display: a takeover that planned it would refuse this one
    head, _, _ = text.partition(b"\nsql ")
    shown = b"SELEC this is not the job"
    manifest.write_bytes(head + b"\nsql %d\n" % len(shown) + shown + b"\n")
    c.start_coordinator(ha=True, log="coordinator-2.log")
    wait_for(lambda: f"job_id={jid} recovered from the HA directory" in c.coordinator.text(), 20,
             "the recovery")
    c.start_worker("w1")
    job = c.wait_status(jid, {"FINISHED", "FAILED"})
    assert job["status"] == "FINISHED", job
    check(out, 1, rows)
