"""The reference library never imports, runs or loads clink (the audit's independence)."""
import ast
import pathlib

import clink_reference

# the package under test: the installed one under tests/reference/run.sh
PKG = pathlib.Path(clink_reference.__file__).resolve().parent
ALLOWED = {"base64", "datetime", "decimal", "hashlib", "json", "math", "os", "re", "struct",
           "time", "uuid", "confluent_kafka", "confluent_kafka.admin"}


def test_imports_only_the_standard_library_and_the_kafka_client():
    seen = set()
    for f in PKG.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                seen |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                seen.add(node.module)
    assert seen <= ALLOWED, seen - ALLOWED
    assert "confluent_kafka" in seen


def test_runs_and_loads_nothing():
    for f in PKG.glob("*.py"):
        src = f.read_text()
        for word in ("subprocess", "ctypes", "os.system", "popen", "dlopen", "pyclink", "libclink"):
            assert word not in src, (f.name, word)
