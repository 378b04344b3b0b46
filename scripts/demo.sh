#!/usr/bin/env bash
# The main pipeline, from a fresh machine: install what is missing, build, run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
clink=$(scripts/build.sh release | tail -1)
echo "running examples/smoke/pipeline.sql with $clink" >&2
"$clink" run examples/smoke/pipeline.sql
