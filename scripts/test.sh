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
was_down=$( (scripts/services.sh status 2>/dev/null || true) | awk '$2 != "running" && $1 != "work" {print $1}' | tr '\n' ' ')
# services this run starts begin on empty data: a run never inherits the topics, tables
# and buckets earlier runs left behind (a broker holding thousands of partitions takes
# longer to load them than the start-up deadline)
scripts/services.sh start --fresh
repo=$(pwd)
if [ -n "${was_down// /}" ]; then
  # an absolute path: the trap runs after `cd build-san` below
  trap '"$repo/scripts/services.sh" stop $was_down >/dev/null 2>&1 || true' EXIT
fi
eval "$(scripts/services.sh env)"
scripts/build.sh sanitize >/dev/null
cd build-san
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# verbose output goes to a log (the per-case counts are read from it); the console gets one
# line per ctest entry and, for a failure, that entry's output
set +e
ctest -V --timeout 1500 "$@" > ctest-verbose.log 2>&1
rc=$?
set -e
grep -E '^ *[0-9]+/[0-9]+ Test +#' ctest-verbose.log || true
if [ "$rc" -ne 0 ]; then
  echo
  echo "== output of the failed entries =="
  for n in $(sed -n 's/^ *[0-9]*\/[0-9]* Test *#\([0-9]*\):.*\*\*\*.*/\1/p' ctest-verbose.log); do
    grep -E "^$n: " ctest-verbose.log | tail -80
  done
fi
echo
python3 ../scripts/test_summary.py ctest-verbose.log .
exit "$rc"

