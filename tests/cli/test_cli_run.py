"""`clink run`: what a user sees when a job ends, is interrupted, or was written wrong.

Ctrl-C contract (docs/sql.md, src/cli/cmd_run.c): the first SIGINT stops the sources and lets
every record already read reach the sinks, then exits 0; a second one exits at once with 130.
The drain is checked by counting: the summary's "records read" equals "written" equals the
lines on stdout, each line whole JSON, each subtask's sequence without a gap.
"""

import fcntl
import json
import os
import re
import signal
import termios
import threading
import time

import pytest

from .conftest import DEADLINE_S

SUMMARY = re.compile(r"\[job\] (finished|stopped|failed): (\d+) records read, (\d+) written")


def datagen_sql(rows_per_second=None, rows=None):
    opts = ["connector = 'datagen'", "fields.id.kind = 'sequence'", "fields.name.length = '6'"]
    if rows_per_second:
        opts.append("rows_per_second = '%d'" % rows_per_second)
    if rows:
        opts.append("rows = '%d'" % rows)
    return ("CREATE TABLE gen (id BIGINT, name VARCHAR) WITH (%s);\n"
            "SELECT id, name FROM gen;\n" % ", ".join(opts))


def summary(stderr):
    m = SUMMARY.search(stderr)
    assert m, "no end-of-job summary on stderr:\n%s" % stderr
    return m.group(1), int(m.group(2)), int(m.group(3))


def check_rows(lines, parallelism):
    """Every line is one JSON object; subtask s's ids (s, s+P, …) come without gap or repeat."""
    ids = []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
        except ValueError:
            pytest.fail("line %d of stdout is not whole JSON: %r" % (i + 1, line))
        assert set(row) == {"id", "name"}, row
        assert isinstance(row["name"], str) and len(row["name"]) == 6, row
        ids.append(row["id"])
    assert len(ids) == len(set(ids)), "a row was printed twice"
    for s in range(parallelism):
        mine = sorted(i for i in ids if i % parallelism == s)
        assert mine == list(range(s, s + parallelism * len(mine), parallelism)), \
            "subtask %d's rows have a gap" % s


def test_bounded_job_prints_every_row_and_exits_0(clink):
    r = clink("run", "--log-level", "info", "-e", datagen_sql(rows=50))
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("\n")
    lines = r.stdout.splitlines()
    assert len(lines) == 50
    check_rows(lines, 1)
    assert summary(r.stderr) == ("finished", 50, 50)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_ctrl_c_drains_and_exits_0(start_clink, sig, parallelism):
    job = start_clink("run", "--log-level", "info", "--parallelism", str(parallelism),
                      "-e", datagen_sql(rows_per_second=200))
    if not job.wait_lines(10):
        job.kill()
        pytest.fail("no rows within %ss; stderr:\n%s" % (DEADLINE_S, job.stderr))
    job.signal(sig)
    try:
        rc = job.wait(timeout=DEADLINE_S)
    except Exception:
        pytest.fail("`clink run` did not exit within %ss of %s" % (DEADLINE_S, sig.name))
    assert rc == 0, job.stderr
    assert job.partial == "", "the last line is cut: %r" % job.partial
    check_rows(job.lines, parallelism)
    state, read, written = summary(job.stderr)
    assert state == "stopped"
    assert read == written == len(job.lines), \
        "read %d, wrote %d, printed %d lines" % (read, written, len(job.lines))


def test_two_ctrl_c_in_a_row_exit_promptly(start_clink):
    job = start_clink("run", "--log-level", "info", "-e", datagen_sql(rows_per_second=200))
    assert job.wait_lines(5), job.stderr
    job.signal(signal.SIGINT)
    job.signal(signal.SIGINT)
    rc = job.wait(timeout=10)
    assert rc in (0, 130), "exit status %d; stderr:\n%s" % (rc, job.stderr)
    for line in job.lines:  # whatever made it out is whole lines
        json.loads(line)


class FullPipe:
    """A pipe of one page, read only when the test says so: a sink stuck on a slow reader."""

    def __init__(self):
        self.r, self.w = os.pipe()
        fcntl.fcntl(self.w, fcntl.F_SETPIPE_SZ, 4096)
        self.size = fcntl.fcntl(self.w, fcntl.F_GETPIPE_SZ)
        self.data = bytearray()
        self.reader = None

    def pending(self):
        buf = bytearray(4)
        fcntl.ioctl(self.r, termios.FIONREAD, buf)
        return int.from_bytes(buf, "little")

    def wait_full(self, timeout=DEADLINE_S):
        deadline = time.monotonic() + timeout
        while self.pending() < self.size:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def read_all(self):
        def run():
            while True:
                chunk = os.read(self.r, 65536)
                if not chunk:
                    break
                self.data += chunk
        self.reader = threading.Thread(target=run, daemon=True)
        self.reader.start()

    def close(self):
        for fd in (self.r, self.w):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
def full_pipe():
    p = FullPipe()
    yield p
    p.close()


def start_stuck(start_clink, full_pipe):
    """An unpaced unbounded job whose print sink is blocked on a full stdout pipe."""
    job = start_clink("run", "--log-level", "info", "-e", datagen_sql(), stdout=full_pipe.w)
    os.close(full_pipe.w)
    full_pipe.w = -1
    assert full_pipe.wait_full(), "stdout never filled up; stderr:\n%s" % job.stderr
    return job


def test_second_ctrl_c_exits_at_once_while_the_drain_is_stuck(start_clink, full_pipe):
    job = start_stuck(start_clink, full_pipe)
    job.signal(signal.SIGINT)
    # the drain cannot finish: the sink waits for a reader that never reads
    with pytest.raises(Exception):
        job.proc.wait(timeout=1.0)
    assert job.proc.poll() is None
    job.signal(signal.SIGINT)
    rc = job.wait(timeout=10)
    assert rc == 130, "second Ctrl-C: exit status %d; stderr:\n%s" % (rc, job.stderr)


def test_ctrl_c_with_a_slow_sink_drains_once_it_catches_up(start_clink, full_pipe):
    job = start_stuck(start_clink, full_pipe)
    job.signal(signal.SIGINT)
    with pytest.raises(Exception):
        job.proc.wait(timeout=0.5)
    full_pipe.read_all()  # the slow reader catches up: the drain completes
    rc = job.wait(timeout=DEADLINE_S)
    full_pipe.reader.join(DEADLINE_S)
    assert rc == 0, job.stderr
    text = full_pipe.data.decode()
    assert text.endswith("\n"), "the last line is cut: %r" % text[-80:]
    lines = text.splitlines()
    check_rows(lines, 1)
    state, read, written = summary(job.stderr)
    assert state == "stopped"
    assert read == written == len(lines), \
        "read %d, wrote %d, printed %d lines" % (read, written, len(lines))


def test_ctrl_c_during_a_restart_is_not_lost(start_clink, tmp_path):
    """A Ctrl-C that arrives while the job is between executions (a checkpoint failed and the
    job rewinds) stops the next execution at once instead of being swallowed."""
    job = start_clink("run", "--log-level", "info", "--checkpoint-dir", str(tmp_path / "ck"),
                      "--checkpoint-interval-ms", "50", "-e", datagen_sql(rows_per_second=100),
                      env={"CLINK_FAULT": "before_snapshot_write:fail"})
    assert job.wait_stderr("restarting from its last checkpoint"), job.stderr
    job.signal(signal.SIGINT)  # lands in the pause before the restart
    try:
        rc = job.wait(timeout=DEADLINE_S)
    except Exception:
        pytest.fail("a Ctrl-C during the restart was lost: the restarted job kept running; "
                    "stderr:\n%s" % job.stderr)
    assert rc == 0, job.stderr
    assert summary(job.stderr)[0] == "stopped"
    for line in job.lines:
        json.loads(line)


# ---------------------------------------------------------------- bad scripts


def test_bad_sql_in_a_file_names_line_and_column(clink, tmp_path):
    (tmp_path / "bad.sql").write_text(
        "CREATE TABLE gen (id BIGINT) WITH (connector = 'datagen', rows = '5');\n"
        "-- the next statement names a column that does not exist\n"
        "SELECT idd FROM gen;\n")
    r = clink("run", "bad.sql")
    assert r.returncode == 1
    assert r.stdout == ""
    assert "bad.sql:3:8: error: unknown column 'idd'" in r.stderr, r.stderr
    assert " 3 | SELECT idd FROM gen;" in r.stderr
    assert "^^^" in r.stderr
    assert "did you mean 'id'?" in r.stderr
    assert "[job]" not in r.stderr  # nothing started


@pytest.mark.parametrize("kind", ["char-device", "directory", "fifo"])
def test_a_script_that_is_not_a_regular_file_is_refused_at_once(clink, tmp_path, kind):
    """/dev/zero never ends and a FIFO without a writer blocks the open: both used to hang."""
    if kind == "char-device":
        path = "/dev/zero"
    elif kind == "directory":
        path = str(tmp_path)
    else:
        path = str(tmp_path / "script.fifo")
        os.mkfifo(path)
    want = {"char-device": "a character device", "directory": "a directory", "fifo": "a FIFO"}
    r = clink("run", path, timeout=10)
    assert r.returncode == 1, r.stderr
    assert "could not read '%s': it is %s, not a regular file" % (path, want[kind]) in r.stderr, \
        r.stderr
    assert "hint: give the path of a SQL file, or '-'" in r.stderr, r.stderr
    assert r.stdout == ""


def test_a_script_on_standard_input_still_runs(clink):
    r = clink("run", "-", input=datagen_sql(rows=3))
    assert r.returncode == 0, r.stderr
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == [0, 1, 2]


def test_syntax_error_names_line_and_column(clink):
    r = clink("run", "-e", "SELEC 1")
    assert r.returncode == 1
    assert re.search(r"^<-e>:1:1: error: .*'SELEC'", r.stderr, re.M), r.stderr
    assert "hint: did you mean SELECT?" in r.stderr


def test_unknown_with_option_names_its_position_and_the_closest(clink):
    r = clink("run", "-e", "CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rowz = '5');"
                           "\nSELECT id FROM g;")
    assert r.returncode == 1
    assert re.search(r"<-e>:1:\d+: error: unknown option 'rowz'", r.stderr), r.stderr
    assert "did you mean 'rows'?" in r.stderr


TIMELESS = ('{"id": 1, "ts": 1000}\n{"id": 2}\n{"id": 3, "ts": null}\n{"id": 4, "ts": 1500}\n'
            '{"id": 5, "ts": 2500}\n')


def timeless_sql(source, policy):
    extra = ", event_time_null = '%s'" % policy if policy else ""
    return ("CREATE TABLE f (id BIGINT, ts BIGINT) WITH (%s, event_time_column = 'ts'%s);\n"
            "SELECT TUMBLE_START(ts, INTERVAL '1' SECOND) AS w, COUNT(*) AS n FROM f\n"
            "GROUP BY TUMBLE(ts, INTERVAL '1' SECOND);" % (source, extra))


def test_a_record_without_event_time_fails_the_job_naming_its_line(clink, tmp_path):
    """A missing or NULL event time used to be counted among the late records and dropped."""
    (tmp_path / "in.json").write_text(TIMELESS)
    r = clink("run", "--log-level", "info", "-e",
              timeless_sql("connector = 'file', path = 'in.json'", None))
    assert r.returncode == 1, r.stderr
    assert ("record at in.json:2 has no event time: its event_time_column 'ts' is missing or "
            "NULL") in r.stderr, r.stderr
    assert "hint: event_time_null = 'skip' counts and skips such records instead" in r.stderr


def test_records_without_event_time_are_skipped_and_counted_on_their_own(clink, tmp_path):
    (tmp_path / "in.json").write_text(TIMELESS)
    r = clink("run", "--log-level", "info", "-e",
              timeless_sql("connector = 'file', path = 'in.json'", "skip"))
    assert r.returncode == 0, r.stderr
    assert sorted((json.loads(l)["w"], json.loads(l)["n"]) for l in r.stdout.splitlines()) == \
        [(1000, 2), (2000, 1)]
    line = [l for l in r.stderr.splitlines() if "[job] finished" in l]
    assert line, r.stderr
    assert " 0 late records dropped" in line[0], line[0]
    assert " 2 records without event time skipped" in line[0], line[0]


def test_a_generated_null_event_time_follows_the_same_rule(clink):
    """Sources that do not check it themselves (datagen) are checked by the runtime."""
    gen = ("connector = 'datagen', rows = '200', fields.id.kind = 'sequence', "
           "fields.ts.kind = 'sequence', fields.ts.null_rate = '0.5'")
    r = clink("run", "--log-level", "info", "-e", timeless_sql(gen, None))
    assert r.returncode == 1, r.stderr
    assert "a record of table 'f' (partition 0 of subtask 0) has no event time" in r.stderr
    r = clink("run", "--log-level", "info", "-e", timeless_sql(gen, "skip"))
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stderr.splitlines() if "[job] finished" in l][0]
    m = re.search(r"(\d+) records read, .* 0 late records dropped, .* (\d+) records without "
                  r"event time skipped", line)
    assert m, line
    read, skipped = int(m.group(1)), int(m.group(2))
    assert read + skipped == 200 and 0 < skipped < 200, line
    assert sum(json.loads(l)["n"] for l in r.stdout.splitlines()) == read


GROWING = ("CREATE TABLE g (id BIGINT, v BIGINT) WITH (connector = 'datagen', "
           "rows = '200000000', fields.id.kind = 'sequence', fields.v.kind = 'sequence');\n"
           "CREATE TABLE out (id BIGINT, n BIGINT) WITH (connector = 'blackhole');\n"
           "INSERT INTO out SELECT id, COUNT(*) AS n FROM g GROUP BY id;\n")


def test_memory_guard_fails_a_job_whose_state_grows(clink):
    """A GROUP BY over 200 M distinct keys would grow to many GB: with --max-memory 64M the job
    fails with the guard's message long before its input ends."""
    t0 = time.monotonic()
    r = clink("run", "--max-memory", "64M", "--log-level", "info", "-e", GROWING, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    m = re.search(r"clink run: error: job memory exceeded (\d+) MiB \(limit 64 MiB\)", r.stderr)
    assert m and int(m.group(1)) > 64, r.stderr
    assert "hint: raise --max-memory" in r.stderr, r.stderr
    assert summary(r.stderr)[0] == "failed"
    assert summary(r.stderr)[1] < 50_000_000, r.stderr  # it stopped early, not at the end
    assert took < 100, "took %.1f s" % took


def test_memory_guard_size_is_checked(clink):
    r = clink("run", "--max-memory", "lots", "-e", GROWING)
    assert r.returncode == 2
    assert "--max-memory must be a size of at least 1M, like 512M or 4G" in r.stderr, r.stderr
    r = clink("run", "--max-memory", "none", "-e", datagen_sql(rows=3))
    assert r.returncode == 0, r.stderr


def test_runtime_failure_exits_1_naming_file_and_line(clink, tmp_path):
    (tmp_path / "in.json").write_text('{"id": 1}\n{"id":\n{"id": 3}\n')
    r = clink("run", "--log-level", "info", "-e",
              "CREATE TABLE f (id BIGINT) WITH (connector = 'file', path = 'in.json');\n"
              "SELECT id FROM f;")
    assert r.returncode == 1
    assert "in.json:2" in r.stderr, r.stderr
    assert summary(r.stderr)[0] == "failed"
