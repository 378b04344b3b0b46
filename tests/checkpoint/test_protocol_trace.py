"""The protocol trace and formal/check-trace on a real kill-and-rerun: the engine's trace is
accepted, and the same trace rewritten to the seed's old behaviour (the rerun restores nothing
and reads from offset 0) is rejected at the rerun's restore point."""
import json
import os
import subprocess

from conftest import CHECK_TRACE, check_protocol_trace


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
