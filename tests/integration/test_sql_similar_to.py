"""SIMILAR TO against PostgreSQL, whose SIMILAR TO is the SQL standard's (the one Flink's
Calcite implements): `%`, `_`, `|`, `*`, `+`, `?`, `{m,n}`, groups and bracket sets, every other
character literal, the whole text matched, ESCAPE. The same (text, pattern, escape) rows go
through `clink run` at parallelism 1 and 4 and through a PostgreSQL query. Needs PostgreSQL
(scripts/services.sh)."""
import json
import random

import psycopg

from .test_kafka_connector import clink_run

TEXTS = ["abc", "", "a.c", "aXc", "héllo", "h%llo", "aaa", "ab|cd", "x+y", "(ab)", "a\nb", "😀x",
         "a_c", "abcabc", "[x]", "1234", "a$b", "^ab"]
PATTERNS = ["abc", "a%", "%c", "a_c", "a.c", "(a|x)+", "%(b|c)%", "a{2,3}", "[a-c]+", "[^0-9]*",
            "h_llo", "h!%llo", "%!_%", "(ab)*c?", "x+y", "x!+y", "a%b", "%", "_", "", "😀_",
            "[0-9]{4}", "(ab|cd)|%d", "a$b", "!^ab", "[[]x]", "%[.]%", "[]a]%", "[[:digit:]]+"]


def test_similar_to_matches_postgres(pg_dsn, tmp_path):
    rnd = random.Random(20261201)
    rows = [{"id": i, "s": rnd.choice(TEXTS + [None]), "p": rnd.choice(PATTERNS)}
            for i in range(800)]
    path = tmp_path / "rows.json"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        want = {}
        for r in rows:
            m, nm, c = conn.execute(
                "SELECT %s SIMILAR TO %s ESCAPE '!', %s NOT SIMILAR TO %s ESCAPE '!', "
                "%s SIMILAR TO '%%(b|c)+%%'", (r["s"], r["p"], r["s"], r["p"], r["s"])).fetchone()
            want[r["id"]] = (m, nm, c)
    sql = (f"CREATE TABLE t (id INT, s VARCHAR, p VARCHAR) WITH (connector = 'file', "
           f"path = '{path}', format = 'json');\n"
           "SELECT id, s SIMILAR TO p ESCAPE '!' AS m, s NOT SIMILAR TO p ESCAPE '!' AS nm, "
           "s SIMILAR TO '%(b|c)+%' AS c FROM t;")
    assert any(v[0] for v in want.values()) and not all(v[0] for v in want.values() if v[0] is not None)
    for p in (1, 4):
        proc = clink_run(sql, parallelism=p)
        assert proc.returncode == 0, proc.stderr
        got = {}
        for line in proc.stdout.splitlines():
            r = json.loads(line)
            got[r["id"]] = (r["m"], r["nm"], r["c"])
        bad = [(rows[i]["s"], rows[i]["p"], got.get(i), want[i]) for i in want if got.get(i) != want[i]]
        assert not bad, f"parallelism {p}: (text, pattern, clink, PostgreSQL) {bad[:5]}"
