# RoCEv2 soak, the reference (scripts/soak-roce.sh; not in make check): the
# cells of test 90 between two VMs running Linux soft-RoCE (rxe0 on a
# virtio NIC, no pvrdma device), on the same switch with the same loss,
# reordering and delay (PVRDMA_VM_ARGS) and the same host load: what Linux
# itself does under the conditions the pvrdma device is soaked in.  For
# each cell of SOAK_CELLS ("SIZE:COUNT ...") one soak_run (tests-common)
# with VM 0 as server and one as client; VM 0 logs one "soak-cell
# rxe-server/rxe ..." or "rxe-client/rxe ..." line per run.  The test
# passes when every cell ran (the soak script counts the results).
# vms: 2
# timeout: 7200
# vm-args: --nic virtio --switch
. /usr/lib/pvrdma/tests-common.sh

SOAK_CELLS=${SOAK_CELLS:-1024:1000 65536:1000 1048576:100}
SOAK_SECS=${SOAK_SECS:-900}

[ "$PVRDMA_DEVICE" = 0 ] || fail "VM $PVRDMA_VM has the pvrdma device (run-vm.sh --nic virtio)"
roce_setup
ping_peer
barrier rxe-up 120

cell=0
for sc in $SOAK_CELLS; do
    cell=$((cell + 1))
    barrier "soak-$cell" $((SOAK_SECS * 2 + 60))
    soak_run 1 "${sc%%:*}" "${sc#*:}" fwd rxe rxe
    soak_run 1 "${sc%%:*}" "${sc#*:}" rev rxe rxe
done
barrier soak-end $((SOAK_SECS * 2 + 60))
roce_diag
log "soak done"
