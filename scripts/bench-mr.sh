#!/bin/bash
# Benchmark: registering a 1 GiB guest MR with a host RDMA device (host HCA
# mode).  The host has no RDMA device, so this runs one level down: an L1
# VM with soft-RoCE (scripts/nested/run-l1.sh) runs the qtest
# /pvrdma/hca/mr-1g, which registers 1 GiB as one run of contiguous guest
# pages and as 512 runs of 2 MiB, with QEMU's pvrdma_hv_mr trace on.
# Prints, per case, the device's time (remap, total incl. ibv_reg_mr) and
# the whole CREATE_MR command's wall time.  Everything is under TCG and
# soft-RoCE pins pages in software: a native host with an HCA is faster.
#
#   scripts/bench-mr.sh [RUNS]      (default 3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
runs=${1:-3}
out=$top/build/bench/mr
mkdir -p "$out"
"$top/scripts/build.sh" >/dev/null
cat > "$out/l1.sh" <<'EOS'
#!/bin/sh
. /test.env
mkdir -p /tmp/qb
printf '#!/bin/sh\nexec /usr/bin/qemu-system-x86_64 -L /usr/share/pvrdma/firmware -trace pvrdma_hv_mr "$@"\n' > /tmp/qb/qemu-system-x86_64
chmod +x /tmp/qb/qemu-system-x86_64
export QTEST_QEMU_BINARY=/tmp/qb/qemu-system-x86_64
for i in $(seq "$RUNS"); do
    /pvrdma-test --tap -p /x86_64/pvrdma/hca/mr-1g 2>&1 | grep -E 'pvrdma_hv_mr|CREATE_MR|^not ok|SKIP'
done
exit 0
EOS
l1rc=0
"$top/scripts/nested/run-l1.sh" -q -t 1800 -o "$out/l1" -e "RUNS=$runs" \
    -f "$top/build/qemu/tests/qtest/pvrdma-test:/pvrdma-test" "$out/l1.sh" > "$out/raw.txt" 2>&1 || l1rc=$?
grep -a 'pvrdma_hv_mr\|CREATE_MR\|not ok\|SKIP' "$out/l1/console.log" > "$out/lines.txt" 2>/dev/null || true
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
