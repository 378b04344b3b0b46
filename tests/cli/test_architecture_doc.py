"""docs/architecture.md names files: every `src/...` path it names exists, and the layering it
states holds — nothing below src/job/ includes a job/ header, and nothing but cluster/ and
cli/ (the layers above it) does; the worker's library (ck_cluster) and ck_job include no sql/
header (the ctests layering_* check the built archives' symbols the same way).
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


def test_the_worker_library_and_the_job_module_include_no_sql_header():
    cmake = (REPO / "src/cluster/CMakeLists.txt").read_text()
    coordinator = set(re.search(r"set\(CK_COORDINATOR_SRC ([^)]*)\)", cmake).group(1).split())
    assert "coordinator.c" in coordinator and "jobplan_sql.c" in coordinator, coordinator
    worker = [p for p in (REPO / "src/cluster").glob("*.[ch]") if p.name not in coordinator
              and p.name not in ("coordinator.h", "coordinator_int.h")]
    assert any(p.name == "worker.c" for p in worker)
    job = [p for p in (REPO / "src/job").glob("*.[ch]") if not p.name.startswith("embedded.")]
    for path in worker + job:
        assert '#include "sql/' not in path.read_text(), \
            f"{path.relative_to(REPO)} includes a sql/ header: the worker's library (or ck_job) " \
            "must not contain the SQL front end (docs/architecture.md)"
