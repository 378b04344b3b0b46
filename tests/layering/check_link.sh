#!/bin/sh
# The layering of the link lines, on the built archives (docs/architecture.md, "Layers"):
#   check_link.sh LIB.a FORBIDDEN.a [NAME]
# fails when an object of LIB.a refers to any symbol FORBIDDEN.a defines — e.g. the worker's
# library (libck_cluster.a) to the SQL front end (libck_sql.a). src/CMakeLists.txt checks the
# CMake link lines when it configures; this checks what the compiled code actually needs.
set -eu
lib=$1 forbidden=$2 name=${3:-$(basename "$lib")}
[ -f "$lib" ] || { echo "no archive $lib"; exit 1; }
[ -f "$forbidden" ] || { echo "no archive $forbidden"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -g --defined-only "$forbidden" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/defined"
nm -u "$lib" 2>/dev/null | awk 'NF == 2 { print $2 }' | sort -u >"$tmp/needed"
[ -s "$tmp/defined" ] || { echo "$forbidden defines no symbol: a wrong archive?"; exit 1; }
[ -s "$tmp/needed" ] || { echo "$lib needs no symbol: a wrong archive?"; exit 1; }
comm -12 "$tmp/defined" "$tmp/needed" >"$tmp/both"
if [ -s "$tmp/both" ]; then
  echo "layering: $name refers to $(wc -l <"$tmp/both") symbol(s) of $(basename "$forbidden"):"
  head -20 "$tmp/both"
  exit 1
fi
echo "$name: $(wc -l <"$tmp/needed") undefined symbol(s), none from $(basename "$forbidden") ($(wc -l <"$tmp/defined") defined there)"
