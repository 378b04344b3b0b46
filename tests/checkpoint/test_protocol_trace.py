"""The protocol trace and formal/check-trace on a real kill-and-rerun: the engine's trace is
accepted, and the same trace rewritten to the seed's old behaviour (the rerun restores nothing
and reads from offset 0) is rejected at the rerun's restore point."""
import json
import os
import subprocess

from .conftest import CHECK_TRACE, check_protocol_trace


def events(trace_dir):
    """{file name: [event, ...]} of every process's trace."""
    return {p.name: [json.loads(line) for line in p.read_text().splitlines()]
            for p in sorted(trace_dir.glob("*.ndjson"))}


def write(trace_dir, traces):
    trace_dir.mkdir()
    for name, evs in traces.items():
        (trace_dir / name).write_text("".join(json.dumps(e) + "\n" for e in evs))


def killed_then_rerun(job, protocol_trace):
    j = job(rows=12000, rate=8000)
    j.first_checkpoint_then_kill()
    r = j.run()
    assert r.returncode == 0, r.stderr[-2000:]
    j.check(exactly_once=False)
    traces = events(protocol_trace)
    assert len(traces) == 2, f"one trace per process, got {list(traces)}"
    first, rerun = sorted(traces, key=lambda n: traces[n][0]["ts"])
    return traces, first, rerun


def test_trace_of_a_kill_and_rerun_is_accepted(job, protocol_trace):
    traces, first, rerun = killed_then_rerun(job, protocol_trace)
    # the events the model names are all there
    kinds = {e["event"] for evs in traces.values() for e in evs}
    for want in ("restore_point", "deploy", "trigger", "barrier", "snapshot_durable", "ack",
                 "marker", "commit", "recover", "clean_finish"):
        assert want in kinds, f"no {want} event in the traces"
    rp = [e for e in traces[rerun] if e["event"] == "restore_point"]
    assert rp and rp[0]["restore"] > 0, "the rerun did not restore a checkpoint"
    for evs in traces.values():
        assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
        assert all(a["ts"] <= b["ts"] for a, b in zip(evs, evs[1:]))
    assert check_protocol_trace(protocol_trace) is None


def test_rerun_rewritten_to_start_fresh_is_rejected_at_the_redeploy(job, protocol_trace,
                                                                    tmp_path):
    traces, first, rerun = killed_then_rerun(job, protocol_trace)
    # the old rerun: it never enters the protocol, restores nothing, reads from offset 0
    # and numbers its checkpoints from 1 again
    restored = next(e["restore"] for e in traces[rerun] if e["event"] == "restore_point")
    old = []
    for e in traces[rerun]:
        e = dict(e)
        if e["event"] in ("restore_point", "deploy"):
            e["restore"] = 0
            e.update({k: 0 for k in ("ids_above",) if k in e})
        if e["event"] == "recover":
            e["ckpt"] = 0
        old.append(e)
    bad = tmp_path / "rewritten"
    write(bad, {first: traces[first], rerun: old})
    r = subprocess.run([os.environ.get("CLINK_PYTHON") or "python3", str(CHECK_TRACE),
                        str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    # named: the rerun's restore point, its first event, and why
    assert f"{rerun}:1 " in r.stdout and "restore_point" in r.stdout, r.stdout
    assert f"the model restores checkpoint {restored}" in r.stdout, r.stdout
    # the untouched traces of the same run are accepted
    assert check_protocol_trace(protocol_trace) is None


def rewritten(traces, name, edit):
    """A copy of the traces with file `name`'s events replaced by edit(events)."""
    out = {n: [dict(e) for e in evs] for n, evs in traces.items()}
    out[name] = edit(out[name])
    return out


def check(tmp_path, label, traces):
    d = tmp_path / label
    write(d, traces)
    return subprocess.run([os.environ.get("CLINK_PYTHON") or "python3", str(CHECK_TRACE),
                           str(d)], capture_output=True, text=True, timeout=120)


def test_engine_traces_rewritten_to_each_defect_are_rejected(job, protocol_trace, tmp_path):
    """The rules that catch the model's mutants catch the same defects in a real trace."""
    traces, first, rerun = killed_then_rerun(job, protocol_trace)
    evs = traces[rerun]
    sink_task = next(e["task"] for e in evs if e["event"] == "recover" and e["sink"])

    def commit_after_next_barrier(evs):  # F1: a sink prepares N+1 before it commits N
        i = next(k for k, e in enumerate(evs) if e["event"] == "commit" and
                 e["task"] == sink_task)
        j = next(k for k, e in enumerate(evs) if k > i and e["event"] == "barrier" and
                 e["task"] == sink_task)
        n = evs[i]["ckpt"]
        moved = [e for k, e in enumerate(evs) if i <= k < j and (k == i or (
            e["event"] == "marker" and e["kind"] == "confirmed" and e["ckpt"] == n))]
        rest = [e for k, e in enumerate(evs) if not any(e is m for m in moved)]
        at = rest.index(evs[j]) + 1  # just after that barrier, with CONFIRMED-n after it
        return rest[:at] + moved + rest[at:]

    def commit_before_completed(evs):  # broadcast_before_marker
        i = next(k for k, e in enumerate(evs) if e["event"] == "commit")
        m = max(k for k, e in enumerate(evs[:i]) if e["event"] == "marker" and
                e["kind"] == "completed")
        c = evs.pop(i)
        evs.insert(m, c)
        return evs

    def id_reused(evs):  # id_reuse: the rerun numbers from 1 again
        base = next(e["ids_above"] for e in evs if e["event"] == "deploy")
        for e in evs:
            if "ckpt" in e and e["event"] != "recover" and e["ckpt"] > base:
                e["ckpt"] -= base
            if e["event"] == "deploy":
                e["ids_above"] = 0
        return evs

    for label, edit, why in (
            ("f1", commit_after_next_barrier, "before it committed checkpoint"),
            ("early-commit", commit_before_completed, "is durable"),
            ("id-reuse", id_reused, "numbers checkpoints above 0, below the id floor")):
        r = check(tmp_path, label, rewritten(traces, rerun, edit))
        assert r.returncode == 1 and why in r.stdout, f"{label}: {r.stdout}{r.stderr}"
    assert check_protocol_trace(protocol_trace) is None
