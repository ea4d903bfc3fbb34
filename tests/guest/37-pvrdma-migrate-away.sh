# Live migration to another host: VMs 0 and 1 have the pvrdma device and a
# vmxnet3 NIC on scripts/guest/l2switch.py and share a rendezvous
# directory, so their RC QPs take the co-resident path.  While a run goes
# on, the host migrates VM 0 "away" ("PVRDMA-MIGRATE TAG away", run-vm.sh):
# the new QEMU gets a rendezvous directory of its own, as on another host,
# where VM 1 cannot be reached co-resident.  The QP changes path by itself:
# VM 0's new QEMU takes RoCEv2 at its load, with the PSNs the co-resident
# path counted, and says so on the wire; VM 1's QP follows once VM 0's old
# QEMU said MOVED.  Between runs VM 0 comes home (a plain migration, no
# traffic) so that each run starts co-resident.
#  - ibv_rc_pingpong -c (4 KiB): VM 0 is the client;
#  - ib_write_bw (64 KiB RDMA WRITEs, 20 s): VM 1 is the client, VM 0 only
#    answers (VM 1 learns where VM 0 went from its announcement alone);
#  - rping -V (RDMA CM; SEND, RDMA READ and WRITE per ping, every ping
#    checked by the client): VM 0 is the server.
# Every run must exit 0 with its result and no "invalid data".  The host
# check (37-pvrdma-migrate-away.host) wants each away migration completed
# while its run was under way, both VMs' RC QPs on the RoCEv2 path in the
# host query right after it, and VM 1's QP having changed path from
# co-resident to RoCEv2 (trace pvrdma_qp_repath) once per run.
# vms: 2
# timeout: 700
# requires: pvrdma
# vm-args: --switch
# qemu-args: -trace pvrdma_qp_repath -trace pvrdma_state_saved -trace pvrdma_state_loaded -trace pvrdma_redo
. /usr/lib/pvrdma/tests-common.sh

[ "$PVRDMA_DEVICE" = 1 ] || fail "VM $PVRDMA_VM has no pvrdma device"
[ "$PVRDMA_RENDEZVOUS" = 1 ] || fail "VM $PVRDMA_VM has no co-resident transport"
roce_setup
ping_peer
barrier roce-up 120

# come_home TAG: VM 0 goes back to the shared rendezvous directory
come_home() {
    if [ "$PVRDMA_VM" = 0 ]; then
        echo "PVRDMA-MIGRATE $1"
        host_query "$1" 3
    fi
    barrier "$1" 120
}

export MIG_WHERE=away
it=${MIG_PP_ITERS:-20000}
o="-d $ROCE_DEV -g $ROCE_GIDX -n $it -r $PP_RXDEPTH -c -s 4096"
across_migration pingpong 300 tcp:18515 1 0 "ibv_rc_pingpong $o" "ibv_rc_pingpong $o $PVRDMA_PEER_IP"
grep -qE "^$it iters in" /tmp/pingpong.out || { cat /tmp/pingpong.out; fail "pingpong: not every iteration ran"; }
grep -E "iters in" /tmp/pingpong.out | sed 's/^/  /'
come_home home1

po="-d $ROCE_DEV -x $ROCE_GIDX -F -s 65536"
across_migration write_bw 120 tcp:18515 0 0 "ib_write_bw $po -D 20" "ib_write_bw $po -D 20 $PVRDMA_PEER_IP"
[ "$PVRDMA_VM" = 0 ] || perf_check write_bw 4 || fail "ib_write_bw: no result ($PAIR_ERR)"
come_home home2

n=${MIG_RPING:-15000}
across_migration rping 300 cm:7174 0 0 "rping -s -a $PVRDMA_IP -p 7174 -S 4096 -C $n -V" \
    "rping -c -a $PVRDMA_PEER_IP -p 7174 -S 4096 -C $n -V -v"
if [ "$PVRDMA_VM" = 1 ]; then
    got=$(grep -c '^ping data: rdma-ping-' /tmp/rping.out)
    [ "$got" = "$n" ] || { tail -5 /tmp/rping.out; fail "rping: $got validated pings, expected $n"; }
    log "rping: $got pings of 4096 bytes validated"
fi
roce_diag
