# Path choice per QP: VM 0 and VM 1 have the pvrdma device and share a
# rendezvous directory (co-resident), VM 2 runs Linux soft-RoCE (rxe0 on
# virtio-net); all three on scripts/guest/l2switch.py.  VM 0 serves two RC
# pingpongs at once, one to VM 1 and one to VM 2 (ibv_rc_pingpong -c,
# 4 KiB, PATH_ITERS iterations, "invalid data" fails), and while both QPs
# are in RTS it has the host record its device's QPs over QMP
# ("PVRDMA-QMP paths": vm0/qmp-paths.txt).  33-pvrdma-path-choice.host then
# checks that one RC QP took the co-resident path to 10.0.0.2 and another
# the RoCEv2 path to 10.0.0.3 (each QP takes the first transport that
# reaches its destination GID).  Steps before it: a pingpong to each peer
# on its own (rc 4 KiB).  Every client and server runs under a timeout.
# vms: 3
# timeout: 600
# requires: pvrdma
# vm-args: --nic vmxnet3,vmxnet3,virtio
. /usr/lib/pvrdma/tests-common.sh

# iterations of the concurrent pingpongs: long enough for both QPs to be
# connected at once (the co-resident one is faster: it gets more)
PATH_ITERS=${PATH_ITERS:-1000}
PATH_ITERS_CR=${PATH_ITERS_CR:-$((PATH_ITERS * 4))}

want=$([ "$PVRDMA_VM" = 2 ] && echo 0 || echo 1)
[ "$PVRDMA_RENDEZVOUS" = "$want" ] ||
    fail "VM $PVRDMA_VM has PVRDMA_RENDEZVOUS=$PVRDMA_RENDEZVOUS, expected $want"
roce_three_vms

step rc-4096/vm0-vm1-coresident with_vm 1 pp_2vm rc 4096
# VM 2 waits here for its turn while VM 0 works with VM 1
with_vm 2 barrier turn-vm2 300
step rc-4096/vm0-vm2-roce with_vm 2 pp_2vm rc 4096
# the data check on each path: the verbs checker, every byte, every op
with_vm 1 barrier turn-vc-vm1 300
step verbs/vm0-vm1-coresident with_vm 1 vc_2vm vc-cr 240 200 fwd -t rc -n 200 -S 65536
with_vm 2 barrier turn-vc-vm2 300
step verbs/vm0-vm2-roce with_vm 2 vc_2vm vc-roce 240 200 fwd -t rc -n 200 -S 65536

# pp_check NAME ITERS: the pingpong's output in /tmp/NAME.out is complete
# (both "bytes in" and "iters in" lines) and has no "invalid data"
pp_check() {
    if _e=$(pp_invalid "/tmp/$1.out"); then
        cat "/tmp/$1.out"; fail "$1: $_e"
    fi
    grep -qE "^$((4096 * 2 * $2)) bytes in " "/tmp/$1.out" &&
        grep -qE "^$2 iters in .* usec/iter" "/tmp/$1.out" ||
        { cat "/tmp/$1.out"; fail "$1: no '$((4096 * 2 * $2)) bytes in' / '$2 iters' line"; }
    log "$1: ok: $(grep -E ' bytes in ' "/tmp/$1.out")"
}

# both_paths: VM 0 serves VM 1 on TCP port 18515 and VM 2 on 18516 at once
both_paths() {
    _o="-d $ROCE_DEV -g $ROCE_GIDX -r $PP_RXDEPTH -c -s 4096"
    if [ "$PVRDMA_VM" = 0 ]; then
        timeout 240 ibv_rc_pingpong $_o -n "$PATH_ITERS_CR" -p 18515 > /tmp/cr.out 2>&1 &
        _p1=$!
        timeout 240 ibv_rc_pingpong $_o -n "$PATH_ITERS" -p 18516 > /tmp/roce.out 2>&1 &
        _p2=$!
        _wait_listening cr tcp:18515 $_p1 || fail "server for VM 1 does not listen"
        _wait_listening roce tcp:18516 $_p2 || fail "server for VM 2 does not listen"
        with_vm 1 barrier both-ready 60
        with_vm 2 barrier both-ready 60
        # both QPs connected (RTS) at once, then the host looks
        _i=0
        while [ "$(rdma resource show qp 2>/dev/null | grep 'type RC state RTS' | grep -c 'comm ibv_rc_pingpong')" -lt 2 ]; do
            _i=$((_i + 1))
            if [ $_i -ge 300 ] || ! kill -0 $_p1 2>/dev/null || ! kill -0 $_p2 2>/dev/null; then
                rdma resource show qp
                fail "the two pingpong QPs were never in RTS at once (PATH_ITERS=$PATH_ITERS/$PATH_ITERS_CR too few?)"
            fi
            sleep 0.1
        done
        rdma resource show qp | grep 'type RC' | sed 's/^/  /'
        host_query paths
        kill -0 $_p1 2>/dev/null && kill -0 $_p2 2>/dev/null ||
            log "warning: a pingpong ended within 3 s of the host query; it may have missed its QP"
        wait $_p1; _r1=$?
        wait $_p2; _r2=$?
        [ $_r1 = 0 ] || { cat /tmp/cr.out; fail "server for VM 1 (co-resident) exited $_r1"; }
        [ $_r2 = 0 ] || { cat /tmp/roce.out; fail "server for VM 2 (RoCEv2) exited $_r2"; }
        pp_check cr "$PATH_ITERS_CR"
        pp_check roce "$PATH_ITERS"
        _c1=$(with_vm 1 barrier_recv both-done 240)
        _c2=$(with_vm 2 barrier_recv both-done 240)
        [ "$_c1" = 0 ] || fail "VM 1's client: $_c1"
        [ "$_c2" = 0 ] || fail "VM 2's client: $_c2"
    else
        if [ "$PVRDMA_VM" = 1 ]; then _n=$PATH_ITERS_CR _port=18515; else _n=$PATH_ITERS _port=18516; fi
        with_vm "$PVRDMA_VM" barrier both-ready 120
        _r=0
        timeout 240 ibv_rc_pingpong $_o -n "$_n" -p $_port "$PVRDMA_PEER_IP" > /tmp/both.out 2>&1 || _r=$?
        if [ $_r = 0 ] && _e=$(pp_invalid /tmp/both.out); then _r="invalid data"; fi
        [ "$_r" = 0 ] || cat /tmp/both.out
        with_vm "$PVRDMA_VM" barrier_send both-done 300 "$(echo "$_r" | tr ' ' _)"
        [ "$_r" = 0 ] || fail "client: $_r"
        pp_check both "$_n"
    fi
}
step both-paths-at-once both_paths
step kernel-clean kernel_clean
roce_diag
host_query_all end
steps_done
