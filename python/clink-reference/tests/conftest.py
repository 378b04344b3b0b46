import json
import os
import sys

if not os.environ.get("CLINK_REFERENCE_INSTALLED"):
    # from a source tree; tests/reference/run.sh tests the pip-installed package instead
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def scope_doc(topic="t", cluster_id="c1", topic_id="AAAAAAAAAAAAAAAAAAAAAA", parts=((0, 0, 10),),
              checkpoint=3, status="complete", isolation="read_committed"):
    """A clink-scope v1 document as `clink incident scope --json` writes it."""
    return json.dumps({
        "format": "clink-scope", "version": 1, "checkpoint": checkpoint,
        "job": {"id": None, "fingerprint": "00ff00ff00ff00ff"}, "attempt": "a-1",
        "intervals": [{"checkpoint": checkpoint, "previous_barrier": checkpoint - 1, "completed": True}],
        "start": {"checkpoint": 0, "restored_from": 0},
        "sources": [{"op": 0, "name": "src", "table": "src", "connector": "kafka", "topic": topic,
                     "cluster_id": cluster_id, "topic_id": topic_id, "isolation_level": isolation,
                     "partitions": [{"partition": p, "from": lo, "to": hi} for p, lo, hi in parts],
                     "absent": {}}],
        "sinks": [{"op": 2, "name": "out", "table": "out", "connector": "clickhouse",
                   "subtasks": [{"subtask": 0, "attempt": "a-1", "records": 3, "stored": 3,
                                 "truncated": False, "evidence": [], "captures": []}]}],
        "rows": 3, "status": status})
