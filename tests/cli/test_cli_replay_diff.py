"""`clink replay-diff A B` (src/cli/cmd_replay_diff.c): the first divergence between two
replays' NDJSON outputs. Exit 0 when every line is the same, 1 at the first line that is not
(its number and both lines printed), 2 for bad usage or a file that cannot be read."""


def write(tmp_path, name, text):
    (tmp_path / name).write_bytes(text.encode())
    return name


def test_same_outputs_exit_0(clink, tmp_path):
    a = write(tmp_path, "a.ndjson", '{"k":1}\n{"k":2}\n')
    b = write(tmp_path, "b.ndjson", '{"k":1}\n{"k":2}')  # no final newline: not a difference
    r = clink("replay-diff", a, b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "same: 2 lines\n"


def test_first_divergence_is_named_with_both_lines(clink, tmp_path):
    a = write(tmp_path, "a.ndjson", '{"k":1}\n{"k":2}\n{"k":3}\n{"k":4}\n')
    b = write(tmp_path, "b.ndjson", '{"k":1}\n{"k":2}\n{"k":30}\n{"k":40}\n')
    r = clink("replay-diff", a, b)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout == 'line 3 differs:\n< {"k":3}\n> {"k":30}\n'


def test_bytes_decide_not_json_equality(clink, tmp_path):
    a = write(tmp_path, "a.ndjson", '{"a":1,"b":2}\n')
    b = write(tmp_path, "b.ndjson", '{"b":2,"a":1}\n')
    r = clink("replay-diff", a, b)
    assert r.returncode == 1
    assert "line 1 differs" in r.stdout


def test_one_output_longer(clink, tmp_path):
    a = write(tmp_path, "a.ndjson", '{"k":1}\n')
    b = write(tmp_path, "b.ndjson", '{"k":1}\n{"k":2}\n')
    r = clink("replay-diff", a, b)
    assert r.returncode == 1
    assert r.stdout == 'a.ndjson ends after 1 line; b.ndjson goes on at line 2:\n> {"k":2}\n'
    r = clink("replay-diff", b, a)
    assert r.returncode == 1
    assert r.stdout == 'a.ndjson ends after 1 line; b.ndjson goes on at line 2:\n< {"k":2}\n'


def test_quiet_prints_nothing(clink, tmp_path):
    a = write(tmp_path, "a.ndjson", "x\n")
    b = write(tmp_path, "b.ndjson", "y\n")
    r = clink("replay-diff", "--quiet", a, b)
    assert (r.returncode, r.stdout) == (1, "")


def test_errors_exit_2(clink, tmp_path):
    a = write(tmp_path, "a.ndjson", "x\n")
    r = clink("replay-diff", a, "missing.ndjson")
    assert r.returncode == 2
    assert "could not open 'missing.ndjson'" in r.stderr
    r = clink("replay-diff", a)
    assert r.returncode == 2
    assert "expected two files" in r.stderr
