#!/usr/bin/env bash
# setup.sh — install what clink's build and tests need. Idempotent; a rerun
# with nothing to do takes a second or two.
#
# DESIGN
#   1. Debian packages: installs the ones missing from $PACKAGES (apt-get
#      update only when something is missing). As root, or through sudo.
#   2. The Apache Kafka broker (org.apache.kafka:kafka_2.13, version in
#      scripts/kafka/versions.sh) and its runtime jars, resolved by Maven from
#      Maven Central into $CLINK_CACHE/kafka-<ver>/libs (outside the repo).
#   3. A Python venv ($CLINK_CACHE/venv, Debian's python3) with the pinned
#      requirements-test.txt.
#   4. SeaweedFS, the S3 server the checkpoint-store tests run against: its
#      pinned module from the Go module proxy, built once with the machine's Go
#      (>= 1.26.6) into $CLINK_CACHE/seaweedfs-<version>/weed (~6 min, once).
#   Steps 2 and 3 leave a stamp keyed by what they installed (versions, a hash
#   of the pom or requirements file) and are skipped while it matches. A step
#   builds into a temporary directory and renames it into place, so an
#   interrupted run leaves nothing half-made behind.
#
# Environment: CLINK_CACHE (default ~/.cache/clink), CLINK_KAFKA_VERSION,
#   CLINK_VENV, CLINK_BASE_PYTHON (default /usr/bin/python3).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=kafka/versions.sh
. "$HERE/kafka/versions.sh"

CACHE=${CLINK_CACHE:-$HOME/.cache/clink}
VENV=${CLINK_VENV:-$CACHE/venv}
BASE_PYTHON=${CLINK_BASE_PYTHON:-/usr/bin/python3}
KAFKA_HOME=$CACHE/kafka-$CLINK_KAFKA_VERSION

PACKAGES="
    build-essential cmake pkg-config git ca-certificates curl
    librdkafka-dev libpq-dev libmicrohttpd-dev liblz4-dev libzstd-dev libcmocka-dev libicu-dev
    zlib1g-dev libsnappy-dev libcurl4-openssl-dev libssl-dev clang libzookeeper-mt-dev
    clickhouse-server clickhouse-client zookeeper libslf4j-java
    postgresql postgresql-client kcat spin iproute2
    python3 python3-venv
    openjdk-17-jdk-headless maven
"

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

SUDO=
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "not root and no sudo: cannot install Debian packages"
    SUDO=sudo
fi

# ------------------------------------------------------------ Debian packages

missing_packages() {
    local p status
    for p in $PACKAGES; do
        status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
        case $status in ii*) ;; *) printf '%s ' "$p" ;; esac
    done
}

install_packages() {
    local missing out=$CACHE/apt.log
    missing=$(missing_packages)
    [ -n "$missing" ] || return 0
    log "installing Debian packages: $missing(log: $out)"
    mkdir -p "$CACHE"
    # Package servers a maintainer script would start must stay down: the
    # tests run their own copies (scripts/services.sh). Keep policy-rc.d as
    # we found it.
    local policy=/usr/sbin/policy-rc.d added_policy=
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
        $SUDO chmod 755 "$policy"
        added_policy=1
    fi
    # shellcheck disable=SC2086
    if ! { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing; } >"$out" 2>&1; then
        [ -z "$added_policy" ] || $SUDO rm -f "$policy"
        tail -n 30 "$out" >&2
        die "apt-get could not install: $missing(full log: $out)"
    fi
    [ -z "$added_policy" ] || $SUDO rm -f "$policy"
    missing=$(missing_packages)
    [ -z "$missing" ] || die "still missing after apt-get install: $missing(log: $out)"
}

# ------------------------------------------------------------------- Kafka

resolve_kafka() {
    local pom=$HERE/kafka/pom.xml stamp want tmp out
    want="kafka_2.13 $CLINK_KAFKA_VERSION pom $(sha256sum <"$pom" | cut -c1-16)"
    stamp=$KAFKA_HOME/.resolved
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$KAFKA_HOME/libs" ]; then
        return 0
    fi
    command -v mvn >/dev/null || die "mvn not found (Debian package maven)"
    log "resolving Apache Kafka $CLINK_KAFKA_VERSION (kafka_2.13) from Maven Central into $KAFKA_HOME"
    mkdir -p "$CACHE"
    tmp=$(mktemp -d "$CACHE/.kafka-$CLINK_KAFKA_VERSION.XXXXXX")
    out=$tmp/mvn.log
    # Run on a copy of the pom, so Maven leaves nothing in the repo.
    cp "$pom" "$tmp/pom.xml"
    if ! (cd "$tmp" && mvn -B -q -ntp -Dstyle.color=never -f "$tmp/pom.xml" \
        "-Dkafka.version=$CLINK_KAFKA_VERSION" dependency:copy-dependencies \
        -DincludeScope=runtime "-DoutputDirectory=$tmp/libs") >"$out" 2>&1; then
        grep -E 'ERROR|Could not' "$out" | head -n 20 >&2 || tail -n 20 "$out" >&2
        cp "$out" "$CACHE/kafka-$CLINK_KAFKA_VERSION-mvn.log"
        rm -rf "$tmp"
        die "could not resolve org.apache.kafka:kafka_2.13:$CLINK_KAFKA_VERSION (log: $CACHE/kafka-$CLINK_KAFKA_VERSION-mvn.log)"
    fi
    [ -f "$tmp/libs/kafka_2.13-$CLINK_KAFKA_VERSION.jar" ] ||
        { rm -rf "$tmp"; die "Maven ran but kafka_2.13-$CLINK_KAFKA_VERSION.jar is not among the resolved jars"; }
    rm -f "$tmp/pom.xml"
    rm -rf "$tmp/target"
    printf '%s\n' "$want" >"$tmp/.resolved"
    rm -rf "$KAFKA_HOME"
    mv "$tmp" "$KAFKA_HOME"
}

check_java() {
    local v
    v=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
    case $v in
        1.* | [0-9] | 1[0-6]) die "Java $v found; Kafka $CLINK_KAFKA_VERSION needs Java 17 or newer" ;;
    esac
}

# --------------------------------------------------------------- Python venv

setup_venv() {
    local req=$REPO/requirements-test.txt stamp want tmp out pyver
    [ -x "$BASE_PYTHON" ] || die "$BASE_PYTHON not found (Debian package python3)"
    pyver=$("$BASE_PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
    want="python $pyver requirements $(sha256sum <"$req" | cut -c1-16)"
    stamp=$VENV/.clink-requirements
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
        return 0
    fi
    log "creating Python $pyver venv in $VENV with requirements-test.txt"
    mkdir -p "$(dirname "$VENV")"
    # A venv's scripts name its path: build in place, stamp only when complete.
    rm -rf "$VENV"
    out=$CACHE/pip.log
    if ! { "$BASE_PYTHON" -m venv "$VENV" &&
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input \
            --only-binary=:all: -r "$req"; } >"$out" 2>&1; then
        tail -n 20 "$out" >&2
        die "could not create the venv in $VENV (log: $out)"
    fi
    printf '%s\n' "$want" >"$stamp"
}

# ClickHouse 26.9 for the tests (scripts/services.sh clickhouse26): the PyPI
# wheel chdb-core, which bundles the server. --no-deps: only its library is
# used, not its Python data-frame layers.
CHDB_VERSION=26.9.0
setup_chdb() {
    local stamp=$VENV/.clink-chdb out=$CACHE/pip-chdb.log
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "chdb-core $CHDB_VERSION" ]; then
        return 0
    fi
    log "installing ClickHouse $CHDB_VERSION (PyPI chdb-core, about 180 MB) into $VENV"
    if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input \
        --only-binary=:all: --no-deps "chdb-core==$CHDB_VERSION" >"$out" 2>&1; then
        tail -n 20 "$out" >&2
        die "could not install chdb-core $CHDB_VERSION (log: $out)"
    fi
    "$VENV/bin/python" -c 'import chdb._chdb' || die "chdb-core $CHDB_VERSION installed but does not import"
    printf 'chdb-core %s\n' "$CHDB_VERSION" >"$stamp"
}

# ------------------------------------------------------------------ SeaweedFS

# `go install …/weed@version` is refused (its go.mod has a replace directive):
# download the module and build ./weed inside it.
SEAWEEDFS_MODULE=github.com/seaweedfs/seaweedfs
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
SEAWEEDFS_HOME=$CACHE/seaweedfs-$SEAWEEDFS_VERSION
setup_seaweedfs() {
    local out=$CACHE/seaweedfs-build.log moddir tmp gov
    [ -x "$SEAWEEDFS_HOME/weed" ] && return 0
    command -v go >/dev/null || die "go not found: SeaweedFS (the S3 test server) is built with Go >= 1.26.6"
    gov=$(go env GOVERSION)
    case $gov in go1.2[6-9]* | go1.[3-9]* | go[2-9]*) ;; *) die "Go $gov found; SeaweedFS needs Go >= 1.26.6" ;; esac
    log "building SeaweedFS $SEAWEEDFS_VERSION from the Go module proxy (about 6 minutes, once)"
    mkdir -p "$CACHE"
    moddir=$(go mod download -json "$SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION" 2>"$out" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$moddir" ] && [ -d "$moddir/weed" ] ||
        die "could not download $SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION (log: $out)"
    tmp=$(mktemp -d "$CACHE/.seaweedfs.XXXXXX")
    if ! (cd "$moddir" && GOFLAGS=-buildvcs=false nice -n 10 go build -o "$tmp/weed" ./weed) >>"$out" 2>&1; then
        tail -n 20 "$out" >&2
        rm -rf "$tmp"
        die "could not build SeaweedFS (log: $out)"
    fi
    rm -rf "$SEAWEEDFS_HOME"
    mv "$tmp" "$SEAWEEDFS_HOME"
}

t0=$(now)
install_packages
check_java
resolve_kafka
setup_venv
setup_chdb
setup_seaweedfs
log "ready in $(($(now) - t0)) s (Kafka $CLINK_KAFKA_VERSION in $KAFKA_HOME, venv $VENV)"
