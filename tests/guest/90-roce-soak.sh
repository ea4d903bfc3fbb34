# RoCEv2 soak (scripts/soak-roce.sh; not in make check): VM 0 and VM 1 have
# the pvrdma device without the co-resident transport, VM 2 runs Linux
# soft-RoCE; they meet on scripts/guest/l2switch.py, whose loss,
# reordering and delay the soak script sets (PVRDMA_VM_ARGS="--lossy ...").
# For each cell of SOAK_CELLS ("SIZE:COUNT ...", a size may come again) and
# each pair and direction (pvrdma server and client against pvrdma and
# against rxe), one soak_run (tests-common): the verbs checker, COUNT
# messages of SIZE bytes each way, every byte compared, local ACK timeout
# 14 and retry_cnt 7, within SOAK_SECS; VM 0 logs one "soak-cell" line per
# run.  Test 91 is the reference: the same cells between two soft-RoCE VMs.
# SOAK_PEERS: the peers, "1" (pvrdma), "2" (rxe) or "1 2" (the default).
# The test passes when every cell ran (the soak script counts the results).
# vms: 3
# timeout: 7200
# requires: pvrdma
# vm-args: --nic vmxnet3,vmxnet3,virtio --no-rendezvous --switch
. /usr/lib/pvrdma/tests-common.sh

SOAK_CELLS=${SOAK_CELLS:-1024:1000 65536:1000 1048576:100}
SOAK_SECS=${SOAK_SECS:-900}
SOAK_PEERS=${SOAK_PEERS:-1 2}

[ "$PVRDMA_RENDEZVOUS" = 0 ] || fail "the co-resident transport is on (run-vm.sh --no-rendezvous)"
roce_three_vms

cell=0
for sc in $SOAK_CELLS; do
    cell=$((cell + 1))
    for k in $SOAK_PEERS; do
        with_vm "$k" barrier "soak-$cell-$k" $((SOAK_SECS * 4 + 60))
        _peer=$([ "$k" = 2 ] && echo rxe || echo pvrdma)
        soak_run "$k" "${sc%%:*}" "${sc#*:}" fwd pvrdma "$_peer"
        soak_run "$k" "${sc%%:*}" "${sc#*:}" rev pvrdma "$_peer"
    done
done
with_vm 1 barrier soak-end $((SOAK_SECS * 4 + 60))
with_vm 2 barrier soak-end $((SOAK_SECS * 4 + 60))
roce_diag
log "soak done"
