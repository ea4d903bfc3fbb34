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
for s in $SIZES; do
    o="-d $D -x $gidx -F -n $LAT_ITERS -s $s ${BENCH_LAT_OPTS:-}"
    vm_pair "lat-$s" 300 tcp:18515 "ib_send_lat $o" "ib_send_lat $o $PVRDMA_PEER_IP" || { bad=$((bad + 1)); continue; }
    [ "$PVRDMA_VM" = 1 ] || continue
    l=$(perf_result "/tmp/lat-$s.out")
    if [ -z "$l" ]; then
        PAIR_ERR=${PAIR_ERR:-"lat-$s: no result line"}
        log "lat-$s: no result line:"; cat "/tmp/lat-$s.out"
        bad=$((bad + 1)); continue
    fi
    echo "$l" | awk '{print "BENCH lat", $1, $5, $6}'
done
for s in $BW_SIZES; do
    o="-d $D -x $gidx -F -D $BW_SECS -s $s"
    vm_pair "bw-$s" 300 tcp:18515 "ib_write_bw $o" "ib_write_bw $o $PVRDMA_PEER_IP" || { bad=$((bad + 1)); continue; }
    [ "$PVRDMA_VM" = 1 ] || continue
    l=$(perf_result "/tmp/bw-$s.out")
    if [ -z "$l" ]; then
        PAIR_ERR=${PAIR_ERR:-"bw-$s: no result line"}
        log "bw-$s: no result line:"; cat "/tmp/bw-$s.out"
        bad=$((bad + 1)); continue
    fi
    echo "$l" | awk '{print "BENCH bw", $1, $4}'
done
[ $bad = 0 ] || fail "$bad benchmark runs on $D failed (first: $PAIR_ERR)"
