"""`clink` usage: help, version, and what a mistyped command line gets back.

Exit status contract (src/cli/cli.h): 0 success, 1 the work failed, 2 bad usage. Usage errors go
to stderr, name the word at fault, and hint at the closest valid one.
"""

import re

import pytest

from .conftest import REPO


def _commands_in_source():
    """Every subcommand defined in src/cli/cmd_*.c, by the name its table entry gives."""
    names = []
    for path in sorted((REPO / "src" / "cli").glob("cmd_*.c")):
        text = path.read_text()
        names += re.findall(r'const ck_cli_cmd_t ck_cli_cmd_\w+\s*=\s*\{\s*"([\w-]+)"', text)
    assert names, "no subcommand definitions found under src/cli"
    return names


def _help_commands(text):
    block = text.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines() if line.strip()]


def _run_help_options(text):
    """(option, metavariable or None) for each line of `clink run --help`'s options block."""
    block = text.split("options:\n", 1)[1]
    out = []
    for line in block.splitlines():
        m = re.match(r"^  (-{1,2}[\w-]+)(?: ([A-Z][A-Z_]*))?\s{2,}\S", line)
        assert m, "unparseable help line: %r" % line
        out.append((m.group(1), m.group(2)))
    return out


def test_help_lists_every_command(clink):
    r = clink("--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("clink "), r.stdout
    assert "usage: clink <command> [options]" in r.stdout
    listed = _help_commands(r.stdout)
    defined = _commands_in_source()
    assert sorted(listed) == sorted(defined), (
        "`clink --help` lists %s but src/cli defines %s" % (listed, defined))
    for opt in ("--help", "--version"):
        assert opt in r.stdout


@pytest.mark.parametrize("spelling", ["-h", "help"])
def test_help_spellings(clink, spelling):
    r = clink(spelling)
    assert r.returncode == 0
    assert r.stdout == clink("--help").stdout


def test_no_arguments_prints_help_and_exits_2(clink):
    r = clink()
    assert r.returncode == 2
    assert "usage: clink <command>" in r.stdout


def test_every_command_has_help(clink):
    for name in _commands_in_source():
        r = clink(name, "--help")
        assert r.returncode == 0, (name, r.stderr)
        assert r.stdout.startswith("usage: clink %s" % name), r.stdout
        assert r.stderr == ""


def test_version(clink):
    want = re.search(r"project\(clink VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text())
    assert want, "no project VERSION in CMakeLists.txt"
    r = clink("--version")
    assert r.returncode == 0
    assert r.stdout == "clink %s\n" % want.group(1)
    v = clink("version")
    assert v.returncode == 0
    assert v.stdout.splitlines()[0] == r.stdout.strip()


def test_run_help_lists_options(clink):
    r = clink("run", "--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: clink run [options] (FILE.sql | -e SQL)\n")
    opts = dict(_run_help_options(r.stdout))
    for name, arg in [("-e", "SQL"), ("--parallelism", "N"), ("--max-parallelism", "N"),
                      ("--log-level", "LEVEL"), ("--help", None)]:
        assert name in opts, "`clink run --help` does not list %s:\n%s" % (name, r.stdout)
        assert opts[name] == arg, (name, opts[name])


def test_run_help_options_are_the_parsers(clink):
    """Every option the help lists is one the parser knows, with the arity the help shows."""
    for name, arg in _run_help_options(clink("run", "--help").stdout):
        if name == "--help":
            continue
        if arg:
            r = clink("run", name)  # the value is missing
            assert r.returncode == 2, (name, r.stderr)
            assert "needs a value (%s)" % arg in r.stderr, (name, r.stderr)
        else:
            r = clink("run", name + "=x")
            assert r.returncode == 2, (name, r.stderr)
            assert "takes no value" in r.stderr, (name, r.stderr)
        assert "unknown option" not in r.stderr, (name, r.stderr)


@pytest.mark.parametrize("typo,meant", [("rum", "run"), ("runn", "run"), ("conectors", "connectors"),
                                        ("verison", "version")])
def test_unknown_command_suggests_the_closest(clink, typo, meant):
    r = clink(typo)
    assert r.returncode == 2
    assert r.stdout == ""
    assert "unknown command '%s'" % typo in r.stderr
    assert "did you mean '%s'?" % meant in r.stderr
    assert "clink --help" in r.stderr


def test_unknown_command_far_from_any(clink):
    r = clink("xyzzyplugh")
    assert r.returncode == 2
    assert "unknown command 'xyzzyplugh'" in r.stderr
    assert "clink --help" in r.stderr


def test_unknown_global_option(clink):
    r = clink("--verison")
    assert r.returncode == 2
    assert "unknown option '--verison'" in r.stderr
    assert "did you mean" in r.stderr


@pytest.mark.parametrize("argv,bad,hint", [
    (["run", "--paralelism", "2", "-e", "SELECT 1"], "--paralelism", "--parallelism"),
    (["run", "--max-paralelism=4", "x.sql"], "--max-paralelism=4", "--max-parallelism"),
    (["run", "--log-levle", "debug", "x.sql"], "--log-levle", "--log-level"),
    (["connectors", "--markdwn"], "--markdwn", "--markdown"),
])
def test_unknown_flag_exits_2_with_hint(clink, argv, bad, hint):
    r = clink(*argv)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert "unknown option '%s'" % bad in r.stderr
    assert "hint: did you mean '%s'?" % hint in r.stderr
    assert "clink %s --help" % argv[0] in r.stderr


@pytest.mark.parametrize("argv", [
    ["run"],
    ["run", "a.sql", "b.sql"],
    ["run", "-e", "SELECT 1", "a.sql"],
    ["run", "--parallelism", "2"],
])
def test_run_needs_exactly_one_script(clink, argv):
    r = clink(*argv)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert "give one SQL file, or the SQL text with -e" in r.stderr
    assert "usage: clink run" in r.stderr


@pytest.mark.parametrize("flag,value", [("--parallelism", "0"), ("--parallelism", "two"),
                                        ("--max-parallelism", "-1"), ("--log-level", "loud")])
def test_run_rejects_bad_values(clink, flag, value):
    r = clink("run", flag, value, "-e", "SELECT 1")
    assert r.returncode == 2, r.stderr
    assert "'%s'" % value in r.stderr
    assert flag in r.stderr


def test_run_missing_file_exits_1(clink):
    r = clink("run", "does-not-exist.sql")
    assert r.returncode == 1
    assert "could not open 'does-not-exist.sql'" in r.stderr
