"""Every REST route of the coordinator at curl level (the real `curl` binary), the bearer-token
rule, JSON errors, malformed requests that must not crash it, and a worker's health that
answers 200 only once it registered.
"""
import json
import socket
import subprocess

from .conftest import CLINK, free_port, wait_for, ckjob

TOKEN = "s3cret-token"


def curl(c, method, path, body=None, token=TOKEN):
    args = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-X", method,
            f"http://127.0.0.1:{c.http}{path}"]
    if token:
        args += ["-H", f"Authorization: Bearer {token}"]
    if body is not None:
        args += ["--data-binary", body]
    if method == "POST":  # state-changing routes need a JSON content type
        args += ["-H", "Content-Type: application/json"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=30)
    text, code = r.stdout.rsplit("\n", 1)
    return int(code), text


def test_every_route_with_the_token_rule(cluster, tmp_path):
    c = cluster(token=TOKEN)
    c.start_coordinator()
    c.start_worker("worker-1", slots=2)

    # health is open; everything else demands the bearer token
    assert curl(c, "GET", "/api/v1/health", token=None)[0] == 200
    routes = [("GET", "/api/v1/jobs"), ("GET", "/api/v1/jobs/1"), ("GET", "/api/v1/jobs/1/operators"),
              ("GET", "/api/v1/jobs/1/checkpoints"), ("GET", "/api/v1/workers"),
              ("POST", "/api/v1/jobs/sql"), ("POST", "/api/v1/jobs/1/cancel"), ("GET", "/metrics")]
    for method, path in routes:
        code, text = curl(c, method, path, token=None)
        assert code == 401, (method, path, code, text)
        assert "error" in json.loads(text)
        assert curl(c, method, path, token="wrong")[0] == 401, (method, path)

    # submit over HTTP
    out = tmp_path / "out.json"
    sql = ckjob.job_sql(out, 3_000_000, 3000, "")
    code, text = curl(c, "POST", "/api/v1/jobs/sql",
                      json.dumps({"sql": sql, "name": "over-http", "parallelism": 2}))
    assert code == 201, text
    jid = json.loads(text)["id"]
    assert jid == 1
    wait_for(lambda: json.loads(curl(c, "GET", f"/api/v1/jobs/{jid}")[1])["status"] == "RUNNING",
             30, "the job to run")

    code, text = curl(c, "GET", "/api/v1/jobs")
    jobs = json.loads(text)["jobs"]
    assert code == 200 and jobs[0]["id"] == 1 and jobs[0]["status"] == "RUNNING"
    assert jobs[0]["error_count"] == 0 and jobs[0]["name"] == "over-http"

    # operators: records flow, per operator and subtask, with watermarks
    def flowing():
        ops = json.loads(curl(c, "GET", f"/api/v1/jobs/{jid}/operators")[1])["operators"]
        src = [o for o in ops if o["name"].endswith("source")]
        return len(src) == 2 and all(o["records_out"] > 0 for o in src) and ops
    ops = wait_for(flowing, 30, "records to flow")
    names = {o["name"] for o in ops}
    assert len(names) >= 3, names  # source, window, sink at least
    assert {o["subtask"] for o in ops} == {0, 1}
    for o in ops:
        assert {"records_in", "records_out", "watermark", "backpressure_ms", "worker"} <= set(o), o

    ck = wait_for(lambda: (lambda j: j["latest_completed"] >= 1 and j)(
        json.loads(curl(c, "GET", f"/api/v1/jobs/{jid}/checkpoints")[1])), 30, "a checkpoint")
    assert ck["checkpoints"][0]["id"] == ck["latest_completed"]

    code, text = curl(c, "GET", "/api/v1/workers")
    w = json.loads(text)["workers"]
    assert code == 200 and w[0]["id"] == "worker-1" and w[0]["slots"] == 2 and w[0]["free_slots"] == 0

    code, text = curl(c, "GET", "/metrics")
    assert code == 200
    assert "clink_workers 1" in text and 'clink_job_status{job="1",status="RUNNING"} 1' in text
    assert "# TYPE clink_checkpoints_completed_total counter" in text

    code, text = curl(c, "POST", f"/api/v1/jobs/{jid}/cancel")
    assert code == 200 and json.loads(text)["id"] == 1
    wait_for(lambda: json.loads(curl(c, "GET", f"/api/v1/jobs/{jid}")[1])["status"] == "CANCELLED",
             30, "the cancellation")

    # errors are JSON with a message
    for method, path, body, want in [
        ("GET", "/api/v1/jobs/77", None, 404),
        ("GET", "/api/v1/jobs/abc", None, 400),
        ("GET", "/api/v1/nope", None, 404),
        ("DELETE", "/api/v1/jobs", None, 405),
        ("POST", "/api/v1/jobs/sql", "not json", 400),
        ("POST", "/api/v1/jobs/sql", '{"sql": 5}', 400),
        ("POST", "/api/v1/jobs/sql", '{"sql": "SELEC 1"}', 400),
        ("POST", "/api/v1/jobs/sql", '{"sql": "x", "parallelism": 0}', 400),
        ("POST", "/api/v1/jobs/sql", '{"bogus": 1}', 400),
    ]:
        code, text = curl(c, method, path, body)
        assert code == want, (method, path, body, code, text)
        assert json.loads(text)["error"], text
    code, text = curl(c, "POST", "/api/v1/jobs/sql", '{"sql": "SELEC 1"}')
    assert "1:1" in json.loads(text)["error"], text  # the SQL error keeps its position


def test_malformed_requests_never_crash_the_coordinator(cluster):
    c = cluster()
    c.start_coordinator()
    for junk in [b"\x00\x01\x02garbage\r\n\r\n", b"GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
                 b"POST /api/v1/jobs/sql HTTP/1.1\r\nContent-Length: 5\r\n\r\n{\"sq", b"\r\n" * 1000]:
        with socket.create_connection(("127.0.0.1", c.http), timeout=10) as s:
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            try:
                s.recv(65536)
            except OSError:
                pass
    # the control port shrugs off garbage too
    with socket.create_connection(("127.0.0.1", c.port), timeout=10) as s:
        s.sendall(b"\xff" * 64)
    assert c.get("/api/v1/health")[0] == 200
    assert c.coordinator.p.poll() is None


def test_worker_health_is_200_only_once_registered(cluster, tmp_path):
    c = cluster()
    port = free_port()
    env = dict(c.env)
    # no coordinator yet: the worker serves health but is not registered
    p = subprocess.Popen([CLINK, "worker", "--coordinator-port", str(c.port), "--id", "early",
                          "--http-port", str(port)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    try:
        def health():
            r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                f"http://127.0.0.1:{port}/api/v1/health"],
                               capture_output=True, text=True, timeout=10)
            return int(r.stdout or 0)
        assert wait_for(lambda: health() or None, 20, "the worker's HTTP port") == 503
        c.start_coordinator()
        wait_for(lambda: health() == 200, 20, "health 200 after registration")
    finally:
        p.terminate()
        p.wait(timeout=20)
