#!/usr/bin/env bash
# bench/engine/run.sh — the engine benchmarks of issue 3, unattended, on this machine only.
#
# DESIGN
#   Events per CPU-second (file NDJSON and datagen → filter+project / TUMBLE → blackhole) side
#   by side with DuckDB on the same file, process start → first printed row, and memory per
#   open window group; bench/engine/bench.py says how each is measured. No service is started
#   and nothing listens: the only reference tool is DuckDB, from the test venv's python
#   ($CLINK_PYTHON from `scripts/services.sh env`, which only prints variables).
#   The input (~700 MB of NDJSON) is generated once into $CLINK_BENCH_CACHE
#   (/var/tmp/clink-bench), outside the repo; each run also leaves results-<time>.json there.
#   The whole run is bounded by `timeout` ($CLINK_BENCH_TIMEOUT, 290 s): about 10 s to generate
#   the input the first time, then about 90 s on 2 cores.
#
# Usage: bench/engine/run.sh [bench.py options: --runs N --rows N --parallelism N
#                             --only throughput,startup,memory --clink PATH ...]
#   CLINK_BIN=path overrides build/src/cli/clink; a missing binary is built (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

clink=${CLINK_BIN:-build/src/cli/clink}
if [ ! -x "$clink" ]; then
    echo "no $clink: building the release binary" >&2
    clink=$(scripts/build.sh release | tail -1)
fi
if [ -z "${CLINK_PYTHON:-}" ]; then
    eval "$(scripts/services.sh env)"
fi
if ! "$CLINK_PYTHON" -c 'import duckdb' 2>/dev/null; then
    echo "$CLINK_PYTHON has no duckdb: run scripts/setup.sh (it creates the test venv)" >&2
    exit 1
fi
[ -x /usr/bin/time ] || { echo "GNU time is missing: apt-get install time" >&2; exit 1; }

exec timeout --signal=INT --kill-after=10 "${CLINK_BENCH_TIMEOUT:-290}" \
    "$CLINK_PYTHON" bench/engine/bench.py --clink "$clink" --python "$CLINK_PYTHON" "$@"
