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
for poll in 0 50000; do
    log=$out/bench-q-P$poll.log
    TSAN_OPTIONS="halt_on_error=0 die_after_fork=0" \
        timeout 900 build/bench-tsan/bench-core -t 0.3 -m q -L 0.3 -c 0.1 -P "$poll" \
        > "$log" 2>&1 || { echo "# bench-core -m q -P $poll failed: $(tail -n 1 "$log")"; total=$((total + 1)); }
    n=$(grep -c 'WARNING: ThreadSanitizer' "$log" || true)
    echo "# QEMU-like pair, poll-max-ns $poll: $n ThreadSanitizer reports ($log)"
    grep -A12 -m3 'WARNING: ThreadSanitizer' "$log" || true
    total=$((total + n))
done
# the IOThread-like pair: libqemuutil's AioContext turning the device
# thread, the rings polled through io_poll; guests spinning, then sleeping
for g in "" -g; do
    log=$out/bench-i$g.log
    TSAN_OPTIONS="halt_on_error=0 die_after_fork=0" \
        timeout 900 build/bench-tsan/bench-core -t 0.3 -m i -L 0.3 -c 0.1 $g \
        > "$log" 2>&1 || { echo "# bench-core -m i $g failed: $(tail -n 1 "$log")"; total=$((total + 1)); }
    n=$(grep -c 'WARNING: ThreadSanitizer' "$log" || true)
    echo "# IOThread-like pair${g:+, guests sleeping}: $n ThreadSanitizer reports ($log)"
    grep -A12 -m3 'WARNING: ThreadSanitizer' "$log" || true
    total=$((total + n))
done
echo "$total reports"
[ "$total" = 0 ]
