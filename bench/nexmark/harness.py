#!/usr/bin/env python3
"""DESIGN: the measuring and judging half of bench/nexmark/compare.sh (standard library only).

  harness.py run --result FILE [--watch PATH] [--stdout FILE] [--timeout S] -- COMMAND...
      Runs COMMAND as a child and waits for it with wait4(), so the CPU time (user + system)
      and peak RSS come from the kernel's accounting of that process, every thread of it and
      every descendant it waited for; the Kafka broker is a separate process and is never
      counted. With --watch, PATH (a file, or PATH-* files of a parallel sink) is polled every
      5 ms and the time from the child's start to the first byte in it is recorded. Writes one
      JSON object to FILE: rc, wall_s, cpu_s, user_s, sys_s, maxrss_kb, first_output_s (null
      when nothing appeared). The child's stderr passes through, and so does its stdout unless
      --stdout sends it to a file (which --watch may then watch). With --timeout, a child still
      running after S seconds (a broker that went away leaves a Kafka client waiting for ever)
      gets SIGTERM, then SIGKILL 10 s later, and the result says "timed_out": true, rc 124.

  harness.py compare [--keys K1,K2] CLINK_OUT FLINK_OUT
      The correctness gate. Each side's output is NDJSON, one object per row (clink: its file
      sink, PATH or PATH-*; Flink: the launcher's --output, with "op"). Values are compared
      after normalising numbers (integers and decimals exactly, as decimals without trailing
      zeros; doubles to 12 significant digits). Without --keys the outputs must be equal
      multisets of insert-only rows. With --keys (an update stream), each side's rows are
      replayed in order — insert/update set the row of its key, delete removes it,
      update_before is skipped — and the final rows per key must be equal. Prints 'equal: N
      rows' and exits 0, or prints the differences (counts and up to 5 rows each way) and
      exits 1.
"""
import glob
import json
import os
import subprocess
import sys
import time
from collections import Counter
from decimal import Decimal


def _paths(path):
    if os.path.exists(path):
        return [path]
    return sorted(glob.glob(glob.escape(path) + "-*"))


def cmd_run(args):
    result, watch, stdout, timeout, cmd = None, None, None, None, []
    i = 0
    while i < len(args):
        if args[i] == "--result":
            result, i = args[i + 1], i + 2
        elif args[i] == "--watch":
            watch, i = args[i + 1], i + 2
        elif args[i] == "--stdout":
            stdout, i = args[i + 1], i + 2
        elif args[i] == "--timeout":
            timeout, i = float(args[i + 1]), i + 2
        elif args[i] == "--":
            cmd = args[i + 1:]
            break
        else:
            sys.exit("harness.py run: unknown argument %r" % args[i])
    if not result or not cmd:
        sys.exit("usage: harness.py run --result FILE [--watch PATH] [--stdout FILE] -- COMMAND...")
    out_f = open(stdout, "wb") if stdout else None
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, stdout=out_f)
    first = None
    status = rusage = None
    timed_out, killed_at = False, None
    while True:
        pid, st, ru = os.wait4(child.pid, os.WNOHANG)
        if pid:
            status, rusage = st, ru
            break
        now = time.monotonic() - t0
        if timeout is not None and not timed_out and now > timeout:
            print("harness.py: %s still running after %g s: stopping it" % (cmd[0], timeout),
                  file=sys.stderr)
            child.terminate()
            timed_out, killed_at = True, now
        if timed_out and now > killed_at + 10:
            child.kill()
        if watch and first is None:
            for p in _paths(watch):
                try:
                    if os.path.getsize(p) > 0:
                        first = time.monotonic() - t0
                        break
                except OSError:
                    pass
        time.sleep(0.005)
    wall = time.monotonic() - t0
    if out_f:
        out_f.close()
    child.returncode = 124 if timed_out else os.waitstatus_to_exitcode(status)
    if watch and first is None and any(os.path.getsize(p) > 0 for p in _paths(watch)):
        first = wall  # appeared in the last poll interval
    out = {
        "rc": child.returncode,
        "wall_s": round(wall, 3),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 3),
        "user_s": round(rusage.ru_utime, 3),
        "sys_s": round(rusage.ru_stime, 3),
        "maxrss_kb": rusage.ru_maxrss,
        "first_output_s": None if first is None else round(first, 3),
        "timed_out": timed_out,
    }
    with open(result, "w") as f:
        json.dump(out, f)
    return child.returncode


def _norm(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(Decimal(v))
    if isinstance(v, Decimal):
        if v == v.to_integral_value():
            return str(v.quantize(Decimal(1)))
        return str(v.normalize())
    if isinstance(v, float):
        return "%.12g" % v
    return json.dumps(v, sort_keys=True)


def _rows(path):
    rows = []
    for p in _paths(path):
        with open(p, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    rows.append(json.loads(line, parse_float=Decimal))
    return rows


def _canon(row, drop=("op",)):
    return tuple(sorted((k, _norm(v)) for k, v in row.items() if k not in drop))


def _final(rows, keys, side):
    state = {}
    for r in rows:
        op = r.get("op", "insert")
        key = tuple(_norm(r.get(k)) for k in keys)
        if op in ("insert", "update"):
            state[key] = _canon(r)
        elif op == "delete":
            state.pop(key, None)
        elif op != "update_before":
            raise SystemExit("%s: unknown op %r" % (side, op))
    return Counter(state.values())


def cmd_compare(args):
    keys = None
    if args and args[0] == "--keys":
        keys, args = args[1].split(","), args[2:]
    if len(args) != 2:
        sys.exit("usage: harness.py compare [--keys K1,K2] CLINK_OUT FLINK_OUT")
    a, b = _rows(args[0]), _rows(args[1])
    if keys:
        ca, cb = _final(a, keys, "clink"), _final(b, keys, "flink")
    else:
        for side, rows in (("clink", a), ("flink", b)):
            bad = [r for r in rows if r.get("op", "insert") != "insert"]
            if bad:
                print("%s: %d rows are not inserts in an append-only query, e.g. %s"
                      % (side, len(bad), json.dumps(bad[0], default=str)))
                return 1
        ca, cb = Counter(_canon(r) for r in a), Counter(_canon(r) for r in b)
    if ca == cb:
        print("equal: %d rows" % sum(ca.values()))
        return 0
    only_a, only_b = ca - cb, cb - ca
    print("DIFFERENT: %d rows only in clink's output, %d only in Flink's (of %d and %d)"
          % (sum(only_a.values()), sum(only_b.values()), sum(ca.values()), sum(cb.values())))
    for side, c in (("clink only", only_a), ("flink only", only_b)):
        for row in list(c)[:5]:
            print("  %s: %s" % (side, json.dumps(dict(row))))
    return 1


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("run", "compare"):
        sys.exit(__doc__)
    fn = cmd_run if sys.argv[1] == "run" else cmd_compare
    sys.exit(fn(sys.argv[2:]))


if __name__ == "__main__":
    main()
