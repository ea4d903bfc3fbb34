# Live migration between hosts, both ways: VMs 0 and 1 have the pvrdma
# device and a vmxnet3 NIC on scripts/guest/l2switch.py and share a
# rendezvous directory.  While a run goes on, the host migrates VM 0
# "away" ("PVRDMA-MIGRATE TAG away", run-vm.sh: the new QEMU gets a
# rendezvous directory of its own, as on another host) or home again (a
# plain "PVRDMA-MIGRATE TAG": the shared directory).  A QP changes path by
# itself either way.  Away: VM 0's new QEMU takes RoCEv2 at its load, with
# the PSNs the co-resident path counted, and says so on the wire; VM 1's QP
# follows once VM 0's old QEMU said MOVED.  Home: the QP goes on over
# RoCEv2 (its state moved with it) until both ends are idle on it, then one
# offers the other to move to the co-resident path (OFFER/ANSWER) with the
# PSNs the wire left.
#  - ibv_rc_pingpong -c (4 KiB), VM 0 the client, starts co-resident and
#    VM 0 moves away;
#  - rping -V (RDMA CM; SEND, RDMA READ and WRITE per ping, every ping
#    checked by the client), VM 0 the server, starts over RoCEv2 and VM 0
#    comes home;
#  - ib_write_bw (64 KiB RDMA WRITEs, 20 s), VM 1 the client, starts
#    co-resident and VM 0 moves away (VM 0 only answers: VM 1 learns where
#    VM 0 went from its announcement alone).
# Every run must exit 0 with its result and no "invalid data".  The host
# check (37-pvrdma-migrate-away.host) wants each migration completed while
# its run was under way, both VMs' RC QPs on RoCEv2 in the host query
# right after each move away, and the path changes in both QEMUs' traces
# (pvrdma_qp_repath): co-resident to RoCEv2 for each move away, RoCEv2 to
# co-resident for the move home.
# Last, the verbs data checker (pvrdma-verbs-check: every byte of SEND,
# WRITE, READ and atomics in both directions, time mode) runs across one
# more migration of the same VM (home: its QPs stay on RoCEv2 while it runs); it is the data check (the pingpong's -c
# looks at one byte per page).
# vms: 2
# timeout: 700
# requires: pvrdma
# vm-args: --switch
# qemu-args: -trace pvrdma_qp_repath -trace pvrdma_qmp_event -trace pvrdma_qp_offer -trace pvrdma_cr_offer -trace pvrdma_state_saved -trace pvrdma_state_loaded -trace pvrdma_redo
. /usr/lib/pvrdma/tests-common.sh

[ "$PVRDMA_DEVICE" = 1 ] || fail "VM $PVRDMA_VM has no pvrdma device"
[ "$PVRDMA_RENDEZVOUS" = 1 ] || fail "VM $PVRDMA_VM has no co-resident transport"
roce_setup
ping_peer
barrier roce-up 120

export MIG_WHERE=away
it=${MIG_PP_ITERS:-20000}
o="-d $ROCE_DEV -g $ROCE_GIDX -n $it -r $PP_RXDEPTH -c -s 4096"
across_migration pingpong 300 tcp:18515 1 0 "ibv_rc_pingpong $o" "ibv_rc_pingpong $o $PVRDMA_PEER_IP"
grep -qE "^$it iters in" /tmp/pingpong.out || { cat /tmp/pingpong.out; fail "pingpong: not every iteration ran"; }
grep -E "iters in" /tmp/pingpong.out | sed 's/^/  /'

# VM 0 is away: this run starts over RoCEv2, and VM 0 comes home during it
MIG_WHERE=
n=${MIG_RPING:-15000}
across_migration rping 300 cm:7174 0 0 "rping -s -a $PVRDMA_IP -p 7174 -S 4096 -C $n -V" \
    "rping -c -a $PVRDMA_PEER_IP -p 7174 -S 4096 -C $n -V -v"
rping_checked "$n"

MIG_WHERE=away
po="-d $ROCE_DEV -x $ROCE_GIDX -F -s 65536"
across_migration write_bw 120 tcp:18515 0 0 "ib_write_bw $po -D 20" "ib_write_bw $po -D 20 $PVRDMA_PEER_IP"
[ "$PVRDMA_VM" = 0 ] || perf_check write_bw 4 || fail "ib_write_bw: no result ($PAIR_ERR)"
# VM 0 comes home with the checker running (its QPs stay on RoCEv2 while
# it runs: a connection that never pauses does not change path)
MIG_WHERE=
vc="pvrdma-verbs-check -p $VC_PORT -D ${MIG_VC_SECS:-30} -S 65536 -T 60"
across_migration verbs 300 "cm:$VC_PORT" 1 0 "$vc server" "$vc client $PVRDMA_PEER_IP"
_vc_judge verbs 100 || fail "$PAIR_ERR"
roce_diag
