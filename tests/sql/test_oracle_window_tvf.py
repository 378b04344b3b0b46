"""Differential oracle for the window table functions (issue 21).

`FROM TABLE(TUMBLE|HOP|CUMULATE(TABLE t, DESCRIPTOR(ts), …)) GROUP BY window_start, window_end,
…` runs through `clink run` at parallelism 1 and 4 over the bounded input of test_oracle.py
(NULL and duplicate keys, event time out of order within the watermark lag), and DuckDB
computes the same windows with its own arithmetic (a window's start from integer division, a
HOP's or CUMULATE's several windows per row from a range join). Flink's argument order is the
TVF's: HOP(…, slide, size), CUMULATE(…, step, size); window_time is window_end - 1 ms.
"""
import pytest

from test_oracle import TABLE, as_multiset, data, run_clink  # noqa: F401 (data: a fixture)



def duck_windows(kind, a, b, off):
    """DuckDB's rows of t with the columns ws, we: one per window the row belongs to."""
    period = {"TUMBLE": a, "HOP": a, "CUMULATE": b}[kind]  # where windows start
    last = f"({off} + ((ts - {off}) // {period}) * {period})"  # the latest start at or before ts
    if kind == "TUMBLE":  # size a
        return f"SELECT *, {last} AS ws, {last} + {a} AS we FROM t"
    if kind == "HOP":  # slide a, size b
        return (f"SELECT t.*, {last} - j * {a} AS ws, {last} - j * {a} + {b} AS we "
                f"FROM t CROSS JOIN range(0, {b // a}) r(j)")
    # CUMULATE: step a, size b
    return (f"SELECT t.*, {last} AS ws, {last} + j * {a} AS we FROM t "
            f"CROSS JOIN range(1, {b // a + 1}) r(j) WHERE {last} + j * {a} > ts")


CASES = [("TUMBLE", 10000, None, 0), ("TUMBLE", 7000, None, 3000), ("HOP", 5000, 15000, 0),
         ("HOP", 4000, 12000, 1500), ("CUMULATE", 5000, 20000, 0), ("CUMULATE", 3000, 9000, 1000)]


@pytest.mark.parametrize("kind,a,b,off", CASES)
def test_window_tvf_matches_duckdb(data, kind, a, b, off):
    d, _, con = data
    args = f"INTERVAL '{a}' MILLISECOND" + (f", INTERVAL '{b}' MILLISECOND" if b else "")
    if off:
        args += f", INTERVAL '{off}' MILLISECOND"
    sql = TABLE.format(dir=d) + f"""
        SELECT k, window_start, window_end, window_time, COUNT(*) AS n, SUM(x) AS sx,
               MAX(y) AS my, COUNT(DISTINCT g) AS dg
        FROM TABLE({kind}(TABLE t, DESCRIPTOR(ts), {args}))
        WHERE g <> 0
        GROUP BY window_start, window_end, k;"""
    duck = f"""SELECT k, ws, we, we - 1, COUNT(*), SUM(x), MAX(y), COUNT(DISTINCT g)
               FROM ({duck_windows(kind, a, b, off)}) w WHERE g <> 0 GROUP BY k, ws, we"""
    cols = ["k", "window_start", "window_end", "window_time", "n", "sx", "my", "dg"]
    want = as_multiset([dict(zip(cols, r)) for r in con.execute(duck).fetchall()], cols)
    assert sum(want.values()) > 100 and any(k[0] is None for k in want), "a vacuous oracle"
    for p in (1, 4):
        got = as_multiset(run_clink(sql, p), cols)
        assert got == want, (f"{kind} at parallelism {p}: missing {list(want - got)[:3]} "
                             f"extra {list(got - want)[:3]}")


def test_window_tvf_equals_group_by_window(data):
    """The TVF and the legacy GROUP BY call are one query: the same rows at parallelism 4."""
    d, _, _ = data
    tvf = TABLE.format(dir=d) + """SELECT g, window_start, window_end, SUM(x) AS sx
        FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))
        GROUP BY window_start, g, window_end;"""
    legacy = TABLE.format(dir=d) + """SELECT g, window_start, window_end, SUM(x) AS sx
        FROM t GROUP BY g, HOP(ts, INTERVAL '6' SECOND, INTERVAL '2' SECOND);"""
    cols = ["g", "window_start", "window_end", "sx"]
    a, b = as_multiset(run_clink(tvf, 4), cols), as_multiset(run_clink(legacy, 4), cols)
    assert a == b and sum(a.values()) > 100
