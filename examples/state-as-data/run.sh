#!/usr/bin/env bash
# A job's state as data, unattended: the tutorial's pipeline (examples/kafka-to-clickhouse:
# the same pipeline.sql.in, workload.py, producer and ClickHouse table) runs on Kafka in one
# process with checkpoints and --http-port; while it runs, its state is queried live
# (`clink state-query --job=1` through the REST API, and `--checkpoint-dir`); then it is
# SIGKILLed mid-stream, windows still open, and every state command runs on what it left:
# checkpoint-verify, state-cat, state-diff between its two newest checkpoints, state-query,
# state-export to Arrow, Parquet and an Iceberg table (both checkpoints, two snapshots). The
# exports are read with pyarrow, DuckDB, Polars and pyiceberg (state_check.py: no clink in the
# reading) and checked against the workload's own recomputation of the windows open at that
# checkpoint.
#
#   ./run.sh                 everything, then clean up (services stop if this script started them)
#   KEEP_UP=1 ./run.sh       leave the services and the work dir (checkpoints, exports) up
#   RATE=100 ./run.sh        readings per second (default 50, the tutorial's pace)
#   CLINK_BIN=path ./run.sh  use this clink binary instead of building the release one
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tut=$repo/examples/kafka-to-clickhouse
cd "$repo"

scripts/setup.sh
was_down=$( (scripts/services.sh status 2>/dev/null || true) | awk '$2 != "running" && $1 != "work" {print $1}' | tr '\n' ' ')
scripts/services.sh start
eval "$(scripts/services.sh env)"
clink="${CLINK_BIN:-$repo/$(scripts/build.sh release | tail -1)}"
work=$(mktemp -d /tmp/clink-state-as-data.XXXXXX)
py=$CLINK_PYTHON
pids=()
# the state route needs a token, even on loopback
CLINK_AUTH_TOKEN=${CLINK_AUTH_TOKEN:-state-as-data-$RANDOM$RANDOM}
export CLINK_AUTH_TOKEN

say() { echo "[state-as-data] $*"; }
forget() {
  local keep=() p
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=(${keep[@]+"${keep[@]}"})
}
cleanup() {
  rc=$?
  for p in ${pids[@]+"${pids[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    say "FAILED (exit $rc); logs:"
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -40 "$f"; }; done
  fi
  if [ "${KEEP_UP:-0}" = 1 ]; then
    say "KEEP_UP=1: services and $work are left up"
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
ckpt=$work/checkpoints
completed() { ls "$ckpt/v1/_meta" 2>/dev/null | sed -n 's/^completed-\([0-9]*\)$/\1/p' | sort -n; }
checkpoints_at_least() { [ "$(completed | wc -l)" -ge "$1" ]; }

say "the tutorial's topic and table, and its pipeline"
"$py" "$tut/scripts/ch.py" reset "$tut/clickhouse-init.sql"
sed -e "s|@KAFKA_BROKERS@|$CLINK_KAFKA_BROKERS|" -e "s|@CLICKHOUSE_HOST@|$CLINK_CLICKHOUSE_HOST|" \
    -e "s|@CLICKHOUSE_PORT@|$CLINK_CLICKHOUSE_PORT|" -e "s|@SINK_EXTRA@||" \
    "$tut/pipeline.sql.in" > "$work/pipeline.sql"

say "clink run pipeline.sql --checkpoint-dir $ckpt --checkpoint-interval-ms 2000 --http-port 0"
"$clink" run "$work/pipeline.sql" --checkpoint-dir "$ckpt" --checkpoint-interval-ms 2000 \
  --http-port 0 --log-level info > "$work/clink.log" 2>&1 &
pids+=($!); job=$!
wait_for "the REST API" 30 grep -q "serving the job's REST API" "$work/clink.log"
rest=$(sed -n "s/.*serving the job's REST API on \(127\.0\.0\.1:[0-9]*\).*/\1/p" "$work/clink.log" | head -1)

say "streaming 2,440 readings at ${RATE:-50}/s"
"$py" "$tut/scripts/produce_events.py" --rate "${RATE:-50}" > "$work/producer.log" 2>&1 &
pids+=($!); producer=$!
wait_for "the first windows in ClickHouse" 120 "$py" "$tut/scripts/ch.py" atleast 40
wait_for "two completed checkpoints" 60 checkpoints_at_least 2

q="SELECT slot, COUNT(*) AS entries FROM state WHERE value_hex <> '' GROUP BY slot"
live_check() { # live_check NAME STATE-QUERY-ARGS...: ask, then check against the checkpoint named
  local name=$1 attempt rc; shift
  for attempt in 1 2 3 4 5; do
    "$clink" state-query "$@" --sql="$q" > "$work/$name.out" 2> "$work/$name.err"
    cat "$work/$name.out" "$work/$name.err"
    # the newest completed exported at once: the same checkpoint, unless one completed since
    "$clink" state-export --dir="$ckpt" --format=parquet --out="$work/$name.parquet" 2> /dev/null
    rc=0; "$py" "$here/state_check.py" query "$ckpt/v1" "$work/$name.out" "$work/$name.err" \
      --export "$work/$name.parquet" || rc=$?
    [ "$rc" -eq 3 ] || return "$rc"   # 3: that checkpoint is gone from disk: ask again
  done
  say "five answers in a row named checkpoints already removed"; return 1
}
say "live: clink state-query --job=1 --coordinator=$rest --sql=\"$q\""
live_check live --job=1 --coordinator="$rest"
say "live: clink state-query --checkpoint-dir=$ckpt (the same directory, read while the job writes it)"
live_check dir --checkpoint-dir="$ckpt"

kill -0 "$producer" 2>/dev/null || { say "the producer finished before the kill: not mid-stream"; exit 1; }
say "SIGKILL to the pipeline mid-stream"
kill -9 "$job"; wait "$job" 2>/dev/null || true; forget "$job"
newest=$(completed | tail -1); prev=$(completed | tail -2 | head -1)
say "its newest completed checkpoints: $prev and $newest"

say "clink checkpoint-verify --dir=$ckpt"
"$clink" checkpoint-verify --dir="$ckpt"
say "clink state-cat --dir=$ckpt (the first lines)"
"$clink" state-cat --dir="$ckpt" > "$work/state.ndjson"
head -3 "$work/state.ndjson"
say "clink state-diff $ckpt@$prev $ckpt@$newest"
rc=0; "$clink" state-diff "$ckpt@$prev" "$ckpt@$newest" > "$work/diff.ndjson" || rc=$?
head -2 "$work/diff.ndjson"
[ "$rc" -eq 1 ] || { say "state-diff exited $rc, not 1 (different)"; exit 1; }
rc=0; "$clink" state-diff "$ckpt@$newest" "$ckpt@$newest" > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { say "state-diff of a checkpoint with itself exited $rc, not 0"; exit 1; }
say "clink state-query --dir=$ckpt --id=$newest"
"$clink" state-query --dir="$ckpt" --id="$newest" --sql="$q" > "$work/q.out" 2> "$work/q.err"
cat "$work/q.out" "$work/q.err"
"$py" "$here/state_check.py" query "$ckpt/v1" "$work/q.out" "$work/q.err"
"$clink" state-query --dir="$ckpt" --id="$newest" --sql="SELECT key_str AS sensor, window_start, value_int AS readings, agg2 AS avg_c FROM state WHERE slot = 'win'" | head -3

say "clink state-export --dir=$ckpt --id=$newest: arrow, parquet; iceberg of $prev then $newest"
"$clink" state-export --dir="$ckpt" --id="$newest" --format=arrow --out="$work/state.arrow"
"$clink" state-export --dir="$ckpt" --id="$newest" --format=parquet --out="$work/state.parquet"
"$clink" state-export --dir="$ckpt" --id="$prev" --format=iceberg --out="$work/iceberg"
"$clink" state-export --dir="$ckpt" --id="$newest" --format=iceberg --out="$work/iceberg"

say "reading them with pyarrow, DuckDB, Polars and pyiceberg"
"$py" "$here/state_check.py" exports "$work" "$newest" --iceberg "$prev"
"$py" "$here/state_check.py" snapshots "$ckpt/v1" "$prev"
wait "$producer" 2>/dev/null || true; forget "$producer"
say "PASS"
