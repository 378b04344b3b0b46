#!/usr/bin/env bash
# The main pipeline, from a fresh machine: the Kafka -> ClickHouse tutorial
# (examples/kafka-to-clickhouse), unattended — services, topic and table, the pipeline with
# checkpoints, a SIGKILL mid-stream and a rerun, then an independent verification.
#   scripts/demo.sh            run it and clean up
#   KEEP_UP=1 scripts/demo.sh  leave everything up to look at
set -euo pipefail
cd "$(dirname "$0")/.."
exec examples/kafka-to-clickhouse/run.sh "$@"
