#!/usr/bin/env bash
# Builds clink. Usage: scripts/build.sh [release|sanitize]  (default release)
#   release   -> build/         optimised, what the demo and benchmarks use
#   sanitize  -> build-san/     ASan + UBSan, what the test command uses
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
case "$kind" in
  release)  dir=build;     flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  sanitize) dir=build-san; flags=(-DCMAKE_BUILD_TYPE=Debug -DCLINK_SANITIZE=ON) ;;
  *) echo "usage: scripts/build.sh [release|sanitize]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
# progress lines filtered out; the build's own status decides (a stale binary from an earlier
# build must not pass for a build that failed)
set +e
cmake --build "$dir" -j"$(nproc)" 2>&1 | grep -vE '^\[ *[0-9]+%\]|^gmake|^make'
st=${PIPESTATUS[0]}
set -e
[ "$st" = 0 ] && test -x "$dir/src/cli/clink" || { echo "build failed" >&2; exit 1; }
echo "$dir/src/cli/clink"
