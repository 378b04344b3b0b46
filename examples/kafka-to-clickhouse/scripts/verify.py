#!/usr/bin/env python3
"""Checks sensor_window_stats against an expectation recomputed from workload.py alone.

Every closed window must be there with its exact reading count, minimum and maximum and an
average within 1e-6; no window outside the workload and not the last, still-open one may be
there; copies of a window (at-least-once delivery may write one twice) must be identical,
and with --exactly-once there must be none. Reads every physical row (no FINAL), so
duplicates are counted, not hidden.

Usage: verify.py [--exactly-once] [TABLE]
"""
import os
import sys

from clickhouse_driver import Client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload  # noqa: E402


def main():
    host = os.environ.get("CLINK_CLICKHOUSE_HOST", "127.0.0.1")
    port = int(os.environ.get("CLINK_CLICKHOUSE_PORT", "9000"))
    args = sys.argv[1:]
    exactly_once = "--exactly-once" in args
    args = [a for a in args if a != "--exactly-once"]
    table = args[0] if args else "sensor_window_stats"
    client = Client(host=host, port=port, user="clink", password="clink")
    rows = client.execute(f"SELECT sensor_id, window_start, window_end, readings, avg_temp_c, "
                          f"min_temp_c, max_temp_c FROM {table}")
    want = workload.expected_windows()
    got = {}
    problems = []
    for s, ws, we, n, avg, mn, mx in rows:
        key = (s, ws)
        row = (we, n, mn, mx, avg)
        if key in got and got[key] != row:
            problems.append(f"window {key} has two different copies: {got[key]} and {row}")
        got.setdefault(key, row)
    copies = len(rows)
    for key, (n, mn, mx, avg) in want.items():
        if key not in got:
            problems.append(f"window {key} is missing")
            continue
        we, gn, gmn, gmx, gavg = got[key]
        if we != key[1] + workload.WINDOW_MS or gn != n or gmn != mn or gmx != mx or abs(gavg - avg) > 1e-6:
            problems.append(f"window {key}: got end={we} n={gn} min={gmn} max={gmx} avg={gavg}, "
                            f"expected n={n} min={mn} max={mx} avg={avg}")
    unexpected = set(got) - set(want)
    for key in sorted(unexpected):
        why = "is still open and must not have fired" if key in workload.open_windows() else "is not part of the workload"
        problems.append(f"window {key} {why}")
    present = len(set(want) & set(got))
    print(f"verify: {present} / {len(want)} closed windows in ClickHouse")
    print(f"verify: {len(got)} windows compared with the expectation recomputed from workload.py")
    if not problems:
        print("verify: every window's reading count, min and max match exactly; every average within 1e-6")
    dups = copies - len(got)
    print(f"verify: {copies} rows for {len(got)} windows: " +
          ("no duplicates" if dups == 0 else f"{dups} duplicate copies, all identical"))
    if exactly_once and dups:
        problems.append(f"{dups} duplicate copies, though the job wrote exactly once")
    for p in problems[:20]:
        print("verify: FAIL: " + p)
    print("verify: " + ("PASS" if not problems else f"FAIL ({len(problems)} problems)"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
