#!/usr/bin/env bash
# The one test command: installs what is missing, starts the services on 127.0.0.1, builds
# with ASan+UBSan and runs every test through ctest (unit, sql, integration), then stops the
# services it started. Safe to rerun after a killed run.
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         only a label (any ctest arguments pass through)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# stop at the end only what this run started: services already up stay up
if scripts/services.sh status >/dev/null 2>&1; then
  scripts/services.sh start
else
  scripts/services.sh start
  trap 'scripts/services.sh stop >/dev/null 2>&1 || true' EXIT
fi
eval "$(scripts/services.sh env)"
scripts/build.sh sanitize >/dev/null
cd build-san
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
set +e
ctest --output-on-failure --timeout 1200 "$@" 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
set -e
echo
echo "test counts by label:"
for label in unit sql integration; do
  n=$(ctest -N -L "$label" 2>/dev/null | sed -n 's/^Total Tests: //p')
  echo "  $label: ${n:-0} ctest entries"
done
grep -hE '^[0-9]+ passed' ../build-san/*.log 2>/dev/null || true
exit "$rc"
