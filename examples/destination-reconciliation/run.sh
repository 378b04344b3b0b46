#!/usr/bin/env bash
# Destination reconciliation, unattended (docs/incidents.md, "Reconcile"): a Kafka → filter/project
# → ClickHouse job runs with the flight recorder, is SIGKILLed after it wrote rows no completed
# checkpoint covers, and runs again (it restores, and writes those rows again); the directories are
# collected into a bundle (clink incident collect), and `clink incident reconcile` then reads the
# table in each scenario, with its expected exit status and report:
#   faithful 0 · row deleted (ALTER DELETE) 1 missing · row changed 1 changed · duplicate by hand
#   1 duplicated, unexplained · the restore's scope 1 duplicated, explained by the restore ·
#   an unrelated key inserted: not read · a mutation left running 3 · a bound exceeded 3 · an empty
#   scope 3 · missing evidence 3 · truncated evidence 3 · a bundle whose names try to inject SQL 2
#   (and the table untouched) · the table recreated 2.
# Before any scenario the table is checked against an independent reference (recon.py oracle: the
# producer's records through the script's own filter and projection, no clink code). The audit
# (reconcile --reference): a reference read from the scope's exact Kafka range by
# python/clink-reference and projected by recon.py passes (0); one whose filter is off by one
# fails the transformation while the delivery passes (1); one for another checkpoint is refused (2).
#
#   ./run.sh                    against ClickHouse 18.16
#   CLICKHOUSE=26.9 ./run.sh    against 26.9 (an Atomic database, so the table has a UUID)
#   KEEP_UP=1 ./run.sh          leave the work directory (bundle, reports, logs)
#   CLINK_BIN=path ./run.sh     use this clink binary instead of building the release one
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

if [ -z "${CLINK_PYTHON:-}" ] || [ -z "${CLINK_KAFKA_BROKERS:-}" ]; then
  scripts/setup.sh
  scripts/services.sh start
  eval "$(scripts/services.sh env)"
fi
clink="${CLINK_BIN:-$repo/$(scripts/build.sh release | tail -1)}"
export LINE=${CLICKHOUSE:-18.16}
if [ "$LINE" = 26.9 ]; then port=$CLINK_CLICKHOUSE26_PORT; else port=$CLINK_CLICKHOUSE_PORT; fi
run_id=$(date +%s)$RANDOM
topic=rcn_$run_id
db=default; [ "$LINE" = 26.9 ] && db=rcn_db_$run_id
table=rcn_$run_id
work=$(mktemp -d /tmp/clink-destination-reconciliation.XXXXXX)
py=$CLINK_PYTHON
recon() { "$py" "$here/recon.py" "$@"; }
pids=()
say() { echo "[destination-reconciliation $LINE] $*"; }
cleanup() {
  rc=$?
  for p in ${pids[@]+"${pids[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    say "FAILED (exit $rc); logs:"
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; }; done
  fi
  recon sql "$db.$table" "DROP TABLE IF EXISTS @T" >/dev/null 2>&1 || true
  [ "$db" = default ] || recon sql x "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  if [ "${KEEP_UP:-0}" = 1 ]; then say "KEEP_UP=1: $work is left"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
wait_for() { # wait_for DESCRIPTION DEADLINE_S COMMAND...
  local what=$1 deadline=$(( $(date +%s) + $2 )); shift 2
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || { say "timed out waiting for $what"; return 1; }
    sleep 0.2   # polling a condition with a deadline
  done
}
ckpt=$work/checkpoints cap=$work/capture
n_completed() { ls "$ckpt/v1/_meta" 2>/dev/null | grep -c '^completed-' || true; }
at_least() { [ "$(n_completed)" -ge "$1" ]; }

say "topic $topic, table $db.$table on 127.0.0.1:$port"
recon setup "$topic" "$db" "$table"
cat > "$work/pipeline.sql" <<EOF
CREATE TABLE events (id BIGINT, name VARCHAR, amount DOUBLE, price DECIMAL(10, 2), ts BIGINT)
WITH (connector = 'kafka', format = 'json', brokers = '$CLINK_KAFKA_BROKERS', topic = '$topic',
      group_id = 'rcn-$run_id', auto_offset_reset = 'earliest');
CREATE TABLE out (id BIGINT, name VARCHAR, amount DOUBLE, price DECIMAL(10, 2), ts BIGINT)
WITH (connector = 'clickhouse', host = '127.0.0.1', port = '$port', database = '$db',
      table = '$table', user = 'clink', password = 'clink', batch_rows = '20',
      batch_interval_ms = '50');
INSERT INTO out
SELECT id, UPPER(name) AS name, amount * 2 AS amount, price, ts / 1000 AS ts
FROM events WHERE id % 10 <> 3;
EOF
start_job() {
  "$clink" run "$work/pipeline.sql" --checkpoint-dir "$ckpt" --capture-dir "$cap" \
    --checkpoint-interval-ms 1500 --checkpoints-retained 1000 --log-level info >> "$work/clink.log" 2>&1 &
  pids+=($!); job=$!
}

say "producing 1,500 records at 150/s; the job runs with --capture-dir"
recon produce "$topic" 1500 150 "$work/records.jsonl" > "$work/producer.log" 2>&1 &
pids+=($!); producer=$!
start_job
wait_for "two completed checkpoints" 90 at_least 2
wait_for "rows written after the last completed checkpoint" 60 recon wrote_past "$cap" "$ckpt" "$db.$table"
say "SIGKILL with rows written after checkpoint $(ls "$ckpt/v1/_meta" | sed -n 's/^completed-//p' | sort -n | tail -1)"
kill -9 "$job"; wait "$job" 2>/dev/null || true
say "the same command again: it restores its last completed checkpoint and writes what followed again"
start_job
wait "$producer"
wait_for "every row, then two quiet intervals" 120 recon settled "$cap" "$ckpt" "$db.$table" "$work/records.jsonl"
kill -9 "$job"; wait "$job" 2>/dev/null || true

recon oracle "$work/records.jsonl" "$db.$table"
say "clink incident collect --include-captures --include-state"
"$clink" incident collect --checkpoint-dir "$ckpt" --capture-dir "$cap" --include-captures \
  --include-state --out "$work/bundle" > "$work/collect.log" 2>&1
B=$work/bundle
read -r restore full empty k1 k2 k3 < <(recon pick "$B")
say "scopes: the restore's $restore, one with rows $full (keys $k1, $k2, $k3 …), an empty one $empty"

export CLINK_RECONCILE_PASSWORD=clink
reconcile() { # reconcile NAME BUNDLE [options]: the report in $work/NAME.json
  local name=$1 bundle=$2 rc=0; shift 2
  "$clink" incident reconcile "$bundle" --host 127.0.0.1 --port "$port" --user clink --key id \
    --pause-ms 300 --json "$work/$name.json" "$@" > "$work/$name.log" 2>&1 || rc=$?
  say "$name: exit $rc"
}
scenario() { # scenario NAME EXIT CHECKS… -- reconcile options
  local name=$1 want=$2; shift 2
  local checks=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do checks+=("$1"); shift; done
  shift || true
  reconcile "$name" "$B" "$@"
  recon check "$work/$name.json" "$want" ${checks[@]+"${checks[@]}"}
}

scenario faithful 0 missing=0 changed=0 duplicated=0 unexpected=0 sources="$topic" -- --checkpoint "$full"
scenario restore 1 missing=0 changed=0 unexpected=0 explained=restore -- --checkpoint "$restore"
say "the audit: an independent reference (python/clink-reference and recon.py's own projection)"
"$clink" incident scope "$B" --checkpoint "$full" --json > "$work/scope-full.json"
recon reference "$work/scope-full.json" "$work/ref.ndjson" good
scenario audit 0 missing=0 audit.reference=pass audit.transformation=pass \
  audit.reference_vs_destination=pass -- --checkpoint "$full" --reference "$work/ref.ndjson"
recon reference "$work/scope-full.json" "$work/ref-bad.ndjson" bad
scenario audit-defect 1 missing=0 changed=0 audit.transformation=fail \
  audit.reference_vs_destination=fail -- --checkpoint "$full" --reference "$work/ref-bad.ndjson"
scenario audit-other-checkpoint 2 why="the checkpoint differs" -- --checkpoint "$restore" \
  --reference "$work/ref.ndjson"
recon sql "$db.$table" "ALTER TABLE @T DELETE WHERE id = $k1"
recon wait_mutations "$db.$table"
scenario deleted 1 missing=1 changed=0 duplicated=0 unexpected=0 -- --checkpoint "$full"
recon sql "$db.$table" "ALTER TABLE @T UPDATE name = 'CHANGED' WHERE id = $k2"
recon wait_mutations "$db.$table"
scenario changed 1 missing=1 changed=1 duplicated=0 unexpected=0 -- --checkpoint "$full"
recon sql "$db.$table" "INSERT INTO @T SELECT * FROM @T WHERE id = $k3"
scenario duplicated 1 missing=1 changed=1 duplicated=1 unexpected=0 explained=none -- --checkpoint "$full"
recon sql "$db.$table" "INSERT INTO @T SELECT 987654321, 'UNRELATED', toFloat64(1), toDecimal64(1, 2), toDateTime(0)"
scenario unrelated 1 missing=1 changed=1 duplicated=1 unexpected=0 absent=987654321 -- --checkpoint "$full"
scenario bound 3 why="passed a bound" -- --checkpoint "$full" --max-rows 1
scenario empty 3 why="holds no row" -- --checkpoint "$empty"

say "evidence missing, and truncated, in copies of the bundle"
cp -r "$B" "$work/b-missing"
rm "$work/b-missing"/capture/op-*/subtask-0/epoch-"$full".sink.json
reconcile missing "$work/b-missing" --checkpoint "$full"
recon check "$work/missing.json" 3 why="missing from the bundle"
cp -r "$B" "$work/b-truncated"
for f in "$work/b-truncated"/capture/op-*/subtask-0/epoch-"$full".sink.json; do
  sed -i 's/"truncated":false/"truncated":true/' "$f"
done
reconcile truncated "$work/b-truncated" --checkpoint "$full"
# the edit breaks the file's checksum (bundle.integrity fails: 1); without the manifest the
# truncation alone makes it partial (3): never 0 either way
recon check "$work/truncated.json" 1 why="does not match its checksum"
rm "$work/b-truncated/manifest.json"
reconcile truncated2 "$work/b-truncated" --checkpoint "$full"
recon check "$work/truncated2.json" 3 why="truncated"

say "a bundle whose names try to inject SQL: quoted as identifiers and literals, refused, table untouched"
cp -r "$B" "$work/b-inject"
rm "$work/b-inject/manifest.json"
for f in "$work/b-inject"/capture/op-*/subtask-*/epoch-*.sink.json; do
  sed -i "s/\"table\":\"$table\"/\"table\":\"$table\` WHERE 0; DROP TABLE $db.$table; --'\"/" "$f"
done
reconcile inject "$work/b-inject" --checkpoint "$full"
recon check "$work/inject.json" 2 why="does not exist"
[ "$(recon sql "$db.$table" "SELECT 1 FROM system.tables WHERE database = '$db' AND name = '$table'" | tr -d '[](), ')" = 1 ] \
  || { say "the table is gone"; exit 1; }

say "a mutation left running"
# a mutation that fails on every part stays unfinished (26.9 waits for it and reports the first
# failure, leaving it queued: KILL MUTATION would end it)
recon sql "$db.$table" "ALTER TABLE @T UPDATE name = toString(throwIf(id >= 0)) WHERE 1" \
  > "$work/mutation.log" 2>&1 || [ "$LINE" = 26.9 ]
scenario running 3 why="mutation" -- --checkpoint "$full"

say "the table recreated with the same definition"
recon sql "$db.$table" "DROP TABLE @T"
sleep 1.1   # a new second: 18.16 tells the tables apart by their metadata time alone
recon sql "$db.$table" "CREATE TABLE @T (id Int64, name String, amount Float64, price Decimal(10, 2), ts DateTime) ENGINE = MergeTree ORDER BY id"
scenario recreated 2 why="not the one the evidence names" -- --checkpoint "$full"
say "PASS"
