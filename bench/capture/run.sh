#!/usr/bin/env bash
# bench/capture/run.sh — the flight recorder's cost (issue 15), on this machine only.
#
# DESIGN
#   CPU per event of a q0-shaped and a windowed datagen pipeline, into a blackhole and into
#   ClickHouse 26.9, with capture off and on (--capture-dir, default --capture-records): see
#   bench/capture/bench.py. Needs the running ClickHouse 26.9 service (scripts/services.sh
#   start clickhouse26) for the clickhouse sink, or --sinks blackhole. Results go to
#   $CLINK_BENCH_CACHE (/var/tmp/clink-bench) as capture-results-<time>.json. Bounded by
#   `timeout` ($CLINK_BENCH_TIMEOUT, 600 s).
#
# Usage: bench/capture/run.sh [--rows N --runs N --interval MS --parallelism N
#                              --only q0,window --sinks blackhole,clickhouse]
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
exec timeout --signal=INT --kill-after=10 "${CLINK_BENCH_TIMEOUT:-600}" \
    "$CLINK_PYTHON" bench/capture/bench.py --clink "$clink" "$@"
