#!/bin/bash
# The core and the co-resident transport with threads, under
# ThreadSanitizer (not in make check: make check-tsan).  bench-core's
# QEMU-like mode runs each device loop in a thread of its own under a big
# lock (a QemuMutex, as QEMU's BQL), the guest side in another thread
# ringing doorbells under that lock and polling its CQs without it, as a
# vCPU and a verbs program do; once with the peers' rings polled (the
# lock dropped while polling, -P), once without; then the IOThread-like
# mode (QEMU's AioContext in the device thread, its handlers and bottom
# half under that lock), with the guests spinning and sleeping (-g).
# Built with clang
# -fsanitize=thread, without bench-core's allocation count (TSan wraps
# malloc itself).  Exit status 1 on any report.
#
#   scripts/tsan-bench.sh [-o DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/tsan
[ "${1:-}" = -o ] && out=$2
mkdir -p "$out"
CLANG=$(command -v clang-14 || command -v clang)
scripts/build.sh > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
make -s -C tests/bench BUILD="$top/build/bench-tsan" CC="$CLANG" \
    CFLAGS="-O1 -g -fsanitize=thread" TSAN=1 "$top/build/bench-tsan/bench-core" \
    > "$out/make.log" 2>&1 || { tail -20 "$out/make.log"; exit 1; }
total=0
# one run: its log's name, what it is, bench-core's options
run() {
    local log=$out/bench-$1.log what=$2
    shift 2
    TSAN_OPTIONS="halt_on_error=0 die_after_fork=0" \
        timeout 900 build/bench-tsan/bench-core -t 0.3 -L 0.3 -c 0.1 "$@" \
        > "$log" 2>&1 ||
        { echo "# bench-core $* failed: $(tail -n 1 "$log")"; total=$((total + 1)); }
    n=$(grep -c 'WARNING: ThreadSanitizer' "$log" || true)
    echo "# $what: $n ThreadSanitizer reports ($log)"
    grep -A12 -m3 'WARNING: ThreadSanitizer' "$log" || true
    total=$((total + n))
}
for poll in 0 50000; do
    run "q-P$poll" "QEMU-like pair, poll-max-ns $poll" -m q -P "$poll"
done
# the IOThread-like pair: libqemuutil's AioContext turning the device
# thread, the rings polled through io_poll; guests spinning, then sleeping
run i "IOThread-like pair" -m i
run i-g "IOThread-like pair, guests sleeping" -m i -g
echo "$total reports"
[ "$total" = 0 ]
