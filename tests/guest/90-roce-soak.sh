# RoCEv2 soak (scripts/soak-roce.sh; not in make check): VM 0 and VM 1 have
# the pvrdma device without the co-resident transport, VM 2 runs Linux
# soft-RoCE; they meet on scripts/guest/l2switch.py, whose loss,
# reordering and delay the soak script sets (PVRDMA_VM_ARGS="--lossy ...").
# For each size in SOAK_SIZES (a size may come again) and each pair and direction (pvrdma server
# and client against pvrdma and against rxe), one ibv_rc_pingpong of
# SOAK_ITERS exchanges with the applications' usual timeout 14 and
# retry_cnt 7, under a time limit of SOAK_SECS.  Each run prints a line
#   soak-cell PAIR SIZE ITERS RESULT SECS
# RESULT: ok, hang (the limit killed both sides without an error
# completion), retry (retry counter exceeded), invalid (the pingpong's -c,
# which looks at one byte per page: not a data check), error (anything
# else).  The test passes when every cell ran (the soak
# script counts the results).
# vms: 3
# timeout: 7200
# requires: pvrdma
# vm-args: --nic vmxnet3,vmxnet3,virtio --no-rendezvous --switch
. /usr/lib/pvrdma/tests-common.sh

SOAK_SIZES=${SOAK_SIZES:-1024 65536 1048576}
SOAK_ITERS=${SOAK_ITERS:-100}
SOAK_SECS=${SOAK_SECS:-300}

[ "$PVRDMA_RENDEZVOUS" = 0 ] || fail "the co-resident transport is on (run-vm.sh --no-rendezvous)"
roce_three_vms

# soak_run K SIZE DIR: pingpong between VM 0 and VM K; the result line
soak_run() {
    _k=$1 _s=$2 _d=$3
    _peer=$([ "$_k" = 2 ] && echo rxe || echo pvrdma)
    _pair=$([ "$_d" = rev ] && echo "pvrdma-client/$_peer" || echo "pvrdma-server/$_peer")
    _t0=$(cut -d' ' -f1 /proc/uptime)
    PP_ITERS=$SOAK_ITERS with_vm "$_k" pp_2vm rc "$_s" "$_d" "$SOAK_SECS" > /tmp/soak.out 2>&1
    _r=$?
    _secs=$(awk -v a="$_t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "%.1f", b - a}')
    if [ "$PVRDMA_VM" = 0 ]; then
        if [ $_r = 0 ]; then
            _res=ok
        elif grep -q "retry counter exceeded\|retry exc" /tmp/soak.out; then
            _res=retry
        elif grep -q "invalid data" /tmp/soak.out; then
            _res=invalid
        elif grep -qE "rc (server )?(124|143)[;)]" /tmp/soak.out; then
            _res=hang
        else
            _res=error
        fi
        log "soak-cell $_pair $_s $SOAK_ITERS $_res $_secs"
        [ "$_res" = ok ] || sed 's/^/  | /' /tmp/soak.out | tail -n 20
    fi
    return 0
}

cell=0
for size in $SOAK_SIZES; do
    cell=$((cell + 1))
    for k in 1 2; do
        with_vm "$k" barrier "soak-$cell-$k" $((SOAK_SECS * 4 + 60))
        soak_run "$k" "$size" fwd
        soak_run "$k" "$size" rev
    done
done
with_vm 1 barrier soak-end $((SOAK_SECS * 4 + 60))
with_vm 2 barrier soak-end $((SOAK_SECS * 4 + 60))
roce_diag
log "soak done"
