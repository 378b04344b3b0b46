#!/usr/bin/env bash
# Checkpoint control latency, before and after (see README.md).
# Usage: bench/control/run.sh [SECONDS] [INTERVAL_MS]
#   builds the release binary of this tree (scripts/build.sh) and, when BEFORE_REV is set (a
#   commit that has the at_us debug lines), that commit from `git archive` into /tmp, then runs
#   run.py on each.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${CLINK_PYTHON:-python3}  # with confluent_kafka and CLINK_KAFKA_BROKERS: kafka-idle too
bins=()
if [ -n "${BEFORE_REV:-}" ]; then
  dir=/tmp/clink-control-before-$BEFORE_REV
  if [ ! -x "$dir/build/src/cli/clink" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    git archive "$BEFORE_REV" | tar -x -C "$dir"
    (cd "$dir" && scripts/build.sh release >/dev/null)
  fi
  bins+=("$dir/build/src/cli/clink")
fi
scripts/build.sh release >/dev/null
bins+=("$PWD/build/src/cli/clink")
for b in "${bins[@]}"; do "$py" bench/control/run.py "$b" "$@"; done
