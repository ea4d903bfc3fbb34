#!/bin/bash
# Benchmark of the RoCEv2 transport, in one run, on one accelerator (TCG,
# as the guest tests), two VMs on the same kind of netdev each time (the
# rig's unix dgram pair):
#   rxe-rxe        soft-RoCE (rdma_rxe) on virtio-net in both VMs: the
#                  reference, RoCEv2 done by the guests' kernels;
#   pvrdma-rxe     vmxnet3 + pvrdma in VM 0, soft-RoCE on virtio-net in
#                  VM 1 (the device against a native RoCEv2 stack);
#   pvrdma-pvrdma  vmxnet3 + pvrdma in both, no rendezvous (as on two
#                  hosts: RoCEv2 on the wire, no shared memory).
# In each pair: perftest ib_send_lat, sizes 2 B to 64 KiB (typical =
# median and average latency, usec) and ib_write_bw at 512 B to 64 KiB
# (average MB/s), VM 0 serving.  Prints the figures and the ratios against
# the targets: pvrdma-pvrdma latency <= 0.5x rxe-rxe and bandwidth (64 KiB)
# >= 2x; writes bench-roce.png and .svg, latency and bandwidth against
# size of the three pairs (scripts/bench/plot.py).
#
#   scripts/bench-roce.sh [-o DIR] [--qlen N]   (default build/bench/<time>)
# --qlen N: run with /proc/sys/net/unix/max_dgram_qlen = N (as root; put
#   back after the run): the rig's dgram netdev queues at most that many
#   frames at the receiving QEMU (Linux's default 10), which throttles any
#   sender of bursts; default: leave it as it is.
# Environment (passed to the guests): BENCH_SIZES, BENCH_BW_SIZES (default
# 512 4096 65536), BENCH_LAT_ITERS (default 100), BENCH_BW_SECS (default
# 5); QEMU.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out= qlen=
while [ $# -gt 0 ]; do
    case $1 in
        -o|--out) out=$2; shift 2 ;;
        --qlen) qlen=$2; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "bench-roce: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || out=build/bench/roce-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"; out=$(cd "$out" && pwd)

scripts/build.sh > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
scripts/guest/build-image.sh --quiet

qf=/proc/sys/net/unix/max_dgram_qlen
old_qlen=$(cat "$qf")
if [ -n "$qlen" ]; then
    echo "$qlen" > "$qf" || { echo "bench-roce: cannot set $qf (root?)" >&2; exit 1; }
    trap 'echo "$old_qlen" > "$qf"' EXIT
fi

. scripts/bench/lib.sh
{
    echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(uname -r)"
    echo "unix dgram queue (max_dgram_qlen): $(cat "$qf") frames"
    echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "busiest other processes: $(bench_busiest)"
} > "$out/host.txt"

SIZES=${BENCH_SIZES:-2 8 32 128 512 2048 8192 32768 65536}
BW_SIZES=${BENCH_BW_SIZES:-512 4096 65536}
envs=(-e "BENCH_SIZES=$SIZES" -e "BENCH_BW_SIZES=$BW_SIZES" -e BENCH_DEV=auto)
for v in BENCH_LAT_ITERS BENCH_BW_SECS; do
    [ -z "${!v:-}" ] || envs+=(-e "$v=${!v}")
done
run() { bench_run bench-roce "$@"; }
run rxe-rxe --nic virtio
run pvrdma-rxe --nic vmxnet3,virtio
run pvrdma-pvrdma --no-rendezvous

# the report exits 1 if a figure is missing; the plot is drawn anyway
rep=0
python3 - "$out" <<'EOP' | tee "$out/report.txt" || rep=$?
import sys
out = sys.argv[1]
def load(name):
    lat, bw = {}, None
    for l in open(f"{out}/{name}.txt"):
        f = l.split()
        if len(f) < 3:
            continue    # a run without a figure: reported below
        if f[0] == "lat":
            lat[int(f[1])] = (float(f[2]), float(f[3]))
        elif f[0] == "bw" and int(f[1]) == 65536:
            bw = float(f[2])
    return lat, bw
runs = ["rxe-rxe", "pvrdma-rxe", "pvrdma-pvrdma"]
res = {r: load(r) for r in runs}
nofig = []   # a missing or zero figure is an error, never "met"
print(open(f"{out}/host.txt").read().rstrip())
print()
print("ib_send_lat, usec, typical (median) / average; two VMs under TCG")
print(f"{'bytes':>7}" + "".join(f"  {r:>19}" for r in runs) + "  pv-pv/rxe-rxe (target <= 0.5)")
met = n = 0
sizes = sorted(set().union(*(res[r][0] for r in runs)))
for s in sizes:
    row = f"{s:>7}"
    for r in runs:
        v = res[r][0].get(s)
        row += f"  {v[0]:9.1f} /{v[1]:8.1f}" if v else f"  {'-':>19}"
    a, b = res["pvrdma-pvrdma"][0].get(s), res["rxe-rxe"][0].get(s)
    if a and b and a[0] > 0 and b[0] > 0:
        q = a[0] / b[0]
        n += 1
        met += q <= 0.5
        row += f"  {q:6.2f} {'met' if q <= 0.5 else 'MISSED'}"
    else:
        row += "  no figure"
        nofig.append(f"ib_send_lat {s} B")
    print(row)
print(f"latency target met at {met} of {n} sizes")
print()
print("ib_write_bw 64 KiB, MB/s (average)")
for r in runs:
    v = res[r][1]
    print(f"  {r:14} {v:10.1f}" if v else f"  {r:14} {'-':>10}  no figure")
    if not v:
        nofig.append(f"{r} ib_write_bw")
a, b = res["pvrdma-pvrdma"][1], res["rxe-rxe"][1]
if a and b:
    print(f"  pvrdma-pvrdma / rxe-rxe {a / b:6.2f}x  target >= 2x: {'met' if a / b >= 2 else 'MISSED'}")
a = res["pvrdma-rxe"][1]
if a and b:
    print(f"  pvrdma-rxe / rxe-rxe    {a / b:6.2f}x")
if nofig:
    print(f"no figure for: {', '.join(nofig)}")
    sys.exit(1)
EOP
python3 scripts/bench/plot.py "$out" bench-roce \
    "pvrdma over RoCEv2 vs soft-RoCE, two VMs under TCG ($(date +%F))" \
    rxe-rxe="soft-RoCE - soft-RoCE" pvrdma-rxe="pvrdma - soft-RoCE" \
    pvrdma-pvrdma="pvrdma - pvrdma (RoCEv2)" || true
echo "figures and logs: $out"
exit "$rep"
