#!/bin/bash
# The CPU that idle QEMUs use: real QEMU processes (qtest accelerator, no
# vCPU: the device's and the main loop's work), sampled from
# /proc/PID/stat (utime + stime) and the threads' schedstat over SECS
# seconds each (default 10) after a settling second, for
#   - one QEMU with the NIC and no pvrdma (QEMU's own floor),
#   - one QEMU with the device active and no transport (no rendezvous),
#   - two QEMUs joined by the co-resident transport (one rendezvous
#     directory): no QP; 1 connected RC QP each side; 64 (one SEND over
#     each QP before they go idle),
# in % of one core for each process and for the pair, and each one's
# context switches per second (its wakeups).  The qtest /pvrdma/bench/idle
# (tests/qtest/pvrdma/migration-tests.c, registered only with PVRDMA_BENCH_IDLE set).
# The qtest accelerator's virtual clock stands still: the device's timers
# (the link poll, 4 per second in a running VM) do not fire here.
# Builds first (scripts/build.sh); prints figures; not a test.  About
# 6 x (SECS + 2) s per run.
#
#   scripts/bench-idle.sh [-r RUNS] [-s SECS]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=1 secs=10
while [ $# -gt 0 ]; do
    case $1 in
        -r) runs=$2; shift 2 ;;
        -s) secs=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
        *) echo "bench-idle: unknown argument $1" >&2; exit 2 ;;
    esac
done
case $runs$secs in
    *[!0-9]*|0*) echo "bench-idle: RUNS and SECS are whole numbers > 0" >&2; exit 2 ;;
esac
mkdir -p "$top/build"
log=$top/build/bench-idle.log
if ! "$top/scripts/build.sh" qemu-system-x86_64 tests/qtest/pvrdma-test \
        > "$top/build/bench-idle-build.log" 2>&1; then
    tail -20 "$top/build/bench-idle-build.log" >&2
    echo "bench-idle: the build failed" >&2
    exit 1
fi
echo "machine: $(nproc) CPUs, Linux $(uname -r)"
echo "note: the machine may be shared: see the load averages (1, 5, 15 min)"
for i in $(seq "$runs"); do
    echo
    echo "== run $i of $runs: load average before $(cut -d' ' -f1-3 /proc/loadavg)"
    if ! QTEST_QEMU_BINARY=$top/build/qemu/qemu-system-x86_64 \
         PVRDMA_BENCH_IDLE=1 PVRDMA_BENCH_IDLE_SECS=$secs \
         timeout $((10 * (secs + 10))) \
         "$top/build/qemu/tests/qtest/pvrdma-test" \
         -p /x86_64/pvrdma/bench/idle > "$log" 2>&1 ||
       ! grep -q '^ok .*/pvrdma/bench/idle' "$log"; then
        cat "$log" >&2
        echo "bench-idle: run $i failed" >&2
        exit 1
    fi
    sed -n 's/^# idle: //p' "$log"
    echo "== run $i of $runs: load average after $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
echo "CPU (stat): utime + stime of all the process's threads (/proc/PID/stat,"
echo "ticks of 1/$(getconf CLK_TCK) s) over the window, in % of one core; run (schedst.):"
echo "the same from its threads' run time in ns (/proc/PID/task/*/schedstat);"
echo "switches: its threads' voluntary + involuntary context switches per second."
