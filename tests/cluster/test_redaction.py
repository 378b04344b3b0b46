"""One redaction rule (base/redact.h), checked on every output channel.

A job holds four known credentials: a PostgreSQL dsn with `password=` (key=value form), one
with `user:password@` (URI form), a ClickHouse `password` option and a `kafka.sasl.password`.
It runs embedded and on a coordinator with a worker (with --ha-dir), three ways: it runs to the
end (PostgreSQL and Kafka sinks; trust authentication ignores the passwords), it fails at run
time (ClickHouse refuses the password), and it is refused at plan time (an unknown option on the
line of each credential). Then every channel is searched for each password: stdout and stderr
of every clink process, every log file, every REST response body, every file under the
checkpoint directories and the HA directory. None may hold one. The jobs' own effects are
checked too (rows arrived), so a job that silently did nothing cannot pass.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg

from .conftest import CLINK, REPO, wait_for

sys.path.insert(0, str(REPO / "scripts"))
from kafka_topic import create_topic  # noqa: E402

KV, URI, CH, SASL = "PgKv-Secret-5711", "PgUri-Secret-5712", "Ch-Secret-5713", "Sasl-Secret-5714"
SECRETS = (KV, URI, CH, SASL)


def env_or_fail(name):
    v = os.environ.get(name)
    assert v, f'{name} is not set: eval "$(scripts/services.sh env)" first'
    return v


def pg_parts():
    m = re.match(r"postgresql://([^:@]+)(?::[^@]*)?@([^:/]+):(\d+)/(\w+)", env_or_fail("CLINK_PG_DSN"))
    assert m, os.environ["CLINK_PG_DSN"]
    return m.groups()  # user, host, port, db


def running_sql(tag, topic):
    user, host, port, db = pg_parts()
    brokers = env_or_fail("CLINK_KAFKA_BROKERS")
    return f"""
CREATE TABLE src (id BIGINT) WITH (connector = 'datagen', rows = '20', fields.id.kind = 'sequence');
CREATE TABLE pg_kv (id BIGINT) WITH (connector = 'postgres',
  dsn = 'host={host} port={port} dbname={db} user={user} password={KV}', table = 'redact_kv_{tag}');
CREATE TABLE pg_uri (id BIGINT) WITH (connector = 'postgres',
  dsn = 'postgresql://{user}:{URI}@{host}:{port}/{db}', table = 'redact_uri_{tag}');
CREATE TABLE k (id BIGINT) WITH (connector = 'kafka', brokers = '{brokers}', topic = '{topic}',
  kafka.sasl.password = '{SASL}');
INSERT INTO pg_kv SELECT id FROM src;
INSERT INTO pg_uri SELECT id FROM src;
INSERT INTO k SELECT id FROM src;
"""


def failing_sql():
    host, port = env_or_fail("CLINK_CLICKHOUSE_HOST"), env_or_fail("CLINK_CLICKHOUSE_PORT")
    return f"""
CREATE TABLE src (id BIGINT) WITH (connector = 'datagen', rows = '5');
CREATE TABLE ch (id BIGINT) WITH (connector = 'clickhouse', host = '{host}', port = '{port}',
  table = 'redact_nowhere', user = 'clink', password = '{CH}');
INSERT INTO ch SELECT id FROM src;
"""


INSERT = ("CREATE TABLE src (id BIGINT) WITH (connector = 'datagen', rows = '1');\n"
          "INSERT INTO a SELECT id FROM src;\n")


def plan_error_sqls():
    user, host, port, db = pg_parts()
    return [
        f"CREATE TABLE a (id BIGINT) WITH (connector = 'postgres', dsn = 'host={host} password={KV} user={user}', table = 't', bogus = '1');\n" + INSERT,
        f"CREATE TABLE a (id BIGINT) WITH (connector = 'postgres', dsn = 'postgresql://{user}:{URI}@{host}/{db}', tabel = 't');\n" + INSERT,
        f"CREATE TABLE a (id BIGINT) WITH (connector = 'clickhouse', password = '{CH}', tabel = 't');\n" + INSERT,
        f"CREATE TABLE a (id BIGINT) WITH (connector = 'kafka', kafka.sasl.password = '{SASL}', topik = 't');\n" + INSERT,
        # a syntax error right after the credential
        f"CREATE TABLE a (id BIGINT) WITH (connector = 'clickhouse', password = '{CH}' table = 't');",
    ]


class Channels:
    """Everything the processes showed or stored, to be searched at the end."""

    def __init__(self):
        self.texts = []  # (where, text)

    def add(self, where, text):
        self.texts.append((where, text if isinstance(text, str) else text.decode("latin-1")))

    def add_tree(self, root):
        root = Path(root)
        assert root.exists(), root
        n = 0
        for p in sorted(root.rglob("*")):
            if p.is_file():
                self.add(str(p), p.read_bytes())
                n += 1
        return n

    def assert_clean(self):
        leaks = [f"{where}: holds {s!r}" for where, text in self.texts for s in SECRETS if s in text]
        assert not leaks, "credentials leaked:\n" + "\n".join(leaks)


def run_embedded(ch, tmp, name, sql, args=()):
    path = tmp / f"{name}.sql"
    path.write_text(sql)
    r = subprocess.run([CLINK, "run", "--log-level", "debug", *args, str(path)], capture_output=True,
                       text=True, timeout=120, cwd=tmp, env=dict(os.environ, CLINK_LOG_LEVEL="debug"))
    ch.add(f"embedded {name} stdout", r.stdout)
    ch.add(f"embedded {name} stderr", r.stderr)
    return r


def test_no_channel_shows_a_credential(cluster, tmp_path):
    ch = Channels()
    pg = psycopg.connect(env_or_fail("CLINK_PG_DSN"), autocommit=True)
    brokers = env_or_fail("CLINK_KAFKA_BROKERS")
    tags = {"emb": f"e{os.getpid()}", "clu": f"c{os.getpid()}"}
    for tag in tags.values():
        for kind in ("kv", "uri"):
            pg.execute(f"DROP TABLE IF EXISTS redact_{kind}_{tag}")
            pg.execute(f"CREATE TABLE redact_{kind}_{tag} (id bigint)")
        create_topic(brokers, f"redact_{tag}", 1)

    # ---- embedded: runs to the end (with checkpoints), fails at run time, refused at plan time
    emb = tmp_path / "embedded"
    emb.mkdir()
    ckdir = emb / "checkpoints"
    r = run_embedded(ch, emb, "running", running_sql(tags["emb"], f"redact_{tags['emb']}"),
                     ["--checkpoint-dir", str(ckdir), "--checkpoint-interval-ms", "50"])
    assert r.returncode == 0, r.stderr
    for kind in ("kv", "uri"):
        assert pg.execute(f"SELECT count(*) FROM redact_{kind}_{tags['emb']}").fetchone()[0] == 20
    r = run_embedded(ch, emb, "failing", failing_sql())  # ClickHouse refuses it (checked at plan)
    assert r.returncode == 1 and "Wrong password" in r.stderr, r.stderr
    for i, sql in enumerate(plan_error_sqls()):
        r = run_embedded(ch, emb, f"plan{i}", sql)
        assert r.returncode == 1 and "error:" in r.stderr and " | " in r.stderr, r.stderr
        assert "***" in r.stderr, r.stderr  # the excerpt shows the line, masked
    assert ch.add_tree(ckdir) > 0

    # ---- the cluster, with an HA directory
    c = cluster(max_restarts=1)
    c.start_coordinator(ha=True)
    c.start_worker("worker-1", slots=2)
    bodies = []

    def rest(method, path, body=None):
        code, text, _ = c.request(method, path, body)
        bodies.append(text)
        ch.add(f"REST {method} {path}", text)
        return code, text

    def every_route(jid):
        for path in ("/api/v1/jobs", f"/api/v1/jobs/{jid}", f"/api/v1/jobs/{jid}/operators",
                     f"/api/v1/jobs/{jid}/checkpoints", "/api/v1/workers", "/metrics"):
            assert rest("GET", path)[0] == 200, path

    sql = tmp_path / "running.sql"
    sql.write_text(running_sql(tags["clu"], f"redact_{tags['clu']}"))
    jid = c.submit(sql)
    every_route(jid)
    # the manifest is written at submission, while the job runs
    ch.add_tree(c.ha)
    wait_for(lambda: (every_route(jid), c.job(jid)["status"])[1] == "FINISHED", 90,
             "the job to finish")
    for kind in ("kv", "uri"):
        assert pg.execute(f"SELECT count(*) FROM redact_{kind}_{tags['clu']}").fetchone()[0] == 20
    code, body = rest("POST", "/api/v1/jobs/sql", json.dumps({"sql": failing_sql(), "name": "ch"}))
    if code == 201:  # refused when it runs
        fid = json.loads(body)["id"]
        job = c.wait_status(fid, ["FAILED"], timeout=90)
        assert "Wrong password" in job["error"], job
        every_route(fid)
    else:  # or when it is planned (the sink checks its table)
        assert code == 400 and "Wrong password" in body, body
    for i, text in enumerate(plan_error_sqls()):
        code, body = rest("POST", "/api/v1/jobs/sql", json.dumps({"sql": text, "name": f"bad{i}"}))
        assert code == 400 and "***" in body, body
        p = tmp_path / f"plan{i}.sql"
        p.write_text(text)
        r = subprocess.run([CLINK, "run", str(p), "--coordinator-host", "127.0.0.1",
                            "--coordinator-port", str(c.port)], capture_output=True, text=True,
                           timeout=30, env=c.env)
        assert r.returncode == 1 and "***" in r.stderr, r.stderr
        ch.add(f"submit plan{i} stdout", r.stdout)
        ch.add(f"submit plan{i} stderr", r.stderr)
    r = subprocess.run([CLINK, "list", "--coordinator-host", "127.0.0.1", "--coordinator-port",
                        str(c.port)], capture_output=True, text=True, timeout=30, env=c.env)
    ch.add("clink list", r.stdout + r.stderr)
    c.stop()
    for log in sorted(c.dir.glob("*.log")):
        ch.add(str(log), log.read_text(errors="replace"))
    assert ch.add_tree(c.ha) > 0
    assert ch.add_tree(c.ckpt) > 0
    ch.assert_clean()
    # the manifests say the SQL was redacted, and hold the mask where the credentials were
    manifests = list((c.ha / "jobs").glob("*.manifest"))
    assert manifests and all("redacted 1" in m.read_text() for m in manifests), manifests
    pg.close()


def test_takeover_of_a_job_whose_credentials_were_not_stored(cluster, tmp_path):
    """The manifest keeps the SQL redacted, so a coordinator taking over cannot run such a job
    again: it says so (naming the job and the way out, password_env), marks the manifest
    FAILED so no later takeover tries, and never shows the credential."""
    c = cluster()
    c.start_coordinator(ha=True)
    c.start_worker("worker-1", slots=1)
    sql = tmp_path / "endless.sql"
    sql.write_text(
        "CREATE TABLE src (id BIGINT) WITH (connector = 'datagen', rows_per_second = '10');\n"
        "CREATE TABLE out (id BIGINT) WITH (connector = 'kafka', brokers = '%s', topic = "
        "'redact_takeover_%d', kafka.sasl.password = '%s');\n"
        "INSERT INTO out SELECT id FROM src;\n" % (env_or_fail("CLINK_KAFKA_BROKERS"),
                                                  os.getpid(), SASL))
    jid = c.submit(sql)
    c.wait_status(jid, ["RUNNING"], timeout=60)
    manifest = c.ha / "jobs" / f"job-{jid}.manifest"
    text = manifest.read_text()
    assert "redacted 1" in text and SASL not in text and "kafka.sasl.password = '***'" in text
    # the job graph it keeps (hex) is the masked one too
    plan = bytes.fromhex(text.split("\nplan ", 1)[1].split("\n", 2)[1])
    assert SASL.encode() not in plan and b"kafka.sasl.password" in plan and b"***" in plan
    c.coordinator.kill()
    c.start_coordinator(ha=True, log="coordinator2.log")
    log = wait_for(lambda: (lambda t: "could not recover job" in t and t)(
        (c.dir / "coordinator2.log").read_text()), 30, "the takeover's verdict")
    assert (f"could not recover job {jid} ('{sql}'): its SQL holds credentials, which the HA "
            "manifest does not keep; submit it again, giving them through password_env") in log, log
    assert SASL not in log
    assert "\nstatus FAILED\n" in manifest.read_text()
    assert SASL not in manifest.read_text()
