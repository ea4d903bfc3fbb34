#!/bin/bash
# Nested tests (tests/nested/NN-*.sh): each boots its own L1 VM (TCG, with
# soft-RoCE rxe0) through scripts/nested/run-l1.sh and runs in it; L1
# scripts may boot L2 guests (scripts/nested/l2.sh) whose pvrdma device
# uses rxe0 (ibdev=rxe0).
#
#   scripts/nested/run-tests.sh [NAME-OR-GLOB...]     e.g. run-tests.sh 40
#
# Prints "ok NAME (SECSs)" or "FAIL NAME: reason" per test, then
# "N passed, N failed".  Exit status 1 if anything failed.
# Test headers: "# timeout: SECS" (L1 run limit), "# l1-files: SRC:DST ..."
# (build files put into L1, SRC relative to the top directory).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${PVRDMA_NESTED_OUT:-$top/build/nested/results/tests-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"

"$here/build-l1.sh" >"$out/build-l1.log" 2>&1 || {
    echo "FAIL nested: build-l1.sh failed (see $out/build-l1.log)"
    echo "0 passed, 1 failed"; exit 1
}
tests=()
for t in "$top"/tests/nested/[0-9][0-9]-*.sh; do
    n=$(basename "$t" .sh)
    if [ $# -eq 0 ]; then tests+=("$t"); continue; fi
    for sel in "$@"; do
        # shellcheck disable=SC2053
        case $n in "$sel"|"$sel"-*|$sel) tests+=("$t"); break ;; esac
    done
done
pass=0 fail=0
for t in "${tests[@]}"; do
    n=$(basename "$t" .sh)
    tmo=$(sed -n 's/^# timeout: *//p' "$t" | head -n 1)
    files=() missing=
    for f in $(sed -n 's/^# l1-files: *//p' "$t"); do
        files+=(-f "$top/$f")
        [ -f "$top/${f%%:*}" ] || missing=${f%%:*}
    done
    if [ -n "$missing" ]; then
        # an input the test needs was not built (e.g. 43 without the
        # sanitizer build, PVRDMA_SANITIZE=1 scripts/build.sh): what was
        # asked for did not run, which is a failure, not a skip
        fail=$((fail + 1)); echo "FAIL $n: no $missing (build it first)"
        continue
    fi
    t0=$(date +%s)
    "$here/run-l1.sh" --no-build -q -t "${tmo:-1200}" -o "$out/$n" \
        "${files[@]}" "$t" >"$out/$n.log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    if [ $rc = 0 ]; then
        pass=$((pass + 1)); echo "ok $n (${secs}s)"
    else
        fail=$((fail + 1))
        why=$(grep -h -m1 '^FAIL: ' "$out/$n/console.log" 2>/dev/null | sed 's/^FAIL: //')
        echo "FAIL $n: ${why:-rc $rc} (${secs}s) [logs: $out/$n]"
    fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
