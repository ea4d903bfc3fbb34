# rping between two VMs over vmw_pvrdma0 (RDMA CM, RC SEND + RDMA READ +
# RDMA WRITE per ping) with data validation (-V): the client checks every
# ping's buffer after the server read it and wrote it back.  Several sizes
# (23 bytes, the least rping takes, to 65535, the most) and counts; the
# client (-v) must print exactly COUNT pings.
# vms: 2
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
roce_v2_gid vmw_pvrdma0 >/dev/null
barrier pvrdma-up 60
bad=0 n=0
for c in 23:50 4096:20 65535:10; do
    s=${c%%:*} k=${c#*:}
    n=$((n + 1))
    vm_pair "rping-$s" 120 cm:7174 \
        "rping -s -a $PVRDMA_IP -p 7174 -S $s -C $k -V" \
        "rping -c -a $PVRDMA_PEER_IP -p 7174 -S $s -C $k -V -v" || { bad=$((bad + 1)); continue; }
    if [ "$PVRDMA_VM" = 1 ]; then
        # "ping data: rdma-ping-I: <pattern>" once per validated ping
        got=$(grep -c '^ping data: rdma-ping-' "/tmp/rping-$s.out")
        if [ "$got" != "$k" ]; then
            head -c 2000 "/tmp/rping-$s.out"
            PAIR_ERR=${PAIR_ERR:-"rping-$s: client printed $got pings, expected $k"}
            bad=$((bad + 1)); continue
        fi
        ! grep -q 'mismatch' "/tmp/rping-$s.out" || { PAIR_ERR=${PAIR_ERR:-"rping-$s: data mismatch"}; bad=$((bad + 1)); continue; }
        log "rping-$s: $got pings of $s bytes validated"
    fi
done
[ $bad = 0 ] || fail "$bad of $n rping runs failed (first: $PAIR_ERR)"
