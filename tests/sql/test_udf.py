"""User-defined functions in C (CREATE FUNCTION … LANGUAGE C; include/clink/udf.h).

The sample library tests/udf/sample_udf.c is built by CMake beside the binary under test
(<build>/tests/udf/libclink_udf_sample.so, or $CLINK_UDF_SAMPLE). Three kinds of test:

  - golden errors: tests/sql/udf/NAME.sql.in with @LIB@ (the sample library) and @DATA@
    (tests/sql/data) substituted, run by `clink run`; stderr must equal NAME.err with the
    same substitution undone, and the exit status be 1 (UPDATE=1 rewrites the .err files);
  - an oracle: the functions over generated rows, at parallelism 1 and 4, against the same
    functions computed here in Python, in a projection, under a CASE that must not call the
    function for rows it does not take, and as a GROUP BY key;
  - the plan's round trip through the cluster's wire format is covered by tests/cluster.

CLINK_BIN names the binary (ctest passes the sanitizer build's).
"""
import json
import math
import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CLINK = os.environ.get("CLINK_BIN") or str(HERE.parents[1] / "build/src/cli/clink")


def sample_lib():
    given = os.environ.get("CLINK_UDF_SAMPLE")
    path = Path(given) if given else Path(CLINK).resolve().parents[2] / "tests/udf/libclink_udf_sample.so"
    if not path.exists():
        pytest.fail(f"the sample UDF library is not built: {path} (build the tests, or set "
                    "CLINK_UDF_SAMPLE)")
    return str(path)


def run(sql_path, *args, env=None):
    env = dict(os.environ, CLINK_LOG_LEVEL="warn", **(env or {}))
    return subprocess.run([CLINK, "run", *args, sql_path.name], cwd=sql_path.parent,
                          capture_output=True, text=True, timeout=120, env=env)


GOLDEN = sorted(p.name[:-len(".sql.in")] for p in (HERE / "udf").glob("*.sql.in"))


@pytest.mark.parametrize("name", GOLDEN)
def test_error_golden(name, tmp_path):
    lib = sample_lib()
    data = str(HERE / "data")
    text = (HERE / "udf" / f"{name}.sql.in").read_text()
    sql = tmp_path / f"{name}.sql"
    sql.write_text(text.replace("@LIB@", lib).replace("@DATA@", data))
    r = run(sql)
    got = r.stderr.replace(lib, "@LIB@").replace(data, "@DATA@")
    exp = HERE / "udf" / f"{name}.err"
    if os.environ.get("UPDATE") == "1":
        exp.write_text(got)
    assert r.returncode == 1, (r.returncode, r.stdout[-2000:], r.stderr)
    assert got == exp.read_text()


# ---------------------------------------------------------------- the oracle

N = 3000


def make_rows(seed):
    rnd = random.Random(seed)
    words = ["alpha", "Beta", "gamma ray", "", "ünïcode", "x" * 50]
    rows = []
    for i in range(N):
        rows.append({
            "id": i,
            "x": rnd.randint(-10**9, 10**9) if rnd.random() > 0.1 else None,
            "a": round(rnd.uniform(-100, 100), 3) if rnd.random() > 0.1 else None,
            "b": rnd.choice([0.0, 0.5, -2.0, 3.0, 7.25]) if rnd.random() > 0.1 else None,
            "s": rnd.choice(words) if rnd.random() > 0.1 else None,
            "g": rnd.randint(-3, 3),
            "ts": 1772352000000 + rnd.randint(0, 10**9) if rnd.random() > 0.1 else None,
        })
    return rows


def shout(s):
    if s is None:
        return None
    return "".join(c.upper() if "a" <= c <= "z" else c for c in s) + "!"


def safe_div(a, b):
    return None if a is None or b is None or b == 0 else a / b


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("udf")
    rows = make_rows(20261201)
    half = len(rows) // 2
    for n, part in enumerate([rows[:half], rows[half:]]):  # two files: two subtasks at p=4
        with open(d / f"part-{n}.json", "w") as f:
            for r in part:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    # in event-time order but for each pair swapped: a record that arrives after its successor
    # may join two open sessions into one (the aggregates' merge); the watermark's lag keeps
    # every record on time
    timed = sorted((r for r in rows if r["ts"] is not None), key=lambda r: r["ts"])
    for i in range(0, len(timed) - 1, 2):
        timed[i], timed[i + 1] = timed[i + 1], timed[i]
    with open(d / "sorted.json", "w") as f:
        for r in timed:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return d, rows


def clink_rows(d, body, parallelism, table2=False, fails=None, env=None):
    lib = sample_lib()
    sql = d / "q.sql"
    # t2: the rows with an event time, nearly in its order (data()), as epoch milliseconds
    extra = ("CREATE TABLE t2 (id BIGINT, x BIGINT, a DOUBLE, b DOUBLE, s VARCHAR, g INT, ts BIGINT)"
             " WITH (connector = 'file', path = 'sorted.json', format = 'json',"
             " event_time_column = 'ts', event_time_null = 'skip',"
             " watermark_lag_ms = '1000000000');") if table2 else ""
    sql.write_text(extra + f"""
CREATE TABLE t (id BIGINT, x BIGINT, a DOUBLE, b DOUBLE, s VARCHAR, g INT, ts TIMESTAMP(3))
WITH (connector = 'file', path = 'part-*.json', format = 'json');
CREATE FUNCTION plus_one AS 'plus_one_udf' USING '{lib}' LANGUAGE C;
CREATE FUNCTION next_second AS 'next_second_udf' USING '{lib}' LANGUAGE C;
CREATE FUNCTION is_even AS 'is_even_udf' USING '{lib}' LANGUAGE C;
CREATE TEMPORARY FUNCTION shout AS 'shout_udf' USING '{lib}' LANGUAGE C;
CREATE FUNCTION safe_div AS 'safe_div_udf' USING '{lib}' LANGUAGE C;
CREATE FUNCTION no_negatives AS 'no_negatives_udf' USING '{lib}' LANGUAGE C;
{body};
""")
    r = run(sql, "--parallelism", str(parallelism), env=env)
    if fails:
        assert r.returncode == 1 and fails in r.stderr, (r.returncode, r.stderr)
        return []
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]


def close(a, b):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("parallelism", [1, 4])
def test_scalar_udfs_match_python(data, parallelism):
    d, rows = data
    got = clink_rows(d, """SELECT id, plus_one(x) AS p, plus_one(g) AS pg, shout(s) AS sh,
        safe_div(a, b) AS q, CASE WHEN x >= 0 THEN no_negatives(x) END AS nn,
        CAST(next_second(ts) AS BIGINT) AS ts1, is_even(g) AS ev,
        is_even(CASE WHEN g > 0 THEN g END) AS evp FROM t""",
                     parallelism)
    assert len(got) == N
    by_id = {r["id"]: r for r in rows}
    for row in got:
        src = by_id[row["id"]]
        x = src["x"]
        want = {"p": None if x is None else x + 1, "pg": src["g"] + 1, "sh": shout(src["s"]),
                "nn": x if x is not None and x >= 0 else None,
                "ts1": None if src["ts"] is None else src["ts"] + 1000,
                "ev": src["g"] % 2 == 0, "evp": src["g"] % 2 == 0 if src["g"] > 0 else None}
        assert {k: row[k] for k in want} == want, (row, src)
        assert close(row["q"], safe_div(src["a"], src["b"])), (row, src)


@pytest.mark.parametrize("parallelism", [1, 4])
def test_udf_as_group_key_matches_python(data, parallelism):
    d, rows = data
    got = clink_rows(d, "SELECT plus_one(g) AS k, COUNT(*) AS n, SUM(plus_one(x)) AS total "
                        "FROM t GROUP BY plus_one(g)", parallelism)
    final = {}
    for row in got:  # an update stream: the last row per key is its result
        final[row["k"]] = (row["n"], row["total"])
    want = {}
    for r in rows:
        k = r["g"] + 1
        n, total = want.get(k, (0, None))
        if r["x"] is not None:
            total = (total or 0) + r["x"] + 1
        want[k] = (n + 1, total)
    assert final == want


def test_udf_failure_stops_the_job_naming_it(data):
    d, _ = data
    sql = d / "fail.sql"
    lib = sample_lib()
    sql.write_text(f"""
CREATE TABLE t (id BIGINT, x BIGINT, a DOUBLE, b DOUBLE, s VARCHAR, g INT)
WITH (connector = 'file', path = 'part-*.json', format = 'json');
CREATE FUNCTION no_negatives AS 'no_negatives_udf' USING '{lib}' LANGUAGE C;
SELECT no_negatives(x) AS v FROM t;
""")
    r = run(sql)
    assert r.returncode == 1
    assert "function no_negatives failed: negative value" in r.stderr, r.stderr
    assert "no_negatives_udf" in r.stderr and lib in r.stderr, r.stderr


# ---------------------------------------------------------------- aggregates

AGGS = """CREATE FUNCTION my_sum AS 'my_sum_udf' USING '{lib}' LANGUAGE C;
CREATE FUNCTION uniq_count AS 'uniq_count_udf' USING '{lib}' LANGUAGE C;
CREATE FUNCTION longest AS 'longest_udf' USING '{lib}' LANGUAGE C;
CREATE FUNCTION heap_sum AS 'heap_sum_udf' USING '{lib}' LANGUAGE C;
"""


def python_aggs(rows):
    """(my_sum, uniq_count, longest) of a group's rows: NULLs skipped, all-NULL gives NULL."""
    xs = [r["x"] for r in rows if r["x"] is not None]
    ss = [r["s"] for r in rows if r["s"] is not None]
    return (sum(xs) if xs else None, len(set(xs)) if xs else None,
            max(len(s.encode()) for s in ss) if ss else None)


@pytest.mark.parametrize("parallelism", [1, 4])
def test_aggregate_udfs_match_python(data, parallelism):
    d, rows = data
    got = clink_rows(d, AGGS.format(lib=sample_lib()) +
                     "SELECT g, my_sum(x) AS s, uniq_count(x) AS u, longest(s) AS l, "
                     "my_sum(g) AS sg, heap_sum(x) AS hs FROM t GROUP BY g", parallelism)
    final = {}
    for row in got:
        # heap_sum keeps its sum in memory its accumulator points at: each change must still
        # reach the changelog
        assert row["hs"] == row["s"], row
        final[row["g"]] = (row["s"], row["u"], row["l"], row["sg"])
    groups = {}
    for r in rows:
        groups.setdefault(r["g"], []).append(r)
    want = {g: python_aggs(rs) + (g * len(rs),) for g, rs in groups.items()}
    assert final == want


@pytest.mark.parametrize("window", ["TUMBLE(ts, INTERVAL '100' SECOND)",
                                    "SESSION(ts, INTERVAL '3000' SECOND)"])
def test_aggregate_udfs_in_windows_match_python(data, window):
    """Windows: a session merges accumulators when a record joins two sessions (merge)."""
    d, rows = data
    got = clink_rows(d, AGGS.format(lib=sample_lib()) +
        f"SELECT g, window_start, window_end, my_sum(x) AS s, uniq_count(x) AS u, "
        f"longest(s) AS l FROM t2 GROUP BY g, {window}", 1, table2=True)
    got = {(r["g"], r["window_start"], r["window_end"]): (r["s"], r["u"], r["l"]) for r in got}
    timed = sorted((r for r in rows if r["ts"] is not None), key=lambda r: r["ts"])
    want = {}
    if window.startswith("TUMBLE"):
        size = 100_000
        groups = {}
        for r in timed:
            start = r["ts"] - r["ts"] % size
            groups.setdefault((r["g"], start, start + size), []).append(r)
    else:
        gap = 3_000_000
        groups, open_ = {}, {}
        for g in {r["g"] for r in timed}:
            cur, start, last = [], None, None
            for r in (r for r in timed if r["g"] == g):
                if cur and r["ts"] >= last + gap:
                    groups[(g, start, last + gap)] = cur
                    cur = []
                if not cur:
                    start = r["ts"]
                cur.append(r)
                last = r["ts"]
            if cur:
                groups[(g, start, last + gap)] = cur
    for k, rs in groups.items():
        want[k] = python_aggs(rs)
    assert got == want


def test_sessions_merge_aggregate_udf_accumulators(data):
    """The session test above goes through the function's merge: with merge failing, it fails
    naming the function and the callback."""
    d, _ = data
    clink_rows(d, AGGS.format(lib=sample_lib()) +
               "SELECT g, my_sum(x) AS s FROM t2 GROUP BY g, SESSION(ts, INTERVAL '3000' SECOND)",
               1, table2=True, env={"CK_UDF_SAMPLE_MERGE_FAILS": "1"},
               fails="aggregate function my_sum failed in merge")


@pytest.mark.parametrize("parallelism", [1, 4])
def test_aggregate_udf_whose_state_is_all_on_the_heap_updates_its_rows(data, parallelism):
    """heap_sum's accumulator is a pointer to its sum: adding a value changes no byte of the
    state entry, and the group's row must still be updated after every batch that changed it."""
    d, rows = data
    got = clink_rows(d, AGGS.format(lib=sample_lib()) +
                     "SELECT g, heap_sum(x) AS hs FROM t GROUP BY g", parallelism)
    final = {row["g"]: row["hs"] for row in got}
    want = {}
    for r in rows:
        want.setdefault(r["g"], None)
        if r["x"] is not None:
            want[r["g"]] = (want[r["g"]] or 0) + r["x"]
    assert final == want
