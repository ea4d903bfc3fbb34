#!/bin/bash
# The device's share of a migration's downtime: its save (source, VM
# stopped) and load (destination: every object re-created, every ring and
# MR mapped again) for 1 connected QP and for QPS connected QPs with as
# many MRs.  Twice: the core alone (tests/bench/bench-mig.c, built -O2
# against the core on the unit tests' fake host, median of RUNS),
# then in QEMU (the qtest /pvrdma/bench/migration: 2 and QPS QPs created
# through the command channel, migrated to a second QEMU, the device's
# device's section in QEMU's vmstate_downtime_save / _load trace events),
# if QEMU is built.  Prints
# figures and the ratio to the target (save + load <= 10 ms at 1000 QPs);
# not a test.
#
#   scripts/bench-mig.sh [-q QPS] [-r RUNS]     (default 1000 QPs, 11 runs)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
    -h|--help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
make -s -C "$top/tests/bench" "$top/build/bench-core/bench-mig" >/dev/null
echo "# host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
qps=1000
args=("$@")
while [ $# -gt 0 ]; do
    case $1 in -q) qps=$2; shift 2 ;; *) shift ;; esac
done
echo "# the core on the fake host:"
"$top/build/bench-core/bench-mig" "${args[@]}"
qt=$top/build/qemu/tests/qtest/pvrdma-test
if [ ! -x "$qt" ]; then
    echo "# in QEMU: not built (scripts/build.sh)"
    exit 0
fi
echo "# in QEMU (qtest accelerator, migration over a unix socket):"
for n in 2 "$qps"; do
    out=$(QTEST_QEMU_BINARY=$top/build/qemu/qemu-system-x86_64 PVRDMA_BENCH_MIG=$n \
          "$qt" -p /x86_64/pvrdma/bench/migration 2>&1) || { echo "$out"; exit 1; }
    # the device's whole section (QEMU's vmstate_downtime_save/_load: the
    # core's image and the VMState fields written and read)
    s=$(echo "$out" | sed -n 's/.*vmstate_downtime_save .*pvrdma.*downtime=\([0-9]*\).*/\1/p')
    l=$(echo "$out" | sed -n 's/.*vmstate_downtime_load .*pvrdma.*downtime=\([0-9]*\).*/\1/p')
    case "$s:$l" in
        *[!0-9:]*|:*|*:|0:*|*:0) echo "$out"; echo "no figure: save '$s' us, load '$l' us at $n QPs"; exit 1 ;;
    esac
    awk -v n="$n" -v s="$s" -v l="$l" 'BEGIN {
        printf "%5u QPs %5u MRs  save %8.3f ms  load %8.3f ms  save+load %8.3f ms\n",
               n, n, s / 1000, l / 1000, (s + l) / 1000
        if (n >= 1000)
            printf "target: save+load <= 10 ms at 1000 QPs: %.2fx of the target (%s)\n",
                   (s + l) / 10000, s + l <= 10000 ? "met" : "missed"
    }'
done
