# Guest side of scripts/bench-coresident.sh and bench-roce.sh (two VMs,
# busybox ash): perftest ib_send_lat over a range of sizes (BENCH_SIZES)
# and ib_write_bw at BENCH_BW_SIZES (default 64 KiB) between the two VMs, VM 0 serving, on BENCH_DEV: vmw_pvrdma0 (co-resident transport
# or RoCEv2), rxe0 (soft-RoCE on the VM's NIC, created here) or auto (each
# VM the pvrdma device if it has one, else soft-RoCE: for a pvrdma VM
# against a soft-RoCE VM).  VM 1 prints one line per figure:
#   BENCH lat SIZE T_TYPICAL_USEC T_AVG_USEC
#   BENCH bw SIZE BW_AVG_MBPS
. /usr/lib/pvrdma/tests-common.sh

D=${BENCH_DEV:-vmw_pvrdma0}
if [ "$D" = auto ]; then
    D=$([ "$PVRDMA_DEVICE" = 1 ] && echo vmw_pvrdma0 || echo rxe0)
fi
SIZES=${BENCH_SIZES:-2 8 32 128 512 2048 8192 32768 131072 524288 1048576}
LAT_ITERS=${BENCH_LAT_ITERS:-100}
# BENCH_LAT_OPTS: more ib_send_lat options, e.g. -e (wait for CQ events)
BW_SECS=${BENCH_BW_SECS:-5}
BW_SIZES=${BENCH_BW_SIZES:-65536}
[ "$D" != rxe0 ] || setup_rxe
wait_dev "$D" 15 || fail "$D not ACTIVE"
gidx=$(roce_v2_gid "$D")
barrier bench-up 60
bad=0
# bench_one TAG TOOL OPTIONS FIELDS: TOOL between the two VMs (VM 0
# serves); VM 1 prints "BENCH" and FIELDS (awk print arguments) of its
# result line, or counts the run as bad if it printed none (a run whose
# clock calibration failed prints no figure but is not bad)
bench_one() {
    vm_pair "$1" 300 tcp:18515 "$2 $3" "$2 $3 $PVRDMA_PEER_IP" || { bad=$((bad + 1)); return 0; }
    [ "$PVRDMA_VM" = 1 ] || return 0
    _l=$(perf_result "/tmp/$1.out")
    if [ -z "$_l" ] && grep -q 'Correlation coefficient r^2: .* < 0.9' "/tmp/$1.out"; then
        # perftest could not fit its clock (a TCG vCPU on a busy host) and
        # printed "inf": no figure for this size, which the report says
        log "$1: no figure: perftest's clock calibration failed ($(grep -o 'r^2: [0-9.]*' "/tmp/$1.out" | head -1))"
        return 0
    fi
    if [ -z "$_l" ]; then
        PAIR_ERR=${PAIR_ERR:-"$1: no result line"}
        log "$1: no result line:"; cat "/tmp/$1.out"
        bad=$((bad + 1)); return 0
    fi
    echo "$_l" | awk "{print \"BENCH\", $4}"
}
for s in $SIZES; do
    bench_one "lat-$s" ib_send_lat "-d $D -x $gidx -F -n $LAT_ITERS -s $s ${BENCH_LAT_OPTS:-}" '"lat", $1, $5, $6'
done
for s in $BW_SIZES; do
    bench_one "bw-$s" ib_write_bw "-d $D -x $gidx -F -D $BW_SECS -s $s" '"bw", $1, $4'
done
[ $bad = 0 ] || fail "$bad benchmark runs on $D failed (first: $PAIR_ERR)"
