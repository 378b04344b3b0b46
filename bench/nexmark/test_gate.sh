#!/usr/bin/env bash
# test_gate.sh — the correctness gate of compare.sh must fail on a deliberately wrong query.
#
# DESIGN: runs compare.sh twice on a small topic, correctness runs only (--no-measure):
#   1. q2 as written on both sides: the outputs must be equal and compare.sh must exit 0;
#   2. q2 with --wrong-query q2 (queries/wrong/q2.sql: every 124th auction instead of every
#      123rd) on the clink side: compare.sh must exit 1, report q2 as DIFFERENT, print rows
#      found on one side only, and print no ratio for it.
# Needs what compare.sh needs (the services running, Maven for the first build).
# Prints '2 passed, 0 failed' (or the failure) and exits 0 only when both hold.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
passed=0 failed=0

"$HERE/compare.sh" --events 20000 --queries q2 --no-measure --out "$out/right" >"$out/right.log" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q '^\[nexmark\] q2: equal' "$out/right.log"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    echo "FAIL: q2 as written: expected equal outputs and exit 0, got exit $rc:" >&2
    tail -n 20 "$out/right.log" >&2
fi

"$HERE/compare.sh" --events 20000 --queries q2 --no-measure --wrong-query q2 --out "$out/wrong" >"$out/wrong.log" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q '^\[nexmark\] q2: DIFFERENT' "$out/wrong.log" &&
    grep -q 'clink only:' "$out/wrong/q2/gate.txt" && grep -q 'q2 DIFFERENT' "$out/wrong.log" &&
    ! grep -q '^| q2 | [0-9]' "$out/wrong.log"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    echo "FAIL: wrong q2: expected a reported difference and exit 1, got exit $rc:" >&2
    tail -n 20 "$out/wrong.log" >&2
fi

echo "$passed passed, $failed failed"
[ $failed = 0 ]
