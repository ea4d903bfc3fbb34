#!/bin/bash
# Guest soak (not in make check): run real-guest tests over and over, as
# CI's guest suite runs them (tests/guest/run.sh, -smp 1 TCG guests, a
# soft lockup panics the guest and prints the stack), until one fails.
# A failure that hundreds of runs pass (a guest that locked up once in
# CI's test 53, iSER on the loopback transport) is looked for this way,
# and shown gone.
#
#   scripts/soak-guest.sh [-n RUNS] [-j LOOPS] [--hog] [-o DIR] [TEST...]
#
#   -n RUNS   runs per loop (default 200)
#   -j LOOPS  loops side by side, each running the tests in turn (default
#             2: two guests at once, as CI's guest suite at -j 2)
#   --hog     also a busy loop per host core (nice 0) for the whole soak
#   -o DIR    logs (default build/soak/guest-<time>); each run's in
#             DIR/loopL/RUN
#   TEST      tests/guest names (default: 53, iSER on the loopback
#             transport; 92, connections refused during iSER login, then a
#             login that works)
# Environment: PVRDMA_GUEST_APPEND, PVRDMA_QEMU_ARGS (e.g. -trace ...),
# PVRDMA_GUEST_LOGLEVEL: passed to run.sh and the guests.
# A loop stops at its first failure; the others go on.  Prints one line
# per loop and "N passed, N failed"; exit status 1 if any run failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
runs=200 loops=2 hog=0 out= tests=()
while [ $# -gt 0 ]; do
    case $1 in
        -n) runs=$2; shift 2 ;;
        -j) loops=$2; shift 2 ;;
        --hog) hog=1; shift ;;
        -o) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set /{/^#/p}' "$0"; exit 0 ;;
        -*) echo "soak-guest: unknown option $1" >&2; exit 2 ;;
        *) tests+=("$1"); shift ;;
    esac
done
[ ${#tests[@]} -gt 0 ] || tests=(53 92)
case "$runs$loops" in *[!0-9]*|'') echo "soak-guest: -n and -j want numbers" >&2; exit 2 ;; esac
[ -n "$out" ] || out=build/soak/guest-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"; out=$(cd "$out" && pwd)
scripts/build.sh > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
scripts/guest/build-image.sh --quiet || exit 1

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
if [ "$hog" = 1 ]; then
    for _ in $(seq "$(nproc)"); do
        (while :; do :; done) &
        pids+=($!)
    done
fi

# loop L: RUNS runs of the tests, one line per run in DIR/loopL/summary
loop() {
    local l=$1 i d rc
    mkdir -p "$out/loop$l"
    for i in $(seq "$runs"); do
        d=$out/loop$l/$i
        tests/guest/run.sh -o "$d" "${tests[@]}" > "$d.txt" 2>&1
        rc=$?
        echo "$i rc=$rc $(grep -E '^(ok|FAIL) ' "$d.txt" | tr '\n' ' ')" >> "$out/loop$l/summary"
        [ $rc = 0 ] || return 1
    done
}
t0=$SECONDS
lp=()
for l in $(seq "$loops"); do
    loop "$l" &
    lp+=($!)
done
for p in "${lp[@]}"; do wait "$p"; done
pass=0 fail=0
for l in $(seq "$loops"); do
    s=$out/loop$l/summary
    n=$(grep -c ' rc=0 ' "$s" 2>/dev/null || true)
    f=$(grep -vc ' rc=0 ' "$s" 2>/dev/null || true)
    pass=$((pass + n)) fail=$((fail + f))
    echo "loop $l: $n passed, $f failed$( [ "$f" = 0 ] || echo ": $(grep -v ' rc=0 ' "$s" | head -n1)")"
done
echo "# ${tests[*]}: $((SECONDS - t0)) s, logs in $out"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
