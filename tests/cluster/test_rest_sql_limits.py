"""Deeply nested SQL submitted over REST (issue 12, section 1): the coordinator plans with the
same parser and planner as `clink run`, so it answers 400 with the depth error at its
line:column and keeps serving; its workers keep their registration. On the commit before the
depth limit, one such 40 KB request killed the coordinator (stack overflow in the parser)."""
import json

from .conftest import wait_for

TABLE = ("CREATE TABLE t (id INT, b BOOLEAN) "
         "WITH (connector = 'file', path = '/nonexistent.json', format = 'json');\n")


def test_nested_sql_over_rest_is_a_400_and_the_coordinator_stays_up(cluster):
    c = cluster()
    c.start_coordinator()
    c.start_worker("worker-1")
    n = 10000
    for expr in ["(" * n + "id" + ")" * n, "ABS(" * n + "id" + ")" * n, "NOT " * n + "b",
                 "- " * n + "id", "CASE WHEN b THEN " * n + "id" + " END" * n]:
        body = json.dumps({"sql": TABLE + "SELECT\n " + expr + " AS x FROM t;\n", "name": "deep"})
        code, text, _ = c.request("POST", "/api/v1/jobs/sql", body)
        assert code == 400, (code, text[:500])
        err = json.loads(text)["error"]
        assert "deep:3:" in err and "error: expression nested deeper than 1000 levels" in err, err[:500]
        assert c.get("/api/v1/health")[0] == 200
        assert c.coordinator.p.poll() is None
    workers = c.get("/api/v1/workers")[1]["workers"]
    assert [(w["id"], w["status"]) for w in workers] == [("worker-1", "REGISTERED")]
    assert c.get("/api/v1/jobs")[1]["jobs"] == []
