# Guest side of "make demo" (scripts/demo.sh): two VMs, each with the
# unmodified vmw_pvrdma driver on the pvrdma device, talk RDMA through the
# co-resident transport: rping with data validation, then ib_write_bw.
. /usr/lib/pvrdma/tests-common.sh

D=vmw_pvrdma0
wait_dev $D 15 || fail "$D not registered/ACTIVE"
gidx=$(roce_v2_gid $D)
log "$D: port $(sed 's/.*: //' /sys/class/infiniband/$D/ports/1/state), GID[$gidx] $(cat /sys/class/infiniband/$D/ports/1/gids/$gidx) on $PVRDMA_NETIF $PVRDMA_IP"
barrier up 60

vm_pair rping 60 cm:7174 "rping -s -a $PVRDMA_IP -S 4096 -C 10 -V" \
    "rping -c -a $PVRDMA_PEER_IP -S 4096 -C 10 -V -v" || fail "rping failed ($PAIR_ERR)"
if [ "$PVRDMA_VM" = 1 ]; then
    grep '^ping data' /tmp/rping.out | head -n 3 | cut -c1-72 | sed 's/$/.../; s/^/    /'
    log "rping: $(grep -c '^ping data' /tmp/rping.out) pings of 4096 bytes to $PVRDMA_PEER_IP, each validated (-V)"
else
    log "rping: served $PVRDMA_PEER_IP"
fi

o="-d $D -x $gidx -F -s 65536 -n 5000"
vm_pair write_bw 60 tcp:18515 "ib_write_bw $o" "ib_write_bw $o $PVRDMA_PEER_IP" || fail "ib_write_bw failed ($PAIR_ERR)"
if [ "$PVRDMA_VM" = 1 ]; then
    grep -E '#bytes' /tmp/write_bw.out | sed 's/^/    /'
    perf_result /tmp/write_bw.out | sed 's/^/    /'
    log "ib_write_bw: $(perf_result /tmp/write_bw.out | awk '{printf "%d RDMA WRITEs of %d bytes into VM 0, %.0f MB/s average", $2, $1, $4}')"
fi
barrier end 30
