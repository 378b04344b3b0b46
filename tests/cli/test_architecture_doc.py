"""docs/architecture.md names files: every `src/...` path it names exists, and the layering it
states holds — nothing below src/job/ includes a job/ header, and nothing but cluster/ and
cli/ (the layers above it) does.
"""
import re

from .conftest import REPO

DOC = REPO / "docs/architecture.md"


def test_every_src_path_in_the_architecture_doc_exists():
    text = DOC.read_text()
    paths = sorted(set(re.findall(r"\bsrc/[\w./-]*\w", text)))
    assert len(paths) >= 20, paths  # the record walk alone names a dozen
    missing = [p for p in paths if not (REPO / p).exists()]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_nothing_below_the_job_layer_includes_it():
    for lib in ("base", "checkpoint", "runtime", "connectors", "sql"):
        for path in (REPO / "src" / lib).rglob("*.[ch]"):
            assert '#include "job/' not in path.read_text(), f"{path} includes a job/ header"


def test_the_doc_lists_every_library_of_the_tree():
    text = DOC.read_text().split("## The layers", 1)[1].split("## ", 1)[0]
    libs = sorted(p.name for p in (REPO / "src").iterdir() if (p / "CMakeLists.txt").exists())
    for lib in libs:
        assert re.search(r"^%s/\s" % lib, text, re.M), f"the layers diagram does not show src/{lib}/"
