"""clink incident reconcile against a destination served from memory (tests/incident/chfake.py),
in addition to the real servers, for faults they cannot be made to show. A Kafka → ClickHouse
job writes through the fake while it records (so it is the endpoint the evidence names), a first
reconciliation through it passes (0) and is recorded; then the real table is dropped and the
fake serves every answer from memory, with no upstream connection:
  - unarmed: the recorded answers pass again (0): the table is gone, the answers are memory's;
  - the second read of the scope answers one key's row differently (the same statement, another
    answer): unavailable (3), the key read differently twice, rows not compared;
  - a server that does not keep max_result_rows (the recorded answer of 34 rows read with
    --max-rows 10; a real server throws TOO_MANY_ROWS): the client's own bound makes the read
    fail whole, unavailable (3), never decided on the 34 rows;
  - a server that stops answering halfway through the scope's read, the connection kept open:
    the client's receive timeout, unavailable (3);
  - one that closes the connection halfway through it: unavailable (3).
"""

import uuid

from .chfake import FakeCH
from .test_reconcile import ch, job, kafka_source, line, make_table, produce, reconcile  # noqa: F401


def check(doc, name):
    return [c for c in doc["checks"] if c["name"] == name][0]


def test_faults_of_a_destination_served_from_memory(line, ch, tmp_path):  # noqa: F811
    name = "rcn_fake_%s" % uuid.uuid4().hex[:10]
    make_table(ch, name)
    fake = FakeCH(line["port"])
    try:
        produce(name, 40)
        bundle = job(tmp_path, kafka_source(name), fake.port, name)
        r, doc = reconcile(bundle, fake.port, "--key", "id")
        assert r.returncode == 0 and doc["rows"]["matched"] == 34, (r.stderr, doc)
        marker = b"FROM `default`.`%s` WHERE" % name.encode()
        assert fake.recorded(marker) == 2, "the scope is read twice"
        ch.execute("DROP TABLE default.%s" % name)
        fake.serve()
        before = fake.upstream_connections

        r, doc = reconcile(bundle, fake.port, "--key", "id")
        assert r.returncode == 0 and doc["rows"]["matched"] == 34, (r.stderr, doc)

        fake.rewrite(marker, 2, b"\x03v12", b"\x03w12")  # key 12's s, second read only
        r, doc = reconcile(bundle, fake.port, "--key", "id")
        assert fake.faults_done == 1
        assert r.returncode == 3, r.stderr
        dest = check(doc, "reconcile.destination")
        assert dest["status"] == "unavailable" and "read differently twice" in dest["why"], dest
        assert check(doc, "reconcile.rows")["status"] == "not_run"

        fake.serve()  # unarmed: the recorded 34 rows, with a smaller bound than the recording's
        r, doc = reconcile(bundle, fake.port, "--key", "id", "--max-rows", "10")
        assert r.returncode == 3, r.stderr
        dest = check(doc, "reconcile.destination")
        assert dest["status"] == "unavailable" and "passed a bound" in dest["why"], dest
        assert "max_result_rows = 10" in dest["why"], dest
        assert check(doc, "reconcile.rows")["status"] == "not_run"

        fake.stall(marker)
        r, doc = reconcile(bundle, fake.port, "--key", "id", "--receive-timeout-ms", "2000")
        assert fake.faults_done == 1
        assert r.returncode == 3, r.stderr
        dest = check(doc, "reconcile.destination")
        assert dest["status"] == "unavailable" and "passed a bound" in dest["why"], dest
        assert check(doc, "reconcile.rows")["status"] == "not_run"

        fake.cut(marker)
        r, doc = reconcile(bundle, fake.port, "--key", "id")
        assert fake.faults_done == 1
        assert r.returncode == 3, r.stderr
        dest = check(doc, "reconcile.destination")
        assert dest["status"] == "unavailable" and "could not read the destination" in dest["why"]
        assert check(doc, "reconcile.rows")["status"] == "not_run"
        assert fake.upstream_connections == before, "served from memory only"
    finally:
        fake.close()
        ch.execute("DROP TABLE IF EXISTS default.%s" % name)
