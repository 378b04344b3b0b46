#!/usr/bin/env bash
# The whole Kafka -> ClickHouse tutorial, unattended, on this machine:
# start the services, create the topic and the table, start the pipeline with checkpoints,
# stream the readings in, SIGKILL the pipeline mid-stream, run the same command again, let the
# producer finish, stop the pipeline (Ctrl-C), and verify every window against workload.py.
#
# MODE=cluster runs the tutorial's cluster shape instead: a coordinator and one worker
# (worker-1) on 127.0.0.1, the pipeline submitted to the coordinator, the worker SIGKILLed
# mid-stream, the coordinator waiting for capacity, the worker started again, the job restored
# from its last completed checkpoint; then the job is cancelled, both processes stopped, and
# the same verification runs. While the job runs after its restart, the README's "Look inside
# the state" block runs as written (its REST port and work directory in place of 8081 and /tmp)
# and its live state query is checked against the checkpoint it names (state-as-data's
# state_check.py): the coordinator gets a CLINK_AUTH_TOKEN, since the state route needs one.
# The embedded run records with --capture-dir, and after it stops the README's "Replay an
# incident" block runs as written on the newest interval in which the window operator emitted
# windows (scripts/check_replay.py picks it and checks the replayed windows against workload.py),
# and the test it emits must fail under a planted bug (CLINK_MUTANT=agg_count_plus_one).
#
#   ./run.sh                 everything, then clean up (services stop if this script started them)
#   MODE=cluster ./run.sh    the same workload on a coordinator and a worker
#   KEEP_UP=1 ./run.sh       leave the services, the topic, the table and the work dir up
#   RATE=50 ./run.sh         readings per second (default 100; the tutorial's pace is 50)
#   CLICKHOUSE=26.9 ./run.sh the ClickHouse line to write to: 18.16 (default, Debian's server)
#                            or 26.9 (scripts/services.sh clickhouse26)
#   GUARANTEE=exactly_once CLICKHOUSE=26.9 ./run.sh
#                            the sink with delivery_guarantee = 'exactly_once' into a plain
#                            MergeTree (clickhouse-init-exactly-once.sql); verify.py then fails
#                            on any duplicate. ClickHouse 26.9 only: 18.16 cannot give it
#   CLINK_BIN=path ./run.sh  use this clink binary instead of building the release one
#
# On failure it prints the pipeline's logs (the coordinator's and the workers' in cluster mode)
# and what ClickHouse holds.
set -euo pipefail
mode=${MODE:-embedded}
case $mode in
  embedded|cluster) ;;
  *) echo "[run.sh] MODE must be embedded or cluster, not '$mode'" >&2; exit 2 ;;
esac
line=${CLICKHOUSE:-18.16}
case $line in
  18.16|26.9) ;;
  *) echo "[run.sh] CLICKHOUSE must be 18.16 or 26.9, not '$line'" >&2; exit 2 ;;
esac
guarantee=${GUARANTEE:-at_least_once}
case $guarantee in
  at_least_once) init=clickhouse-init.sql; sink_extra=""; verify_args=() ;;
  exactly_once)
    [ "$line" = 26.9 ] || { echo "[run.sh] GUARANTEE=exactly_once needs CLICKHOUSE=26.9 (18.16 has no insert_deduplication_token)" >&2; exit 2; }
    init=clickhouse-init-exactly-once.sql; sink_extra=",\n    delivery_guarantee = 'exactly_once'"; verify_args=(--exactly-once) ;;
  *) echo "[run.sh] GUARANTEE must be at_least_once or exactly_once, not '$guarantee'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

scripts/setup.sh
# stop at the end only the services this run started
was_down=$( (scripts/services.sh status 2>/dev/null || true) | awk '$2 != "running" && $1 != "work" {print $1}' | tr '\n' ' ')
scripts/services.sh start
eval "$(scripts/services.sh env)"
if [ "$line" = 26.9 ]; then
  # everything below (the pipeline, ch.py, verify.py) reads the CLINK_CLICKHOUSE_* address
  CLINK_CLICKHOUSE_HOST=$CLINK_CLICKHOUSE26_HOST
  CLINK_CLICKHOUSE_PORT=$CLINK_CLICKHOUSE26_PORT
  CLINK_CLICKHOUSE_HTTP_PORT=$CLINK_CLICKHOUSE26_HTTP_PORT
  export CLINK_CLICKHOUSE_HOST CLINK_CLICKHOUSE_PORT CLINK_CLICKHOUSE_HTTP_PORT
fi
echo "[run.sh] ClickHouse $line at $CLINK_CLICKHOUSE_HOST:$CLINK_CLICKHOUSE_PORT"
# CLINK_BIN picks the binary (the test command passes its sanitizer build)
clink="${CLINK_BIN:-$repo/$(scripts/build.sh release | tail -1)}"
work=$(mktemp -d /tmp/clink-tutorial.XXXXXX)
py=$CLINK_PYTHON
pids=()

say() { echo "[run.sh] $*"; }
forget() { # forget PID: it was waited for, so cleanup must not signal that number again
  local keep=() p
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=(${keep[@]+"${keep[@]}"})
}

cleanup() {
  rc=$?
  for p in ${pids[@]+"${pids[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    say "FAILED (exit $rc); pipeline logs:"
    for f in "$work"/clink-*.log "$work"/coordinator.log "$work"/worker-*.log; do
      [ -f "$f" ] && { echo "--- $f"; tail -40 "$f"; }
    done
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
"$py" "$here/scripts/ch.py" reset "$here/$init"
sed -e "s|@KAFKA_BROKERS@|$CLINK_KAFKA_BROKERS|" -e "s|@CLICKHOUSE_HOST@|$CLINK_CLICKHOUSE_HOST|" \
    -e "s|@CLICKHOUSE_PORT@|$CLINK_CLICKHOUSE_PORT|" -e "s|@SINK_EXTRA@|$sink_extra|" \
    "$here/pipeline.sql.in" > "$work/pipeline.sql"

if [ "$mode" = cluster ]; then
  # two free ports for the coordinator (control, REST), from the ephemeral range, not 21xxx
  read -r port http_port < <("$py" -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
  api="http://127.0.0.1:$http_port/api/v1"
  # the README's "Look inside the state" queries the job's state, which needs the token
  CLINK_AUTH_TOKEN=${CLINK_AUTH_TOKEN:-tutorial-$RANDOM$RANDOM}
  export CLINK_AUTH_TOKEN
  auth=()
  [ -z "${CLINK_AUTH_TOKEN:-}" ] || auth=(-H "Authorization: Bearer $CLINK_AUTH_TOKEN")
  rest() { curl -sf --max-time 10 ${auth[@]+"${auth[@]}"} "$api/$1"; }
  job_field() { rest "jobs/$jid" | "$py" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
  job_is() { [ "$(job_field status 2>/dev/null)" = "$1" ]; }
  checkpointed() { [ "$(job_field last_checkpoint 2>/dev/null || echo 0)" -ge 1 ]; }
  healthy() { rest health > /dev/null; }
  logged() { grep -q "$1" "$work/coordinator.log"; }
  registered() {
    rest workers | "$py" -c 'import json, sys
sys.exit(not any(w["id"] == "worker-1" and w["status"] == "REGISTERED" for w in json.load(sys.stdin)["workers"]))'
  }
  start_worker() { # start_worker LOG: worker-1 with one slot
    "$clink" worker --coordinator-host 127.0.0.1 --coordinator-port "$port" --slots 1 \
      --id worker-1 --log-level info > "$1" 2>&1 &
    pids+=($!); worker=$!
    wait_for "worker-1 to register" 30 registered
  }
  stop() { # stop PID NAME: SIGTERM, then its exit status must be 0
    kill -TERM "$1"
    wait_for "$2 to exit" 60 sh -c "! kill -0 $1 2>/dev/null"
    local rc=0
    wait "$1" || rc=$?
    forget "$1"
    [ "$rc" -eq 0 ] || { say "$2 exited with status $rc"; return 1; }
  }

  say "starting the coordinator: clink coordinator --port $port --http-port $http_port --checkpoint-dir $work/checkpoints"
  "$clink" coordinator --port "$port" --http-port "$http_port" --checkpoint-dir "$work/checkpoints" \
    --log-level info > "$work/coordinator.log" 2>&1 &
  pids+=($!); coordinator=$!
  wait_for "the coordinator's REST API" 30 healthy
  say "starting worker-1: clink worker --coordinator-port $port --slots 1 --id worker-1"
  start_worker "$work/worker-1.log"

  say "submitting: clink run pipeline.sql --coordinator-host 127.0.0.1 --coordinator-port $port --name kafka-to-clickhouse"
  submitted=$("$clink" run "$work/pipeline.sql" --coordinator-host 127.0.0.1 --coordinator-port "$port" \
    --name kafka-to-clickhouse)
  echo "$submitted"
  [[ $submitted =~ ^submitted\ job\ ([0-9]+)$ ]] || { say "could not read the job id"; exit 1; }
  jid=${BASH_REMATCH[1]}
  wait_for "the job's delivery guarantee in the coordinator log" 30 logged "job delivery guarantee"
  grep "job delivery guarantee" "$work/coordinator.log"
  wait_for "job $jid to run" 60 job_is RUNNING
  say "curl -s $api/jobs"
  rest jobs; echo

  say "streaming 2,440 readings at ${RATE:-100}/s"
  "$py" "$here/scripts/produce_events.py" --rate "${RATE:-100}" > "$work/producer.log" 2>&1 &
  pids+=($!); producer=$!

  wait_for "the first windows in ClickHouse" 120 "$py" "$here/scripts/ch.py" atleast 40
  wait_for "a completed checkpoint" 30 checkpointed
  if kill -0 "$producer" 2>/dev/null; then
    say "SIGKILL to worker-1 while the producer is still running"
  else
    say "SIGKILL to worker-1 (the producer has already finished: the kill is not mid-stream)"
  fi
  kill -9 "$worker"; wait "$worker" 2>/dev/null || true; forget "$worker"
  "$py" "$here/scripts/ch.py" count
  wait_for "the coordinator to see worker-1 lost" 30 logged "worker lost: worker-1"
  wait_for "the restart to wait for capacity" 30 logged "restart waiting for capacity"
  grep -iE 'lost|restart|restore' "$work/coordinator.log"
  wait_for "job $jid to be RESTARTING" 10 job_is RESTARTING

  say "starting worker-1 again"
  start_worker "$work/worker-1.restarted.log"
  wait_for "the restore point in the coordinator log" 60 logged "restore point: checkpoint"
  grep -E 'attempt=|restore point' "$work/coordinator.log"
  wait_for "job $jid to run again" 60 job_is RUNNING

  # the README's "Look inside the state" block, as written, but for its REST port and /tmp
  say "the README's \"Look inside the state\" (its REST port $http_port, $work for /tmp)"
  mkdir -p "$work/bin"; ln -sf "$clink" "$work/bin/clink"
  "$py" - "$here/README.md" > "$work/look-inside-the-state.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
at = text.index("<!-- run.sh (MODE=cluster) runs this block")
print(re.search(r"```sh\n(.*?)```", text[at:], re.S).group(1), end="")
PY
  sed -i -e "s|127.0.0.1:8081|127.0.0.1:$http_port|g" -e "s|/tmp/clink-checkpoints|$work/checkpoints|g" \
      -e "s|/tmp/state.parquet|$work/state.parquet|g" -e "s|--job=1 |--job=$jid |g" \
      -e "s|/job-1|/job-$jid|g" "$work/look-inside-the-state.sh"
  cat "$work/look-inside-the-state.sh"
  for attempt in 1 2 3 4 5; do
    PATH="$work/bin:$PATH" CLINK_PYTHON="$py" bash -e "$work/look-inside-the-state.sh" \
      > "$work/look-inside-the-state.out" 2>&1 || { cat "$work/look-inside-the-state.out"; exit 1; }
    cat "$work/look-inside-the-state.out"
    # against the checkpoint the answer names (or the block's export, when it is the same one)
    rc=0; "$py" "$repo/examples/state-as-data/state_check.py" query "$work/checkpoints/job-$jid/v1" \
      "$work/look-inside-the-state.out" "$work/look-inside-the-state.out" \
      --export "$work/state.parquet" || rc=$?
    [ "$rc" -eq 3 ] || break   # 3: that checkpoint is already gone from disk: run it again
  done
  [ "$rc" -eq 0 ] || { say "the state query's answer does not hold (state_check exit $rc)"; exit 1; }

  wait "$producer"; forget "$producer"
  cat "$work/producer.log"
  wait_for "all 240 closed windows" 120 "$py" "$here/scripts/ch.py" windows 240
  say "cancelling the job: clink cancel $jid --coordinator-port $port"
  "$clink" cancel "$jid" --coordinator-host 127.0.0.1 --coordinator-port "$port"
  wait_for "job $jid to be cancelled" 60 job_is CANCELLED
  rest "jobs/$jid"; echo
  say "stopping worker-1 and the coordinator (SIGTERM)"
  stop "$worker" worker-1
  stop "$coordinator" coordinator
else
  say "starting the pipeline: clink run pipeline.sql --checkpoint-dir $work/checkpoints"
  "$clink" run "$work/pipeline.sql" --checkpoint-dir "$work/checkpoints" --fresh \
    --capture-dir "$work/capture" > "$work/clink-1.log" 2>&1 &
  pids+=($!); first=$!
  grep -q "job delivery guarantee" "$work/clink-1.log" 2>/dev/null || wait_for "the pipeline to start" 30 grep -q "job delivery guarantee" "$work/clink-1.log"
  grep "job delivery guarantee" "$work/clink-1.log"

  say "streaming 2,440 readings at ${RATE:-100}/s"
  "$py" "$here/scripts/produce_events.py" --rate "${RATE:-100}" > "$work/producer.log" 2>&1 &
  pids+=($!); producer=$!

  wait_for "the first windows in ClickHouse" 120 "$py" "$here/scripts/ch.py" atleast 40
  say "SIGKILL to the pipeline while the producer is still running"
  kill -9 "$first"; wait "$first" 2>/dev/null || true; forget "$first"
  "$py" "$here/scripts/ch.py" count

  say "running the same command again"
  "$clink" run "$work/pipeline.sql" --checkpoint-dir "$work/checkpoints" \
    --capture-dir "$work/capture" > "$work/clink-2.log" 2>&1 &
  pids+=($!); second=$!
  wait_for "the rerun to restore" 30 grep -qE "restore point|starting fresh" "$work/clink-2.log"
  grep -E "restore point|starting fresh" "$work/clink-2.log"

  wait "$producer"; forget "$producer"
  cat "$work/producer.log"
  wait_for "all 240 closed windows" 120 "$py" "$here/scripts/ch.py" windows 240
  say "stopping the pipeline (Ctrl-C: final checkpoint, then exit)"
  kill -INT "$second"
  wait_for "the pipeline to stop" 60 sh -c "! kill -0 $second 2>/dev/null"
  wait "$second" || { say "the pipeline exited with an error"; exit 1; }
  forget "$second"

  # the README's "Replay an incident" block, as written, but for its directories and epoch
  epoch=$("$py" "$here/scripts/check_replay.py" pick "$work/capture" "$work/checkpoints")
  say "the README's \"Replay an incident\" (epoch $epoch, $work for /tmp)"
  mkdir -p "$work/bin"; ln -sf "$clink" "$work/bin/clink"
  "$py" - "$here/README.md" > "$work/replay-an-incident.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
at = text.index("<!-- run.sh (MODE=embedded) runs this block")
print(re.search(r"```sh\n(.*?)```", text[at:], re.S).group(1), end="")
PY
  sed -i -e "s|/tmp/clink-capture|$work/capture|g" -e "s|/tmp/clink-checkpoints|$work/checkpoints|g" \
      -e "s|/tmp/incident-window|$work/incident-window|g" -e "s|epoch-12\.cap|epoch-$epoch.cap|g" \
      -e "s|--epoch 12 |--epoch $epoch |g" "$work/replay-an-incident.sh"
  cat "$work/replay-an-incident.sh"
  PATH="$work/bin:$PATH" bash -e "$work/replay-an-incident.sh" > "$work/replay-an-incident.out" 2>&1 \
    || { cat "$work/replay-an-incident.out"; say "the README's replay block failed"; exit 1; }
  cat "$work/replay-an-incident.out"
  grep -q "two replays are byte-identical" "$work/replay-an-incident.out"
  grep -q "the replay matches what operator 3 recorded" "$work/replay-an-incident.out"
  # the replayed windows against workload.py, and the emitted test against a planted bug
  "$py" "$here/scripts/check_replay.py" check "$work/incident-window/golden.ndjson"
  if (cd "$work/incident-window/build" && CLINK_MUTANT=agg_count_plus_one ctest > /dev/null 2>&1); then
    say "the emitted test passed with COUNT one too many: it guards nothing"; exit 1
  fi
  say "the emitted test fails with the planted bug (CLINK_MUTANT=agg_count_plus_one), as it must"
fi

"$py" "$here/scripts/verify.py" ${verify_args[@]+"${verify_args[@]}"}
