"""Differential oracle for the SQL engine.

The same bounded input files go through `clink run` and through an implementation that shares
nothing with clink: DuckDB for the unwindowed queries, a plain Python recomputation for the
windowed ones. Results are compared as multisets (doubles to a relative 1e-9, since summation
order differs between engines). Every query also runs at parallelism 1 and 4, which must agree.

CLINK_BIN names the clink binary (ctest passes the sanitizer build's).
"""
import json
import math
import os
import random
import subprocess
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

CLINK = os.environ.get("CLINK_BIN") or str(Path(__file__).resolve().parents[2] / "build/src/cli/clink")

N_ROWS = 5000
KEYS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
BASE_TS = 1772352000000


def make_rows(seed):
    """Rows with NULLs, negative numbers, decimals and bounded out-of-order event time."""
    rnd = random.Random(seed)
    rows = []
    for i in range(N_ROWS):
        ts = BASE_TS + i * 37 + rnd.randint(0, 900)  # out of order by < 1 s
        rows.append({
            "id": i,
            "k": rnd.choice(KEYS) if rnd.random() > 0.02 else None,
            "g": rnd.randint(-5, 5),
            "x": rnd.randint(-10**6, 10**6) if rnd.random() > 0.05 else None,
            "y": round(rnd.uniform(-100, 100), 3) if rnd.random() > 0.05 else None,
            "d": f"{rnd.randint(-99999, 99999) / 100:.2f}",
            "ts": ts,
        })
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("oracle")
    rows = make_rows(20261129)
    # two files, so parallel runs read them on different subtasks
    half = len(rows) // 2
    for n, part in enumerate([rows[:half], rows[half:]]):
        with open(d / f"part-{n}.json", "w") as f:
            for r in part:
                r2 = dict(r)
                r2["d"] = float(r["d"])  # a JSON number; clink reads DECIMAL exactly from its text
                f.write(json.dumps(r2) + "\n")
    con = duckdb.connect()
    con.execute(f"""CREATE TABLE t AS SELECT id::INT AS id, k::VARCHAR AS k, g::INT AS g,
                    x::BIGINT AS x, y::DOUBLE AS y, d::DECIMAL(10,2) AS d, ts::BIGINT AS ts
                    FROM read_json_auto('{d}/part-*.json')""")
    return d, rows, con


TABLE = """CREATE TABLE t (id INT, k VARCHAR, g INT, x BIGINT, y DOUBLE, d DECIMAL(10, 2), ts BIGINT)
WITH (connector = 'file', path = '{dir}/part-*.json', format = 'json',
      event_time_column = 'ts', watermark_lag_ms = '1000');
"""


def run_clink(sql, parallelism):
    r = subprocess.run([CLINK, "run", "--parallelism", str(parallelism), "-e", sql],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, CLINK_LOG_LEVEL="warn"))
    assert r.returncode == 0, r.stderr
    return [json.loads(l) for l in r.stdout.splitlines()]


def norm(v):
    if isinstance(v, Decimal):
        return float(v) if v != v.to_integral_value() else int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return round(v, 6) if abs(v) < 1e12 else v
    return v


def as_multiset(rows, cols):
    return Counter(tuple(norm(r.get(c)) for c in cols) for r in rows)


def final_state(changelog, key_cols):
    """The last row per key of an update stream, without deleted keys."""
    state = {}
    for r in changelog:
        key = tuple(r[c] for c in key_cols)
        if r.get("op") == "delete":
            state.pop(key, None)
        else:
            state[key] = r
    return list(state.values())


# (clink SQL, DuckDB SQL, output columns, key columns when the output is an update stream)
QUERIES = [
    ("SELECT id, k, x + g AS s, x * 2 AS m, g / 2 AS q, MOD(x, 7) AS r FROM t WHERE x > 0 AND k <> 'beta'",
     "SELECT id, k, x + g AS s, x * 2 AS m, trunc(g / 2)::INT AS q, x % 7 AS r FROM t WHERE x > 0 AND k <> 'beta'",
     ["id", "k", "s", "m", "q", "r"], None),
    ("SELECT id, UPPER(k) AS u, CHAR_LENGTH(k) AS n, SUBSTRING(k, 2, 3) AS sub, k || '-' || CAST(g AS VARCHAR) AS c FROM t WHERE k LIKE '%a'",
     "SELECT id, upper(k) AS u, length(k) AS n, substring(k, 2, 3) AS sub, k || '-' || CAST(g AS VARCHAR) AS c FROM t WHERE k LIKE '%a'",
     ["id", "u", "n", "sub", "c"], None),
    ("SELECT id, d * 3 AS d3, d + 1.25 AS dp, ABS(y) AS ay, CASE WHEN y > 50 THEN 'hot' WHEN y < -50 THEN 'cold' ELSE 'mild' END AS band FROM t WHERE y IS NOT NULL AND g BETWEEN -2 AND 2",
     "SELECT id, d * 3 AS d3, d + 1.25 AS dp, abs(y) AS ay, CASE WHEN y > 50 THEN 'hot' WHEN y < -50 THEN 'cold' ELSE 'mild' END AS band FROM t WHERE y IS NOT NULL AND g BETWEEN -2 AND 2",
     ["id", "d3", "dp", "ay", "band"], None),
    ("SELECT id, COALESCE(x, -1) AS cx, x IS NULL AS xn, g IN (1, 2, 3) AS small FROM t WHERE k IS NULL OR g = 0",
     "SELECT id, COALESCE(x, -1) AS cx, x IS NULL AS xn, g IN (1, 2, 3) AS small FROM t WHERE k IS NULL OR g = 0",
     ["id", "cx", "xn", "small"], None),
    ("SELECT k, COUNT(*) AS n, COUNT(x) AS nx, SUM(x) AS sx, MIN(y) AS mn, MAX(y) AS mx, SUM(d) AS sd, COUNT(DISTINCT g) AS dg FROM t GROUP BY k",
     "SELECT k, COUNT(*) AS n, COUNT(x) AS nx, SUM(x) AS sx, MIN(y) AS mn, MAX(y) AS mx, SUM(d) AS sd, COUNT(DISTINCT g) AS dg FROM t GROUP BY k",
     ["k", "n", "nx", "sx", "mn", "mx", "sd", "dg"], ["k"]),
    ("SELECT k, g, AVG(y) AS ay, SUM(d) AS sd FROM t WHERE x > -500000 GROUP BY k, g HAVING COUNT(*) > 20",
     "SELECT k, g, AVG(y) AS ay, SUM(d) AS sd FROM t WHERE x > -500000 GROUP BY k, g HAVING COUNT(*) > 20",
     ["k", "g", "ay", "sd"], ["k", "g"]),
]


@pytest.mark.parametrize("case", range(len(QUERIES)))
def test_matches_duckdb(data, case):
    d, rows, con = data
    clink_sql, duck_sql, cols, keys = QUERIES[case]
    want_rows = [dict(zip(cols, r)) for r in con.execute(duck_sql).fetchall()]
    want = as_multiset(want_rows, cols)
    assert sum(want.values()) > 0, "the oracle query selects nothing: a vacuous test"
    results = {}
    for p in (1, 4):
        got_rows = run_clink(TABLE.format(dir=d) + clink_sql + ";", p)
        if keys:
            got_rows = final_state(got_rows, keys)
        results[p] = as_multiset(got_rows, cols)
        missing = want - results[p]
        extra = results[p] - want
        assert not missing and not extra, (
            f"parallelism {p}: clink and DuckDB differ\n missing {list(missing)[:5]}\n extra {list(extra)[:5]}")
    assert results[1] == results[4]


def windows_of(kind, ts, a, b=None):
    if kind == "TUMBLE":
        s = ts - ts % a
        return [(s, s + a)]
    if kind == "HOP":  # size a, slide b
        out = []
        s = ts - ts % b
        while s > ts - a:
            out.append((s, s + a))
            s -= b
        return out
    if kind == "CUMULATE":  # step a, size b
        s = ts - ts % b
        return [(s, s + k * a) for k in range(1, b // a + 1) if s + k * a > ts]
    raise ValueError(kind)


@pytest.mark.parametrize("kind,a,b", [("TUMBLE", 10000, None), ("HOP", 30000, 10000),
                                      ("CUMULATE", 5000, 20000)])
def test_windows_match_python(data, kind, a, b):
    d, rows, _ = data
    args = f"INTERVAL '{a}' MILLISECOND" + (f", INTERVAL '{b}' MILLISECOND" if b else "")
    sql = TABLE.format(dir=d) + f"""
        SELECT k, window_start, window_end, COUNT(*) AS n, SUM(x) AS sx, MAX(y) AS my
        FROM t WHERE k IS NOT NULL GROUP BY {kind}(ts, {args}), k;"""
    groups = defaultdict(list)
    for r in rows:
        if r["k"] is None:
            continue
        for w in windows_of(kind, r["ts"], a, b):
            groups[(r["k"],) + w].append(r)
    want = Counter()
    for (k, ws, we), rs in groups.items():
        xs = [r["x"] for r in rs if r["x"] is not None]
        ys = [r["y"] for r in rs if r["y"] is not None]
        want[(k, ws, we, len(rs), sum(xs) if xs else None, norm(max(ys)) if ys else None)] += 1
    cols = ["k", "window_start", "window_end", "n", "sx", "my"]
    for p in (1, 4):
        got = as_multiset(run_clink(sql, p), cols)
        assert got == want, f"{kind} at parallelism {p}: missing {list((want - got))[:3]} extra {list((got - want))[:3]}"


def test_session_windows_match_python(data):
    d, rows, _ = data
    gap = 200
    sql = TABLE.format(dir=d) + f"""
        SELECT k, window_start, window_end, COUNT(*) AS n
        FROM t WHERE k IS NOT NULL AND g = 3 GROUP BY SESSION(ts, INTERVAL '{gap}' MILLISECOND), k;"""
    by_key = defaultdict(list)
    for r in rows:
        if r["k"] is not None and r["g"] == 3:
            by_key[r["k"]].append(r["ts"])
    want = Counter()
    for k, tss in by_key.items():
        tss.sort()
        start = last = tss[0]
        n = 1
        for t in tss[1:]:
            if t < last + gap:
                last = max(last, t)
                n += 1
            else:
                want[(k, start, last + gap, n)] += 1
                start = last = t
                n = 1
        want[(k, start, last + gap, n)] += 1
    for p in (1, 4):
        got = as_multiset(run_clink(sql, p), ["k", "window_start", "window_end", "n"])
        assert got == want, f"parallelism {p}: missing {list(want - got)[:3]} extra {list(got - want)[:3]}"


# ---- TIMESTAMP event time: ISO 8601 / SQL text in, windows with offsets, SQL text out ----

def iso_text(ms, style):
    """ms (epoch milliseconds, UTC) written the ways a producer writes timestamps."""
    from datetime import datetime, timedelta, timezone
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    if style == 0:
        return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"
    if style == 1:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    if style == 2:  # a +05:30 offset: the same instant in India
        loc = t.astimezone(timezone(timedelta(hours=5, minutes=30)))
        return loc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}+05:30"
    if style == 3:  # microseconds and a -08:00 offset: the digits past the millisecond go
        loc = t.astimezone(timezone(timedelta(hours=-8)))
        return loc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}417-08:00"
    raise ValueError(style)


def sql_ts(ms):
    """Flink's SQL text of a TIMESTAMP(3): what clink writes for window_start / window_end."""
    from datetime import datetime, timezone
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


@pytest.fixture(scope="module")
def iso_data(data, tmp_path_factory):
    """The oracle's rows with ts as text in four styles (and every ninth as an epoch number),
    in JSON and in CSV files."""
    _, rows, _ = data
    d = tmp_path_factory.mktemp("oracle_iso")
    half = len(rows) // 2
    for n, part in enumerate([rows[:half], rows[half:]]):
        with open(d / f"part-{n}.json", "w") as fj, open(d / f"part-{n}.csv", "w") as fc:
            for r in part:
                ts = r["ts"] if r["id"] % 9 == 0 else iso_text(r["ts"], r["id"] % 4)
                fj.write(json.dumps({"id": r["id"], "k": r["k"], "x": r["x"], "ts": ts}) + "\n")
                fc.write(",".join(["" if v is None else str(v)
                                   for v in (r["id"], r["k"], r["x"], ts)]) + "\n")
    return d, rows


def windows_off(kind, ts, a, b, off):
    """Flink's window assignment with an offset: starts at off + k * size (k * slide)."""
    if kind == "TUMBLE":
        s = ts - (ts - off) % a
        return [(s, s + a)]
    if kind == "HOP":  # size a, slide b
        out, s = [], ts - (ts - off) % b
        while s > ts - a:
            out.append((s, s + a))
            s -= b
        return out
    if kind == "CUMULATE":  # step a, size b
        s = ts - (ts - off) % b
        return [(s, s + k * a) for k in range(1, b // a + 1) if s + k * a > ts]
    raise ValueError(kind)


@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize("kind,a,b,off", [("TUMBLE", 10000, None, 0), ("TUMBLE", 10000, None, 3000),
                                          ("TUMBLE", 60000, None, -7000),
                                          ("HOP", 30000, 10000, 2500), ("CUMULATE", 5000, 20000, 1000)])
def test_timestamp_windows_match_python(iso_data, fmt, kind, a, b, off):
    """A TIMESTAMP(3) event-time column read from ISO 8601 / SQL text (zones, 'T' or a blank,
    fraction digits past the millisecond) and epoch numbers, declared with WATERMARK FOR, and
    windows with an offset: window_start / window_end come out as TIMESTAMP text, against a
    Python recomputation that formats its own."""
    d, rows = iso_data
    args = f"INTERVAL '{a}' MILLISECOND" + (f", INTERVAL '{b}' MILLISECOND" if b else "")
    if off:
        args += (", -" if off < 0 else ", ") + f"INTERVAL '{abs(off)}' MILLISECOND"
    sql = f"""CREATE TABLE t (id INT, k VARCHAR, x BIGINT, ts TIMESTAMP(3),
                WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
              WITH (connector = 'file', path = '{d}/part-*.{fmt}', format = '{fmt}');
        SELECT k, window_start, window_end, COUNT(*) AS n, SUM(x) AS sx
        FROM t WHERE k IS NOT NULL AND k <> '' GROUP BY {kind}(ts, {args}), k;"""
    groups = defaultdict(list)
    for r in rows:
        if r["k"] is None:
            continue
        for w in windows_off(kind, r["ts"], a, b, off):
            groups[(r["k"],) + w].append(r)
    want = Counter()
    for (k, ws, we), rs in groups.items():
        xs = [r["x"] for r in rs if r["x"] is not None]
        want[(k, sql_ts(ws), sql_ts(we), len(rs), sum(xs) if xs else None)] += 1
    cols = ["k", "window_start", "window_end", "n", "sx"]
    for p in (1, 4):
        got = as_multiset(run_clink(sql, p), cols)
        assert got == want, f"{kind} at parallelism {p}: missing {list((want - got))[:3]} extra {list((got - want))[:3]}"


def test_computed_rowtime_matches_python(data):
    """Event time from a computed column (rowtime AS CAST(ts AS TIMESTAMP(3)) over the BIGINT
    epoch-ms field) with WATERMARK FOR on it: the same windows as the option form, with the
    bounds as TIMESTAMP text, and the physical columns still selectable beside it."""
    d, rows, _ = data
    sql = f"""CREATE TABLE t (id INT, k VARCHAR, x BIGINT, ts BIGINT,
                rowtime AS CAST(ts AS TIMESTAMP(3)), x2 AS x * 2,
                WATERMARK FOR rowtime AS rowtime - INTERVAL '1' SECOND)
              WITH (connector = 'file', path = '{d}/part-*.json', format = 'json');
        SELECT k, window_start, window_end, COUNT(*) AS n, SUM(x2) AS s2, MAX(ts) AS mt
        FROM t WHERE k IS NOT NULL GROUP BY TUMBLE(rowtime, INTERVAL '10' SECOND), k;"""
    groups = defaultdict(list)
    for r in rows:
        if r["k"] is not None:
            s = r["ts"] - r["ts"] % 10000
            groups[(r["k"], s, s + 10000)].append(r)
    want = Counter()
    for (k, ws, we), rs in groups.items():
        xs = [2 * r["x"] for r in rs if r["x"] is not None]
        want[(k, sql_ts(ws), sql_ts(we), len(rs), sum(xs) if xs else None, max(r["ts"] for r in rs))] += 1
    for p in (1, 4):
        got = as_multiset(run_clink(sql, p), ["k", "window_start", "window_end", "n", "s2", "mt"])
        assert got == want, f"parallelism {p}: missing {list(want - got)[:3]} extra {list(got - want)[:3]}"
