#!/usr/bin/env bash
# compare.sh — Nexmark, clink against Apache Flink, on the same Kafka topic.
#
# DESIGN
#   1. Build: clink (scripts/build.sh release, unless $CLINK_BIN names a binary already
#      built), the topic generator bench/nexmark/nexmark_gen.c (linked against the libraries
#      of clink's own build tree, into that tree, so it shares connector='nexmark''s event
#      model and, in a sanitizer build, its sanitizers), and the Flink launcher
#      (bench/nexmark/flink, Maven from Maven Central; classes and every resolved jar go to
#      $CLINK_CACHE/nexmark-flink, outside the repository). Skipped when up to date.
#   2. Fill the topic nexmark-<events>-p<partitions>-s<seed> idempotently (nexmark_gen: events
#      0..N-1, event n in partition n mod P; a second run writes nothing).
#   3. Start-up alone: q0 on an empty topic, once per engine (the CPU a run costs before its
#      first event; reported beside the figures, never subtracted from the headline ratio).
#   4. For each query, on the topic, with the same parallelism on both sides:
#        correctness run  clink prints its rows (print sink, stdout to a file, one write per
#                         batch), Flink writes them to a file as they come (the launcher
#                         collects the query's rows); harness.py compares them (equal
#                         multisets; for update streams the final row per key). The time from
#                         process start to the first output row is measured here.
#        measurement run  only if the outputs are equal: each engine again, into a blackhole
#                         sink. CPU = user + system time of the engine's process and everything
#                         it waited for (wait4), the broker excluded; peak RSS the same way.
#      A query whose outputs differ prints the difference and gets no figures.
#   5. Print the table (events per CPU-second of each engine, the ratio, peak RSS, time to
#      first output), the median ratio, and write the raw numbers to $OUT/results.tsv.
#
#   Both engines: checkpointing off, parallelism --parallelism (default 1), event time from
#   date_time with a 4 s watermark lag, the whole topic from the earliest offsets to the end
#   offsets at start-up. Flink: local MiniCluster in one JVM (-Xmx$FLINK_HEAP), defaults
#   otherwise (bench/nexmark/flink/.../Launcher.java). Nothing is tuned on one side only.
#
# Usage (after scripts/setup.sh and scripts/services.sh start):
#   bench/nexmark/compare.sh [--events N] [--partitions P] [--parallelism N] [--seed S]
#                            [--queries "q0 q1 ..."] [--wrong-query qN] [--no-measure]
#                            [--no-build] [--out DIR]
#   --no-build        uses clink, the generator and the launcher as they are
#   CLINK_BIN=PATH    the clink binary to run (default build/src/cli/clink, built first by
#                     scripts/build.sh release); ctest sets it to the test build's binary.
#   --wrong-query qN  runs queries/wrong/qN.sql on the clink side instead of queries/qN.sql:
#                     the correctness gate must then report a difference (test_gate.sh).
#   Every engine run is stopped after $NEXMARK_RUN_TIMEOUT seconds (600): a run that hangs
#   (a broker gone away) fails its query instead of the whole benchmark.
#   Exit status: 0 when every query's outputs were equal, 1 when one differed or failed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${CLINK_CACHE:-$HOME/.cache/clink}
EVENTS=${NEXMARK_EVENTS:-2000000}
PARTITIONS=4
PARALLELISM=1
SEED=0
QUERIES="q0 q1 q2 q11 q12 q14 q15 q16 q17 q22"
WRONG=""
MEASURE=1
BUILD=1
OUT=""
FLINK_HEAP=${FLINK_HEAP:-2g}
RUN_TIMEOUT=${NEXMARK_RUN_TIMEOUT:-600} # seconds one engine run may take before it is stopped

while [ $# -gt 0 ]; do
    case $1 in
        --events) EVENTS=$2; shift 2 ;;
        --partitions) PARTITIONS=$2; shift 2 ;;
        --parallelism) PARALLELISM=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --queries) QUERIES=$2; shift 2 ;;
        --wrong-query) WRONG=$2; shift 2 ;;
        --no-measure) MEASURE=0; shift ;;
        --no-build) BUILD=0; shift ;;
        --out) OUT=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

log() { printf '[nexmark] %s\n' "$*" >&2; }
die() { printf 'compare.sh: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ environment
if [ -z "${CLINK_KAFKA_BROKERS:-}" ]; then
    eval "$("$ROOT/scripts/services.sh" env)"
fi
BROKERS=${CLINK_KAFKA_BROKERS:?}
PY=${CLINK_PYTHON:-python3}
command -v "$PY" >/dev/null || PY=python3
OUT=${OUT:-$CACHE/nexmark/run-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
TOPIC=nexmark-$EVENTS-p$PARTITIONS-s$SEED

# ------------------------------------------------------------------ build
if [ -n "${CLINK_BIN:-}" ]; then
    CLINK=$(cd "$(dirname "$CLINK_BIN")" && pwd)/$(basename "$CLINK_BIN")
    [ -x "$CLINK" ] || die "CLINK_BIN=$CLINK_BIN is not an executable"
else
    CLINK=$ROOT/build/src/cli/clink
    if [ $BUILD = 1 ]; then
        log "building clink (release)"
        "$ROOT/scripts/build.sh" release >"$OUT/build.log" 2>&1 || { tail -n 30 "$OUT/build.log" >&2; die "could not build clink (log: $OUT/build.log)"; }
    fi
    [ -x "$CLINK" ] || die "no $CLINK (run without --no-build)"
fi
# clink's build tree (BUILD/src/cli/clink): the generator links its libraries and lives there
BTREE=$(cd "$(dirname "$CLINK")/../.." && pwd)
[ -f "$BTREE/CMakeCache.txt" ] || die "$CLINK is not in a CMake build tree (no $BTREE/CMakeCache.txt)"

GEN=$BTREE/bench/nexmark_gen
libs=("$BTREE/src/connectors/libck_connectors.a" "$BTREE/src/runtime/libck_runtime.a"
      "$BTREE/src/checkpoint/libck_checkpoint.a" "$BTREE/src/base/libck_base.a")
san=()
grep -q '^CLINK_SANITIZE:BOOL=ON' "$BTREE/CMakeCache.txt" && san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
if [ ! -x "$GEN" ] || { [ $BUILD = 1 ] && [ -n "$(find "$HERE/nexmark_gen.c" "${libs[@]}" -newer "$GEN" 2>/dev/null)" ]; }; then
    log "building the topic generator against $BTREE"
    mkdir -p "$(dirname "$GEN")"
    cc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter "${san[@]}" -I"$ROOT/src" \
        -I"$BTREE/generated" -o "$GEN.tmp" "$HERE/nexmark_gen.c" "${libs[@]}" \
        -lrdkafka -lpq -licuuc -lm -lpthread || die "could not build the topic generator"
    mv "$GEN.tmp" "$GEN"
fi

FDIR=$CACHE/nexmark-flink
FJAR=$FDIR/target/nexmark-flink-1.jar
fsum=$(cat "$HERE/flink/pom.xml" "$HERE"/flink/src/main/java/clink/nexmark/*.java | sha256sum | cut -c1-16)
if [ ! -f "$FJAR" ] || { [ $BUILD = 1 ] && [ "$(cat "$FDIR/.built" 2>/dev/null)" != "$fsum" ]; }; then
    log "building the Flink launcher (Maven; the first time resolves Flink's jars)"
    command -v mvn >/dev/null || die "mvn not found (Debian package maven; scripts/setup.sh installs it)"
    command -v javac >/dev/null || die "javac not found: the Flink launcher needs a JDK (Debian package openjdk-17-jdk-headless)"
    mkdir -p "$FDIR"
    rm -rf "$FDIR/lib" "$FDIR/.built"
    # a dropped connection to Maven Central is retried rather than failing the build
    (cd "$HERE/flink" && mvn -B -q -ntp -Dstyle.color=never -Dmaven.wagon.http.retryHandler.count=5 \
        "-Dnexmark.build.dir=$FDIR/target" package dependency:copy-dependencies \
        -DincludeScope=runtime "-DoutputDirectory=$FDIR/lib") \
        >"$OUT/mvn.log" 2>&1 || { tail -n 30 "$OUT/mvn.log" >&2; die "could not build the Flink launcher (log: $OUT/mvn.log)"; }
    echo "$fsum" >"$FDIR/.built"
fi
FLINK=(java "-Xms$FLINK_HEAP" "-Xmx$FLINK_HEAP" -cp "$FJAR:$FDIR/lib/*" clink.nexmark.Launcher
       --parallelism "$PARALLELISM")

# ------------------------------------------------------------------ the topic
log "topic $TOPIC: $EVENTS events in $PARTITIONS partitions (seed $SEED)"
"$GEN" --brokers "$BROKERS" --topic "$TOPIC" --events "$EVENTS" --partitions "$PARTITIONS" \
    --seed "$SEED" >&2 || die "could not fill topic $TOPIC"

# script KIND QUERY SINK [TOPIC] > file: source DDL + query with the placeholders filled in.
script() {
    local kind=$1 q=$2 sink=$3 topic=${4:-$TOPIC} src qf
    if [ "$kind" = clink ]; then
        src=$HERE/queries/source.sql qf=$HERE/queries/$q.sql
        [ "$q" = "$WRONG" ] && qf=$HERE/queries/wrong/$q.sql
    else
        src=$HERE/queries/flink/source.sql qf=$HERE/queries/flink/$q.sql
    fi
    [ -f "$qf" ] || die "no query file $qf"
    cat "$src" "$qf" | SINK=$sink BROKERS=$BROKERS TOPIC=$topic GROUP="nexmark-$kind" "$PY" -c '
import os, sys
t = sys.stdin.read()
for k in ("SINK", "BROKERS", "TOPIC", "GROUP"):
    t = t.replace("${%s}" % k, os.environ[k])
sys.stdout.write(t)'
}

# update streams: the key of their final state
keys_of() {
    case $1 in
        q15) echo day ;;
        q16) echo channel,day ;;
        q17) echo auction,day ;;
        *) echo "" ;;
    esac
}

field() { "$PY" -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("" if v is None else v)' "$1" "$2"; }

# ------------------------------------------------------------------ start-up alone
CSTART="" FSTART=""
if [ $MEASURE = 1 ]; then
    EMPTY=nexmark-0-p$PARTITIONS
    "$GEN" --brokers "$BROKERS" --topic "$EMPTY" --events 0 --partitions "$PARTITIONS" >/dev/null ||
        die "could not make the empty topic $EMPTY"
    d=$OUT/startup
    mkdir -p "$d"
    log "start-up alone: q0 on the empty topic $EMPTY (clink, then Flink)"
    script clink q0 "connector = 'blackhole'" "$EMPTY" >"$d/clink.sql"
    script flink q0 "" "$EMPTY" >"$d/flink.sql"
    "$PY" "$HERE/harness.py" run --timeout "$RUN_TIMEOUT" --result "$d/clink.json" -- \
        "$CLINK" run "$d/clink.sql" --parallelism "$PARALLELISM" >"$d/clink.log" 2>&1 &&
    "$PY" "$HERE/harness.py" run --timeout "$RUN_TIMEOUT" --result "$d/flink.json" -- \
        "${FLINK[@]}" --sql "$d/flink.sql" >"$d/flink.log" 2>&1 ||
        die "a start-up run failed (logs in $d)"
    CSTART=$(field "$d/clink.json" cpu_s) FSTART=$(field "$d/flink.json" cpu_s)
    printf 'clink\t%s\t%s\nflink\t%s\t%s\n' "$CSTART" "$(field "$d/clink.json" maxrss_kb)" \
        "$FSTART" "$(field "$d/flink.json" maxrss_kb)" >"$OUT/startup.tsv"
fi

# ------------------------------------------------------------------ the queries
status=0
printf 'query\tclink_events_per_cpu_s\tflink_events_per_cpu_s\tratio\tratio_without_startup\tclink_cpu_s\tflink_cpu_s\tclink_peak_rss_mb\tflink_peak_rss_mb\tclink_first_output_s\tflink_first_output_s\tclink_wall_s\tflink_wall_s\tgate\n' >"$OUT/results.tsv"
declare -A ROW
for q in $QUERIES; do
    d=$OUT/$q
    rm -rf "$d"
    mkdir -p "$d"
    log "$q: correctness run (clink, then Flink)"
    script clink "$q" "connector = 'print'" >"$d/clink-check.sql"
    script flink "$q" "" >"$d/flink.sql"
    ok=1
    "$PY" "$HERE/harness.py" run --timeout "$RUN_TIMEOUT" --result "$d/clink-check.json" --watch "$d/clink.out" \
        --stdout "$d/clink.out" -- \
        "$CLINK" run "$d/clink-check.sql" --parallelism "$PARALLELISM" >"$d/clink-check.log" 2>&1 || ok=0
    [ $ok = 1 ] || { log "$q: clink failed:"; tail -n 5 "$d/clink-check.log" >&2; }
    "$PY" "$HERE/harness.py" run --timeout "$RUN_TIMEOUT" --result "$d/flink-check.json" --watch "$d/flink.out" -- \
        "${FLINK[@]}" --sql "$d/flink.sql" --output "$d/flink.out" >"$d/flink-check.log" 2>&1 || ok=0
    [ $ok = 1 ] || { log "$q: a run failed (logs in $d)"; tail -n 5 "$d/flink-check.log" >&2; }
    keys=$(keys_of "$q")
    if [ $ok = 1 ]; then
        if "$PY" "$HERE/harness.py" compare ${keys:+--keys "$keys"} "$d/clink.out" "$d/flink.out" >"$d/gate.txt"; then
            gate=equal
        else
            gate=DIFFERENT
        fi
    else
        gate=FAILED
    fi
    log "$q: $(head -n 1 "$d/gate.txt" 2>/dev/null || echo "$gate")"
    if [ "$gate" != equal ]; then
        status=1
        ROW[$q]="$gate"
        printf '%s\t\t\t\t\t\t\t\t\t\t\t\t\t%s\n' "$q" "$gate" >>"$OUT/results.tsv"
        continue
    fi
    rm -f "$d/clink.out"* "$d/flink.out"
    cf1=$(field "$d/clink-check.json" first_output_s)
    ff1=$(field "$d/flink-check.json" first_output_s)
    if [ $MEASURE = 0 ]; then
        ROW[$q]="equal"
        continue
    fi
    log "$q: measurement run (clink, then Flink, into blackhole sinks)"
    script clink "$q" "connector = 'blackhole'" >"$d/clink.sql"
    "$PY" "$HERE/harness.py" run --timeout "$RUN_TIMEOUT" --result "$d/clink.json" -- \
        "$CLINK" run "$d/clink.sql" --parallelism "$PARALLELISM" >"$d/clink.log" 2>&1 ||
        { status=1; ROW[$q]="FAILED"; log "$q: clink measurement run failed"; continue; }
    "$PY" "$HERE/harness.py" run --timeout "$RUN_TIMEOUT" --result "$d/flink.json" -- \
        "${FLINK[@]}" --sql "$d/flink.sql" >"$d/flink.log" 2>&1 ||
        { status=1; ROW[$q]="FAILED"; log "$q: Flink measurement run failed"; continue; }
    grep -q "finished: $EVENTS records read" "$d/clink.log" ||
        { status=1; ROW[$q]="FAILED"; log "$q: clink did not read $EVENTS records"; continue; }
    "$PY" - "$q" "$EVENTS" "$d" "$cf1" "$ff1" "$CSTART" "$FSTART" >>"$OUT/results.tsv" <<'EOF'
import json, sys
q, n, d, cf1, ff1 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
cs, fs = float(sys.argv[6]), float(sys.argv[7])
c, f = json.load(open(d + "/clink.json")), json.load(open(d + "/flink.json"))
ce, fe = n / c["cpu_s"], n / f["cpu_s"]
rx = round((f["cpu_s"] - fs) / (c["cpu_s"] - cs), 2) if c["cpu_s"] > cs and f["cpu_s"] > fs else ""
print("\t".join(str(x) for x in [q, round(ce), round(fe), round(ce / fe, 2), rx, c["cpu_s"], f["cpu_s"],
      round(c["maxrss_kb"] / 1024), round(f["maxrss_kb"] / 1024), cf1, ff1, c["wall_s"], f["wall_s"], "equal"]))
EOF
done

# ------------------------------------------------------------------ the table
"$PY" - "$OUT/results.tsv" "$EVENTS" "$PARTITIONS" "$PARALLELISM" "$CSTART" "$FSTART" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print()
print("Nexmark, %s events (Kafka, %s partitions, JSON), parallelism %s on both sides"
      % (sys.argv[2], sys.argv[3], sys.argv[4]))
print()
hdr = ["query", "clink ev/CPU-s", "Flink ev/CPU-s", "ratio", "ratio w/o start-up",
       "clink CPU s", "Flink CPU s", "clink RSS MB", "Flink RSS MB", "clink 1st out s",
       "Flink 1st out s"]
print("| " + " | ".join(hdr) + " |")
print("|" + "|".join("---" for _ in hdr) + "|")
ratios, ratios_x = [], []
for r in rows:
    if r["gate"] != "equal" or not r["ratio"]:
        print("| %s | %s |" % (r["query"], r["gate"] if r["gate"] != "equal" else "equal (not measured)")
              + " |" * (len(hdr) - 2))
        continue
    ratios.append(float(r["ratio"]))
    if r["ratio_without_startup"]:
        ratios_x.append(float(r["ratio_without_startup"]))
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["query"], format(int(r["clink_events_per_cpu_s"]), ","),
        format(int(r["flink_events_per_cpu_s"]), ","), r["ratio"] + "x",
        (r["ratio_without_startup"] + "x") if r["ratio_without_startup"] else "-",
        r["clink_cpu_s"], r["flink_cpu_s"], r["clink_peak_rss_mb"], r["flink_peak_rss_mb"],
        r["clink_first_output_s"] or "-", r["flink_first_output_s"] or "-"))
print()
if ratios:
    print("median ratio (Flink CPU per event / clink CPU per event) over %d queries: %.2fx"
          % (len(ratios), statistics.median(ratios)))
if ratios_x:
    print("the same with each engine's start-up CPU (q0 on an empty topic: clink %s s, Flink %s s)"
          " taken out: %.2fx" % (sys.argv[5], sys.argv[6], statistics.median(ratios_x)))
bad = [r["query"] + " " + r["gate"] for r in rows if r["gate"] != "equal"]
if bad:
    print("outputs differ or runs failed (no figures): " + ", ".join(bad))
print("raw numbers: " + sys.argv[1])
EOF
exit $status
