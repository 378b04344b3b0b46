"""`clink connectors`: the reference generated from the connectors' own option tables.

docs/connectors.md is that reference as Markdown and must equal `clink connectors --markdown`
byte for byte, so the documentation cannot drift from the code. After changing a connector's
options, regenerate it:

    build/src/cli/clink connectors --markdown > docs/connectors.md
"""

import re
import subprocess

import pytest

from .conftest import REPO, _env

HEADER = re.compile(r"^([a-z_]+) \((source|sink|source and sink)\): \S")


def _sections(text):
    """{connector: {"role", "sink", "source"(options), "sink_options", "guarantee"}} plus the
    common tables under the keys "every source's" and "every sink's"."""
    out, cur, table = {}, None, None
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            cur = out.setdefault(m.group(1), {"role": m.group(2), "tables": {}})
            table = None
            continue
        m = re.match(r"^  (every source's|every sink's) options:$", line)
        if m:
            cur = out.setdefault(m.group(1), {"role": None, "tables": {}})
            table = cur["tables"].setdefault("options", [])
            continue
        m = re.match(r"^  (source|sink) options:$", line)
        if m and cur is not None:
            table = cur["tables"].setdefault(m.group(1), [])
            continue
        m = re.match(r"^  sink delivery guarantee: (.+)$", line)
        if m and cur is not None:
            cur["guarantee"] = m.group(1)
            continue
        m = re.match(r"^    (\S+)\s+\S", line)
        if m and table is not None:
            table.append(m.group(1))
            continue
        assert line == "", "unexpected line in `clink connectors`: %r" % line
    return out


@pytest.fixture(scope="module")
def listing(clink_bin):
    r = subprocess.run([clink_bin, "connectors"], capture_output=True, text=True, timeout=30,
                       env=_env())
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("name,role,source_opts,sink_opts", [
    ("file", "source and sink", ["path", "csv.header"], ["path", "csv.header"]),
    ("datagen", "source", ["rows", "rows_per_second", "seed", "fields.<column>.kind"], None),
    ("print", "sink", None, ["standard_error"]),
    ("blackhole", "sink", None, []),
])
def test_lists_connector_and_its_options(listing, name, role, source_opts, sink_opts):
    sec = _sections(listing)
    assert name in sec, "`clink connectors` does not list %s:\n%s" % (name, listing)
    assert sec[name]["role"] == role
    tables = sec[name]["tables"]
    if source_opts is None:
        assert "source" not in tables
    else:
        missing = [o for o in source_opts if o not in tables.get("source", [])]
        assert not missing, "%s source options lack %s" % (name, missing)
    if sink_opts is None:
        assert "sink" not in tables and "guarantee" not in sec[name]
    else:
        missing = [o for o in sink_opts if o not in tables.get("sink", [])]
        assert not missing, "%s sink options lack %s" % (name, missing)
        assert sec[name].get("guarantee"), "%s states no sink delivery guarantee" % name


def test_lists_common_options(listing):
    sec = _sections(listing)
    src = sec["every source's"]["tables"]["options"]
    for o in ("event_time_column", "watermark_lag_ms", "allowed_lateness_ms", "idle_timeout_ms",
              "on_decode_error"):
        assert o in src, o
    assert "delivery_guarantee" in sec["every sink's"]["tables"]["options"]


def test_no_empty_option_headings(listing):
    """An 'options:' heading is followed by at least one option (a connector without options of
    a kind says nothing about them)."""
    lines = listing.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("options:"):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            assert nxt.startswith("    "), "empty heading %r in `clink connectors`" % line


def test_markdown_is_docs_connectors_md(clink_bin):
    r = subprocess.run([clink_bin, "connectors", "--markdown"], capture_output=True, timeout=30,
                       env=_env())
    assert r.returncode == 0, r.stderr
    doc = REPO / "docs" / "connectors.md"
    assert doc.exists(), "docs/connectors.md is missing; generate it with " \
                         "`clink connectors --markdown > docs/connectors.md`"
    if r.stdout != doc.read_bytes():
        pytest.fail("docs/connectors.md differs from `clink connectors --markdown`; the option "
                    "tables changed. Regenerate it:\n"
                    "    clink connectors --markdown > docs/connectors.md", pytrace=False)


def test_markdown_has_every_connector_and_no_empty_table(clink_bin, listing):
    md = subprocess.run([clink_bin, "connectors", "--markdown"], capture_output=True, text=True,
                        timeout=30, env=_env()).stdout
    names = [n for n in _sections(listing) if not n.startswith("every ")]
    for n in names:
        assert "\n## `%s` (" % n in md, n
    assert "|---|---|---|---|\n\n" not in md and not md.endswith("|---|---|---|---|\n"), \
        "a Markdown options table without rows"


def test_markdown_tables_have_four_cells_per_row(clink_bin):
    """Enum choices are written "a|b"; inside a Markdown table the bar must be escaped or the
    row falls apart into extra columns."""
    md = subprocess.run([clink_bin, "connectors", "--markdown"], capture_output=True, text=True,
                        timeout=30, env=_env()).stdout
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert rows
    for line in rows:
        bars = len(re.findall(r"(?<!\\)\|", line))
        assert bars == 5, "a table row with %d cells: %s" % (bars - 1, line)
    assert "| `on_decode_error` | fail\\|skip | fail |" in md
