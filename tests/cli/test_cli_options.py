"""The options several commands take have one row each (src/cli/opts.c, ck_cli_shared_opts):
`clink run` and `clink coordinator` accept the same --checkpoint-interval-ms and
--max-restarts values and show the same defaults (they used to differ: 32,768 ms against a
day, and 3 restarts against 10), `--help` shows the row's default, and docs/cli.md is exactly
the tables `clink CMD --options-markdown` prints.
"""
import re

import pytest

from .conftest import REPO


def help_line(clink, cmd, opt):
    r = clink(cmd, "--help")
    assert r.returncode == 0, r.stderr
    m = re.search(r"^  --%s \S+\s+(.*)$" % re.escape(opt), r.stdout, re.M)
    assert m, f"`clink {cmd} --help` does not list --{opt}:\n{r.stdout}"
    return m.group(1)


@pytest.mark.parametrize("opt,default", [("checkpoint-interval-ms", 1000), ("max-restarts", 10)])
def test_run_and_coordinator_share_help_and_default(clink, opt, default):
    run, coord = help_line(clink, "run", opt), help_line(clink, "coordinator", opt)
    assert run == coord, (run, coord)
    assert run.endswith("(default %d)" % default), run


@pytest.mark.parametrize("opt,good,bad", [
    ("checkpoint-interval-ms", ["1", "40000", "86400000"], ["0", "86400001"]),
    ("max-restarts", ["0", "1000"], ["-1", "1001"]),
])
def test_run_and_coordinator_share_bounds(clink, tmp_path, opt, good, bad):
    for v in bad:
        for cmd, rest in (("run", ["-e", "SELECT 1"]), ("coordinator", ["--checkpoint-dir", str(tmp_path)])):
            r = clink(cmd, "--" + opt, v, *rest)
            assert r.returncode == 2, (cmd, v, r.stderr)
            assert f"--{opt} must be a whole number from" in r.stderr, (cmd, r.stderr)
    # a good value passes the option check of `clink run` (the run then fails on the SQL: 1)
    for v in good:
        r = clink("run", "--" + opt, v, "-e", "SELEC 1")
        assert r.returncode == 1 and "must be a whole number" not in r.stderr, (v, r.stderr)


def test_docs_cli_md_is_the_generated_tables(clink):
    doc = (REPO / "docs/cli.md").read_text()
    blocks = re.findall(r"<!-- generated: clink (\w+) --options-markdown -->\n(.*?)<!-- end -->",
                        doc, re.S)
    assert [b[0] for b in blocks] == ["run", "coordinator", "worker"], blocks
    for cmd, table in blocks:
        r = clink(cmd, "--options-markdown")
        assert r.returncode == 0, r.stderr
        assert table == r.stdout, (
            f"docs/cli.md's table for `clink {cmd}` differs from `clink {cmd} --options-markdown`; "
            f"regenerate it:\n{r.stdout}")


def test_every_shared_option_is_taken_by_two_commands():
    src = (REPO / "src/cli/opts.c").read_text()
    table = src.split("ck_cli_shared_opts[] = {", 1)[1].split("};", 1)[0]
    names = re.findall(r'^\s*\{"([\w-]+)"', table, re.M)
    assert names, table
    users = "\n".join(p.read_text() for p in (REPO / "src/cli").glob("cmd_*.c"))
    for n in names:
        count = users.count('CK_CLI_SHARED("%s")' % n)
        assert count >= 2, f"--{n} is in the shared table but {count} command(s) take it"
