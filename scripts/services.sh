#!/usr/bin/env bash
# services.sh — run the real services clink's integration tests talk to.
#
# DESIGN
#   Four servers, each on 127.0.0.1 with its own non-default port and a private
#   data directory under one work directory ($CLINK_WORK):
#     kafka       Apache Kafka, one KRaft node (broker+controller), jars resolved
#                 by scripts/setup.sh into $CLINK_CACHE/kafka-<ver>/libs
#     zookeeper   Debian's ZooKeeper jars (ClickHouse replicated tables need it)
#     clickhouse  Debian's clickhouse-server 18.16 with a config written here
#     postgres    Debian's PostgreSQL 15, run as the `postgres` user when root
#     clickhouse26  ClickHouse 26.9 from the PyPI wheel chdb-core (pinned in
#                 scripts/setup.sh): its clickhouse-local serving the native
#                 TCP and HTTP protocols (scripts/clickhouse26/serve.py). Ready
#                 only when our own process owns the TCP port, since a port
#                 taken by another process is reported only on its stderr.
#     seaweedfs   SeaweedFS (built by scripts/setup.sh from the Go module
#                 proxy): master, volume, filer and S3 gateway in one process,
#                 every port set, telemetry off, one access key. Ready when a
#                 real signed PUT succeeds (the first write after a start waits
#                 ~15 s for the volume to register).
#   A server counts as ours only if its pid is in $WORK/run/<name>.pid (postgres:
#   its postmaster.pid) and its command line names $WORK; `stop` signals only
#   those pids, never a process found by name. Pid files of dead processes are
#   removed, so `start` after a kill -9 just starts again on the same data.
#   `start` launches every stopped server at once, then polls each with a real
#   request (ZooKeeper `srvr`, a ClickHouse query that reads system.zookeeper, a
#   Kafka metadata request through kcat, a PostgreSQL query over TCP) until one
#   shared deadline ($CLINK_START_TIMEOUT, 90 s). Never a bare sleep as sync.
#   `start --fresh` first empties the work directory of every server that is
#   not running, so a test run does not inherit the previous runs' data (a
#   broker with thousands of leftover partitions takes minutes to load them);
#   a server already running keeps its data. scripts/test.sh starts this way.
#
# Usage: scripts/services.sh start [--fresh] [SERVICE...]
#        scripts/services.sh stop|status [SERVICE...]
#        scripts/services.sh restart SERVICE [--immediate]   (restart-pg = restart postgres)
#        scripts/services.sh env      shell lines: eval "$(scripts/services.sh env)"
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=kafka/versions.sh
. "$HERE/kafka/versions.sh"

CACHE=${CLINK_CACHE:-$HOME/.cache/clink}
if [ -n "${CLINK_WORK:-}" ]; then
    WORK=$CLINK_WORK
elif [ "$(id -u)" = 0 ]; then
    # root's $HOME is 0700, and PostgreSQL must run as (and reach its data as)
    # an unprivileged user: keep the work tree where that user can traverse.
    WORK=/var/tmp/clink/work
else
    WORK=$CACHE/work
fi

KAFKA_PORT=${CLINK_KAFKA_PORT:-21092}
KAFKA_CONTROLLER_PORT=${CLINK_KAFKA_CONTROLLER_PORT:-21093}
ZK_PORT=${CLINK_ZOOKEEPER_PORT:-21181}
CH_PORT=${CLINK_CLICKHOUSE_PORT:-21000}
CH_HTTP_PORT=${CLINK_CLICKHOUSE_HTTP_PORT:-21123}
CH_INTERSERVER_PORT=${CLINK_CLICKHOUSE_INTERSERVER_PORT:-21009}
CH26_PORT=${CLINK_CLICKHOUSE26_PORT:-21300}
CH26_HTTP_PORT=${CLINK_CLICKHOUSE26_HTTP_PORT:-21323}
PG_PORT=${CLINK_PG_PORT:-21432}
# SeaweedFS: its gRPC ports would default to HTTP port + 10000; all set here.
SW_S3_PORT=${CLINK_S3_PORT:-21833}
SW_MASTER_PORT=${CLINK_SEAWEEDFS_MASTER_PORT:-21333}
SW_VOLUME_PORT=${CLINK_SEAWEEDFS_VOLUME_PORT:-21380}
SW_FILER_PORT=${CLINK_SEAWEEDFS_FILER_PORT:-21388}
SW_ACCESS_KEY=clink
SW_SECRET_KEY=clink-secret-key
# The one bucket the tests use (each test under a prefix of its own): SeaweedFS gives every
# bucket volumes of its own (7), so a bucket per test would exhaust -volume.max.
SW_BUCKET=clink-test
START_TIMEOUT=${CLINK_START_TIMEOUT:-90}
STOP_TIMEOUT=${CLINK_STOP_TIMEOUT:-60}

KAFKA_HOME=$CACHE/kafka-$CLINK_KAFKA_VERSION
VENV=${CLINK_VENV:-$CACHE/venv}
PG_BIN=${CLINK_PG_BIN:-/usr/lib/postgresql/15/bin}
JAVA=${JAVA:-java}
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6 # as in scripts/setup.sh
WEED=${CLINK_WEED:-$CACHE/seaweedfs-$SEAWEEDFS_VERSION/weed}
CH_SERVER=${CLINK_CLICKHOUSE_SERVER:-/usr/bin/clickhouse-server}
[ -x "$CH_SERVER" ] || CH_SERVER=/usr/sbin/clickhouse-server

ALL_SERVICES="zookeeper kafka clickhouse clickhouse26 postgres seaweedfs"
RUN=$WORK/run
PG_CTL_PID=

log() { printf 'services: %s\n' "$*" >&2; }
die() { printf 'services: error: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

# The user PostgreSQL runs as: ourselves, or `postgres` when we are root
# (postgres refuses to run as root).
if [ "$(id -u)" = 0 ]; then PG_USER=${CLINK_PG_OS_USER:-postgres}; else PG_USER=$(id -un); fi
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi
}

# A pid is alive while any of its threads is not a zombie. (Here, as in some
# containers, init may take a while to reap an orphan, and kill -0 succeeds on
# a zombie; and a killed JVM's main thread is a zombie before its other
# threads, which still hold its sockets, are gone.)
pid_alive() {
    local t line
    [ -n "$1" ] || return 1
    for t in "/proc/$1"/task/*/stat; do
        read -r line 2>/dev/null <"$t" || continue # a thread that just went
        line=${line##*) }
        case ${line%% *} in Z | X) ;; *) return 0 ;; esac
    done
    return 1
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true; }

# Prints the pid of our running server $1, or fails (removing a stale pid file).
svc_pid() {
    local svc=$1 file pid
    if [ "$svc" = postgres ]; then file=$WORK/postgres/data/postmaster.pid; else file=$RUN/$svc.pid; fi
    [ -s "$file" ] || return 1
    pid=$(head -n1 "$file" | tr -dc 0-9)
    if [ -n "$pid" ] && pid_alive "$pid"; then
        case $(cmdline_of "$pid") in *"$WORK/"*)
            echo "$pid"
            return 0
            ;;
        esac
    fi
    # postgres: pg_start deals with a stale postmaster.pid (see pg_clear_stale_locks).
    [ "$svc" = postgres ] || rm -f "$file"
    return 1
}

svc_port() {
    case $1 in
        kafka) echo "$KAFKA_PORT" ;;
        zookeeper) echo "$ZK_PORT" ;;
        clickhouse) echo "$CH_PORT" ;;
        clickhouse26) echo "$CH26_PORT" ;;
        postgres) echo "$PG_PORT" ;;
        seaweedfs) echo "$SW_S3_PORT" ;;
    esac
}

svc_log() {
    case $1 in
        kafka) echo "$WORK/kafka/logs/server.log" ;;
        zookeeper) echo "$WORK/zookeeper/zookeeper.log" ;;
        clickhouse) echo "$WORK/clickhouse/log/clickhouse-server.err.log" ;;
        clickhouse26) echo "$WORK/clickhouse26/server.log" ;;
        postgres) echo "$WORK/postgres/postgres.log" ;;
        seaweedfs) echo "$WORK/seaweedfs/server.log" ;;
    esac
}

check_ports_free() {
    local svc=$1 p
    shift
    for p in "$@"; do
        port_open "$p" && die "cannot start $svc: 127.0.0.1:$p is already in use by a process this script did not start" \
            "(stop it, or choose other ports: see docs/development.md)"
    done
    return 0
}

# Start $2... detached from our session (a Ctrl-C or a test harness killing
# our process group does not take the server down); pid into $RUN/$1.pid.
launch() {
    local svc=$1 out=$2
    shift 2
    setsid "$@" >>"$out" 2>&1 </dev/null 9>&- &
    echo $! >"$RUN/$svc.pid"
}

# ---------------------------------------------------------------- zookeeper --

zk_start() {
    local d=$WORK/zookeeper cp
    check_ports_free zookeeper "$ZK_PORT"
    mkdir -p "$d/data"
    cat >"$d/zoo.cfg" <<EOF
# written by scripts/services.sh on every start
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$d/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=200
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
EOF
    [ -f /usr/share/java/zookeeper.jar ] || die "ZooKeeper jars are missing (/usr/share/java/zookeeper.jar): run scripts/setup.sh"
    cp=/usr/share/java/zookeeper.jar
    [ -f /usr/share/java/slf4j-simple.jar ] && cp=$cp:/usr/share/java/slf4j-simple.jar
    launch zookeeper "$d/zookeeper.log" "$JAVA" -Xms32m -Xmx256m -XX:+UseSerialGC -Djava.awt.headless=true \
        -Dorg.slf4j.simpleLogger.showDateTime=true "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS" \
        -Dorg.slf4j.simpleLogger.logFile=System.err \
        -Dzookeeper.admin.enableServer=false -cp "$cp" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg"
}

zk_ready() {
    local reply
    reply=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"; printf srvr >&3; cat <&3' "$ZK_PORT" 2>/dev/null) || return 1
    case $reply in *"Mode: standalone"*) return 0 ;; esac
    return 1
}

# -------------------------------------------------------------------- kafka --

kafka_start() {
    local d=$WORK/kafka libs=$KAFKA_HOME/libs id
    [ -f "$KAFKA_HOME/.resolved" ] && [ -d "$libs" ] ||
        die "Kafka $CLINK_KAFKA_VERSION is not resolved in $KAFKA_HOME: run scripts/setup.sh"
    check_ports_free kafka "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"
    mkdir -p "$d/data" "$d/logs"
    cat >"$d/server.properties" <<EOF
# written by scripts/services.sh on every start
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/data
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# A restart after kill -9 waits out the dead incarnation's broker session:
# keep that short (defaults 2000/9000 ms).
broker.heartbeat.interval.ms=1000
broker.session.timeout.ms=4000
num.network.threads=2
num.io.threads=4
log.retention.hours=168
EOF
    cat >"$d/log4j2.properties" <<EOF
# written by scripts/services.sh: INFO to server.log, warnings of chatty loggers only
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = $d/logs/server.log
appender.file.filePattern = $d/logs/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
    local java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
        "-Dlog4j2.configurationFile=$d/log4j2.properties" "-Dkafka.logs.dir=$d/logs")
    if [ ! -f "$d/data/meta.properties" ]; then
        # First start: format the KRaft storage (what `kafka-storage.sh format` does).
        id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
        "$JAVA" "${java_opts[@]}" -cp "$libs/*" kafka.tools.StorageTool format \
            -t "$id" -c "$d/server.properties" >>"$d/logs/format.log" 2>&1 ||
            { tail -n 20 "$d/logs/format.log" >&2; die "could not format Kafka storage in $d/data"; }
    fi
    launch kafka "$d/logs/stdout.log" "$JAVA" "${java_opts[@]}" -cp "$libs/*" kafka.Kafka "$d/server.properties"
}

kafka_ready() {
    local out
    # A metadata request through Debian's librdkafka (kcat): the broker is up,
    # registered, and speaks a protocol version that library accepts.
    out=$(timeout 10 kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 3 -X socket.timeout.ms=2000 2>/dev/null) || return 1
    case $out in *" 1 brokers:"*"broker 1 at 127.0.0.1:$KAFKA_PORT"*) return 0 ;; esac
    return 1
}

# --------------------------------------------------------------- clickhouse --

ch_start() {
    local d=$WORK/clickhouse
    check_ports_free clickhouse "$CH_PORT" "$CH_HTTP_PORT" "$CH_INTERSERVER_PORT"
    [ -x "$CH_SERVER" ] || die "clickhouse-server is not installed: run scripts/setup.sh"
    mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/format_schemas" "$d/log"
    cat >"$d/config.xml" <<EOF
<?xml version="1.0"?>
<!-- written by scripts/services.sh on every start -->
<yandex>
    <logger>
        <level>information</level>
        <log>$d/log/clickhouse-server.log</log>
        <errorlog>$d/log/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>3</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$CH_PORT</tcp_port>
    <http_port>$CH_HTTP_PORT</http_port>
    <interserver_http_port>$CH_INTERSERVER_PORT</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$d/data/</path>
    <tmp_path>$d/tmp/</tmp_path>
    <user_files_path>$d/user_files/</user_files_path>
    <format_schema_path>$d/format_schemas/</format_schema_path>
    <users_config>$d/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <umask>022</umask>
    <mlock_executable>false</mlock_executable>
    <zookeeper>
        <node index="1">
            <host>127.0.0.1</host>
            <port>$ZK_PORT</port>
        </node>
        <session_timeout_ms>30000</session_timeout_ms>
    </zookeeper>
    <macros>
        <shard>01</shard>
        <replica>clink-1</replica>
    </macros>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
</yandex>
EOF
    cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<!-- written by scripts/services.sh on every start -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>random</load_balancing>
            <allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
        <clink>
            <password>clink</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </clink>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
EOF
    launch clickhouse "$d/log/stdout.log" "$CH_SERVER" "--config-file=$d/config.xml"
}

ch_ready() {
    local out
    # A real query that also proves the ZooKeeper connection replicated tables need.
    out=$(curl -sS --max-time 5 --data-binary "SELECT count() > 0 FROM system.zookeeper WHERE path = '/'" \
        "http://127.0.0.1:$CH_HTTP_PORT/?user=clink&password=clink" 2>/dev/null) || return 1
    [ "$out" = 1 ]
}

# ------------------------------------------------------------- clickhouse26 --

ch26_start() {
    local d=$WORK/clickhouse26
    check_ports_free clickhouse26 "$CH26_PORT" "$CH26_HTTP_PORT"
    "$VENV/bin/python" -c 'import chdb._chdb' 2>/dev/null ||
        die "ClickHouse 26.9 (the chdb-core wheel) is not in $VENV: run scripts/setup.sh"
    mkdir -p "$d/data"
    # chDB logs in as `default`, which must stay passwordless: it is kept to
    # loopback, and the tests use the `clink` user with a password.
    cat >"$d/config.xml" <<EOF
<?xml version="1.0"?>
<!-- written by scripts/services.sh on every start -->
<clickhouse>
    <logger><level>warning</level><console>1</console></logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$CH26_PORT</tcp_port>
    <http_port>$CH26_HTTP_PORT</http_port>
    <users_config>$d/users.xml</users_config>
    <timezone>UTC</timezone>
</clickhouse>
EOF
    cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<!-- written by scripts/services.sh on every start -->
<clickhouse>
    <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile><quota>default</quota>
            <access_management>1</access_management>
        </default>
        <clink>
            <password>clink</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile><quota>default</quota>
        </clink>
    </users>
    <quotas><default/></quotas>
</clickhouse>
EOF
    launch clickhouse26 "$d/server.log" "$VENV/bin/python" "$HERE/clickhouse26/serve.py" --dir "$d"
}

# Our process answers on both ports: something else on one of them would
# answer /ping too, so the listening socket must be ours.
ch26_ready() {
    local pid out
    pid=$(svc_pid clickhouse26) || return 1
    out=$(ss -Hltnp "sport = :$CH26_PORT" 2>/dev/null) || return 1
    case $out in *"pid=$pid,"*) ;; *) return 1 ;; esac
    out=$(curl -sS --max-time 5 --data-binary "SELECT version()" \
        "http://127.0.0.1:$CH26_HTTP_PORT/?user=clink&password=clink" 2>/dev/null) || return 1
    case $out in 26.9.*) return 0 ;; esac
    return 1
}

# ---------------------------------------------------------------- seaweedfs --

sw_start() {
    local d=$WORK/seaweedfs p
    [ -x "$WEED" ] || die "SeaweedFS is not built ($WEED): run scripts/setup.sh"
    check_ports_free seaweedfs "$SW_S3_PORT" "$SW_MASTER_PORT" "$SW_VOLUME_PORT" "$SW_FILER_PORT" \
        $((SW_S3_PORT + 1)) $((SW_MASTER_PORT + 1)) $((SW_VOLUME_PORT + 1)) $((SW_FILER_PORT + 1))
    mkdir -p "$d/data" "$d/logs"
    cat >"$d/s3.json" <<EOF
{"identities": [{"name": "clink",
  "credentials": [{"accessKey": "$SW_ACCESS_KEY", "secretKey": "$SW_SECRET_KEY"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
EOF
    launch seaweedfs "$d/server.log" "$WEED" -logdir="$d/logs" server \
        -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$d/data" \
        -master.port="$SW_MASTER_PORT" -master.port.grpc=$((SW_MASTER_PORT + 1)) \
        -master.telemetry=false -master.resumeState=false -master.volumeSizeLimitMB=64 \
        -volume.port="$SW_VOLUME_PORT" -volume.port.grpc=$((SW_VOLUME_PORT + 1)) -volume.max=200 \
        -filer -filer.port="$SW_FILER_PORT" -filer.port.grpc=$((SW_FILER_PORT + 1)) \
        -filer.localSocket="$d/filer.sock" \
        -s3 -s3.port="$SW_S3_PORT" -s3.port.grpc=$((SW_S3_PORT + 1)) -s3.port.iceberg=0 \
        -s3.port.lance=0 -s3.config="$d/s3.json" -s3.localSocket="$d/s3.sock"
}

# A signed PUT through the S3 gateway (curl's own SigV4 suffices for a plain
# key): only that shows the volume server has registered.
sw_ready() {
    local pid
    pid=$(svc_pid seaweedfs) || return 1
    port_open "$SW_S3_PORT" || return 1
    curl -sf --max-time 25 --aws-sigv4 "aws:amz:us-east-1:s3" --user "$SW_ACCESS_KEY:$SW_SECRET_KEY" \
        -X PUT "http://127.0.0.1:$SW_S3_PORT/$SW_BUCKET" >/dev/null 2>&1 || true
    curl -sf --max-time 25 --aws-sigv4 "aws:amz:us-east-1:s3" --user "$SW_ACCESS_KEY:$SW_SECRET_KEY" \
        -T - "http://127.0.0.1:$SW_S3_PORT/$SW_BUCKET/ready-probe" <<<"ready" >/dev/null 2>&1
}

# ----------------------------------------------------------------- postgres --

pg_data() { echo "$WORK/postgres/data"; }

# Live processes of our cluster: a postmaster and its children all run with
# the data directory as their working directory.
pg_cluster_pids() {
    local p
    find /proc/[0-9]*/cwd -maxdepth 0 -lname "$(pg_data)" 2>/dev/null | while read -r p; do
        p=${p#/proc/}
        p=${p%/cwd}
        if pid_alive "$p"; then echo "$p"; fi
    done
}

# After a kill -9 the lock files name a dead (or zombie) postmaster, and
# postgres would refuse to start while that pid exists. Once no process of the
# cluster is left (orphaned backends exit when they see the postmaster gone),
# nothing can still use the old shared memory, and the locks are stale.
pg_clear_stale_locks() {
    local data d=$WORK/postgres deadline left
    data=$(pg_data)
    [ -f "$data/postmaster.pid" ] || return 0
    deadline=$(($(now) + 30))
    while left=$(pg_cluster_pids) && [ -n "$left" ]; do
        [ "$(now)" -lt "$deadline" ] ||
            die "processes of the PostgreSQL cluster in $data are still running without its postmaster:" $left
        sleep 0.2
    done
    rm -f "$data/postmaster.pid" "$d/run/.s.PGSQL.$PG_PORT.lock" "$d/run/.s.PGSQL.$PG_PORT"
}

pg_start() {
    local d=$WORK/postgres data
    data=$(pg_data)
    [ -x "$PG_BIN/postgres" ] || die "PostgreSQL 15 is not installed in $PG_BIN: run scripts/setup.sh"
    check_ports_free postgres "$PG_PORT"
    mkdir -p "$d/run"
    chmod 755 "$d"
    if ! as_pg test -x "$d"; then
        die "the $PG_USER user cannot reach $d; set CLINK_WORK to a directory every user can traverse"
    fi
    [ "$(id -u)" != 0 ] || chown "$PG_USER" "$d" "$d/run"
    pg_clear_stale_locks
    if [ ! -f "$data/PG_VERSION" ]; then
        rm -rf "$data"
        as_pg "$PG_BIN/initdb" -D "$data" -U postgres -E UTF8 --locale=C --auth-local=trust --auth-host=trust \
            >"$d/initdb.log" 2>&1 || { tail -n 20 "$d/initdb.log" >&2; die "initdb failed in $data"; }
        printf "\ninclude_if_exists = 'clink.conf'\n" | as_pg tee -a "$data/postgresql.conf" >/dev/null
    fi
    as_pg tee "$data/clink.conf" >/dev/null <<EOF
# written by scripts/services.sh on every start
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$d/run'
max_connections = 100
max_prepared_transactions = 20
shared_buffers = 128MB
fsync = on
log_line_prefix = '%m [%p] %q%u@%d '
EOF
    as_pg tee "$data/pg_hba.conf" >/dev/null <<EOF
# written by scripts/services.sh: trust on this machine only
local   all all                 trust
host    all all 127.0.0.1/32    trust
host    all all ::1/128         trust
EOF
    # pg_ctl setsid()s the server; it runs in the background here so that the
    # other servers start meanwhile, and its exit tells a failed start.
    as_pg touch "$d/postgres.log"
    as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$d/postgres.log" -w -t "$START_TIMEOUT" -s start >/dev/null 2>&1 9>&- &
    PG_CTL_PID=$!
}

pg_psql() {
    psql -X -q -v ON_ERROR_STOP=1 "host=127.0.0.1 port=$PG_PORT user=postgres dbname=postgres connect_timeout=3" "$@"
}

pg_ready() {
    [ "$(pg_psql -Atc 'SELECT 1' 2>/dev/null)" = 1 ] || return 1
    # The role and database the tests use; cheap and idempotent on every start.
    pg_psql -Atc "DO \$\$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'clink') THEN
            CREATE ROLE clink LOGIN CREATEDB PASSWORD 'clink';
        END IF; END \$\$" >/dev/null || return 1
    if [ -z "$(pg_psql -Atc "SELECT 1 FROM pg_database WHERE datname = 'clink'")" ]; then
        pg_psql -c 'CREATE DATABASE clink OWNER clink' >/dev/null || return 1
    fi
}

# ------------------------------------------------------------------ driver --

svc_start() {
    case $1 in
        kafka) kafka_start ;;
        zookeeper) zk_start ;;
        clickhouse) ch_start ;;
        clickhouse26) ch26_start ;;
        postgres) pg_start ;;
        seaweedfs) sw_start ;;
    esac
}

svc_ready() {
    case $1 in
        kafka) kafka_ready ;;
        zookeeper) zk_ready ;;
        clickhouse) ch_ready ;;
        clickhouse26) ch26_ready ;;
        postgres) pg_ready ;;
        seaweedfs) sw_ready ;;
    esac
}

check_service_names() {
    local s
    for s in "$@"; do
        case " $ALL_SERVICES " in *" $s "*) ;; *) die "unknown service '$s' (one of: $ALL_SERVICES)" ;; esac
    done
}

cmd_start() {
    local fresh=0
    if [ "${1:-}" = --fresh ]; then
        fresh=1
        shift
    fi
    local services=${*:-$ALL_SERVICES} svc pending="" t0 deadline left
    check_service_names $services
    # ClickHouse answers our readiness query only with its ZooKeeper up.
    case " $services " in *" clickhouse "*) case " $services " in *" zookeeper "*) ;; *) services="zookeeper $services" ;; esac ;; esac
    mkdir -p "$RUN"
    chmod 755 "$WORK" 2>/dev/null || true
    t0=$(now)
    deadline=$((t0 + START_TIMEOUT))
    for svc in $services; do
        if svc_pid "$svc" >/dev/null; then
            continue
        fi
        # the directory is ours by construction: $WORK/<service name>
        [ "$fresh" = 0 ] || rm -rf "${WORK:?}/$svc"
        svc_start "$svc"
        pending="$pending $svc"
    done
    # Poll every started server with a real request until it answers.
    while :; do
        left=""
        for svc in $pending; do
            if svc_ready "$svc"; then
                log "$svc ready on 127.0.0.1:$(svc_port "$svc") ($(($(now) - t0)) s)"
            elif ! svc_pid "$svc" >/dev/null && ! { [ "$svc" = postgres ] && pid_alive "$PG_CTL_PID"; }; then
                log "$svc exited during start-up; last lines of $(svc_log "$svc"):"
                tail -n 25 "$(svc_log "$svc")" >&2 2>/dev/null || true
                die "could not start $svc"
            else
                left="$left $svc"
            fi
        done
        pending=$left
        [ -n "$pending" ] || break
        if [ "$(now)" -ge "$deadline" ]; then
            for svc in $pending; do
                log "$svc did not answer within ${START_TIMEOUT} s; last lines of $(svc_log "$svc"):"
                tail -n 25 "$(svc_log "$svc")" >&2 2>/dev/null || true
            done
            die "services not ready:$pending (still running; 'scripts/services.sh stop' stops them)"
        fi
        sleep 0.3 # poll interval, not a synchronisation
    done
    # Servers that were already running: still answer?
    for svc in $services; do
        svc_ready "$svc" || die "$svc is running (pid $(svc_pid "$svc" || echo '?')) but does not answer; try 'scripts/services.sh restart $svc'"
    done
}

# Signal our pid and wait for it to exit; SIGKILL after $STOP_TIMEOUT.
stop_pid() {
    local svc=$1 pid=$2 sig=${3:-TERM} deadline
    kill -"$sig" "$pid" 2>/dev/null || return 0
    deadline=$(($(now) + STOP_TIMEOUT))
    while pid_alive "$pid"; do
        if [ "$(now)" -ge "$deadline" ]; then
            log "$svc (pid $pid) ignored SIG$sig for ${STOP_TIMEOUT} s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            deadline=$(($(now) + 10))
        fi
        sleep 0.1
    done
}

stop_one() {
    local svc=$1 mode=${2:-fast} pid
    pid=$(svc_pid "$svc") || return 0
    if [ "$svc" = postgres ]; then
        as_pg "$PG_BIN/pg_ctl" -D "$(pg_data)" -m "$mode" -w -t "$STOP_TIMEOUT" -s stop >/dev/null ||
            stop_pid postgres "$pid" KILL
    else
        stop_pid "$svc" "$pid"
        rm -f "$RUN/$svc.pid"
    fi
    log "$svc stopped"
}

cmd_stop() {
    local services=${*:-$ALL_SERVICES} svc pids=""
    check_service_names $services
    # Kafka, ClickHouse and PostgreSQL in parallel; ZooKeeper last (ClickHouse uses it).
    for svc in $services; do
        [ "$svc" = zookeeper ] && continue
        stop_one "$svc" &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || true; done
    case " $services " in *" zookeeper "*) stop_one zookeeper ;; esac
}

cmd_status() {
    local services=${*:-$ALL_SERVICES} svc pid rc=0
    check_service_names $services
    for svc in $services; do
        if pid=$(svc_pid "$svc"); then
            if svc_ready "$svc"; then
                printf '%-10s running  pid %-7s 127.0.0.1:%s\n' "$svc" "$pid" "$(svc_port "$svc")"
            else
                printf '%-10s starting pid %-7s 127.0.0.1:%s (not answering yet)\n' "$svc" "$pid" "$(svc_port "$svc")"
                rc=3
            fi
        else
            printf '%-10s stopped\n' "$svc"
            rc=3
        fi
    done
    printf 'work dir: %s\n' "$WORK"
    return $rc
}

cmd_restart() {
    local svc=${1:-} mode=fast
    [ -n "$svc" ] || die "usage: services.sh restart SERVICE [--immediate]"
    check_service_names "$svc"
    [ "${2:-}" = --immediate ] && mode=immediate
    if [ "$mode" = immediate ] && [ "$svc" != postgres ]; then
        local pid
        pid=$(svc_pid "$svc") && stop_pid "$svc" "$pid" KILL && rm -f "$RUN/$svc.pid"
    else
        stop_one "$svc" "$mode"
    fi
    cmd_start "$svc"
}

q() { printf "%q" "$1"; }

cmd_env() {
    cat <<EOF
export CLINK_KAFKA_BROKERS=$(q "127.0.0.1:$KAFKA_PORT")
export CLINK_KAFKA_VERSION=$(q "$CLINK_KAFKA_VERSION")
export CLINK_KAFKA_HOME=$(q "$KAFKA_HOME")
export CLINK_CLICKHOUSE_HOST=127.0.0.1
export CLINK_CLICKHOUSE_PORT=$(q "$CH_PORT")
export CLINK_CLICKHOUSE_HTTP_PORT=$(q "$CH_HTTP_PORT")
export CLINK_CLICKHOUSE_USER=clink
export CLINK_CLICKHOUSE_PASSWORD=clink
export CLINK_CLICKHOUSE26_HOST=127.0.0.1
export CLINK_CLICKHOUSE26_PORT=$(q "$CH26_PORT")
export CLINK_CLICKHOUSE26_HTTP_PORT=$(q "$CH26_HTTP_PORT")
export CLINK_ZOOKEEPER=$(q "127.0.0.1:$ZK_PORT")
export CLINK_PG_DSN=$(q "postgresql://clink:clink@127.0.0.1:$PG_PORT/clink")
export CLINK_PG_PORT=$(q "$PG_PORT")
export CLINK_S3_ENDPOINT=$(q "http://127.0.0.1:$SW_S3_PORT")
export CLINK_S3_ACCESS_KEY=$(q "$SW_ACCESS_KEY")
export CLINK_S3_SECRET_KEY=$(q "$SW_SECRET_KEY")
export CLINK_S3_BUCKET=$(q "$SW_BUCKET")
export CLINK_PYTHON=$(q "$VENV/bin/python")
export CLINK_WORK=$(q "$WORK")
export CLINK_SERVICES=$(q "$HERE/services.sh")
EOF
}

usage() {
    cat >&2 <<EOF
usage: scripts/services.sh start [--fresh] [SERVICE...]      (services: $ALL_SERVICES)
       scripts/services.sh stop|status [SERVICE...]          (--fresh: stopped ones start empty)
       scripts/services.sh restart SERVICE [--immediate]     (restart-pg = restart postgres)
       scripts/services.sh env                               (eval "\$(scripts/services.sh env)")
EOF
    exit 2
}

# One start/stop/restart at a time per work directory (say, two test
# runners starting the services at once).
lock() {
    mkdir -p "$RUN"
    exec 9>"$RUN/.lock"
    flock -w $((START_TIMEOUT + STOP_TIMEOUT)) 9 || die "another services.sh holds $RUN/.lock"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in start | stop | restart | restart-pg) lock ;; esac
case $cmd in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status "$@" ;;
    restart) cmd_restart "$@" ;;
    restart-pg) cmd_restart postgres "$@" ;;
    env) cmd_env ;;
    *) usage ;;
esac
