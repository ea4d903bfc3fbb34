#!/bin/sh
# shellcheck disable=SC2153  # PVRDMA_IP and the others come from /test.env
# L2 side of 45-paths-all-at-once.sh, both guests: A (PVRDMA_VM=0, tap2,
# 10.1.0.2/24 + 10.0.1.2/32) and B (PVRDMA_VM=1, tap3, 10.1.0.3/24), each
# with -device pvrdma,ibdev=rxe0,rendezvous=/tmp/rv.  A is the client of
# every pingpong and checker: of B (co-resident), of rxe0 in L1 (host
# HCA) and of rxe1 in L1 (RoCEv2), the three checkers at once.  Barriers: A and B on port
# 18601 (A listens), A and L1 on port 18600 (L1 listens); both guests run
# the same steps in the same order, L1 its own with A.
. /usr/lib/pvrdma/tests-common.sh

ip() { /usr/bin/ip "$@"; }
ROLE=$([ "$PVRDMA_VM" = 0 ] && echo A || echo B)
log() { echo "[$ROLE $(cut -d' ' -f1 /proc/uptime)] $*"; }
L1=${PVRDMA_L1_IP:-10.1.0.1} A_HCA=10.0.1.2 L1_HCA=10.0.0.1
VC_SECS=${VC_SECS:-40} PP_SECS=${PP_SECS:-300}
# the checkers' options (both sides must give the same -S)
VC_OPTS="-S 65536 -T 60"
ROCE_DEV=vmw_pvrdma0

# with_l1 CMD...: CMD is an exchange of A with L1 (barriers on port 18600,
# L1 in VM 0's role, A connecting)
with_l1() {
    _wl_sv="$PVRDMA_VM $PVRDMA_PEER_IP $BARRIER_PORT"
    PVRDMA_VM=1 PVRDMA_PEER_IP=$L1 BARRIER_PORT=18600
    "$@"; _wl_r=$?
    # shellcheck disable=SC2086
    set -- $_wl_sv
    PVRDMA_VM=$1 PVRDMA_PEER_IP=$2 BARRIER_PORT=$3
    return $_wl_r
}

# --- addresses, GIDs
wait_dev $ROCE_DEV 30 || fail "$ROCE_DEV not registered/ACTIVE"
if [ "$ROLE" = A ]; then
    [ "$PVRDMA_IP" = 10.1.0.2 ] || fail "PVRDMA_IP is $PVRDMA_IP, expected 10.1.0.2"
    # the host HCA GID (L1 has it on br0, so rxe0 has it too)
    run ip addr add $A_HCA/32 dev "$PVRDMA_NETIF"
    # ARP requests from 10.1.0.2, never from 10.0.1.2 (L1's own address:
    # L1 would drop such a request as from a martian source)
    echo 2 > /proc/sys/net/ipv4/conf/all/arp_announce
    echo 2 > "/proc/sys/net/ipv4/conf/$PVRDMA_NETIF/arp_announce"
    # rxe0's GID 10.0.0.1: the guest kernel resolves its MAC (modify QP to
    # RTR) through a route; L1 is the next hop
    run ip route add 10.0.0.0/24 via "$L1" dev "$PVRDMA_NETIF"
    G_HCA=$(wait_gid $ROCE_DEV $A_HCA "RoCE v2" 20) || { dump_gids $ROCE_DEV; fail "no RoCE v2 GID for $A_HCA"; }
else
    [ "$PVRDMA_IP" = 10.1.0.3 ] || fail "PVRDMA_IP is $PVRDMA_IP, expected 10.1.0.3"
fi
ROCE_GIDX=$(wait_gid $ROCE_DEV "$PVRDMA_IP" "RoCE v2" 20) || { dump_gids $ROCE_DEV; fail "no RoCE v2 GID for $PVRDMA_IP"; }
dump_gids $ROCE_DEV
log "$ROCE_DEV: GID index $ROCE_GIDX ($PVRDMA_IP)$([ "$ROLE" = A ] && echo ", $G_HCA ($A_HCA)")"
barrier pair-up 1200
ping_peer
if [ "$ROLE" = A ]; then
    ping -c 2 -W 5 "$L1" > /tmp/ping.out 2>&1 || { cat /tmp/ping.out; fail "cannot ping L1 $L1"; }
    ping -c 2 -W 5 $L1_HCA > /tmp/ping.out 2>&1 || { cat /tmp/ping.out; fail "cannot ping $L1_HCA through $L1"; }
    log "routes: $(ip route get $L1_HCA from $A_HCA | head -n 1) | $(ip route get "$PVRDMA_PEER_IP" | head -n 1)"
    with_l1 barrier l2-up 600
fi

# pp_check NAME ITERS FILE: a complete 4 KiB pingpong run, no "invalid data"
pp_check() {
    if _e=$(pp_invalid "$3"); then cat "$3"; log "$1: $_e"; return 1; fi
    if ! grep -qE "^$((4096 * 2 * $2)) bytes in " "$3" ||
       ! grep -qE "^$2 iters in .* usec/iter" "$3"; then
        cat "$3"; log "$1: no '$((4096 * 2 * $2)) bytes in' / '$2 iters' line"; return 1
    fi
    log "$1: ok: $(grep -E ' bytes in ' "$3")"
}

# --- 1-3: A's three checkers at once, the data check of every path
three_at_once() {
    if [ "$ROLE" = B ]; then
        # shellcheck disable=SC2086
        timeout $PP_SECS pvrdma-verbs-check -p 18530 -b "$PVRDMA_IP" $VC_OPTS server > /tmp/vc-cr.out 2>&1 &
        _p=$!
        _wait_listening cr "cm:$PVRDMA_IP:18530" $_p || fail "the checker for A does not listen"
        barrier three-ready-b 600
        wait $_p; _r=$?
        [ $_r != 0 ] || _vc_judge coresident-server 100 /tmp/vc-cr.out || _r="bad_output"
        [ "$_r" = 0 ] || cat /tmp/vc-cr.out
        barrier_send three-done-b $((PP_SECS + 120)) "$_r"
        [ "$_r" = 0 ] || fail "the checker for A: $_r ${PAIR_ERR:-}"
        return 0
    fi
    barrier three-ready-b 300
    with_l1 barrier three-ready 300
    _c="pvrdma-verbs-check -D $VC_SECS $VC_OPTS"
    # shellcheck disable=SC2086
    timeout $PP_SECS $_c -p 18530 -b "$PVRDMA_IP" client "$PVRDMA_PEER_IP" > /tmp/vc-cr.out 2>&1 &
    p1=$!
    # shellcheck disable=SC2086
    timeout $PP_SECS $_c -p 18531 -b $A_HCA client $L1_HCA > /tmp/vc-hca.out 2>&1 &
    p2=$!
    # shellcheck disable=SC2086
    timeout $PP_SECS $_c -p 18532 -b "$PVRDMA_IP" client "$L1" > /tmp/vc-roce.out 2>&1 &
    p3=$!
    log "checkers for ${VC_SECS}s: coresident to $PVRDMA_PEER_IP, hostverbs $A_HCA to $L1_HCA, roce to $L1"
    # when this kernel saw the three RC QPs in RTS together (for the log)
    _i=0
    while kill -0 $p1 2>/dev/null || kill -0 $p2 2>/dev/null || kill -0 $p3 2>/dev/null; do
        _n=$(rdma resource show qp 2>/dev/null | grep 'type RC state RTS' | grep -c 'comm pvrdma-verbs')
        if [ "$_n" = 3 ]; then
            log "the three RC QPs are in RTS:"
            rdma resource show qp 2>/dev/null | grep 'type RC' | sed 's/^/  /'
            break
        fi
        _i=$((_i + 1)); [ $_i -lt 600 ] || break
        sleep 0.2
    done
    [ "$_n" = 3 ] || log "never saw the three RC QPs in RTS together in this kernel"
    wait $p1; r1=$?
    log "coresident checker done (rc $r1)"
    wait $p2; r2=$?
    log "hostverbs checker done (rc $r2)"
    wait $p3; r3=$?
    log "roce checker done (rc $r3)"
    word=''
    [ $r1 = 0 ] && _vc_judge "coresident (A -> B)" 100 /tmp/vc-cr.out || word="${word}cr:$r1,"
    [ $r2 = 0 ] && _vc_judge "hostverbs (A -> rxe0)" 100 /tmp/vc-hca.out || word="${word}hostverbs:$r2,"
    [ $r3 = 0 ] && _vc_judge "roce (A -> rxe1)" 100 /tmp/vc-roce.out || word="${word}roce:$r3,"
    [ $r1 = 0 ] || { echo "--- coresident checker (rc $r1; 124 = timeout) ---"; cat /tmp/vc-cr.out; }
    [ $r2 = 0 ] || { echo "--- hostverbs checker (rc $r2) ---"; cat /tmp/vc-hca.out; }
    [ $r3 = 0 ] || { echo "--- roce checker (rc $r3) ---"; cat /tmp/vc-roce.out; }
    rb=$(barrier_recv three-done-b 120)
    [ "$rb" = 0 ] || word="${word}B-server:$rb,"
    with_l1 barrier_send three-done 300 "${word:-0}"
    [ -z "$word" ] || fail "checkers failed: ${word%,} ${PAIR_ERR:-}"
}

# ab_step NAME CMD...: an exchange of A and B; A tells L1 (which watches
# the counters and A's QPs) when it starts and ends
ab_step() {
    _abn=$1; shift
    if [ "$ROLE" = A ]; then
        with_l1 barrier "$_abn-start" 600
        barrier "turn-$_abn" 600
        "$@"; _abr=$?
        with_l1 barrier_send "$_abn-end" 600 "$_abr"
        return $_abr
    fi
    barrier "turn-$_abn" 900
    "$@"
}

# alone_l1 hostverbs|roce: A's pingpong to rxe0 (from 10.0.1.2 to
# 10.0.0.1) or rxe1 (from 10.1.0.2 to 10.1.0.1) in L1, on its own
alone_l1() {
    [ "$ROLE" = A ] || return 0
    if [ "$1" = hostverbs ]; then _g=$G_HCA _port=18516; else _g=$ROCE_GIDX _port=18517; fi
    with_l1 vm_pair "rc-$1" 120 tcp:$_port "" \
        "ibv_rc_pingpong -d $ROCE_DEV -g $_g -n $PP_ITERS -r $PP_RXDEPTH -c -s 4096 -p $_port $L1" || return 1
    pp_check "rc-$1" "$PP_ITERS" "/tmp/rc-$1.out"
}

# write_bw: ib_write_bw of 100 x 64 KiB, A serves, B writes into A's MR
# with A's rkey (a host HCA key number) over the co-resident path.  Both
# sides must exit 0 and B print the result line of 100 iterations; its
# figures come from the TSC, meaningless two TCG levels down (logged only).
write_bw() {
    _o="-d $ROCE_DEV -x $ROCE_GIDX -F -n 100 -s 65536"
    vm_pair write_bw 300 tcp:18515 "ib_write_bw $_o" "ib_write_bw $_o $PVRDMA_PEER_IP" || return 1
    [ "$ROLE" = B ] || return 0
    _l=$(perf_result /tmp/write_bw.out)
    if ! echo "$_l" | awk '{ exit !($1 == 65536 && $2 == 100) }'; then
        cat /tmp/write_bw.out
        # shellcheck disable=SC2034  # step() reports it
        PAIR_ERR="write_bw: no result line of 100 iterations of 65536 bytes"
        return 1
    fi
    log "write_bw: 100 x 65536 bytes written: $_l"
}

# the rping to rxe1 in L1 (A only)
rping_l1() {
    [ "$ROLE" = A ] || return 0
    with_l1 vm_pair rping-l1 240 cm:"$L1":7174 "" "rping -c -a $L1 -p 7174 -S 4096 -C 10 -V -v" || return 1
    _got=$(grep -c '^ping data: rdma-ping-' /tmp/rping-l1.out)
    if [ "$_got" != 10 ] || grep -q mismatch /tmp/rping-l1.out; then
        head -c 2000 /tmp/rping-l1.out
        # shellcheck disable=SC2034  # step() reports it
        PAIR_ERR="rping-l1: $_got of 10 pings, or a mismatch"
        return 1
    fi
    log "rping-l1: 10 pings of 4096 bytes validated"
}

# each path on its own first (PP_ITERS x 4 KiB; B serves A on co-resident)
if [ "${ALONE:-1}" = 1 ]; then
    step rc/coresident-alone ab_step rc-cr pp_2vm rc 4096 rev 120
    step rc/hostverbs-alone alone_l1 hostverbs
    step rc/roce-alone alone_l1 roce
fi
step three-paths-at-once three_at_once
# (fwd: A serves, B is the client; rev: the other way round)
step write-bw/b-to-a ab_step wbw write_bw
step rping/b-to-a ab_step rping-ba rping_2vm 4096 10 fwd 180
step rping/a-to-b ab_step rping-ab rping_2vm 4096 10 rev 180
step rping/a-l1-rxe1 rping_l1
step kernel-clean kernel_clean
log "QPs left: $(rdma resource show qp 2>/dev/null | grep -c 'type RC')"
steps_done
