# Live migration of one of two co-resident VMs with RDMA traffic between
# them (the co-resident transport): the host migrates the VM that asks
# ("PVRDMA-MIGRATE TAG" on its console, run-vm.sh) to a new QEMU on the
# same host while the run goes on.
#  - ib_write_bw (64 KiB RDMA WRITEs, 30 s: the host asks for the QPs
#    once the migration completed, which took 16.5 s on a loaded host,
#    and the run must still be on): VM 1, the client, moves;
#  - rping -V (RDMA CM; SEND, RDMA READ and WRITE per ping, every ping's
#    data checked by the client): VM 0, the server, moves;
#  - ibv_rc_pingpong -c (4 KiB): VM 1 moves.
# The peer sees a pause, not an error: every run must exit 0 with its
# result (write_bw a bandwidth line, rping exactly COUNT validated pings,
# the pingpong every iteration and no "invalid data").  The host check
# (19-pvrdma-2vm-migrate.host) wants each migration completed while its run
# was under way, the staying VM told that its peer moved, and the QPs on
# the co-resident path in the new QEMU.
# Last, the verbs data checker (pvrdma-verbs-check: every byte of SEND,
# WRITE, READ and atomics in both directions, time mode) runs across one
# more migration of the same VM; it is the data check (the pingpong's -c
# looks at one byte per page).
# vms: 2
# timeout: 600
# requires: pvrdma
# qemu-args: -trace pvrdma_cr_pause -trace pvrdma_cr_quiesce -trace pvrdma_state_saved -trace pvrdma_state_loaded -trace pvrdma_redo
. /usr/lib/pvrdma/tests-common.sh

D=vmw_pvrdma0
wait_dev $D 15 || fail "$D not registered/ACTIVE"
gidx=$(roce_v2_gid $D)
barrier pvrdma-up 60

po="-d $D -x $gidx -F -s 65536"
across_migration write_bw 120 tcp:18515 0 1 "ib_write_bw $po -D 30" "ib_write_bw $po -D 30 $PVRDMA_PEER_IP"
[ "$PVRDMA_VM" = 0 ] || perf_check write_bw 4 || fail "ib_write_bw: no result ($PAIR_ERR)"

n=${MIG_RPING:-8000}
across_migration rping 200 cm:7174 0 0 "rping -s -a $PVRDMA_IP -p 7174 -S 4096 -C $n -V" \
    "rping -c -a $PVRDMA_PEER_IP -p 7174 -S 4096 -C $n -V -v"
rping_checked "$n"

o="-d $D -g $gidx -n ${MIG_PP_ITERS:-20000} -r $PP_RXDEPTH -c -s 4096"
across_migration pingpong 200 tcp:18515 0 1 "ibv_rc_pingpong $o" "ibv_rc_pingpong $o $PVRDMA_PEER_IP"
grep -qE "^${MIG_PP_ITERS:-20000} iters in" /tmp/pingpong.out || { cat /tmp/pingpong.out; fail "pingpong: not every iteration ran"; }
grep -E "iters in" /tmp/pingpong.out | sed 's/^/  /'

vc="pvrdma-verbs-check -p $VC_PORT -D ${MIG_VC_SECS:-30} -S 65536 -T 60"
across_migration verbs 200 "cm:$VC_PORT" 0 1 "$vc server" "$vc client $PVRDMA_PEER_IP"
_vc_judge verbs 100 || fail "$PAIR_ERR"
