"""pyclink's build: bundles libclink.so.1 into the package.

The library comes from $CLINK_LIBCLINK when set (a path to a libclink.so built elsewhere);
otherwise it is built here from the repository this package sits in (../../), with CMake, as
a release build into <repo>/build (what scripts/build.sh release does; the sanitizer build's
library cannot be loaded by a Python that is not built with ASan). Everything else is plain
setuptools metadata in pyproject.toml.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def libclink() -> Path:
    given = os.environ.get("CLINK_LIBCLINK")
    if given:
        return Path(given)
    if not (REPO / "src" / "lib" / "clink.c").exists():
        raise SystemExit("pyclink: set CLINK_LIBCLINK to a libclink.so (no clink source tree "
                         "at %s to build one from)" % REPO)
    build = REPO / "build"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build),
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "--target", "clink_shared",
                    "-j%d" % (os.cpu_count() or 1)], check=True)
    return build / "src" / "lib" / "libclink.so.1"


class BuildWithLib(build_py):
    def run(self):
        lib = libclink()
        shutil.copyfile(lib, HERE / "pyclink" / "libclink.so.1")
        super().run()


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the wheel holds a shared library: it is platform-specific
        return True


setup(cmdclass={"build_py": BuildWithLib}, distclass=BinaryDistribution)
