"""The reference's own window rules: one keyed tumbling window of COUNT and SUM, with the
order of a job's reads decided by bounds, never assumed.

DESIGN
  The rules, as clink documents them (docs/sql.md, "Watermarks"), implemented here from that
  text and nothing of clink's code: each Kafka partition's watermark is its largest event time
  so far less `lag_ms`; a source subtask's is the least over its partitions; the window
  operator's the least over its inputs. A window [start, end) (start = offset + k·size) fires
  once, when the operator's watermark reaches end + lateness_ms; a record whose window has
  fired is late and dropped. Rows carry the watermark in effect before them.

  Which records were late depends on how the job interleaved its partitions, which offsets do
  not record. So each record is decided by two bounds on the watermark W it met:
    upper  W ≤ min(its partition's largest earlier event time, the least over all partitions
           of their largest event time before the next lineage checkpoint's positions) − lag
           (aligned barriers let nothing past a barrier through first)
    lower  W ≥ the watermark the sink recorded at the previous lineage checkpoint's barrier
  and its window's close c = end + lateness: c above the upper bound → folded in; c at or
  below the lower bound → dropped; otherwise undetermined, and its window is left out of the
  rows (the result is partial), never guessed. A window is owed (final) at checkpoint N when
  c ≤ the watermark recorded at N; windows above it are open and not owed yet.

  Records the job's filter drops still move their partition's watermark: pass them as events
  with `row=None`. A record without event time moves nothing and belongs to no window.
  `source_bounds` is what the audit holds recorded watermarks to (reference.watermark).
"""

import math

__all__ = ["TumbleRules", "Event", "Checkpoint", "WindowResult", "evaluate", "source_bounds"]

NEG = -math.inf


class TumbleRules:
    def __init__(self, size_ms, lag_ms, lateness_ms=0, offset_ms=0):
        if size_ms <= 0:
            raise ValueError(f"a tumbling window of {size_ms} ms")
        if lag_ms < 0 or lateness_ms < 0:
            raise ValueError("the lag and the lateness cannot be negative")
        self.size_ms, self.lag_ms = int(size_ms), int(lag_ms)
        self.lateness_ms, self.offset_ms = int(lateness_ms), int(offset_ms) % int(size_ms)

    def window_of(self, t):
        start = (t - self.offset_ms) // self.size_ms * self.size_ms + self.offset_ms
        return start, start + self.size_ms

    def close_of(self, end):
        return end + self.lateness_ms

    def describe(self):
        """The rules as the artifact declares them (compared with the job graph's)."""
        return {"window": "tumble", "size_ms": self.size_ms, "offset_ms": self.offset_ms,
                "lateness_ms": self.lateness_ms, "watermark_lag_ms": self.lag_ms,
                "aggregates": ["COUNT(*)", "SUM"], "watermark": "per-partition bounded out of orderness",
                "late": "dropped once end + lateness <= watermark"}


class Event:
    """One source record: its partition and offset, event time (ms, or None), and `row` —
    (key, value) when it reaches the window (key a tuple, value summed), None when filtered."""
    __slots__ = ("partition", "offset", "time_ms", "row")

    def __init__(self, partition, offset, time_ms, row):
        self.partition, self.offset, self.time_ms, self.row = partition, offset, time_ms, row


class Checkpoint:
    """A lineage checkpoint: each partition's next offset, and the watermark the sink recorded
    at its barrier (None: none yet)."""
    __slots__ = ("checkpoint", "positions", "watermark")

    def __init__(self, checkpoint, positions, watermark):
        self.checkpoint, self.positions, self.watermark = checkpoint, dict(positions), watermark


class WindowResult:
    def __init__(self):
        self.rows = []          # (key, start, end, count, sum): final and determined
        self.undetermined = []  # (key, start, end, why): final, but a record's fate unknown
        self.open = []          # (key, start, end): not owed at the checkpoint
        self.bounds = []        # (checkpoint, source bound) per lineage checkpoint

    @property
    def partial(self):
        return bool(self.undetermined)


def _by_partition(events, partitions):
    per = {p: [] for p in partitions}
    for e in events:
        if e.partition not in per:
            raise ValueError(f"an event of partition {e.partition}, which the lineage does not name")
        per[e.partition].append(e)
    for p, lst in per.items():
        lst.sort(key=lambda e: e.offset)
        for a, b in zip(lst, lst[1:]):
            if a.offset == b.offset:
                raise ValueError(f"partition {p} has two events at offset {a.offset}")
    return per


def source_bounds(rules, start, lineage, events):
    """[(checkpoint, bound)]: the highest watermark the source allows at each lineage
    checkpoint — the least over partitions of their largest event time before its positions,
    less the lag (−inf while a partition has delivered nothing with event time)."""
    per = _by_partition(events, start.keys())
    out = []
    for ck in lineage:
        least = math.inf
        for p, lst in per.items():
            m = max((e.time_ms for e in lst if e.offset < ck.positions[p] and e.time_ms is not None), default=NEG)
            least = min(least, m)
        out.append((ck.checkpoint, least - rules.lag_ms if least != NEG else NEG))
    return out


def evaluate(rules, start, lineage, events):
    """The rows owed at lineage[-1] from a run that began with no state at `start` (each
    partition's first offset), through the lineage checkpoints (ascending)."""
    if not lineage:
        raise ValueError("a lineage of no checkpoints")
    for a, b in zip([Checkpoint(0, start, None)] + lineage, lineage):
        for p in start:
            if b.positions.get(p, -1) < a.positions.get(p, -1):
                raise ValueError(f"partition {p} goes back from {a.positions.get(p)} to {b.positions.get(p)}")
    per = _by_partition(events, start.keys())
    res = WindowResult()
    res.bounds = source_bounds(rules, start, lineage, events)
    windows = {}  # (key, start) -> [count, sum, why-undetermined or None]
    for p, lst in per.items():
        seen_max = NEG
        for e in lst:
            if e.offset < start[p] or e.offset >= lineage[-1].positions[p]:
                continue
            k = next(i for i, ck in enumerate(lineage) if e.offset < ck.positions[p])
            if e.time_ms is not None and e.row is not None:
                upper = min(seen_max - rules.lag_ms if seen_max != NEG else NEG, res.bounds[k][1])
                prev = lineage[k - 1].watermark if k > 0 else None
                lower = NEG if prev is None else prev
                ws, we = rules.window_of(e.time_ms)
                c = rules.close_of(we)
                key, value = e.row
                w = windows.setdefault((key, ws), [0, 0, None])
                if c > upper:
                    w[0] += 1
                    w[1] += value
                elif c <= lower:
                    pass  # dropped as late, whatever the order
                elif w[2] is None:
                    w[2] = (f"partition {p} offset {e.offset}: its window closes at {c}, between the "
                            f"watermark's bounds ({lower}, {upper}]")
            if e.time_ms is not None:
                seen_max = max(seen_max, e.time_ms)
    wm = lineage[-1].watermark
    for (key, ws), (n, total, why) in sorted(windows.items(), key=lambda kv: (repr(kv[0][0]), kv[0][1])):
        we = ws + rules.size_ms
        if wm is None or rules.close_of(we) > wm:
            res.open.append((key, ws, we))
        elif why is not None:
            res.undetermined.append((key, ws, we, why))
        elif n:
            res.rows.append((key, ws, we, n, total))
    return res
