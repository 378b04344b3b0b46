"""`clink incident` usage (src/cli/cmd_incident.c): the subcommand table's help, and exit 2 for
bad usage on every subcommand (docs/incidents.md, "Exit status")."""

from .conftest import run_clink


def test_help_lists_the_subcommand_table():
    r = run_clink("incident", "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: clink incident"), r.stdout
    block = r.stdout.split("subcommands:\n", 1)[1].split("\n\n", 1)[0]
    names = [ln.split()[0] for ln in block.splitlines() if ln.strip()]
    assert names == ["collect", "verify", "scope", "reconcile"], names
    for sub in names:
        h = run_clink("incident", sub, "--help")
        assert h.returncode == 0 and h.stdout.startswith("usage: clink incident %s" % sub), h


def test_bad_usage_exits_2(tmp_path):
    cases = [
        ("incident",),
        ("incident", "bogus"),
        ("incident", "verify"),
        ("incident", "verify", tmp_path / "no-such-bundle"),
        ("incident", "verify", "--no-such-option", tmp_path),
        ("incident", "scope", tmp_path),                          # no --checkpoint
        ("incident", "scope", tmp_path, "--checkpoint", "zero"),
        ("incident", "collect", "--out", tmp_path / "b"),         # no --checkpoint-dir
        ("incident", "collect", "--checkpoint-dir", tmp_path),    # no --out
        ("incident", "collect", "--checkpoint-dir", tmp_path, "--out", tmp_path / "b",
         "--job", "x"),
    ]
    for args in cases:
        r = run_clink(*args)
        assert r.returncode == 2, (args, r.returncode, r.stdout, r.stderr)
        assert r.stderr.strip(), args
    r = run_clink("incident", "bogus")
    assert "unknown subcommand 'bogus'" in r.stderr, r.stderr
