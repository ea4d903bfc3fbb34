#!/bin/sh
# One device, every path at once: two L2 guests whose devices each have
# the host HCA (ibdev=rxe0), a shared rendezvous directory (co-resident)
# and RoCEv2 on their vmxnet3 (roce=on).  Each RC QP chooses
# its path at RTR by destination GID (loopback, co-resident, host HCA if
# L1's route to the GID leaves through rxe0's netdev br0, RoCEv2).
#   L1:      br0 10.0.0.1/24 with rxe0 (the rig's), plus 10.0.1.2/32 so
#            rxe0 has guest A's host HCA GID; br1 10.1.0.1/24 with tap2,
#            tap3 and rxe1 (soft-RoCE as the "bare-metal" peer of RoCEv2)
#   A (L2 0, tap2): 10.1.0.2/24 (co-resident/RoCEv2 GID) and 10.0.1.2/32
#            (host HCA GID) on eth0, route to 10.0.0.0/24 via 10.1.0.1
#   B (L2 1, tap3): 10.1.0.3/24
#   both:    -device pvrdma,ibdev=rxe0,rendezvous=/tmp/rv, guest RAM from
#            memory-backend-memfd,share=on, QMP on a TCP port for L1
# Steps (A is the client of every pingpong):
#   rc/coresident-alone, rc/hostverbs-alone, rc/roce-alone: each path on
#     its own first (ibv_rc_pingpong -c, 50 x 4 KiB), with the counters:
#     A's x-roce-* still for co-resident and host HCA, rxe0's growing for
#     host HCA, A's x-roce-* and rxe1's growing for RoCEv2 (ALONE=0: skip)
#   three-paths-at-once: the data check, three pvrdma-verbs-check runs at
#     the same time (time mode, VC_SECS, messages up to 64 KiB; every byte
#     of SEND, WRITE, READ and atomics both ways, through rdma_cm), A the
#     client of each: A -> B (co-resident, B serves), A -> rxe0 in L1
#     (host HCA, from 10.0.1.2 to 10.0.0.1, CM translated by A's device),
#     A -> rxe1 in L1 (RoCEv2, 10.1.0.2 to 10.1.0.1); every side must end
#     "verbs-check: ok" with at least 100 messages; L1 asks A (and B)
#     x-query-pvrdma-qps over QMP and needs one snapshot of A with all
#     three RC QPs in RTS on path coresident / hostverbs / roce (logged), B's QP on path
#     coresident, no QP to one of these peers on another path, and the
#     counters: x-roce-* of A's device and rxe1's for the RoCEv2 one,
#     rxe0's for the host HCA one, each at least the L1 server's messages
#   write-bw/b-to-a: ib_write_bw 64 KiB, B writes into A (the rkeys are the
#     host HCA's key numbers, carried over co-resident)
#   rping/b-to-a, rping/a-to-b: rping -V (guest kernel rdma_cm) both ways
#   rping/a-l1-rxe1: rping -V -C 10, A the client, server in L1 on rxe1
#     (CM MADs and data over RoCEv2: A's x-roce-* counters must grow)
#   The A<->B steps must not move A's x-roce-* counters (co-resident, not
#   RoCEv2 between the two VMs' NICs); L1 polls A's qps during them (log).
#   "invalid data" fails a pingpong (its -c looks at one byte per page: the
#   checker is the data check); every client and server runs under a
#   timeout; rping -V fails on a mismatch (exit status and ping count).
# Knobs (run-l1.sh -e): VC_SECS (the checkers' run time, default 40),
# PP_SECS (time limit of each program at once), PATHS_AT_ONCE=0 (each
# path seen is enough), ALONE=0, CR_TRACE=0 (no
# trace of every co-resident request in the L2 QEMUs' stderr).
# Two L2 guests at once: about 8 minutes on an idle 2-core machine; in
# make check and CI (scripts/test.sh nested).
# timeout: 2400
. /usr/lib/pvrdma/tests-common.sh

ip() { /usr/bin/ip "$@"; }
log() { echo "[L1 $(cut -d' ' -f1 /proc/uptime)] $*"; }
export PVRDMA_VM=0 BARRIER_PORT=18600
A=10.1.0.2 B=10.1.0.3 HOST=10.1.0.1 A_HCA=10.0.1.2 L1_HCA=10.0.0.1
QMP_A=4445 QMP_B=4446 RV=/tmp/rv
# run time of the three checkers at once (time mode): long enough to overlap
VC_SECS=${VC_SECS:-40}
# time limit of each of them
PP_SECS=${PP_SECS:-300}
# 1: each path on its own first (PP_ITERS x 4 KiB), 0: not
ALONE=${ALONE:-1}
# 1: one snapshot must show the three paths at once; 0: each seen is enough
PATHS_AT_ONCE=${PATHS_AT_ONCE:-1}
# shellcheck disable=SC2034  # read by tests-common.sh (barriers, vm_pair)
PVRDMA_IP=$HOST PVRDMA_PEER_IP=$A PVRDMA_NETIF=br1
# the checkers' options (both sides must give the same -S)
VC_OPTS="-S 65536 -T 60"
T0=$(cut -d' ' -f1 /proc/uptime)
since0() { awk -v a="$T0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "%.1f", b - a}'; }

# --- L1: rxe0 gets A's host HCA GID; br1 with the two taps and rxe1
run ip addr add $A_HCA/32 dev br0
run ip link add br1 type bridge stp_state 0 forward_delay 0
run ip addr add $HOST/24 dev br1
for t in tap2 tap3; do
    run ip tuntap add dev $t mode tap
    run ip link set $t master br1
    run ip link set $t up
done
run ip link set br1 up
run modprobe rdma_rxe
run rdma link add rxe1 type rxe netdev br1

# --- the two L2 guests, booted at once
mem="-object memory-backend-memfd,id=mem,size=512M,share=on -machine memory-backend=mem"
# the path choices, QP states, co-resident peers; CR_TRACE=1 (default):
# every co-resident request too (printed on failure)
traces="-msg timestamp=on -trace pvrdma_qp_path -trace pvrdma_qp_state -trace pvrdma_hv_reaches -trace pvrdma_hv_modify_qp -trace pvrdma_roce_added -trace pvrdma_roce_not_added -trace pvrdma_cr_peer -trace pvrdma_cr_peer_gone -trace pvrdma_cr_authed -trace pvrdma_cr_gids"
[ "${CR_TRACE:-1}" = 0 ] || traces="$traces -trace pvrdma_cr_send -trace pvrdma_cr_req -trace pvrdma_cr_resp"
dev=pvrdma,addr=4.1,id=rdma0,ibdev=rxe0,rendezvous=$RV,roce=on
log "booting A on tap2 ($A/24 + $A_HCA/32) and B on tap3 ($B/24): $dev"
# boot_l2 TAP ADDR VM PEER QMP_PORT OUT: one L2 guest in the background
boot_l2() {
    /usr/lib/pvrdma/l2.sh -n "$1" -t 2100 --ip "$2/24" --mem 512M -e PVRDMA_VM="$3" \
        -e PVRDMA_PEER_IP="$4" -e PVRDMA_L1_IP=$HOST -e BARRIER_PORT=18601 \
        -e VC_SECS="$VC_SECS" -e PP_SECS="$PP_SECS" -e ALONE="$ALONE" --device "$dev" \
        --qemu-args "$mem -qmp tcp:127.0.0.1:$5,server=on,wait=off $traces" \
        /usr/lib/pvrdma/nested/l2-45-pair.sh > "$6" 2>&1 &
}
boot_l2 2 "$A" 0 "$B" "$QMP_A" /tmp/l2-a.out
pa=$!
boot_l2 3 "$B" 1 "$A" "$QMP_B" /tmp/l2-b.out
pb=$!

# --- QMP of the L2 devices (qom-get on /machine/peripheral/rdma0)
# qmp_raw PORT WAIT CMD...: the replies (one JSON object a line)
qmp_raw() {
    _port=$1 _w=$2; shift 2
    {
        echo '{"execute":"qmp_capabilities"}'
        for _c in "$@"; do echo "$_c"; done
        sleep "$_w"
    } | timeout $((_w + 10)) nc -w 3 127.0.0.1 "$_port" 2>/dev/null | tr -d '\r'
}
qom() { echo "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/machine/peripheral/rdma0\",\"property\":\"$1\"}}"; }
# qmp_get PORT PROP...: "PROP VALUE" lines of numeric properties, "PROP ?"
# for one that failed
qmp_get() {
    _port=$1; shift
    _cmds=''
    for _p in "$@"; do _cmds="$_cmds $(qom "$_p")"; done
    for _w in 1 3; do
        # replies in order: qmp_capabilities's, then one per qom-get
        # shellcheck disable=SC2086  # the commands have no blanks
        qmp_raw "$_port" $_w $_cmds | awk '
            /^\{"(return|error)"/ {
                if (n++ == 0) next
                v = $0
                if (v ~ /^\{"return": [0-9]+\}/) { gsub(/[^0-9]/, "", v); print v } else print "?"
            }' > /tmp/qmp.out
        [ "$(wc -l < /tmp/qmp.out)" -lt $# ] || break
    done
    _i=1
    for _p in "$@"; do
        echo "$_p $(sed -n "${_i}p" /tmp/qmp.out | grep . || echo '?')"
        _i=$((_i + 1))
    done
}
# qps PORT: the device's x-query-pvrdma-qps, a line each; 1 if no answer
QPS_CMD='{"execute":"x-query-pvrdma-qps","arguments":{"id":"rdma0"}}'
qps() {
    for _w in 1 3; do
        qmp_raw "$1" $_w "$QPS_CMD" | awk '
            /^\{"return": \{"human-readable-text": "/ {
                s = $0; sub(/^\{"return": \{"human-readable-text": "/, "", s)
                sub(/"\}\}$/, "", s)
                gsub(/\\n/, "\n", s); printf "%s", s; found = 1
            }
            END { exit !found }' && return 0
    done
    return 1
}
# rc_paths: the RC QPs of a qps listing on stdin, "path/state/peer" each
rc_paths() {
    awk '$1 == "qp" && $4 == "RC" { printf " %s/%s/%s", $8, $6, ($9 == "peer" ? $10 : "-") }'
}
# counters TAG: A's x-roce-* and rxe0's, rxe1's packet counts into /tmp/cnt-TAG
rxe_count() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2" 2>/dev/null || echo 0; }
counters() {
    {
        qmp_get $QMP_A x-roce-tx-pkts x-roce-rx-pkts x-roce-retransmits x-roce-drops
        for _d in rxe0 rxe1; do
            echo "$_d-sent $(rxe_count $_d sent_pkts)"
            echo "$_d-rcvd $(rxe_count $_d rcvd_pkts)"
        done
    } > "/tmp/cnt-$1"
}
# delta NAME A B: NAME's growth from counters A to counters B ("?" unknown)
delta() {
    awk -v n="$1" '$1 == n { v[FILENAME] = $2 } END {
        a = v[ARGV[1]]; b = v[ARGV[2]]
        if (a !~ /^[0-9]+$/ || b !~ /^[0-9]+$/) print "?"; else print b - a }' \
        "/tmp/cnt-$2" "/tmp/cnt-$3"
}
show_delta() {
    log "$1: A x-roce-tx-pkts +$(delta x-roce-tx-pkts "$2" "$3") x-roce-rx-pkts +$(delta x-roce-rx-pkts "$2" "$3") retransmits +$(delta x-roce-retransmits "$2" "$3") drops +$(delta x-roce-drops "$2" "$3"); rxe0 sent +$(delta rxe0-sent "$2" "$3") rcvd +$(delta rxe0-rcvd "$2" "$3"); rxe1 sent +$(delta rxe1-sent "$2" "$3") rcvd +$(delta rxe1-rcvd "$2" "$3")"
}
# at_least WHAT VALUE MIN: fail unless VALUE >= MIN
at_least() {
    case $2 in ''|*[!0-9]*) fail "$1: unknown ($2)" ;; esac
    [ "$2" -ge "$3" ] || fail "$1 is $2, expected at least $3"
}
# poller FILE: snapshots of A's qps into FILE (with "@ SECS" lines) until
# /tmp/poll.stop exists; stop_poller ends it
poller() {
    rm -f /tmp/poll.stop
    (
        while [ ! -f /tmp/poll.stop ]; do
            echo "@ $(since0)"
            qps $QMP_A || echo "(no answer)"
        done
    ) > "$1" 2>&1 &
    POLLER=$!
}
stop_poller() {
    touch /tmp/poll.stop
    wait "$POLLER" 2>/dev/null
    log "$1: A's RC QPs seen: $(rc_paths < "$2" | tr ' ' '\n' | grep . | sort -u | tr '\n' ' ')"
}

# pp_done NAME ITERS FILE: a complete pingpong run in FILE, no "invalid data"
pp_done() {
    if _e=$(pp_invalid "$3"); then cat "$3"; fail "$1: $_e"; fi
    if ! grep -qE "^$((4096 * 2 * $2)) bytes in " "$3" ||
       ! grep -qE "^$2 iters in .* usec/iter" "$3"; then
        cat "$3"; fail "$1: no '$((4096 * 2 * $2)) bytes in' / '$2 iters' line"
    fi
    log "$1: ok: $(grep -E ' bytes in ' "$3")"
}

# --- the guests are up: GIDs, peers
barrier l2-up 1500 || fail "guest A did not come up"
log "both guests up after $(since0)s"
wait_dev rxe1 20 || fail "rxe1 not ACTIVE"
G0=$(wait_gid rxe0 $L1_HCA "RoCE v2" 10) || { dump_gids rxe0; fail "rxe0: no RoCE v2 GID for $L1_HCA"; }
G1=$(wait_gid rxe1 $HOST "RoCE v2" 10) || { dump_gids rxe1; fail "rxe1: no RoCE v2 GID for $HOST"; }
wait_gid rxe0 $A_HCA "RoCE v2" 10 > /dev/null || { dump_gids rxe0; fail "rxe0: no RoCE v2 GID for $A_HCA (A's host HCA GID)"; }
log "rxe0 GIDs:"; dump_gids rxe0
log "rxe1 GIDs:"; dump_gids rxe1
log "rxe0: GID index $G0 ($L1_HCA); rxe1: GID index $G1 ($HOST)"
log "routes: $(ip route get $L1_HCA | head -n 1) | $(ip route get $HOST | head -n 1) | $(ip route get $B | head -n 1)"
log "A: $(qmp_get $QMP_A peers | tr '\n' ' ')B: $(qmp_get $QMP_B peers | tr '\n' ' ')"
log "A's QPs now:"; qps $QMP_A | sed 's/^/  /'

# --- 1-3: three checkers of A at once, one on each path (the servers of
# the host HCA and RoCEv2 ones here, on rxe0 and rxe1: rdma_cm picks the
# device by the bound address)
three_at_once() {
    counters three0
    # shellcheck disable=SC2086
    timeout $PP_SECS pvrdma-verbs-check -p 18531 -b $L1_HCA $VC_OPTS server > /tmp/vc-hca.out 2>&1 &
    s2=$!
    # shellcheck disable=SC2086
    timeout $PP_SECS pvrdma-verbs-check -p 18532 -b $HOST $VC_OPTS server > /tmp/vc-roce.out 2>&1 &
    s3=$!
    _wait_listening hca cm:$L1_HCA:18531 $s2 || fail "the rxe0 checker does not listen"
    _wait_listening roce cm:$HOST:18532 $s3 || fail "the rxe1 checker does not listen"
    barrier three-ready 300
    t=$(since0)
    # poll A's qps (and B's until its QP is seen) while the servers run
    : > /tmp/qps-a.log; : > /tmp/qps-b.log
    at_once='' seen_b='' n=0
    while [ -z "$at_once" ] || [ -z "$seen_b" ]; do
        kill -0 $s2 2>/dev/null || kill -0 $s3 2>/dev/null || break
        [ "$(awk -v a="$t" -v b="$(since0)" -v m="$PP_SECS" 'BEGIN{print (b - a > m)}')" = 0 ] || break
        n=$((n + 1))
        if [ -z "$at_once" ]; then
            ts=$(since0)
            qps $QMP_A > /tmp/snap || { log "snapshot $n of A: no answer"; continue; }
            { echo "@ $ts"; cat /tmp/snap; } >> /tmp/qps-a.log
            log "A at +$(awk -v a="$t" -v b="$ts" 'BEGIN{printf "%.1f", b - a}')s:$(rc_paths < /tmp/snap)"
            if grep -qE '^qp [0-9]+ type RC state RTS path coresident peer 10\.1\.0\.3 ' /tmp/snap &&
               grep -qE '^qp [0-9]+ type RC state RTS path hostverbs peer 10\.0\.0\.1 ' /tmp/snap &&
               grep -qE '^qp [0-9]+ type RC state RTS path roce peer 10\.1\.0\.1 ' /tmp/snap; then
                at_once=$ts
                cp /tmp/snap /tmp/qps-at-once.txt
            fi
        fi
        if [ -z "$seen_b" ]; then
            qps $QMP_B > /tmp/snapb || continue
            { echo "@ $(since0)"; cat /tmp/snapb; } >> /tmp/qps-b.log
            if grep -qE '^qp [0-9]+ type RC state RTS path coresident peer 10\.1\.0\.2 ' /tmp/snapb; then
                seen_b=1
                log "B's QPs:"; grep '^qp ' /tmp/snapb | sed 's/^/  /'
            fi
        fi
    done
    log "polled $n times in $(awk -v a="$t" -v b="$(since0)" 'BEGIN{printf "%.1f", b - a}')s"
    wait $s2; r2=$?
    wait $s3; r3=$?
    log "the L1 servers ended ($r2, $r3) after $(awk -v a="$t" -v b="$(since0)" 'BEGIN{printf "%.1f", b - a}')s; A's and B's QPs now:"
    qps $QMP_A | grep '^qp ' | sed 's/^/  A: /'
    qps $QMP_B | grep '^qp ' | sed 's/^/  B: /'
    ra=$(barrier_recv three-done $((PP_SECS + 120)))
    counters three1
    show_delta "three paths" three0 three1
    [ "$r2" = 0 ] || { cat /tmp/vc-hca.out; fail "the rxe0 checker exited $r2 (124: timeout)"; }
    [ "$r3" = 0 ] || { cat /tmp/vc-roce.out; fail "the rxe1 checker exited $r3 (124: timeout)"; }
    _vc_judge "hostverbs (rxe0 server)" 100 /tmp/vc-hca.out || fail "$PAIR_ERR"
    _vc_judge "roce (rxe1 server)" 100 /tmp/vc-roce.out || fail "$PAIR_ERR"
    [ "$ra" = 0 ] || fail "guest side: $ra"
    # the paths
    for p in "coresident $B" "hostverbs $L1_HCA" "roce $HOST"; do
        grep -qE "^qp [0-9]+ type RC state RTS path ${p% *} peer $(echo "${p#* }" | sed 's/\./\\./g') " /tmp/qps-a.log ||
            fail "no snapshot of A has an RC QP in RTS on path ${p% *} to ${p#* }"
    done
    bad=$(grep -E '^qp [0-9]+ type RC state RTS ' /tmp/qps-a.log | grep -vE "path (coresident peer 10\.1\.0\.3|hostverbs peer 10\.0\.0\.1|roce peer 10\.1\.0\.1) " | head -n 3)
    [ -z "$bad" ] || fail "A had RC QPs on an unexpected path: $bad"
    [ -n "$seen_b" ] || { tail -n 20 /tmp/qps-b.log; fail "no snapshot of B has an RC QP in RTS on path coresident to $A"; }
    if [ -n "$at_once" ]; then
        log "one snapshot of A (at +${at_once}s of this test) has the three paths at once:"
        sed 's/^/  /' /tmp/qps-at-once.txt
    elif [ "$PATHS_AT_ONCE" = 1 ]; then
        fail "each path was seen, but no snapshot of A had all three at once (VC_SECS=$VC_SECS too short?)"
    else
        log "WARNING: each path was seen, never all three in one snapshot"
    fi
    # the counters: each message is at least one packet; an L1 server
    # sent msgs and received (and checked) recv SENDs and WRITEs of A's
    m=$(vc_field /tmp/vc-roce.out msgs) r=$(vc_field /tmp/vc-roce.out recv)
    at_least "A's x-roce-tx-pkts growth" "$(delta x-roce-tx-pkts three0 three1)" "$r"
    at_least "A's x-roce-rx-pkts growth" "$(delta x-roce-rx-pkts three0 three1)" "$m"
    at_least "rxe1 sent_pkts growth" "$(delta rxe1-sent three0 three1)" "$m"
    at_least "rxe1 rcvd_pkts growth" "$(delta rxe1-rcvd three0 three1)" "$r"
    m=$(vc_field /tmp/vc-hca.out msgs) r=$(vc_field /tmp/vc-hca.out recv)
    at_least "rxe0 sent_pkts growth" "$(delta rxe0-sent three0 three1)" "$m"
    at_least "rxe0 rcvd_pkts growth" "$(delta rxe0-rcvd three0 three1)" "$r"
}

# no_roce TAG0 TAG1: A's x-roce-* packet counters did not move
no_roce() {
    for c in x-roce-tx-pkts x-roce-rx-pkts; do
        d=$(delta $c "$1" "$2")
        [ "$d" = 0 ] || fail "A's $c moved by $d: not (only) the expected path"
    done
}

# watch_ab NAME SECS: an A<->B step: counters and A's qps around it (A
# tells L1 when it starts and ends); A's x-roce-* must not move
watch_ab() {
    counters "$1-0"
    barrier "$1-start" "$2"
    poller "/tmp/qps-$1.log"
    ra=$(barrier_recv "$1-end" "$2")
    stop_poller "$1" "/tmp/qps-$1.log"
    counters "$1-1"
    show_delta "$1" "$1-0" "$1-1"
    [ "$ra" = 0 ] || fail "guest side: $ra"
    no_roce "$1-0" "$1-1"
}

# alone_l1 hostverbs|roce: one pingpong (PP_ITERS x 4 KiB) of A to rxe0
# or rxe1 in L1 on its own, with A's qps polled and the counters checked
alone_l1() {
    if [ "$1" = hostverbs ]; then d=rxe0 g=$G0 port=18516; else d=rxe1 g=$G1 port=18517; fi
    counters "$1-0"
    poller "/tmp/qps-$1.log"
    vm_pair "rc-$1" 120 tcp:$port "ibv_rc_pingpong -d $d -g $g -n $PP_ITERS -r $PP_RXDEPTH -c -s 4096 -p $port" "" ||
        { stop_poller "$1" "/tmp/qps-$1.log"; return 1; }
    stop_poller "$1" "/tmp/qps-$1.log"
    counters "$1-1"
    show_delta "rc-$1" "$1-0" "$1-1"
    pp_done "rc-$1 ($d server)" "$PP_ITERS" "/tmp/rc-$1.out"
    if [ "$1" = hostverbs ]; then
        no_roce "$1-0" "$1-1"
        at_least "rxe0 rcvd_pkts growth" "$(delta rxe0-rcvd "$1-0" "$1-1")" $((4 * PP_ITERS))
    else
        at_least "A's x-roce-tx-pkts growth" "$(delta x-roce-tx-pkts "$1-0" "$1-1")" $((4 * PP_ITERS))
        at_least "A's x-roce-rx-pkts growth" "$(delta x-roce-rx-pkts "$1-0" "$1-1")" $((4 * PP_ITERS))
        at_least "rxe1 rcvd_pkts growth" "$(delta rxe1-rcvd "$1-0" "$1-1")" $((4 * PP_ITERS))
    fi
}

# rping to rxe1: L1 serves, A connects; A's x-roce-* must grow
rping_l1() {
    counters rping0
    vm_pair rping-l1 240 cm:$HOST:7174 "rping -s -a $HOST -p 7174 -S 4096 -C 10 -V" "" || return 1
    counters rping1
    show_delta rping-l1 rping0 rping1
    at_least "A's x-roce-tx-pkts growth" "$(delta x-roce-tx-pkts rping0 rping1)" 10
    at_least "A's x-roce-rx-pkts growth" "$(delta x-roce-rx-pkts rping0 rping1)" 10
    at_least "rxe1 rcvd_pkts growth" "$(delta rxe1-rcvd rping0 rping1)" 10
}

# ALONE=0: without the single-path steps (the three at once come first)
if [ "$ALONE" = 1 ]; then
    step rc/coresident-alone watch_ab rc-cr 600
    step rc/hostverbs-alone alone_l1 hostverbs
    step rc/roce-alone alone_l1 roce
fi
step three-paths-at-once three_at_once
step write-bw/b-to-a watch_ab wbw 600
step rping/b-to-a watch_ab rping-ba 600
step rping/a-to-b watch_ab rping-ab 600
step rping/a-l1-rxe1 rping_l1
step kernel-clean kernel_clean

wait $pa; ra=$?
wait $pb; rb=$?
cat /tmp/l2-a.out /tmp/l2-b.out
bad=0
[ "$ra" = 0 ] && [ "$rb" = 0 ] && [ "$STEPS_BAD" = 0 ] || bad=1
for g in a b; do
    d=/tmp/l2/l2-45-pair-tap$([ $g = a ] && echo 2 || echo 3)
    echo "--- guest $g: QEMU trace events (count) ---"
    sed -n 's/^[0-9]*@[0-9.]*:\(pvrdma_[a-z_0-9]*\) .*/\1/p' "$d/qemu.stderr" 2>/dev/null | sort | uniq -c
    echo "--- guest $g: QEMU's path choices and peers (trace) ---"
    grep -E 'pvrdma_(qp_path|hv_reaches|roce_added|roce_not_added|cr_peer|cr_authed|cr_gids)' "$d/qemu.stderr" 2>/dev/null |
        sed 's/^[0-9]*@[0-9.]*://' | tail -n 60
    [ "$bad" = 1 ] || continue
    echo "--- guest $g: QEMU stderr, last QP state and co-resident request lines ---"
    grep -E 'pvrdma_(qp_state|hv_modify_qp|cr_send|cr_req|cr_resp)' "$d/qemu.stderr" 2>/dev/null |
        sed 's/^[0-9]*@[0-9.]*://' | tail -n 40
    echo "--- guest $g: QEMU stderr, other lines (last 40) ---"
    grep -v '^[0-9]*@[0-9.]*:pvrdma_' "$d/qemu.stderr" 2>/dev/null | tail -n 40
done
log "total $(since0)s"
[ "$ra" = 0 ] || fail "guest A failed (rc $ra): $(grep -m1 'FAIL' /tmp/l2-a.out)"
[ "$rb" = 0 ] || fail "guest B failed (rc $rb): $(grep -m1 'FAIL' /tmp/l2-b.out)"
steps_done
