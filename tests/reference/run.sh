#!/usr/bin/env bash
# The reference library's tests (ctest: python_clink_reference). Installs python/clink-reference
# from this tree into the test venv ($CLINK_PYTHON) the way a user would (pip, its own
# pyproject), then runs its tests: canonical cells, the artifact and the fingerprint offline,
# and the range reader against the real Kafka broker ($CLINK_KAFKA_BROKERS) with committed and
# aborted transactions interleaved. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${CLINK_PYTHON:-/root/.cache/clink/venv/bin/python}
log=${TMPDIR:-/tmp}/clink-reference-install.$$.log
if ! "$py" -m pip install -q --disable-pip-version-check --no-input \
     --no-deps --force-reinstall ./python/clink-reference >"$log" 2>&1; then
  cat "$log" >&2
  echo "tests/reference/run.sh: could not install python/clink-reference (log above)" >&2
  exit 1
fi
rm -f "$log"
# the installed package, not the source tree, answers `import clink_reference`
export CLINK_REFERENCE_INSTALLED=1
exec "$py" -m pytest -q -p no:cacheprovider python/clink-reference/tests "$@"
