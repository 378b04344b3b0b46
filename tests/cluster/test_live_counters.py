"""Late drops, skipped (undecodable) records and records without event time are live counters
per operator and subtask on `/api/v1/jobs/:id/operators` and `/metrics` while a cluster job
runs (they used to be visible only in an embedded run's final `[job] finished` line).

The job reads an unbounded Kafka topic: first on-time records up to ts 10000, then, once the
window operator's watermark has passed 10000 (read from the operators route), three late
records (ts 100, 200, 300: their window fired long ago), two malformed ones
(on_decode_error = 'skip') and four without event time (event_time_null = 'skip'). The
expectation is those counts, exactly, on both routes, while the job is RUNNING. The window
operator's state (state_entries, state_bytes: counted, and once exported nowhere) is on both
routes too, and every row of the metrics table (runtime/metrics.h, as `clink coordinator
--metrics-markdown` prints it) is on `/metrics` with its HELP and TYPE lines and a sample.
"""
import json
import os
import re
import subprocess
import sys

from .conftest import CLINK, REPO, wait_for

sys.path.insert(0, str(REPO / "scripts"))
from kafka_topic import create_topic  # noqa: E402


def produce(brokers, topic, values):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 0})
    errors = []
    for v in values:
        p.produce(topic, v.encode(), partition=0, on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(30) == 0 and errors == [], errors


def test_late_skipped_and_timeless_counters_are_live_on_both_routes(cluster, tmp_path):
    brokers = os.environ.get("CLINK_KAFKA_BROKERS")
    assert brokers, 'CLINK_KAFKA_BROKERS is not set: eval "$(scripts/services.sh env)" first'
    topic = "live_counters_%d_%s" % (os.getpid(), tmp_path.name)
    create_topic(brokers, topic, 1)
    produce(brokers, topic, ['{"id":%d,"ts":%d}' % (i, 1000 * i) for i in range(1, 11)])

    c = cluster()
    c.start_coordinator()
    c.start_worker("worker-1", slots=1)
    sql = tmp_path / "live.sql"
    sql.write_text(
        "CREATE TABLE k (id BIGINT, ts BIGINT) WITH (connector = 'kafka', brokers = '%s', "
        "topic = '%s', auto_offset_reset = 'earliest', event_time_column = 'ts', "
        "on_decode_error = 'skip', event_time_null = 'skip');\n"
        "CREATE TABLE out (w BIGINT, n BIGINT) WITH (connector = 'blackhole');\n"
        "INSERT INTO out SELECT TUMBLE_START(ts, INTERVAL '1' SECOND) AS w, COUNT(*) AS n FROM k "
        "GROUP BY TUMBLE(ts, INTERVAL '1' SECOND);\n" % (brokers, topic))
    jid = c.submit(sql)
    c.wait_status(jid, ["RUNNING"], timeout=60)

    def operators():
        code, body = c.get(f"/api/v1/jobs/{jid}/operators")
        assert code == 200, body
        return body["operators"]

    def past(ts):
        ops = operators()
        aggs = [o for o in ops if "late_dropped" in o and not o["name"].endswith("source")
                and o["watermark"] is not None and o["watermark"] >= ts]
        return aggs and ops
    wait_for(lambda: past(10000), 60, "the window operator's watermark to pass 10000")

    produce(brokers, topic, ['{"id":101,"ts":100}', '{"id":102,"ts":200}', '{"oops', '{"id":',
                             '{"id":201}', '{"id":202,"ts":null}', '{"id":203}',
                             '{"id":103,"ts":300}', '{"id":204,"ts":null}',
                             '{"id":11,"ts":11000}'])

    want = {"late_dropped": 3, "decode_skipped": 2, "no_event_time": 4}

    def totals():
        ops = operators()
        got = {k: sum(o[k] for o in ops) for k in want}
        return got == want and ops
    ops = wait_for(totals, 60, "the counters on /api/v1/jobs/:id/operators")
    src = [o for o in ops if o["decode_skipped"]]
    assert len(src) == 1 and src[0]["no_event_time"] == 4 and src[0]["worker"] == "worker-1", ops
    assert c.job(jid)["status"] == "RUNNING"

    def prom():
        code, text, _ = c.request("GET", "/metrics")
        assert code == 200, text
        got = {}
        for key in want:
            name = "clink_operator_%s_total" % key
            assert "# TYPE %s counter" % name in text, text
            got[key] = sum(int(v) for v in re.findall(
                r'^%s\{job="%d",node="\d+",operator="[^"]*",subtask="\d+",worker="worker-1"\} '
                r'(\d+)$' % (name, jid), text, re.M))
        return got == want and text
    text = wait_for(prom, 30, "the counters on /metrics")

    # the window [11000, 12000) stays open (no watermark ever passes 12000): state is held
    aggs = [o for o in operators() if o["late_dropped"] == 3]
    assert len(aggs) == 1 and aggs[0]["state_entries"] >= 1 and aggs[0]["state_bytes"] > 0, aggs
    for key in ("state_entries", "state_bytes"):
        m = re.search(r'^clink_operator_%s\{job="%d",node="%d",operator="[^"]*",subtask="0",'
                      r'worker="worker-1"\} (\d+)$' % (key, jid, aggs[0]["node"]), text, re.M)
        assert m and int(m.group(1)) >= 1, (key, text)
    # every row of the one metrics table, on /metrics, in the table's order
    md = subprocess.run([CLINK, "coordinator", "--metrics-markdown"], capture_output=True,
                        text=True, timeout=30, check=True).stdout
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| [^|]* \| (counter|gauge) \|", md, re.M)
    assert len(rows) >= 16 and {r[1] for r in rows} == {"operator", "job", "cluster"}, md
    at = -1
    for name, per, kind in rows:
        head = "# HELP %s " % name
        assert head in text and "# TYPE %s %s\n" % (name, kind) in text, (name, text)
        assert text.index(head) > at, f"{name} is out of the table's order on /metrics"
        at = text.index(head)
        labels = r'\{job="%d"(,[^}]*)?\}' % jid if per != "cluster" else ""
        assert re.search(r"^%s%s -?\d+$" % (name, labels), text, re.M), (name, per, text)
    assert re.search(r'^clink_operator_records_in_total\{job="%d",.*\} [1-9]' % jid, text, re.M)
    assert c.job(jid)["status"] == "RUNNING"
    code, body, _ = c.request("POST", f"/api/v1/jobs/{jid}/cancel")
    assert code == 200, body
    c.wait_status(jid, ["CANCELLED"], timeout=60)
