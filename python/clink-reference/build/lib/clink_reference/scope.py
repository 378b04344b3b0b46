"""The scope document a reference is computed over, and the fingerprint that binds it.

DESIGN
  `clink incident scope BUNDLE --checkpoint N --json` writes the scope of completed checkpoint
  N (`clink-scope`, docs/incidents.md): the job and its fingerprint, the runner attempts, the
  intervals back to the start checkpoint, and per Kafka source the topic, the log's identity
  (cluster id, topic id), the isolation level and each partition's range [from, to). A
  reference reads exactly those ranges; an artifact carries the document verbatim and a
  fingerprint over what identifies the scope, so the audit can refuse a reference computed
  for another checkpoint, run, topic incarnation or schema, naming the first field that
  differs.

  The fingerprint is SHA-256 over a line-oriented text (one fact a line, fixed order), so any
  implementation — this one, the audit's C reader — computes it the same way:

      clink-reference-fingerprint 1
      job <id|-> <job fingerprint>
      checkpoint <N>
      start <checkpoint> <restored_from>
      attempt <attempt>                       one per distinct attempt, sorted
      interval <checkpoint> <previous_barrier> newest first, as the document lists them
      source <op> <topic> <cluster_id|-> <topic_id|-> <isolation_level>
      partition <op> <partition> <from|-> <to|->   by partition number
      column <name> <type> <key|->            the artifact's output columns, in order

  Every line ends with "\n". Fields never hold spaces or newlines (a topic or column name
  that does is refused: ScopeError).
"""

import hashlib
import json

__all__ = ["Scope", "ScopeError", "fingerprint_text"]

SUPPORTED_VERSIONS = (1,)


class ScopeError(ValueError):
    """A scope document this library cannot read, naming what is wrong."""


def _field(v, what):
    s = "-" if v is None else str(v)
    if not s or any(c.isspace() for c in s):
        raise ScopeError(f"{what} {s!r} is empty or holds white space; the fingerprint cannot carry it")
    return s


class Scope:
    """A parsed scope document; `text` is the document exactly as read."""

    def __init__(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        self.text = text
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise ScopeError(f"the scope document is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
        if not isinstance(doc, dict) or doc.get("format") != "clink-scope":
            raise ScopeError("not a scope document: its format is not \"clink-scope\"")
        if doc.get("version") not in SUPPORTED_VERSIONS:
            raise ScopeError(f"scope document version {doc.get('version')!r} is not one this "
                             f"library reads ({', '.join(map(str, SUPPORTED_VERSIONS))})")
        for k in ("checkpoint", "job", "intervals", "start", "sources", "status"):
            if k not in doc:
                raise ScopeError(f"the scope document has no \"{k}\"")
        self.doc = doc

    @classmethod
    def load(cls, path):
        with open(path, "rb") as f:
            return cls(f.read())

    @property
    def checkpoint(self):
        return self.doc["checkpoint"]

    @property
    def complete(self):
        return self.doc.get("status") == "complete"

    def attempts(self):
        """Every runner attempt the scope names (the document's, and each sink subtask's)."""
        out = set()
        if self.doc.get("attempt"):
            out.add(self.doc["attempt"])
        for s in self.doc.get("sinks") or []:
            for st in s.get("subtasks") or []:
                if st.get("attempt"):
                    out.add(st["attempt"])
        return sorted(out)

    def kafka_sources(self):
        return [s for s in self.doc["sources"] if s.get("connector") == "kafka"]

    def ranges(self):
        """[(op, topic, partition, from, to)] of every Kafka source, by op and partition."""
        out = []
        for s in self.kafka_sources():
            for p in sorted(s.get("partitions") or [], key=lambda p: p["partition"]):
                out.append((s["op"], s.get("topic"), p["partition"], p.get("from"), p.get("to")))
        return out

    def fingerprint_text(self, columns):
        return fingerprint_text(self.doc, columns)

    def fingerprint(self, columns):
        return hashlib.sha256(self.fingerprint_text(columns).encode("utf-8")).hexdigest()


def fingerprint_text(doc, columns):
    job = doc.get("job") or {}
    lines = ["clink-reference-fingerprint 1",
             f"job {_field(job.get('id'), 'job id')} {_field(job.get('fingerprint') or None, 'job fingerprint')}",
             f"checkpoint {_field(doc.get('checkpoint'), 'checkpoint')}"]
    start = doc.get("start") or {}
    lines.append(f"start {_field(start.get('checkpoint'), 'start checkpoint')} "
                 f"{_field(start.get('restored_from'), 'restored_from')}")
    attempts = set()
    if doc.get("attempt"):
        attempts.add(doc["attempt"])
    for s in doc.get("sinks") or []:
        for st in s.get("subtasks") or []:
            if st.get("attempt"):
                attempts.add(st["attempt"])
    lines += [f"attempt {_field(a, 'attempt')}" for a in sorted(attempts)]
    for iv in doc.get("intervals") or []:
        lines.append(f"interval {_field(iv.get('checkpoint'), 'interval')} "
                     f"{_field(iv.get('previous_barrier'), 'previous_barrier')}")
    for s in doc.get("sources") or []:
        if s.get("connector") != "kafka":
            continue
        op = _field(s.get("op"), "source op")
        lines.append(f"source {op} {_field(s.get('topic'), 'topic')} "
                     f"{_field(s.get('cluster_id'), 'cluster id')} {_field(s.get('topic_id'), 'topic id')} "
                     f"{_field(s.get('isolation_level') or 'read_committed', 'isolation level')}")
        for p in sorted(s.get("partitions") or [], key=lambda p: p["partition"]):
            lines.append(f"partition {op} {_field(p['partition'], 'partition')} "
                         f"{_field(p.get('from'), 'from')} {_field(p.get('to'), 'to')}")
    for c in columns:
        lines.append(f"column {_field(c['name'], 'column name')} {_field(c['type'].replace(' ', ''), 'column type')} "
                     f"{'key' if c.get('key') else '-'}")
    return "".join(line + "\n" for line in lines)
