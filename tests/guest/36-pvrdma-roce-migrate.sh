# Live migration with RoCEv2 traffic: VM 0 has vmxnet3 + the pvrdma device,
# VM 1 virtio-net and Linux soft-RoCE (rxe0), both on scripts/guest/
# l2switch.py.  While a run goes on between them, the host migrates VM 0
# to a new QEMU ("PVRDMA-MIGRATE TAG"; run-vm.sh gives the new QEMU its
# own socket and the switch follows it from its first frame).  For the
# wire the migration is a pause: the device gives back what it had in
# flight and drops what arrives until it runs again in the new QEMU with
# the same QPs, PSNs and keys, and retransmission (its own and rxe's)
# covers the rest.
#  - ibv_rc_pingpong -c (4 KiB): VM 0 is the client;
#  - ib_write_bw (64 KiB RDMA WRITEs, 20 s): VM 0 is the client;
#  - rping -V (RDMA CM; SEND, RDMA READ and WRITE per ping, every ping
#    checked by the client): VM 0 is the server.
# Every run must exit 0 with its result and no "invalid data".  The host
# check (36-pvrdma-roce-migrate.host) wants each migration completed while
# its run was under way and the QPs on the RoCEv2 path in the new QEMU.
# Last, the verbs data checker (pvrdma-verbs-check: every byte of SEND,
# WRITE, READ and atomics in both directions, time mode) runs across one
# more migration of the same VM; it is the data check (the pingpong's -c
# looks at one byte per page).
# vms: 2
# timeout: 700
# requires: pvrdma
# vm-args: --nic vmxnet3,virtio --switch
# qemu-args: -trace pvrdma_state_saved -trace pvrdma_state_loaded -trace pvrdma_redo -trace pvrdma_roce_req
. /usr/lib/pvrdma/tests-common.sh

want=$([ "$PVRDMA_VM" = 0 ] && echo 1 || echo 0)
[ "$PVRDMA_DEVICE" = "$want" ] ||
    fail "VM $PVRDMA_VM has PVRDMA_DEVICE=$PVRDMA_DEVICE, expected $want (run-vm.sh --nic vmxnet3,virtio)"
roce_setup
ping_peer
barrier roce-up 120

it=${MIG_PP_ITERS:-20000}
o="-d $ROCE_DEV -g $ROCE_GIDX -n $it -r $PP_RXDEPTH -c -s 4096"
across_migration pingpong 300 tcp:18515 1 0 "ibv_rc_pingpong $o" "ibv_rc_pingpong $o $PVRDMA_PEER_IP"
grep -qE "^$it iters in" /tmp/pingpong.out || { cat /tmp/pingpong.out; fail "pingpong: not every iteration ran"; }
grep -E "iters in" /tmp/pingpong.out | sed 's/^/  /'

po="-d $ROCE_DEV -x $ROCE_GIDX -F -s 65536"
across_migration write_bw 120 tcp:18515 1 0 "ib_write_bw $po -D 20" "ib_write_bw $po -D 20 $PVRDMA_PEER_IP"
[ "$PVRDMA_VM" = 1 ] || perf_check write_bw 4 || fail "ib_write_bw: no result ($PAIR_ERR)"

n=${MIG_RPING:-3000}
across_migration rping 300 cm:7174 0 0 "rping -s -a $PVRDMA_IP -p 7174 -S 4096 -C $n -V" \
    "rping -c -a $PVRDMA_PEER_IP -p 7174 -S 4096 -C $n -V -v"
rping_checked "$n"
vc="pvrdma-verbs-check -p $VC_PORT -D ${MIG_VC_SECS:-30} -S 65536 -T 60"
across_migration verbs 300 "cm:$VC_PORT" 1 0 "$vc server" "$vc client $PVRDMA_PEER_IP"
_vc_judge verbs 100 || fail "$PAIR_ERR"
roce_diag
