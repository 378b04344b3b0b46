#!/usr/bin/env bash
# Builds and runs the libFuzzer targets in fuzz/ (clang, -fsanitize=fuzzer,address,undefined).
#
#   scripts/fuzz.sh list                      the targets
#   scripts/fuzz.sh build [TARGET|all]        build into $CLINK_FUZZ_DIR/TARGET/TARGET
#   scripts/fuzz.sh run TARGET|all [SECONDS] [-- LIBFUZZER_ARGS…]
#                                             build, then fuzz each target for SECONDS (default
#                                             60) over its corpus, one process at a time
#
# A target's inputs: its seeds in the repository (fuzz/corpus/TARGET/, read only) and a
# working corpus in $CLINK_FUZZ_DIR/TARGET/corpus that the run grows. A crash, leak or timeout
# leaves its input in $CLINK_FUZZ_DIR/TARGET/ (crash-*, leak-*, timeout-*) and exits non-zero.
# CLINK_FUZZ_DIR defaults to /tmp/clink-fuzz. CLINK_FUZZ_NICE (default 10) is the niceness.
set -euo pipefail
cd "$(dirname "$0")/.."

# ---------------------------------------------------------------- the targets (one table)
# name | sources besides fuzz/<name>.c | libraries | extra compiler flags | libFuzzer -max_len
# Sources "@libs" link the engine's own static libraries instead, built by CMake with clang
# and coverage instrumentation into $CLINK_FUZZ_DIR/_libs (for targets that reach most of it).
BASE="src/base/alloc.c src/base/arena.c src/base/buf.c src/base/hash.c src/base/error.c src/base/log.c src/base/redact.c src/base/thread.c src/base/time.c"
TARGETS=(
  "sql_frontend|src/sql/parser.c src/sql/planner.c src/runtime/graph.c src/runtime/expr.c src/runtime/expr_eval.c src/runtime/udf.c src/runtime/batch.c src/runtime/types.c src/runtime/decimal.c src/runtime/schema.c src/runtime/options.c src/runtime/connector.c src/base/digest.c $BASE|-licuuc -licui18n -lcrypto -ldl -lm|-DCK_FUZZ|65536"
  "clickhouse_reader|src/connectors/clickhouse/ch_reader.c src/connectors/clickhouse/ch_block.c src/connectors/clickhouse/ch_compress.c src/connectors/clickhouse/cityhash.c $BASE|-llz4 -lzstd|-DCK_FUZZ|65536"
  "rest_request|@libs|-lmicrohttpd -lzookeeper_mt -lrdkafka -lpq -llz4 -lz -lzstd -lsnappy -licuuc -licui18n -lcurl -lcrypto -lm|-I include|8192"
  "capture_reader|src/capture/reader.c src/base/arrow_ipc.c src/runtime/batch.c src/runtime/types.c src/runtime/decimal.c $BASE|-licuuc -lm|-DCK_FUZZ|262144"
  "kafka_records|src/connectors/kafka/krecords.c src/base/alloc.c src/base/buf.c src/base/crc32c.c src/base/error.c src/base/redact.c src/base/thread.c|-lz -lsnappy -llz4 -lzstd|-DCK_KRECS_MAX_BATCH=((size_t)16<<20)|131072"
)

DIR=${CLINK_FUZZ_DIR:-/tmp/clink-fuzz}
NICE=${CLINK_FUZZ_NICE:-10}

die() { echo "fuzz.sh: $*" >&2; exit 2; }

field() { # field ROW N
  local IFS='|'
  local -a f
  read -r -a f <<<"$1"
  echo "${f[$2]}"
}

row_of() {
  for row in "${TARGETS[@]}"; do
    [[ $(field "$row" 0) == "$1" ]] && { echo "$row"; return 0; }
  done
  die "no target '$1' (scripts/fuzz.sh list names them)"
}

names() { for row in "${TARGETS[@]}"; do field "$row" 0; done; }

# The engine's static libraries, instrumented for libFuzzer (once per change of the tree).
engine_libs() {
  local b=$DIR/_libs
  CC=clang cmake -S . -B "$b" -DCLINK_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS='-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined' \
    >/dev/null
  cmake --build "$b" -j"$(nproc)" --target ck_coordinator >/dev/null
  local l
  for l in cluster/libck_coordinator cluster/libck_cluster job/libck_job sql/libck_sql \
           connectors/libck_connectors runtime/libck_runtime checkpoint/libck_checkpoint \
           base/libck_base; do echo "$b/src/$l.a"; done
  echo "-I $b/generated"
}

build_one() {
  local row name srcs libs flags out
  row=$(row_of "$1")
  name=$(field "$row" 0) srcs=$(field "$row" 1) libs=$(field "$row" 2) flags=$(field "$row" 3)
  command -v clang >/dev/null || die "clang is not installed (scripts/setup.sh installs it)"
  [[ $srcs == @libs ]] && srcs=$(engine_libs | tr '\n' ' ')
  mkdir -p "$DIR/$name/corpus"
  out="$DIR/$name/$name"
  # shellcheck disable=SC2086  # word splitting of the lists is intended
  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -D_GNU_SOURCE -I src -I include "$flags" "fuzz/$name.c" $srcs $libs -lpthread -o "$out"
  echo "$out"
}

run_one() {
  local name=$1 secs=$2 row maxlen seeds
  shift 2
  row=$(row_of "$name")
  maxlen=$(field "$row" 4)
  build_one "$name" >/dev/null
  seeds=()
  [[ -d fuzz/corpus/$name ]] && seeds=("$PWD/fuzz/corpus/$name")
  echo "fuzz.sh: $name for ${secs}s (working corpus $DIR/$name/corpus)" >&2
  (cd "$DIR/$name" && nice -n "$NICE" "./$name" -max_total_time="$secs" -max_len="$maxlen" \
     -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 "$@" corpus "${seeds[@]}")
}

cmd=${1:-}
case "$cmd" in
  list) names ;;
  build)
    t=${2:-all}
    if [[ $t == all ]]; then for n in $(names); do build_one "$n"; done; else build_one "$t"; fi ;;
  run)
    t=${2:-}; [[ -n $t ]] || die "usage: scripts/fuzz.sh run TARGET|all [SECONDS] [-- ARGS…]"
    secs=${3:-60}
    shift $(( $# < 3 ? $# : 3 ))
    [[ ${1:-} == -- ]] && shift
    if [[ $t == all ]]; then
      for n in $(names); do run_one "$n" "$secs" "$@"; done
    else
      run_one "$t" "$secs" "$@"
    fi ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; [[ -z $cmd ]] && exit 2 || exit 2 ;;
esac
