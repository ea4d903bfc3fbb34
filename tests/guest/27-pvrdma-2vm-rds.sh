# RDS (Reliable Datagram Sockets) over its RDMA transport (rds_rdma, a
# kernel RDMA client with its own rdma_cm connection) between two VMs over
# vmw_pvrdma0: VM 1 sends COUNT messages of several sizes (one RC SEND up
# to many RDS fragments) to VM 0, which checks that each arrives once, in
# order, byte for byte (rds-xfer, tests/guest/tools/rds-xfer.c).  The RDS
# connection must be over IB, not TCP.
# vms: 2
# timeout: 300
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
run modprobe rds_rdma
dmesg | grep -q 'RDS/IB: vmw_pvrdma0: added' || fail "rds_rdma did not add vmw_pvrdma0"
barrier rds-up 60
bad=0 n=0
for c in 64:200 8000:100 60000:40; do
    s=${c%%:*} k=${c#*:} n=$((n + 1))
    if [ "$PVRDMA_VM" = 0 ]; then
        rds-xfer recv "$PVRDMA_IP" 4000 "$k" > "/tmp/rds-$s.out" 2>&1 &
        p=$!
        # bound (it says so) before the sender starts: RDS drops messages
        # for a port nobody has bound
        for _ in $(seq 100); do
            grep -q '^rds-xfer: receiving' "/tmp/rds-$s.out" && break
            sleep 0.1
        done
        barrier "rds-recv-$s" 60
        wait "$p"; rc=$?
        cat "/tmp/rds-$s.out"
        if [ "$rc" != 0 ] || ! grep -q "received $k messages, .* data ok" "/tmp/rds-$s.out"; then
            log "rds-$s: FAILED (rc $rc)"; bad=$((bad + 1))
        else
            log "rds-$s: $k messages of $s bytes received intact"
        fi
        barrier "rds-done-$s" 120
    else
        barrier "rds-recv-$s" 60
        timeout 90 rds-xfer send "$PVRDMA_IP" "$PVRDMA_PEER_IP" 4000 "$k" "$s" ||
            { log "rds-$s: send FAILED"; bad=$((bad + 1)); }
        barrier "rds-done-$s" 120
    fi
done
dmesg | grep 'RDS/IB' | sed 's/^/  dmesg: /'
[ "$PVRDMA_VM" = 1 ] || dmesg | grep -q 'RDS/IB: .*conn connected' || fail "no RDS/IB connection in dmesg"
[ $bad = 0 ] || fail "$bad of $n RDS transfers failed"
