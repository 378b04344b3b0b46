#!/usr/bin/env bash
# bench/clickhouse/run.sh — the ClickHouse sink benchmark of issue 6, unattended.
#
# DESIGN
#   Rows per second (wall) and CPU-seconds per million rows of the inserting process, side by
#   side in one run: clickhouse-client inserting ClickHouse's own Native dump of the rows (the
#   ceiling), clink's file source -> ClickHouse sink on the same rows as NDJSON, and a clink
#   Kafka -> TUMBLE -> ClickHouse job on the same rows in a 4-partition topic; plus references
#   that split the figures (clickhouse-client on the JSON, the clink jobs into a blackhole).
#   bench/clickhouse/bench.py says how each is measured and verified.
#   Needs Kafka, ClickHouse (and ZooKeeper, which its config names) from scripts/services.sh:
#   the ones not running are started, and only those are stopped at the end. The input (~115 MB of NDJSON) is
#   generated once into $CLINK_BENCH_CACHE/clickhouse (/var/tmp/clink-bench); everything put
#   into ClickHouse (database clink_bench) and Kafka (topic bench_ch_*) is removed at the end.
#   Bounded by `timeout` ($CLINK_BENCH_TIMEOUT, 570 s); about 2–3 minutes on 2 cores.
#
# Usage: bench/clickhouse/run.sh [bench.py options: --runs N --rows N --batch-rows N
#                                 --compression lz4|none --parallelism N --no-references --keep
#                                 --line 18.16|26.9 (26.9 adds the exactly-once cases)]
#   CLINK_BIN=path overrides build/src/cli/clink; a missing binary is built (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

clink=${CLINK_BIN:-build/src/cli/clink}
if [ ! -x "$clink" ]; then
    echo "no $clink: building the release binary" >&2
    clink=$(scripts/build.sh release | tail -1)
fi
# start the services this needs that are not running (ClickHouse's config wants ZooKeeper),
# and stop at the end only those: the others may be someone else's
started=()
for svc in zookeeper clickhouse clickhouse26 kafka; do
    scripts/services.sh status "$svc" >/dev/null 2>&1 || started+=("$svc")
done
if [ "${#started[@]}" -gt 0 ]; then
    echo "starting ${started[*]} (stopped again at the end)" >&2
    scripts/services.sh start "${started[@]}"
fi
stop_started() {
    [ "${#started[@]}" -eq 0 ] || scripts/services.sh stop "${started[@]}" >/dev/null 2>&1 || true
}
trap stop_started EXIT
eval "$(scripts/services.sh env)"

rc=0
timeout --signal=INT --kill-after=10 "${CLINK_BENCH_TIMEOUT:-570}" \
    "$CLINK_PYTHON" bench/clickhouse/bench.py --clink "$clink" "$@" || rc=$?
exit "$rc"
