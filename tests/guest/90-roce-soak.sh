# RoCEv2 soak (scripts/soak-roce.sh; not in make check): VM 0 and VM 1 have
# the pvrdma device without the co-resident transport, VM 2 runs Linux
# soft-RoCE; they meet on scripts/guest/l2switch.py, whose loss,
# reordering and delay the soak script sets (PVRDMA_VM_ARGS="--lossy ...").
# For each cell of SOAK_CELLS ("SIZE:COUNT ...", a size may come again) and
# each pair and direction (pvrdma server and client against pvrdma and
# against rxe), one run of the verbs checker (pvrdma-verbs-check: every
# byte of SEND, SEND with immediate, WRITE, WRITE with immediate, READ and,
# between pvrdma devices, atomics, both directions at once, 8 in flight)
# of COUNT messages of SIZE bytes per direction, with the applications'
# usual local ACK timeout 14 (about 67 ms) and retry_cnt 7, under a time
# limit of SOAK_SECS.  (Against rxe no atomics: rxe 6.1 fails its own
# atomics under loss, rxe against rxe too.)  Each run prints a line
#   soak-cell PAIR SIZE COUNT RESULT SECS
# RESULT: ok, hang (no completion for 60 s, or the limit killed it),
# retry (a completion with RETRY_EXC_ERR), data (the checker found a byte,
# length, immediate or atomic value that differs), error (anything else).
# The test passes when every cell ran (the soak script counts the results).
# vms: 3
# timeout: 7200
# requires: pvrdma
# vm-args: --nic vmxnet3,vmxnet3,virtio --no-rendezvous --switch
. /usr/lib/pvrdma/tests-common.sh

SOAK_CELLS=${SOAK_CELLS:-1024:1000 65536:1000 1048576:100}
SOAK_SECS=${SOAK_SECS:-900}

[ "$PVRDMA_RENDEZVOUS" = 0 ] || fail "the co-resident transport is on (run-vm.sh --no-rendezvous)"
roce_three_vms

# soak_run K SIZE COUNT DIR: the checker between VM 0 and VM K; the result
soak_run() {
    _k=$1 _s=$2 _c=$3 _d=$4
    _peer=$([ "$_k" = 2 ] && echo rxe || echo pvrdma)
    _pair=$([ "$_d" = rev ] && echo "pvrdma-client/$_peer" || echo "pvrdma-server/$_peer")
    _ops=
    [ "$_k" != 2 ] || _ops="-o send,send_imm,write,write_imm,read"
    _t0=$(cut -d' ' -f1 /proc/uptime)
    # shellcheck disable=SC2086
    with_vm "$_k" vc_2vm soak "$SOAK_SECS" "$_c" "$_d" -t rc -s "$_s" -n "$_c" \
        -q 8 -g 2 -T 60 --ack-timeout 14 $_ops > /tmp/soak.log 2>&1
    _r=$?
    _secs=$(awk -v a="$_t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "%.1f", b - a}')
    if [ "$PVRDMA_VM" = 0 ]; then
        if [ $_r = 0 ]; then
            _res=ok
        elif grep -q "status=12 " /tmp/soak.out /tmp/soak.log; then
            _res=retry
        elif grep -q "MISMATCH" /tmp/soak.out /tmp/soak.log; then
            _res=data
        elif grep -qE "no completion for|rc (server )?(124|143)[;)]" /tmp/soak.out /tmp/soak.log; then
            _res=hang
        else
            _res=error
        fi
        log "soak-cell $_pair $_s $_c $_res $_secs"
        [ "$_res" = ok ] || cat /tmp/soak.log /tmp/soak.out | sed 's/^/  | /' | tail -n 20
    elif [ "$PVRDMA_VM" = "$_k" ] && [ $_r != 0 ]; then
        # the peer's side of a cell that failed here
        log "soak-peer $_pair $_s $_c rc $_r"
        cat /tmp/soak.log /tmp/soak.out | sed 's/^/  | /' | tail -n 20
    fi
    return 0
}

cell=0
for sc in $SOAK_CELLS; do
    cell=$((cell + 1))
    for k in 1 2; do
        with_vm "$k" barrier "soak-$cell-$k" $((SOAK_SECS * 4 + 60))
        soak_run "$k" "${sc%%:*}" "${sc#*:}" fwd
        soak_run "$k" "${sc%%:*}" "${sc#*:}" rev
    done
done
with_vm 1 barrier soak-end $((SOAK_SECS * 4 + 60))
with_vm 2 barrier soak-end $((SOAK_SECS * 4 + 60))
roce_diag
log "soak done"
