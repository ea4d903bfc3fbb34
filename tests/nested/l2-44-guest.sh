#!/bin/sh
# L2 side of 44-roce-l2-baremetal-rxe.sh: the VM of the doc's "VM to
# bare-metal soft-RoCE" example, vmw_pvrdma0 on its vmxnet3 (10.1.0.2/24)
# against rxe1 on L1's br1 (10.1.0.1).  Same steps in the same order as L1.
. /usr/lib/pvrdma/tests-common.sh

[ "$PVRDMA_IP" = 10.1.0.2 ] || fail "PVRDMA_IP is $PVRDMA_IP, expected 10.1.0.2 (l2.sh --ip)"
ROCE_DEV=vmw_pvrdma0
wait_dev $ROCE_DEV 30 || fail "$ROCE_DEV not registered/ACTIVE"
ROCE_GIDX=$(wait_gid $ROCE_DEV "$PVRDMA_IP" "RoCE v2" 20) || { dump_gids $ROCE_DEV; fail "no RoCE v2 GID for $PVRDMA_IP"; }
dump_gids $ROCE_DEV
log "$ROCE_DEV on $PVRDMA_NETIF: RoCE v2 GID index of $PVRDMA_IP is $ROCE_GIDX$([ "$ROCE_GIDX" = 1 ] && echo ' (as the doc says)' || echo ', NOT 1 as in the doc')"
barrier l2-up 120
ping_peer
barrier roce-up 120

# the doc's rping client; every ping checked (-V) and printed (-v)
rping_doc() {
    vm_pair rping-doc 180 cm:7174 "" "rping -c -a $PVRDMA_PEER_IP -V -C 10 -v" || return 1
    _n=$(grep -c '^ping data: ' /tmp/rping-doc.out)
    if [ "$_n" != 10 ]; then
        cat /tmp/rping-doc.out
        PAIR_ERR="rping-doc: the client printed $_n of 10 pings"
        return 1
    fi
    log "rping-doc: 10 pings validated"
}

step "rc-4096/pvrdma-client" pp_2vm rc 4096 fwd 180
step "rc-65536/pvrdma-client" pp_2vm rc 65536 fwd 300
step "rc-4096/pvrdma-server" pp_2vm rc 4096 rev 180
step "rping-doc/pvrdma-client" rping_doc
step "rping-4096/pvrdma-server" rping_2vm 4096 10 rev 180
# the data check: the verbs checker (every byte, every op, both ways)
step "verbs-rc/pvrdma-client" vc_2vm vc-rc 300 200 fwd -t rc -n 200 -S 65536 -T 60
step "verbs-ud/pvrdma-server" vc_2vm vc-ud 180 200 rev -t ud -n 200 -T 60

barrier counters-read 120
roce_diag
step kernel-clean kernel_clean
steps_done
