#!/usr/bin/env bash
# The pyclink tests (ctest: python_pyclink). Installs pandas (python/pyclink/
# requirements-examples.txt) and python/pyclink from this tree into the test venv
# ($CLINK_PYTHON; the package builds libclink.so as a release build into build/,
# incrementally), then runs tests/python with pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${CLINK_PYTHON:-/root/.cache/clink/venv/bin/python}
log=${TMPDIR:-/tmp}/pyclink-install.$$.log
if ! "$py" -m pip install -q --disable-pip-version-check --no-input --only-binary=:all: \
     -r python/pyclink/requirements-examples.txt >"$log" 2>&1 ||
   ! "$py" -m pip install -q --disable-pip-version-check --no-input \
     --no-deps --force-reinstall ./python/pyclink >"$log" 2>&1; then
  cat "$log" >&2
  echo "tests/python/run.sh: could not install python/pyclink (log above)" >&2
  exit 1
fi
rm -f "$log"
exec "$py" -m pytest -q -p no:cacheprovider tests/python "$@"
