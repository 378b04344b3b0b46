"""Read the exact Kafka range of a scope, completely, from the log the scope names.

DESIGN
  For every partition [from, to) of every Kafka source in the scope, read_range() returns the
  records the job could have read there under the scope's isolation level (read_committed
  unless the job set otherwise), or says the range is incomplete and why. Complete means the
  consumer *passed* the range's end, never that it counted records up to it: under
  read_committed, transaction markers and aborted records hold offsets that are never
  delivered, so the last delivered offset can be below to − 1. A partition is passed when a
  record at or beyond to − 1 arrives, or when the partition's end (librdkafka's
  end-of-partition event, at the last stable offset) is at or beyond to. A poll that returns
  nothing proves nothing; the only other way out is the deadline, which leaves the result
  incomplete.

  Before reading, the log's identity: the cluster id and the topic id must equal the scope's
  (a scope without them cannot be confirmed, so the result is incomplete, never assumed), the
  topic must not be compacted (a compacted range may have lost records below its end), its
  history must still hold `from` (the low watermark at or below it) and its end must reach
  `to` (the high watermark at or above it). auto.offset.reset is `error`: an offset the log no
  longer has is an error, never a silent jump to another offset.
"""

import time
import uuid

from confluent_kafka import Consumer, KafkaError, TopicCollection, TopicPartition
from confluent_kafka import libversion as _libversion
from confluent_kafka import version as _version
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

__all__ = ["Record", "RangeResult", "read_range", "client_description"]


class Record:
    __slots__ = ("topic", "partition", "offset", "key", "value", "timestamp_ms", "headers")

    def __init__(self, msg):
        self.topic = msg.topic()
        self.partition = msg.partition()
        self.offset = msg.offset()
        self.key = msg.key()
        self.value = msg.value()
        ts_type, ts = msg.timestamp()
        self.timestamp_ms = ts if ts_type else None
        self.headers = msg.headers() or []

    def __repr__(self):
        return f"Record({self.topic}[{self.partition}]@{self.offset})"


class RangeResult:
    """What read_range() found: `complete`, the `reasons` it is not, the records per range."""

    def __init__(self):
        self.complete = False
        self.reasons = []
        self.partitions = []     # dicts: op, topic, partition, from, to, records, passed_by
        self.records = []        # every record, by (op, partition, offset)
        self.identity = {}       # topic -> {"cluster_id", "topic_id"} as the cluster reported
        self.isolation_level = None
        self.client = client_description()

    def describe(self):
        """The artifact's `read` section."""
        return {"complete": self.complete, "reasons": list(self.reasons),
                "isolation_level": self.isolation_level, "client": self.client,
                "identity": self.identity, "partitions": self.partitions}


def client_description():
    return f"confluent-kafka {_version()[0]}, librdkafka {_libversion()[0]}"


def _norm_uuid(s):
    """A topic id as bytes, from Kafka's base64 form or a hex UUID; None when unreadable."""
    if s is None:
        return None
    s = str(s).strip()
    try:
        return uuid.UUID(s).bytes
    except ValueError:
        pass
    import base64
    try:
        b = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
        return b if len(b) == 16 else None
    except (ValueError, TypeError):
        return None


def _identity(admin, topics, timeout):
    md = admin.list_topics(timeout=timeout)
    ids = {}
    fut = admin.describe_topics(TopicCollection(list(topics)), request_timeout=timeout)
    for t, f in fut.items():
        d = f.result(timeout=timeout)
        ids[t] = str(d.topic_id) if d.topic_id is not None else None
    policies = {}
    res = admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics],
                                 request_timeout=timeout)
    for r, f in res.items():
        cfg = f.result(timeout=timeout)
        entry = cfg.get("cleanup.policy")
        policies[r.name] = entry.value if entry is not None else "delete"
    return md.cluster_id, ids, policies


def read_range(scope, brokers, deadline_s=60.0, config=None):
    """Read every Kafka range of `scope` (a Scope) from `brokers`; returns a RangeResult."""
    r = RangeResult()
    t_end = time.monotonic() + deadline_s
    if not scope.complete:
        r.reasons.append(f"the scope is not complete ({scope.doc.get('status')}): "
                         + "; ".join(map(str, scope.doc.get("unavailable") or [])))
    sources = scope.kafka_sources()
    others = [s for s in scope.doc["sources"] if s.get("connector") != "kafka"]
    for s in others:
        r.reasons.append(f"source {s.get('name')} is a {s.get('connector')} source: only Kafka ranges are read")
    if not sources:
        r.reasons.append("the scope names no Kafka source")
    levels = {s.get("isolation_level") or "read_committed" for s in sources}
    if len(levels) > 1:
        r.reasons.append(f"the sources read under different isolation levels ({', '.join(sorted(levels))})")
    r.isolation_level = sorted(levels)[0] if levels else "read_committed"
    ranges = scope.ranges()
    for op, topic, p, lo, hi in ranges:
        if lo is None or hi is None:
            r.reasons.append(f"partition {p} of {topic} has no recorded "
                             f"{'from' if lo is None else 'to'}: the range is not known")
        elif lo > hi:
            r.reasons.append(f"partition {p} of {topic}: from {lo} is after to {hi}")
    if r.reasons:
        return r

    base = {"bootstrap.servers": brokers}
    base.update(config or {})
    admin = AdminClient(dict(base))
    topics = sorted({t for _, t, _, _, _ in ranges})
    try:
        cluster_id, topic_ids, policies = _identity(admin, topics, max(1.0, t_end - time.monotonic()))
    except Exception as e:  # a KafkaException, a timeout: the identity is not confirmed
        r.reasons.append(f"could not read the log's identity from {brokers}: {e}")
        return r
    for s in sources:
        t = s.get("topic")
        r.identity[t] = {"cluster_id": cluster_id, "topic_id": topic_ids.get(t)}
        if s.get("cluster_id") is None:
            r.reasons.append(f"the scope records no cluster id for {t}: the log's identity cannot be confirmed")
        elif s["cluster_id"] != cluster_id:
            r.reasons.append(f"another cluster: the scope's {t} is on cluster {s['cluster_id']}, "
                             f"{brokers} is cluster {cluster_id}")
        if s.get("topic_id") is None:
            r.reasons.append(f"the scope records no topic id for {t}: a recreated topic could not be told apart")
        elif _norm_uuid(s["topic_id"]) is None or _norm_uuid(s["topic_id"]) != _norm_uuid(topic_ids.get(t)):
            r.reasons.append(f"the topic {t} was recreated: its id is {topic_ids.get(t)}, the scope's {s['topic_id']}")
        if "compact" in (policies.get(t) or ""):
            r.reasons.append(f"the topic {t} is compacted (cleanup.policy={policies[t]}): "
                             "records of the range may be gone")
    if r.reasons:
        return r

    c = Consumer(dict(base, **{
        "group.id": f"clink-reference-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
        "isolation.level": r.isolation_level,
    }))
    # the log's ends as written, open transactions included (the read_committed handle's
    # high end is the last stable offset, which an open transaction holds back: that is
    # waited for below, not taken for a log that ends early)
    wm = Consumer(dict(base, **{"group.id": f"clink-reference-{uuid.uuid4()}",
                                "isolation.level": "read_uncommitted"}))
    try:
        state = {}
        assign = []
        for op, t, p, lo, hi in ranges:
            low, high = wm.get_watermark_offsets(TopicPartition(t, p),
                                                 timeout=max(1.0, t_end - time.monotonic()))
            if low > lo:
                r.reasons.append(f"history expired: partition {p} of {t} now starts at offset {low}, "
                                 f"after the range's from {lo}")
            if high < hi:
                r.reasons.append(f"the log ends early: partition {p} of {t} ends at offset {high}, "
                                 f"before the range's end {hi}")
            st = {"op": op, "topic": t, "partition": p, "from": lo, "to": hi, "records": 0,
                  "passed_by": "empty range" if lo == hi else None, "_recs": []}
            state[(t, p)] = st
            if lo < hi:
                assign.append(TopicPartition(t, p, lo))
        if r.reasons:
            return r
        if assign:
            c.assign(assign)
        left = {k for k, st in state.items() if st["passed_by"] is None}
        while left:
            if time.monotonic() >= t_end:
                for k in sorted(left):
                    st = state[k]
                    got = st["_recs"][-1].offset + 1 if st["_recs"] else st["from"]
                    r.reasons.append(f"deadline: partition {k[1]} of {k[0]} was not passed within "
                                     f"{deadline_s:g} s (delivered up to offset {got} of [{st['from']}, {st['to']}))")
                break
            msg = c.poll(0.2)
            if msg is None:
                continue  # a quiet poll proves nothing
            k = (msg.topic(), msg.partition())
            st = state.get(k)
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if st is not None and k in left and msg.offset() >= st["to"]:
                        st["passed_by"] = f"end of partition at offset {msg.offset()}"
                        left.discard(k)
                        c.pause([TopicPartition(k[0], k[1])])
                    continue
                r.reasons.append(f"reading partition {k[1]} of {k[0]}: {err.str()}")
                break
            if st is None or k not in left:
                continue
            off = msg.offset()
            if off < st["from"]:
                r.reasons.append(f"partition {k[1]} of {k[0]} delivered offset {off} below the range's from {st['from']}")
                break
            if off < st["to"]:
                st["_recs"].append(Record(msg))
            if off >= st["to"] - 1:
                st["passed_by"] = f"record at offset {off}"
                left.discard(k)
                c.pause([TopicPartition(k[0], k[1])])
        for (t, p), st in sorted(state.items(), key=lambda kv: (kv[1]["op"], kv[1]["partition"])):
            recs = st.pop("_recs")
            st["records"] = len(recs)
            r.partitions.append(st)
            r.records.extend(recs)
        r.complete = not r.reasons
        return r
    finally:
        wm.close()
        c.close()

