"""User-defined functions in C on a cluster (docs/sql.md, "User-defined functions in C"): the
plan carries the function's name, symbol and library, and every worker opens the library
itself. A job whose workers all have the library runs to the same rows as a Python
recomputation; a worker that cannot load it fails the deploy naming the function and the
library, and the job fails rather than run without it.

The library is named by its bare file name and found through LD_LIBRARY_PATH, which the test
gives the client, the coordinator and the workers that have it, and withholds from the one
that does not: two processes on one host that see different libraries, as two hosts would.
"""
import json
import os
from pathlib import Path

from .conftest import CLINK


def sample_lib():
    given = os.environ.get("CLINK_UDF_SAMPLE")
    path = Path(given) if given else Path(CLINK).resolve().parents[2] / "tests/udf/libclink_udf_sample.so"
    assert path.exists(), f"the sample UDF library is not built: {path}"
    return path


def write_job(tmp_path, n):
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    with open(src, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "s": f"k{i % 7}"}) + "\n")
    sql = tmp_path / "udf.sql"
    sql.write_text(f"""
CREATE TABLE t (id BIGINT, s VARCHAR) WITH (connector = 'file', path = '{src}');
CREATE TABLE o (id BIGINT, p BIGINT, sh VARCHAR) WITH (connector = 'file', path = '{out}');
CREATE FUNCTION plus_one AS 'plus_one_udf' USING '{sample_lib().name}' LANGUAGE C;
CREATE FUNCTION shout AS 'shout_udf' USING '{sample_lib().name}' LANGUAGE C;
INSERT INTO o SELECT id, plus_one(id) AS p, shout(s) AS sh FROM t;
""")
    return sql, out


def with_lib(env):
    env = dict(env)
    env["LD_LIBRARY_PATH"] = str(sample_lib().parent) + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def test_udf_job_runs_on_a_worker_that_has_the_library(cluster, tmp_path):
    c = cluster()
    c.env = with_lib(c.env)
    c.start_coordinator()
    c.start_worker("worker-1")
    sql, out = write_job(tmp_path, 500)
    jid = c.submit(sql)
    job = c.wait_status(jid, {"FINISHED", "FAILED"})
    assert job["status"] == "FINISHED", job
    got = sorted((r["id"], r["p"], r["sh"]) for r in map(json.loads, out.read_text().splitlines()))
    assert got == [(i, i + 1, f"K{i % 7}!") for i in range(500)]


def test_a_worker_without_the_library_fails_the_deploy_naming_it(cluster, tmp_path):
    c = cluster(max_restarts=1)
    has = with_lib(c.env)
    c.env = has
    lacks = {"LD_LIBRARY_PATH": str(tmp_path / "no-libraries-here")}  # merged over c.env
    c.start_coordinator()
    c.start_worker("worker-1", env=lacks)
    sql, out = write_job(tmp_path, 50)
    jid = c.submit(sql)
    job = c.wait_status(jid, {"FINISHED", "FAILED"})
    assert job["status"] == "FAILED", job
    want = f"could not load function 'plus_one' from library '{sample_lib().name}'"
    assert want in job["error"], job
    assert not out.exists() or out.read_text() == ""
