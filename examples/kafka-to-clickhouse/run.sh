#!/usr/bin/env bash
# The whole Kafka -> ClickHouse tutorial, unattended, on this machine:
# start the services, create the topic and the table, start the pipeline with checkpoints,
# stream the readings in, SIGKILL the pipeline mid-stream, run the same command again, let the
# producer finish, stop the pipeline (Ctrl-C), and verify every window against workload.py.
#
#   ./run.sh                 everything, then clean up (services stop if this script started them)
#   KEEP_UP=1 ./run.sh       leave the services, the topic, the table and the work dir up
#   RATE=50 ./run.sh         readings per second (default 100; the tutorial's pace is 50)
#   CLINK_BIN=path ./run.sh  use this clink binary instead of building the release one
#
# On failure it prints the pipeline's logs and what ClickHouse holds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

scripts/setup.sh
# stop at the end only the services this run started
was_down=$( (scripts/services.sh status 2>/dev/null || true) | awk '$2 != "running" && $1 != "work" {print $1}' | tr '\n' ' ')
scripts/services.sh start
eval "$(scripts/services.sh env)"
# CLINK_BIN picks the binary (the test command passes its sanitizer build)
clink="${CLINK_BIN:-$repo/$(scripts/build.sh release | tail -1)}"
work=$(mktemp -d /tmp/clink-tutorial.XXXXXX)
py=$CLINK_PYTHON
pids=()

say() { echo "[run.sh] $*"; }

cleanup() {
  rc=$?
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    say "FAILED (exit $rc); pipeline logs:"
    for f in "$work"/clink-*.log; do [ -f "$f" ] && { echo "--- $f"; tail -40 "$f"; }; done
    say "rows in ClickHouse:"
    "$py" "$here/scripts/ch.py" count || true
  fi
  if [ "${KEEP_UP:-0}" = 1 ]; then
    say "KEEP_UP=1: services, topic, table and $work are left up"
  else
    [ -z "${was_down// /}" ] || scripts/services.sh stop $was_down >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT

wait_for() { # wait_for DESCRIPTION DEADLINE_S COMMAND...
  local what=$1 deadline=$(( $(date +%s) + $2 )); shift 2
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || { say "timed out waiting for $what"; return 1; }
    sleep 0.5   # polling a condition with a deadline
  done
}

say "creating the topic 'readings' (1 partition) and the table 'sensor_window_stats'"
"$py" "$here/scripts/ch.py" reset "$here/clickhouse-init.sql"
sed -e "s|@KAFKA_BROKERS@|$CLINK_KAFKA_BROKERS|" -e "s|@CLICKHOUSE_HOST@|$CLINK_CLICKHOUSE_HOST|" \
    -e "s|@CLICKHOUSE_PORT@|$CLINK_CLICKHOUSE_PORT|" "$here/pipeline.sql.in" > "$work/pipeline.sql"

say "starting the pipeline: clink run pipeline.sql --checkpoint-dir $work/checkpoints"
"$clink" run "$work/pipeline.sql" --checkpoint-dir "$work/checkpoints" --fresh > "$work/clink-1.log" 2>&1 &
pids+=($!); first=$!
grep -q "job delivery guarantee" "$work/clink-1.log" 2>/dev/null || wait_for "the pipeline to start" 30 grep -q "job delivery guarantee" "$work/clink-1.log"
grep "job delivery guarantee" "$work/clink-1.log"

say "streaming 2,440 readings at ${RATE:-100}/s"
"$py" "$here/scripts/produce_events.py" --rate "${RATE:-100}" > "$work/producer.log" 2>&1 &
pids+=($!); producer=$!

wait_for "the first windows in ClickHouse" 120 "$py" "$here/scripts/ch.py" atleast 40
say "SIGKILL to the pipeline while the producer is still running"
kill -9 "$first"; wait "$first" 2>/dev/null || true
"$py" "$here/scripts/ch.py" count

say "running the same command again"
"$clink" run "$work/pipeline.sql" --checkpoint-dir "$work/checkpoints" > "$work/clink-2.log" 2>&1 &
pids+=($!); second=$!
wait_for "the rerun to restore" 30 grep -qE "restore point|starting fresh" "$work/clink-2.log"
grep -E "restore point|starting fresh" "$work/clink-2.log"

wait "$producer"
cat "$work/producer.log"
wait_for "all 240 closed windows" 120 "$py" "$here/scripts/ch.py" windows 240
say "stopping the pipeline (Ctrl-C: final checkpoint, then exit)"
kill -INT "$second"
wait_for "the pipeline to stop" 60 sh -c "! kill -0 $second 2>/dev/null"
wait "$second" || { say "the pipeline exited with an error"; exit 1; }

"$py" "$here/scripts/verify.py"
