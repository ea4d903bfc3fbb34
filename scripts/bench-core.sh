#!/bin/bash
# Benchmark of the device core without a guest and without the device
# (tests/bench/bench-core.c, built -O2 against the core, QEMU's libqemuutil and the
# unit tests' fake driver and fake host).  64-byte SEND and RDMA WRITE on RC
# QPs, 1 QP and 64 QPs, through
#   - the loopback transport (one device),
#   - the co-resident transport, two devices in one process,
#   - the same in two processes (fork), their loops spinning, or sleeping in
#     poll() when idle as QEMU's main loop does, device and guest in one
#     thread (no polling of the peer's ring: it would stall the guest);
#   - two QEMU-like processes: the device loop in a thread of its own under
#     a big lock, the guest side spinning on its CQs, the peer's ring
#     polled for poll-max-ns (-P, default 32768) after each take; and the
#     CPU its two device threads use while the pair is idle;
#   - two IOThread-like processes (iothread=): the device thread is QEMU's
#     own AioContext (libqemuutil's) turning aio_poll() with its adaptive
#     polling (poll-max-ns -P, default 32768), the peers' rings polled
#     through io_poll and kept awake while it polls; its idle CPU too;
#   - with -g the guest side of those two pairs sleeps on its CQ interrupt
#     (a completion channel) instead of spinning, so that on two cores each
#     device thread has one;
# ops/s (batches posted, completions polled) and doorbell-to-peer-CQE latency
# (one op at a time; p50, p99), with the ratios to the targets (10 M ops/s
# loopback, 5 M with 1 QP, 8 M with 64; 1 us), heap allocations per
# operation (every malloc-family and aligned allocation, GSlice's included:
# G_SLICE=always-malloc, which bench-core checks at start; its header
# says how), and from the same run the host's memcpy rate (64 B, 64 KiB)
# and the cost of one socket hop.  Prints figures; not a test (not in make
# check).  About 35 s per run on 2 cores.
#
#   scripts/bench-core.sh [-r RUNS] [--loaded] [BENCH-CORE OPTIONS]
#     -r RUNS   run it RUNS times (default 1), with the load average before
#               and after each run
#     --loaded  each run twice: quiet, then with a busy loop on every core
#               (as other jobs would be), and the ops/s ratio loaded/quiet
#   bench-core options: -t SECS (per throughput figure, default 1),
#     -n LAT_SAMPLES (default 20000), -w LAT_WARMUP (default 2000),
#     -L LAT_SECS (a latency figure stops early after that long, default 2),
#     -m lcpsqi (transports: loopback, co-resident 1 process, 2 processes
#     spinning, 2 processes sleeping, 2 QEMU-like, 2 IOThread-like),
#     -c MEMCPY_SECS (default 0.5), -P POLL_NS (the QEMU-like and
#     IOThread-like pairs' poll-max-ns), -g (their guests sleep)
#
# Profiling (perf has no hardware counters in this VM; cpu-clock works):
#   G_SLICE=always-malloc perf record -e cpu-clock --call-graph dwarf \
#       build/bench-core/bench-core -m c -c 0
#   G_SLICE=always-malloc valgrind --tool=callgrind \
#       build/bench-core/bench-core -m c -t 0.5 -n 2000 -c 0
# (without G_SLICE=always-malloc bench-core runs itself again, outside
# valgrind)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=1
loaded=0
while :; do
    case "${1:-}" in
        -r) runs=$2; shift 2 ;;
        --loaded) loaded=1; shift ;;
        -h|--help) sed -n '2,42s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) break ;;
    esac
done

build=$top/build/bench-core
# glib's slice allocator through malloc, so that allocs/op counts GSlice's
# chunks (bench-core would run itself again with it otherwise)
export G_SLICE=always-malloc
mkdir -p "$build"
if ! make -s -C "$top/tests/bench" BUILD="$build" > "$build/make.log" 2>&1; then
    cat "$build/make.log" >&2
    echo "bench-core: the build failed" >&2
    exit 1
fi

busiest() { # the 3 busiest other processes (CPU % over their life)
    ps -eo pcpu=,comm= --sort=-pcpu | grep -v bench-core | head -n 3 |
        awk '{printf "%s %s%%; ", $2, $1}'
}
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), Linux $(uname -r)"
echo "note: the machine may be shared; other jobs' load lowers these figures" \
     "(see the load averages: 1, 5, 15 min)"
# the Mops/s of each row ("transport op QPs" -> figure) of a run's output
rows() { awk 'length($0) > 40 && $0 ~ /(SEND|WRITE) +[0-9]+ +[0-9.]+ / {
    name = substr($0, 1, 22); sub(/ +$/, "", name)
    split(substr($0, 24), f, " ")
    print name "|" f[1] "|" f[2] "|" f[3] }' "$1"; }
# the same as "transport op QPs|Mops/s", sorted for join
keyed() { rows "$1" | awk -F'|' '{ print $1 " " $2 " " $3 "|" $4 }' | sort; }
for i in $(seq "$runs"); do
    echo
    echo "== run $i of $runs: load average before $(cut -d' ' -f1-3 /proc/loadavg); busiest other processes: $(busiest)"
    timeout 600 "$build/bench-core" "$@" | tee "$build/quiet.txt"
    echo "== run $i of $runs: load average after $(cut -d' ' -f1-3 /proc/loadavg)"
    [ "$loaded" = 1 ] || continue
    hogs=()
    for _ in $(seq "$(nproc)"); do
        (while :; do :; done) & hogs+=($!)
    done
    echo
    echo "== run $i of $runs, loaded: a busy loop on each of $(nproc) cores"
    st=0
    timeout 600 "$build/bench-core" "$@" | tee "$build/loaded.txt" || st=$?
    kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null || true
    # a loaded run that failed, or that lacks a row of the quiet one, is a
    # failure: its ratios would be missing without a word
    if [ "$st" != 0 ]; then
        echo "bench-core.sh: the loaded run $i failed (exit $st)" >&2
        exit 1
    fi
    if [ "$(keyed "$build/quiet.txt" | cut -d'|' -f1)" != \
         "$(keyed "$build/loaded.txt" | cut -d'|' -f1)" ]; then
        echo "bench-core.sh: the loaded run $i does not have the quiet run's rows" >&2
        exit 1
    fi
    echo
    echo "== run $i of $runs: ops/s loaded / quiet (target >= 0.3)"
    join -t'|' <(keyed "$build/quiet.txt") <(keyed "$build/loaded.txt") |
        awk -F'|' '{ r = $2 > 0 ? $3 / $2 : 0
            printf "  %-34s %7.3f -> %7.3f Mops/s  %5.2f %s\n", $1, $2,
                   $3, r, (r >= 0.3 ? "met" : "MISS") }'
done
