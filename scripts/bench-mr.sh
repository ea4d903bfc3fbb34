#!/bin/bash
# Benchmark: registering a 1 GiB guest MR with a host RDMA device (host HCA
# mode).  The host has no RDMA device, so this runs one level down: an L1
# VM with soft-RoCE (scripts/nested/run-l1.sh) runs the qtest
# /pvrdma/hca/mr-1g, which registers 1 GiB as one run of contiguous guest
# pages and as 512 runs of 2 MiB, with QEMU's pvrdma_hv_mr trace on.
# Prints, per case, the device's time (remap, total incl. ibv_reg_mr) and
# the whole CREATE_MR command's wall time.  Then the fast registration
# (FRMR) cost: the qtest /pvrdma/hca/frmr-cost with PVRDMA_BENCH_FRMR=FRMRS
# posts FRMRS signaled FAST_REG_MR work requests of 1 and of 30 page runs
# and times each from the doorbell to its completion in the guest's CQ
# (the host window's bind and its completion included), beside the
# device's own part from the pvrdma_hv_fast_reg trace (registration and
# post of the bind, not its completion).  Everything is under TCG and
# soft-RoCE pins pages in software: a native host with an HCA is faster.
#
#   scripts/bench-mr.sh [RUNS [FRMRS]]      (default 3 and 200)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
runs=${1:-3}
frmrs=${2:-200}
out=$top/build/bench/mr
mkdir -p "$out"
"$top/scripts/build.sh" >/dev/null
cat > "$out/l1.sh" <<'EOS'
#!/bin/sh
. /test.env
mkdir -p /tmp/qb
printf '#!/bin/sh\nexec /usr/bin/qemu-system-x86_64 -L /usr/share/pvrdma/firmware -trace pvrdma_hv_mr -trace pvrdma_hv_fast_reg "$@"\n' > /tmp/qb/qemu-system-x86_64
chmod +x /tmp/qb/qemu-system-x86_64
export QTEST_QEMU_BINARY=/tmp/qb/qemu-system-x86_64
for i in $(seq "$RUNS"); do
    /pvrdma-test --tap -p /x86_64/pvrdma/hca/mr-1g 2>&1 | grep -E 'pvrdma_hv_mr|CREATE_MR|^not ok|SKIP'
done
PVRDMA_BENCH_FRMR=$FRMRS /pvrdma-test --tap -p /x86_64/pvrdma/hca/frmr-cost 2>&1 |
    grep -E 'pvrdma_hv_fast_reg|FRMR cost|^not ok|SKIP|ERROR|Bail out'
exit 0
EOS
l1rc=0
"$top/scripts/nested/run-l1.sh" -q -t 1800 -o "$out/l1" -e "RUNS=$runs" -e "FRMRS=$frmrs" \
    -f "$top/build/qemu/tests/qtest/pvrdma-test:/pvrdma-test" "$out/l1.sh" > "$out/raw.txt" 2>&1 || l1rc=$?
grep -a 'pvrdma_hv_mr\|CREATE_MR\|not ok\|SKIP' "$out/l1/console.log" > "$out/lines.txt" 2>/dev/null || true
grep -a 'pvrdma_hv_fast_reg\|FRMR cost\|not ok\|SKIP\|ERROR\|Bail out' "$out/l1/console.log" | tr -d '\r' > "$out/frmr.txt" 2>/dev/null || true
# every run prints one device line and one command line per case (2 cases)
got=$(grep -c 'pvrdma_hv_mr' "$out/lines.txt" || true)
if [ "$got" -lt $((2 * runs)) ]; then
    echo "bench-mr.sh: L1 gave $got of $((2 * runs)) figures (run-l1.sh exit $l1rc; see $out/raw.txt, $out/l1/console.log)" >&2
    tail -n 5 "$out/raw.txt" >&2
    exit 1
fi
echo "1 GiB MR registration, host HCA mode, soft-RoCE in a TCG VM ($runs runs):"
awk '/pvrdma_hv_mr/ {
        for (i = 1; i <= NF; i++) {
            if ($i == "in") runs = $(i + 1)
            if ($i == "remap") remap = $(i + 1)
            if ($i == "total") total = $(i + 1)
        }
        printf "  %4d run(s): device %7.1f ms (remap %6.1f ms)", runs, total / 1000, remap / 1000
     }
     /CREATE_MR/ { printf ", command %s ms\n", $(NF - 1) }
     /not ok|SKIP/ { print "  FAILED: " $0; bad = 1 }
     END { exit bad }' "$out/lines.txt"
echo "Fast registration (FRMR), host HCA mode, the same L1 ($frmrs of each size):"
# the guest's figures, then the device's part: pvrdma_hv_fast_reg's
# "in R runs: ... registered and bound in N us" per size
grep 'FRMR cost' "$out/frmr.txt" | sed 's/.*FRMR cost, /  /' || true
for r in 1 30; do
    sed -n "s/.*pvrdma_hv_fast_reg.* in $r runs: .* bound in \([0-9]*\) us.*/\1/p" "$out/frmr.txt" |
        sort -n | awk -v r="$r" '{ v[NR] = $1 }
            END { if (NR) printf "  %d page run(s), the device alone (trace: registered, bind posted, not completed): median %d us, 90th percentile %d us (%d registrations)\n",
                                 r, v[int(NR / 2) + 1], v[int(NR * 9 / 10) + 1], NR }'
done
if grep -q 'not ok\|SKIP\|ERROR\|Bail out' "$out/frmr.txt" || [ "$(grep -c 'FRMR cost' "$out/frmr.txt")" != 2 ]; then
    echo "bench-mr.sh: the FRMR bench gave $(grep -c 'FRMR cost' "$out/frmr.txt") of 2 figures:" >&2
    grep 'not ok\|SKIP\|ERROR\|Bail out' "$out/frmr.txt" >&2
    exit 1
fi
