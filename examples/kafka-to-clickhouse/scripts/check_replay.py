#!/usr/bin/env python3
"""What run.sh needs around the README's "Replay an incident" block:
  check_replay.py pick CAPTURE_DIR CHECKPOINT_DIR   print the newest epoch in which the window
        operator (op 2) emitted windows (operator 3's capture of it holds records) and whose
        starting checkpoint is still on disk
  check_replay.py check GOLDEN.ndjson               every window the replay emitted is one the
        workload closes, with its exact count, min and max and its average within 1e-6
        (workload.py alone: nothing the engine printed); at least one
Reads the captures with pyarrow (their schema metadata), not with clink.
"""
import json
import os
import sys
from pathlib import Path

import pyarrow.ipc as ipc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload  # noqa: E402

WINDOW_OP, NEXT_OP = 2, 3


def meta(f):
    return {k.decode(): v.decode() for k, v in ipc.open_stream(f.read_bytes()).schema.metadata.items()}


def pick(cap, ck):
    op = json.loads((cap / f"op-{WINDOW_OP}" / "op.json").read_text())
    if op["kind"] != "agg":
        sys.exit(f"check_replay: operator {WINDOW_OP} is a {op['kind']}, not the window aggregation")
    best = None
    for f in (cap / f"op-{WINDOW_OP}" / "subtask-0").glob("epoch-[0-9]*.cap"):
        epoch = int(f.name[6:-4])
        m = meta(f)
        start, task = int(m["clink.capture.from_checkpoint"]), m["clink.capture.task"]
        nxt = cap / f"op-{NEXT_OP}" / "subtask-0" / f.name
        if not nxt.exists() or int(meta(nxt)["clink.capture.records_seen"]) == 0:
            continue  # no window closed in it
        if m["clink.capture.truncated"] == "true":
            continue
        if start and not (ck / "v1" / task / f"checkpoint-{start}.snap").exists():
            continue  # pruned since
        best = epoch if best is None or epoch > best else best
    if best is None:
        sys.exit("check_replay: no interval of the window operator emitted windows and still has "
                 "its starting checkpoint")
    print(best)


def check(golden):
    want = workload.expected_windows()
    rows = [json.loads(l) for l in golden.read_text().splitlines() if "__watermark" not in l]
    problems = []
    for r in rows:
        key = (r["sensor_id"], r["window_start"])
        if key not in want:
            problems.append(f"window {key} is not one the workload closes")
            continue
        n, mn, mx, avg = want[key]
        if (r["window_end"] != key[1] + workload.WINDOW_MS or r["agg$0"] != n or r["agg$2"] != mn
                or r["agg$3"] != mx or abs(r["agg$1"] - avg) > 1e-6):
            problems.append(f"window {key}: replayed {r}, expected n={n} min={mn} max={mx} avg={avg}")
    if not rows:
        problems.append("the replay emitted no window")
    for p in problems:
        print(f"check_replay: {p}")
    if problems:
        sys.exit(1)
    print(f"check_replay: {len(rows)} replayed windows match the expectation from workload.py")


if __name__ == "__main__":
    if sys.argv[1:2] == ["pick"] and len(sys.argv) == 4:
        pick(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1:2] == ["check"] and len(sys.argv) == 3:
        check(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
