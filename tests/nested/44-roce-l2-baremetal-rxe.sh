#!/bin/sh
# L1 as a "bare-metal" host running soft-RoCE, an L2 guest with the pvrdma
# device speaking RoCEv2 on its vmxnet3 (roce=on; no ibdev):
# the user doc's "VM to bare-metal soft-RoCE" example (docs/system/devices/
# pvrdma.rst, "RoCEv2"), with the rig's names:
#   L1 ("the host"): a new bridge br1, 10.1.0.1/24, with tap2 for the guest;
#                    modprobe rdma_rxe; rdma link add rxe1 type rxe netdev br1
#                    (br0 and rxe0 are the rig's own, untouched here)
#   L2 ("the VM"):   -netdev tap,ifname=tap2 + vmxnet3 + -device pvrdma,addr=4.1;
#                    10.1.0.2/24 on its vmxnet3
# Then, each a step (the name says the pvrdma guest's role):
#   ibv_rc_pingpong -c (4 KiB, 64 KiB) with L1 serving and L2 connecting,
#   and 4 KiB the other way, each with -g set to that side's RoCE v2 GID
#   index of its address (the doc's -g 1: logged whether it is 1);
#   "invalid data" fails a pingpong (-c: one byte per page);
#   rping -V -C 10 as the doc has it (server 'rping -s -V -C 10' in L1 on
#   the wildcard address, client 'rping -c -a 10.1.0.1 -V -C 10' in L2,
#   which must print 10 pings), and 10 x 4 KiB with L2 serving; the data
#   check, the verbs checker (every byte of SEND, WRITE, READ and atomics
#   both ways at once, RC with L2 connecting, UD with L2 serving).
#   Every client and server runs under a timeout.
# That the traffic was RoCEv2 between the device and rxe1: the device's
# x-roce-* counters (QMP qom-get from L1) and rxe1's hw counters both grew.
# timeout: 900
. /usr/lib/pvrdma/tests-common.sh

ip() { /usr/bin/ip "$@"; }
BR=br1 TAP=tap2 RXE=rxe1 HOST=10.1.0.1 GUEST=10.1.0.2 QMP_PORT=4445
export PVRDMA_VM=0 BARRIER_PORT=18600
# tests-common.sh's helpers, for this host's side
# shellcheck disable=SC2034  # read by tests-common.sh
PVRDMA_IP=$HOST PVRDMA_PEER_IP=$GUEST PVRDMA_NETIF=$BR
# shellcheck disable=SC2034
ROCE_DEV=$RXE

# --- the "host": a bridge with an address, the guest's tap, soft-RoCE on it
run ip link add $BR type bridge stp_state 0 forward_delay 0
run ip addr add $HOST/24 dev $BR
run ip tuntap add dev $TAP mode tap
run ip link set $TAP master $BR
run ip link set $TAP up
run ip link set $BR up
run modprobe rdma_rxe
run rdma link add $RXE type rxe netdev $BR

# --- the VM: tap on that bridge, vmxnet3 + pvrdma (roce=on)
log "booting L2 on $TAP ($GUEST/24)"
/usr/lib/pvrdma/l2.sh -n 2 --ip $GUEST/24 -e PVRDMA_VM=1 -e PVRDMA_PEER_IP=$HOST \
    -e PVRDMA_L1_IP=$HOST -e PP_ITERS=50 --mem 512M \
    --device pvrdma,addr=4.1,id=rdma0,roce=on \
    --qemu-args "-qmp tcp:127.0.0.1:$QMP_PORT,server=on,wait=off -trace pvrdma_roce_added -trace pvrdma_roce_not_added" \
    /usr/lib/pvrdma/nested/l2-44-guest.sh > /tmp/l2.out 2>&1 &
l2=$!

# qmp_get PROP...: "PROP VALUE" lines of the L2 device's properties (QMP
# qom-get on /machine/peripheral/rdma0), "PROP ?" for one that failed
qmp_get() {
    {
        echo '{"execute":"qmp_capabilities"}'
        for _p in "$@"; do
            echo "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/peripheral/rdma0\",\"property\":\"$_p\"}}"
        done
        sleep 2
    } | timeout 15 nc -w 3 127.0.0.1 $QMP_PORT 2>/dev/null | tr -d '\r' |
        grep -E '^\{"return": [0-9]+\}' | sed 's/[^0-9]//g' > /tmp/qmp.out
    _i=1
    for _p in "$@"; do
        echo "$_p $(sed -n "${_i}p" /tmp/qmp.out | grep . || echo '?')"
        _i=$((_i + 1))
    done
}
rxe_count() { cat "/sys/class/infiniband/$RXE/ports/1/hw_counters/$1" 2>/dev/null || echo 0; }

barrier l2-up 700 || fail "L2 guest did not come up"
wait_dev $RXE 20 || fail "$RXE not ACTIVE"
ROCE_GIDX=$(wait_gid $RXE $HOST "RoCE v2" 10) || { dump_gids $RXE; fail "$RXE: no RoCE v2 GID for $HOST"; }
dump_gids $RXE
log "$RXE on $BR: RoCE v2 GID index of $HOST is $ROCE_GIDX$([ "$ROCE_GIDX" = 1 ] && echo ' (as the doc says)' || echo ', NOT 1 as in the doc')"
ibv_devinfo -v -d $RXE | grep -E 'GID\[|active_mtu|state' | sed 's/^/  /'
ping_peer
log "QEMU of L2: $(grep -h 'pvrdma_roce' /tmp/l2/l2-44-guest-tap2/qemu.stderr 2>/dev/null | tail -n 2 | tr '\n' ' ')"
qmp_get x-roce-tx-pkts x-roce-rx-pkts > /tmp/qmp0
rx0=$(rxe_count rcvd_pkts) tx0=$(rxe_count sent_pkts)
barrier roce-up 120

step "rc-4096/pvrdma-client" pp_2vm rc 4096 fwd 180
step "rc-65536/pvrdma-client" pp_2vm rc 65536 fwd 300
step "rc-4096/pvrdma-server" pp_2vm rc 4096 rev 180
step "rping-doc/pvrdma-client" vm_pair rping-doc 180 cm:7174 "rping -s -V -C 10" ""
step "rping-4096/pvrdma-server" rping_2vm 4096 10 rev 180
# the data check: the verbs checker (every byte, every op, both ways)
step "verbs-rc/pvrdma-client" vc_2vm vc-rc 300 200 fwd -t rc -n 200 -S 65536 -T 60
step "verbs-ud/pvrdma-server" vc_2vm vc-ud 180 200 rev -t ud -n 200 -T 60

# --- what went over the wire
qmp_get x-roce-tx-pkts x-roce-rx-pkts x-roce-tx-bytes x-roce-rx-bytes \
    x-roce-retransmits x-roce-timeouts x-roce-rnr-naks x-roce-seq-naks \
    x-roce-dups x-roce-drops > /tmp/qmp1
barrier counters-read 120
rx=$(( $(rxe_count rcvd_pkts) - rx0 )) tx=$(( $(rxe_count sent_pkts) - tx0 ))
log "$RXE: $rx RoCEv2 packets received, $tx sent during the steps"
log "L2 device: $(tr '\n' ' ' < /tmp/qmp1)"
dtx=$(( $(awk '$1 == "x-roce-tx-pkts" {print $2 + 0}' /tmp/qmp1) - $(awk '$1 == "x-roce-tx-pkts" {print $2 + 0}' /tmp/qmp0) ))
drx=$(( $(awk '$1 == "x-roce-rx-pkts" {print $2 + 0}' /tmp/qmp1) - $(awk '$1 == "x-roce-rx-pkts" {print $2 + 0}' /tmp/qmp0) ))
log "L2 device: $dtx RoCEv2 packets sent, $drx received during the steps"
# 50 iterations of 64 KiB each way alone are 3200 packets of 1 KiB each way
check_wire() {
    if [ "$rx" -lt 3200 ] || [ "$tx" -lt 3200 ]; then
        fail "$RXE received $rx and sent $tx packets, expected at least 3200 each way"
    fi
    if [ "$dtx" -lt 3200 ] || [ "$drx" -lt 3200 ]; then
        fail "the device sent $dtx and received $drx RoCEv2 packets (x-roce-*), expected at least 3200 each way"
    fi
}
step wire check_wire
step kernel-clean kernel_clean
roce_diag

wait $l2; rc=$?
cat /tmp/l2.out
if [ "$rc" != 0 ]; then
    echo "--- L2 QEMU stderr (last 40 lines) ---"
    tail -n 40 /tmp/l2/l2-44-guest-tap2/qemu.stderr 2>/dev/null || ls -R /tmp/l2
fi
[ "$rc" = 0 ] || fail "L2 guest side failed (rc $rc): $(grep -m1 'FAIL' /tmp/l2.out)"
steps_done
