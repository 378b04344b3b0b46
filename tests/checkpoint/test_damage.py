"""A checkpoint directory (and the files around a job) damaged, missing or changed between two
runs, and long-running jobs with many checkpoints (issue 12, parts 2, 3 and 8's file sink).

Each test kills a real `clink run` at a fault point (or lets a full disk stop it), changes what
a careless operator or a failing disk would change, runs the same command again and judges the
result against conftest's recomputation of the generator or the bytes written before — never
against anything the engine says about itself:
- many checkpoints at a 1 ms interval: _meta and the snapshot directories stay bounded, and a
  rerun resumes from the newest checkpoint on disk;
- a damaged newest snapshot: an exactly-once file sink can take back what it committed after
  the checkpoint before, so the rerun falls back to it (and says so), and the output is exact;
- a task directory replaced by a file: refused, naming it; the committed output is untouched;
- an input file truncated or shifted under the checkpointed position: refused, naming it;
- the at-least-once file sink on a 64 KiB tmpfs (a real full disk, mounted by the test):
  the file ends in a whole line after ENOSPC, and a rerun with room completes it.
"""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import CLINK, FAULT_EXIT, Job, trace_external

EOS = ", delivery_guarantee = 'exactly_once'"


def snapshots(j, task=0):
    d = j.ckpt / "v1" / str(task)
    return sorted((int(p.name[len("checkpoint-"):-len(".snap")]), p) for p in d.iterdir()
                  if re.fullmatch(r"checkpoint-\d+\.snap", p.name))


def completed_ids(j):
    return sorted(int(p.name[len("completed-"):]) for p in (j.ckpt / "v1/_meta").iterdir()
                  if re.fullmatch(r"completed-\d+", p.name))


def restore_point(log):
    m = re.findall(r"restore point: checkpoint (\d+)", log)
    return int(m[-1]) if m else None


def assert_whole_lines(path):
    data = Path(path).read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends in a torn line: {data[-60:]!r}"
    for line in data.splitlines():
        json.loads(line)


def test_many_checkpoints_stay_bounded_and_resume_from_the_newest(tmp_path):
    j = Job(tmp_path, rows=400000, rate=20000, interval_ms=1)
    r = j.run(fault="after_completed:exit:400", timeout=300)
    assert r.returncode == FAULT_EXIT, r.stderr[-2000:]
    # the 400th completed is on disk (the fault struck right after its marker), not in the log
    assert len(j.checkpoint_ids()[0]) == 399
    meta = sorted(p.name for p in (j.ckpt / "v1/_meta").iterdir())
    assert len(meta) <= 12, f"{len(meta)} files in _meta: {meta[:20]}"
    assert len(snapshots(j)) <= 5, snapshots(j)
    newest = completed_ids(j)[-1]
    assert newest == 400, completed_ids(j)
    j.run_to_end()
    assert restore_point(j.logs[1]) == newest, j.logs[1][-2000:]
    j.check(exactly_once=False)
    assert len(list((j.ckpt / "v1/_meta").iterdir())) <= 12


def damage(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_damaged_newest_snapshot_falls_back_and_stays_exactly_once(tmp_path):
    j = Job(tmp_path, sink_options=EOS)
    r = j.run(fault="after_commit:exit:4")
    assert r.returncode == FAULT_EXIT, r.stderr[-2000:]
    newest = completed_ids(j)[-1]
    path = j.ckpt / "v1/0" / f"checkpoint-{newest}.snap"
    damage(path)
    r = j.run_to_end()
    log = j.logs[-1]
    assert f"checkpoint {newest} cannot be restored" in log, log[-3000:]
    assert str(path) in log
    older = restore_point(log)
    assert older is not None and older < newest, log[-3000:]
    assert f"fell back to checkpoint {older}" in log
    j.check(exactly_once=True)
    assert_whole_lines(j.out)


def test_task_directory_replaced_by_a_file_is_refused_and_output_kept(tmp_path):
    j = Job(tmp_path, sink_options=EOS)
    r = j.run(fault="after_commit:exit:4")
    assert r.returncode == FAULT_EXIT, r.stderr[-2000:]
    newest = completed_ids(j)[-1]
    before = j.out.read_bytes()
    assert before.count(b"\n") > 10
    task_dir = j.ckpt / "v1/0"
    for p in task_dir.iterdir():
        p.unlink()
    task_dir.rmdir()
    task_dir.write_text("not a directory\n")
    r = j.run()
    assert r.returncode == 1, r.stderr[-2000:]
    assert f"{task_dir}/checkpoint-{newest}.snap" in r.stderr, r.stderr[-2000:]
    assert "--fresh" in r.stderr
    assert "starting fresh" not in r.stderr
    assert j.out.read_bytes() == before, "the committed output was changed"


def file_job(tmp_path, lines):
    src = tmp_path / "in.json"
    src.write_text("".join(json.dumps({"id": i, "name": f"n{i:05d}"}) + "\n"
                           for i in range(lines)))
    out = tmp_path / "copy.json"
    sql = tmp_path / "copy.sql"
    sql.write_text(f"""
CREATE TABLE src (id BIGINT, name VARCHAR) WITH (connector = 'file', path = '{src}');
CREATE TABLE dst (id BIGINT, name VARCHAR) WITH (connector = 'file', path = '{out}');
INSERT INTO dst SELECT id, name FROM src;
""")
    ckpt = tmp_path / "ckpt"

    def run(fault=None):
        env = dict(os.environ, CLINK_LOG_LEVEL="info")
        env.pop("CLINK_FAULT", None)
        if fault:
            env["CLINK_FAULT"] = fault
        return subprocess.run([CLINK, "run", str(sql), "--checkpoint-dir", str(ckpt),
                               "--checkpoint-interval-ms", "1", "--max-restarts", "0"],
                              capture_output=True, text=True, timeout=120, env=env)
    return src, out, run


@pytest.mark.parametrize("change", ["truncated", "shifted"])
def test_input_changed_under_the_checkpointed_position_is_refused(tmp_path, change):
    src, out, run = file_job(tmp_path, 20000)
    r = run()
    assert r.returncode == 0, r.stderr[-2000:]
    # the state of a run killed after its final checkpoint, before it recorded the clean finish
    # (which makes the next run start over): its positions are at the end of the file
    (tmp_path / "ckpt/v1/_meta/clean-finish").unlink()
    trace_external(tmp_path / "ckpt", "remove_clean_finish")
    data = src.read_bytes()
    if change == "truncated":
        src.write_bytes(data[:100])
    else:  # one line more at the start: every later byte moves
        src.write_bytes(b'{"id": -1, "name": "inserted"}\n' + data)
    r = run()
    assert r.returncode == 1, r.stderr[-2000:]
    assert f"could not resume reading file '{src}'" in r.stderr, r.stderr[-2000:]
    assert "--fresh" in r.stderr
    # put back, the same rerun resumes and the copy holds every line (at least once)
    src.write_bytes(data)
    r = run()
    assert r.returncode == 0, r.stderr[-2000:]
    got = {json.loads(l)["id"] for l in out.read_text().splitlines()}
    assert got == set(range(20000))


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_file_sink_after_enospc_ends_in_a_whole_line_and_a_rerun_completes(tmp_path, small_fs):
    j = Job(tmp_path, rows=20000, rate=10000, interval_ms=20)
    j.out = small_fs / "out.json"
    j.sql.write_text(j.sql.read_text().replace(str(tmp_path / "out.json"), str(j.out)))
    r = j.run("--max-restarts", "0")
    assert r.returncode == 1, r.stderr[-2000:]
    assert "No space left on device" in r.stderr, r.stderr[-2000:]
    assert j.out.stat().st_size > 0
    assert_whole_lines(j.out)
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_fs)], check=True)
    j.run_to_end()
    assert_whole_lines(j.out)
    j.check(exactly_once=False)
