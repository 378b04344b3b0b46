"""docs/embedding.md's C program, compiled and run against libclink as `cmake --install`
puts it (component lib: libclink.so.1, libclink.a, the header, clink.pc), through pkg-config
— once against the shared library and once statically. The program's two counts come from
two different jobs (a collect table and a bare SELECT over the same generated rows); they
must agree, and its bad SQL must be reported at 2:10.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"  # the release build (tests/python/run.sh's pip install makes it)


def example():
    doc = (REPO / "docs" / "embedding.md").read_text()
    m = re.search(r"<!-- example: embed.c -->\n```c\n(.*?)```", doc, re.S)
    assert m, "docs/embedding.md lost its example program"
    return m.group(1)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    subprocess.run(["cmake", "--build", str(BUILD), "--target", "clink_shared", "clink_static",
                    "-j%d" % (os.cpu_count() or 1)], check=True, capture_output=True)
    p = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(BUILD), "--component", "lib", "--prefix", str(p)],
                   check=True, capture_output=True)
    return p


def pkg_config(prefix, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    return subprocess.run(["pkg-config", *args, "clink"], env=env, check=True,
                          capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("link", ["shared", "static"])
def test_the_documented_program_runs(prefix, tmp_path, link):
    src = tmp_path / "embed.c"
    src.write_text(example())
    exe = tmp_path / "embed"
    flags = pkg_config(prefix, "--cflags")
    if link == "shared":
        flags += pkg_config(prefix, "--libs")
    else:  # the archive, with its dependencies' shared libraries (clink.pc's private ones)
        pc = (prefix / "lib" / "pkgconfig" / "clink.pc").read_text()
        requires = re.search(r"^Requires.private: (.*)$", pc, re.M).group(1).split()
        private = re.search(r"^Libs.private: (.*)$", pc, re.M).group(1).split()
        deps = subprocess.run(["pkg-config", "--libs", *requires], check=True,
                              capture_output=True, text=True).stdout.split()
        flags += [str(prefix / "lib" / "libclink.a"), *deps, *private]
    subprocess.run(["cc", "-Wall", "-Werror", str(src), "-o", str(exe), *flags], check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(prefix / "lib"))
    out = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    m = re.search(r"collected (\d+) rows, amount (\d+)\nSELECT says (\d+)\nerror at 2:10\n$",
                  out.stdout)
    assert m, out.stdout
    rows, amount, n = map(int, m.groups())
    assert rows == n > 0
    assert 99 * rows <= amount <= 100 * rows
    if link == "shared":
        ldd = subprocess.run(["ldd", str(exe)], env=env, capture_output=True, text=True).stdout
        assert str(prefix / "lib" / "libclink.so.1") in ldd
