#!/usr/bin/env python3
"""Chores and checks of run.sh (addresses from scripts/services.sh env; LINE=18.16|26.9):
  recon.py setup TOPIC DB TABLE          the topic (2 partitions) and the table (26.9: an Atomic DB)
  recon.py produce TOPIC N RATE OUT      N records at RATE/s, each also written to OUT (JSON lines)
  recon.py wrote_past CAP CKPT DB.TABLE  exit 0 once the table holds rows no completed checkpoint's
                                         ledger acknowledged (rows written after the last one)
  recon.py settled CAP CKPT DB.TABLE OUT exit 0 once every expected key is in the table and the two
                                         newest completed checkpoints' intervals are empty
  recon.py pick BUNDLE                   prints: the restore scope's checkpoint, a scope with rows
                                         of the rerun, an empty scope, and three keys of the second
  recon.py oracle OUT DB.TABLE           the independent reference: the table against this script's
                                         own filter/projection of the produced records
  recon.py sql DB.TABLE STATEMENT        runs a statement as the admin, @T the table (scenarios)
  recon.py wait_mutations DB.TABLE       until every mutation of the table is done
  recon.py reference SCOPE OUT good|bad  an independent reference for the scope (incident scope
                                         --json): python/clink-reference reads its exact Kafka
                                         range, this script's own filter and projection make the
                                         rows (bad: a filter off by one), the artifact goes to OUT
  recon.py check REPORT EXIT [kind=N …] [explained=restore|resend|none] [absent=KEY] [why=TEXT]
                [sources=TOPIC] [audit.CHECK=STATUS]
                                         the report's exit and counts of each kind of difference
No clink code is used here: the reference is computed from the produced records alone.
"""
import json
import os
import re
import sys
import time
from decimal import Decimal
from pathlib import Path

from clickhouse_driver import Client

LINE = os.environ.get("LINE", "18.16")
PORT = int(os.environ["CLINK_CLICKHOUSE26_PORT" if LINE == "26.9" else "CLINK_CLICKHOUSE_PORT"])


def ch():
    return Client(host="127.0.0.1", port=PORT, user="default", password="", connect_timeout=5,
                  send_receive_timeout=60)


def setup(topic, db, table):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from kafka_topic import create_topic
    create_topic(os.environ["CLINK_KAFKA_BROKERS"], topic, 2)
    c = ch()
    if db != "default":
        c.execute("CREATE DATABASE IF NOT EXISTS %s ENGINE = Atomic" % db)
    c.execute("DROP TABLE IF EXISTS %s.%s" % (db, table))
    c.execute("CREATE TABLE %s.%s (id Int64, name String, amount Float64, price Decimal(10, 2), "
              "ts DateTime) ENGINE = MergeTree ORDER BY id" % (db, table))


def produce(topic, n, rate, out):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": os.environ["CLINK_KAFKA_BROKERS"]})
    start = time.monotonic()
    with open(out, "w") as f:
        for i in range(n):
            rec = {"id": i, "name": "n%d" % i, "amount": i * 0.25, "price": float("%d.%02d" % (i, i % 100)),
                   "ts": 1700000000000 + i * 1000}
            text = json.dumps(rec)
            f.write(text + "\n")
            p.produce(topic, text.encode(), partition=i % 2)
            p.poll(0)
            lag = start + (i + 1) / rate - time.monotonic()
            if lag > 0:
                time.sleep(lag)   # pacing the producer, not synchronisation
    p.flush(30)


def completed(ckpt):
    meta = Path(ckpt) / "v1" / "_meta"
    return sorted(int(m.group(1)) for f in meta.glob("completed-*")
                  if (m := re.match(r"completed-(\d+)$", f.name)))


def evidence(cap):
    out = {}
    for f in Path(cap).glob("op-*/subtask-*/epoch-*.sink.json"):
        n = int(re.match(r"epoch-(\d+)\.sink\.json$", f.name).group(1))
        out.setdefault(n, []).append(json.loads(f.read_text()))
    return out


def count(table):
    return ch().execute("SELECT count() FROM %s" % table)[0][0]


def wrote_past(cap, ckpt, table):
    done = set(completed(ckpt))
    ev = evidence(cap)
    acked = sum(d["account"]["rows"] for n, ds in ev.items() if n in done for d in ds)
    sys.exit(0 if done and count(table) > acked else 1)


def expected_rows(out):
    rows = {}
    for ln in Path(out).read_text().splitlines():
        r = json.loads(ln)
        if r["id"] % 10 == 3:   # the job's WHERE id % 10 <> 3
            continue
        rows[r["id"]] = (r["id"], r["name"].upper(), r["amount"] * 2,
                         Decimal(repr(r["price"])).quantize(Decimal("0.01")), r["ts"] // 1000)
    return rows


def settled(cap, ckpt, table, out):
    keys = ch().execute("SELECT uniqExact(id) FROM %s" % table)[0][0]
    done = completed(ckpt)
    ev = evidence(cap)
    tail = [ev.get(n) for n in done[-2:]]
    quiet = len(tail) == 2 and all(t and all(d["records"] == 0 for d in t) for t in tail)
    sys.exit(0 if keys == len(expected_rows(out)) and quiet else 1)


def cap_ids(bundle, n):
    import pyarrow.ipc as ipc
    ids = []
    for f in Path(bundle, "capture").glob("op-*/subtask-*/epoch-%d.cap" % n):
        if json.loads((f.parent.parent / "op.json").read_text())["kind"] != "sink":
            continue   # a calc's capture holds its input, before the filter
        t = ipc.open_stream(f.read_bytes()).read_all().to_pydict()
        ids += [i for e, i in zip(t["__event"], t["id"]) if e == 0]
    return ids


def pick(bundle):
    done = completed(Path(bundle) / "checkpoints")
    ev = evidence(Path(bundle) / "capture")
    restore = full = empty = None
    for n in done:
        for d in ev.get(n, []):
            if d["restored_from"] and d["previous_barrier"] == d["restored_from"] and restore is None:
                restore = n
    for n in done:
        ds = ev.get(n, [])
        if not ds:
            continue
        if restore and n > restore and sum(d["records"] for d in ds) >= 3 and full is None and \
                all(d["previous_barrier"] in done for d in ds):
            full = n
        if sum(d["records"] for d in ds) == 0 and all(d["previous_barrier"] in done for d in ds):
            empty = n
    if not (restore and full and empty):
        sys.exit("could not pick the scopes: restore %s, with rows %s, empty %s" % (restore, full, empty))
    ids = sorted(cap_ids(bundle, full))
    print(restore, full, empty, ids[0], ids[len(ids) // 2], ids[-1])


def project(r):
    """The job's projection, written again from its SQL (no clink code)."""
    return (r["id"], r["name"].upper(), r["amount"] * 2,
            Decimal(repr(r["price"])).quantize(Decimal("0.01")), r["ts"] // 1000)


def reference(scope_path, out, which):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "clink-reference"))
    from clink_reference import Scope, read_range, write_artifact
    scope = Scope.load(scope_path)
    got = read_range(scope, os.environ["CLINK_KAFKA_BROKERS"], deadline_s=60)
    drop = 3 if which == "good" else 4   # the job's WHERE id % 10 <> 3, or a defect
    rows = [project(r) for r in (json.loads(x.value) for x in got.records) if r["id"] % 10 != drop]
    cols = [{"name": "id", "type": "Int64", "key": True}, {"name": "name", "type": "String"},
            {"name": "amount", "type": "Float64"}, {"name": "price", "type": "Decimal(10, 2)"},
            {"name": "ts", "type": "DateTime"}]
    write_artifact(out, scope, cols, rows, read=got,
                   reference={"implementation": "examples/destination-reconciliation/recon.py",
                              "version": which})
    if not got.complete:
        sys.exit("the reference is incomplete: %s" % "; ".join(got.reasons))
    print("reference: %d records read, %d rows" % (len(got.records), len(rows)))


def oracle(out, table):
    want = expected_rows(out)
    got = ch().execute("SELECT DISTINCT id, name, amount, price, toUnixTimestamp(ts) FROM %s" % table)
    have = {r[0]: r for r in got}
    missing = [k for k in want if k not in have]
    wrong = [k for k in want if k in have and tuple(have[k]) != want[k]]
    extra = [k for k in have if k not in want]
    if missing or wrong or extra:
        sys.exit("the table does not hold the reference's rows: %d missing (%s), %d different (%s), "
                 "%d unexpected" % (len(missing), missing[:5], len(wrong),
                                    [(have[k], want[k]) for k in wrong[:3]], len(extra)))
    print("oracle: the table holds exactly the reference's %d rows (distinct)" % len(want))


def wait_mutations(table):
    db, t = table.split(".")
    deadline = time.monotonic() + 60
    while ch().execute("SELECT count() FROM system.mutations WHERE database = %(d)s AND "
                       "table = %(t)s AND is_done = 0", {"d": db, "t": t})[0][0]:
        if time.monotonic() > deadline:
            sys.exit("a mutation of %s is not done after 60 s" % table)
        time.sleep(0.1)


def check(report, want_exit, *expect):
    rep = json.loads(Path(report).read_text())
    assert rep["format"] == "clink-reconcile-report" and rep["version"] == 1, rep.get("format")
    ok = True
    if rep["exit"] != int(want_exit):
        print("exit %s, expected %s" % (rep["exit"], want_exit))
        ok = False
    rows = rep.get("rows") or {}
    for e in expect:
        k, v = e.split("=", 1)
        if k in ("missing", "changed", "duplicated", "unexpected"):
            got = rows.get(k, {}).get("count")
            if got != int(v):
                print("%s: %s, expected %s" % (k, got, v))
                ok = False
        elif k == "explained":
            firsts = rows.get("duplicated", {}).get("first", [])
            why = [f["explained"] for f in firsts]
            good = all((w or "none").split(":")[0] == v for w in why) and firsts
            if not good:
                print("duplicates explained %s, expected %s" % (why, v))
                ok = False
        elif k == "absent":   # a key that must appear in no discrepancy
            text = json.dumps(rows)
            if '"id": %s}' % v in text or '"id": %s,' % v in text:
                print("key %s appears in the discrepancies" % v)
                ok = False
        elif k == "sources":   # the scope's Kafka ranges and the log they belong to
            src = rep["scope"]["sources"] or []
            if not (src and src[0]["topic"] == v and all(
                    p["from"] is not None and p["to"] >= p["from"] for p in src[0]["partitions"])):
                print("the scope's sources are not topic %s's ranges: %s" % (v, src))
                ok = False
        elif k.startswith("audit."):   # an audit check's status (reconcile --reference)
            st = [c["status"] for c in rep["checks"] if c["name"] == k]
            if st != [v]:
                print("%s: %s, expected %s" % (k, st, v))
                ok = False
        elif k == "why":
            text = json.dumps(rep["checks"]) + json.dumps(rep.get("refused"))
            if v not in text:
                print("no check says %r: %s" % (v, text))
                ok = False
    if not ok:
        print(json.dumps({"checks": rep["checks"], "refused": rep.get("refused"),
                          "rows": {k: rows.get(k, {}).get("count") for k in
                                   ("missing", "changed", "duplicated", "unexpected")}}, indent=1))
        sys.exit(1)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    fns = {"setup": setup, "produce": lambda t, n, r, o: produce(t, int(n), float(r), o),
           "wrote_past": wrote_past, "settled": settled, "pick": pick, "oracle": oracle,
           "sql": lambda t, s: print(ch().execute(s.replace("@T", t)) or ""),
           "wait_mutations": wait_mutations, "reference": reference,
           "check": check}
    fns[cmd](*args)
