#!/bin/bash
# Benchmark of the device core without a guest and without QEMU
# (tests/bench/bench-core.c, built -O2 against the QEMU-free core and the
# unit tests' fake driver and fake host).  64-byte SEND and RDMA WRITE on RC
# QPs, 1 QP and 64 QPs, through
#   - the loopback transport (one device),
#   - the co-resident transport, two devices in one process,
#   - the same in two processes (fork), their loops spinning, or sleeping in
#     poll() when idle as QEMU's main loop does;
# ops/s (batches posted, completions polled) and doorbell-to-peer-CQE latency
# (one op at a time; p50, p99), with the ratios to the targets (2 M ops/s,
# 2 us), and from the same run the host's memcpy rate (64 B, 64 KiB) and the
# cost of one socket hop.  Prints figures; not a test (not in make check).
# About 25 s per run on 2 cores.
#
#   scripts/bench-core.sh [-r RUNS] [BENCH-CORE OPTIONS]
#     -r RUNS   run it RUNS times (default 1), with the load average before
#               and after each run
#   bench-core options: -t SECS (per throughput figure, default 1),
#     -n LAT_SAMPLES (default 20000), -w LAT_WARMUP (default 2000),
#     -L LAT_SECS (a latency figure stops early after that long, default 2),
#     -m lcps (transports: loopback, co-resident 1 process, 2 processes
#     spinning, 2 processes sleeping), -c MEMCPY_SECS (default 0.5)
#
# Profiling (perf has no hardware counters in this VM; cpu-clock works):
#   perf record -e cpu-clock --call-graph dwarf build/bench-core/bench-core -m c -c 0
#   valgrind --tool=callgrind build/bench-core/bench-core -m c -t 0.5 -n 2000 -c 0
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=1
if [ "${1:-}" = -r ]; then
    runs=$2
    shift 2
fi
case "${1:-}" in
    -h|--help) sed -n '2,27s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac

build=$top/build/bench-core
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
for i in $(seq "$runs"); do
    echo
    echo "== run $i of $runs: load average before $(cut -d' ' -f1-3 /proc/loadavg); busiest other processes: $(busiest)"
    timeout 600 "$build/bench-core" "$@"
    echo "== run $i of $runs: load average after $(cut -d' ' -f1-3 /proc/loadavg)"
done
