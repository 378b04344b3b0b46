"""The SQL front end against hostile input (issue 12, sections 1, 5, 8): nesting at and past
the depth limit, very long operator chains, NUL bytes and invalid UTF-8 in the script, and a
very wide SELECT. Expected results are computed here in Python from the input rows, not by
clink. The runs at the limit use a 4 MiB stack (half the default), for the main thread and
therefore for every thread clink starts, so a walk that recursed per chain element or used
more stack per level than it should would crash here first."""

import json
import resource
import subprocess

import pytest

from .conftest import _env

LIMIT = 1000  # CK_SQL_MAX_DEPTH in src/sql/parser.h
STACK = 4 << 20

ROWS = [
    {"id": 1, "b": True}, {"id": -2, "b": False}, {"id": 3, "b": None},
    {"id": -4, "b": True}, {"id": None, "b": False},
]


def small_stack():
    resource.setrlimit(resource.RLIMIT_STACK, (STACK, resource.getrlimit(resource.RLIMIT_STACK)[1]))


def run_sql(clink_bin, tmp_path, sql, timeout=120, stack=True):
    (tmp_path / "rows.json").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    path = tmp_path / "q.sql"
    path.write_bytes(sql if isinstance(sql, bytes) else sql.encode())
    return subprocess.run([clink_bin, "run", "--log-level", "warn", "q.sql"], cwd=tmp_path,
                          capture_output=True, timeout=timeout, env=_env(),
                          preexec_fn=small_stack if stack else None)


TABLE = ("CREATE TABLE t (id INT, b BOOLEAN) "
         "WITH (connector = 'file', path = 'rows.json', format = 'json');\n")


def neg(x):
    return None if x is None else -x


# shape: (SQL of the expression nested n levels deep, Python oracle of one row at that depth)
def shapes():
    def nots(n, r):
        b = r["b"]
        return None if b is None else (b if n % 2 == 0 else not b)

    return {
        "parens": (lambda n: "(" * n + "id" + ")" * n, lambda n, r: r["id"]),
        "abs": (lambda n: "ABS(" * n + "id" + ")" * n,
                lambda n, r: None if r["id"] is None else abs(r["id"])),
        "cast": (lambda n: "CAST(" * n + "id" + " AS BIGINT)" * n, lambda n, r: r["id"]),
        "coalesce": (lambda n: "COALESCE(" * n + "id" + ", 7)" * n,
                     lambda n, r: 7 if r["id"] is None else r["id"]),
        "not": (lambda n: "NOT " * n + "b", nots),
        "minus": (lambda n: "- " * n + "id",
                  lambda n, r: r["id"] if n % 2 == 0 else neg(r["id"])),
        "right_operands": (lambda n: "id + (" * n + "id" + ")" * n,
                           lambda n, r: None if r["id"] is None else (n + 1) * r["id"]),
        "case": (lambda n: "CASE WHEN b THEN " * n + "id" + " END" * n,
                 lambda n, r: r["id"] if r["b"] else None),
        "is_null": (lambda n: "b" + " IS NULL" * n,
                    lambda n, r: (r["b"] is None) if n == 1 else False),
    }


def deepest(shape):
    """The deepest accepted nesting of a shape: the SELECT item itself is one level."""
    return LIMIT - 1


@pytest.mark.parametrize("shape", sorted(shapes()))
def test_nesting_at_the_limit_runs_and_is_right(clink_bin, tmp_path, shape):
    make, oracle = shapes()[shape]
    n = deepest(shape)
    p = run_sql(clink_bin, tmp_path, TABLE + "SELECT id, %s AS x FROM t;\n" % make(n))
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    got = [json.loads(line) for line in p.stdout.decode().splitlines()]
    want = [{"id": r["id"], "x": oracle(n, r)} for r in ROWS]
    assert got == want


@pytest.mark.parametrize("shape", sorted(shapes()))
@pytest.mark.parametrize("extra", [1, 9000])
def test_nesting_past_the_limit_is_refused_with_its_position(clink_bin, tmp_path, shape, extra):
    make, _ = shapes()[shape]
    p = run_sql(clink_bin, tmp_path, TABLE + "SELECT id,\n  %s AS x FROM t;\n"
                % make(deepest(shape) + extra))
    err = p.stderr.decode()
    assert p.returncode == 1, err[-3000:]
    first = err.splitlines()[0]
    assert first.startswith("q.sql:3:"), first
    assert first.endswith(": error: expression nested deeper than %d levels" % LIMIT), first
    assert "\nhint: " in err
    assert "Sanitizer" not in err


@pytest.mark.parametrize("op,oracle", [
    ("+", lambda ids: sum(ids)),
    ("AND", None),
    ("=", None),
])
def test_a_100000_term_chain_plans_and_runs(clink_bin, tmp_path, op, oracle):
    n = 100000
    if op == "+":
        expr = " + ".join(["id"] * n)
        want = [{"x": None if r["id"] is None else n * r["id"]} for r in ROWS]
    elif op == "AND":
        expr = " AND ".join(["b"] * n)
        want = [{"x": r["b"]} for r in ROWS]
    else:  # a = b = c …: left to right, (((b = b) = b) = …) is TRUE for any non-NULL b
        expr = " = ".join(["b"] * n)
        want = [{"x": None if r["b"] is None else True} for r in ROWS]
    p = run_sql(clink_bin, tmp_path, TABLE + "SELECT %s AS x FROM t;\n" % expr, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    assert [json.loads(line) for line in p.stdout.decode().splitlines()] == want


def test_a_nul_byte_is_refused_at_its_position(clink_bin, tmp_path):
    sql = (TABLE + "SELECT id FROM t\nWHERE id > 0 \0 AND id < 2;\n").encode()
    p = run_sql(clink_bin, tmp_path, sql, stack=False)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 1, err
    assert err.splitlines()[0] == "q.sql:3:14: error: the script contains a NUL byte (\\0)", err
    assert p.stdout == b""


@pytest.mark.parametrize("bad,col", [
    (b"SELECT 'caf\xe9' AS s FROM t;\n", 12),          # Latin-1 inside a string literal
    (b"SELECT id AS \xff FROM t;\n", 14),              # a byte UTF-8 never uses
    (b"SELECT 'x\xed\xa0\x80' AS s FROM t;\n", 10),    # an encoded surrogate
    (b"SELECT 'x\xc0\xaf' AS s FROM t;\n", 10),        # an overlong '/'
    (b"SELECT 'ok' AS s FROM t; -- \xe2\x82\n", 29),   # a truncated sequence in a comment
])
def test_invalid_utf8_is_refused_at_its_position(clink_bin, tmp_path, bad, col):
    p = run_sql(clink_bin, tmp_path, TABLE.encode() + bad, stack=False)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 1, err
    p.stderr.decode()  # the message is text: the bad bytes show as '?'
    first = err.splitlines()[0]
    assert first.startswith("q.sql:2:%d: error: invalid UTF-8 in the script" % col), first
    assert p.stdout == b""


def test_valid_utf8_in_a_literal_still_runs(clink_bin, tmp_path):
    p = run_sql(clink_bin, tmp_path, TABLE + "SELECT 'héllo wörld €𝄞' AS s FROM t WHERE id = 1;\n",
                stack=False)
    assert p.returncode == 0, p.stderr.decode()
    assert json.loads(p.stdout.decode()) == {"s": "héllo wörld €𝄞"}
