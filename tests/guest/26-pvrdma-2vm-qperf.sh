# qperf (Debian's qperf, OFED's RDMA performance tool) between two VMs over
# vmw_pvrdma0 with RDMA CM (-cm1): RC SEND, RDMA WRITE and RDMA READ
# bandwidth and latency, atomics' message rate, and the ver_* atomics,
# which check every result.  VM 0 runs the qperf server; every client run
# must exit 0 and print its figure, positive.  Without -cm1 qperf addresses
# by LID, which RoCE refuses (MODIFY_QP to RTR / CREATE_AH: EINVAL) over
# Linux rxe the same way, so its UD tests and non-CM runs are not here.
#
# qperf's server sends its RDMA CM port to the client before it calls
# rdma_listen() (cm_open_server() in qperf's rdma.c), so the client's REQ
# can beat the listener; the server's IB CM then answers REJ with reason 8,
# invalid service ID, and the client fails "Event rejected".  That is
# qperf's race, seen in about one of 60 runs here.  A run is retried (twice
# at most, and said so in the log) only when the client's kernel recorded
# exactly that: rdma_cma's cm_event_handler tracepoint with REJECTED (8/8).
# vms: 2
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

TESTS="rc_bw:bw rc_bw/-m1:bw rc_lat:latency rc_rdma_write_bw:bw
 rc_rdma_write_lat:latency rc_rdma_read_bw:bw rc_rdma_read_bw/-m1048576:bw
 rc_rdma_read_lat:latency rc_compare_swap_mr:msg_rate rc_fetch_add_mr:msg_rate
 ver_rc_compare_swap:msg_rate ver_rc_fetch_add:msg_rate"

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
barrier pvrdma-up 60
if [ "$PVRDMA_VM" = 0 ]; then
    qperf > /tmp/qperf-server.out 2>&1 &
    srv=$!
    for _ in $(seq 50); do listening tcp:19765 && break; sleep 0.2; done
    listening tcp:19765 || { cat /tmp/qperf-server.out; fail "qperf server does not listen"; }
    barrier qperf-server 60
    barrier qperf-done 360
    kill "$srv" 2>/dev/null
    cat /tmp/qperf-server.out
    exit 0
fi
barrier qperf-server 60
T=/sys/kernel/tracing
mount -t tracefs nodev $T 2>/dev/null
echo 1 > $T/events/rdma_cma/cm_event_handler/enable 2>/dev/null ||
    log "no rdma_cma tracepoints: qperf's listener race will not be retried"
# listener_race: the last run failed on REJ reason 8 (see above)
listener_race() {
    grep -q 'Event rejected' /tmp/q.out && grep -q 'REJECTED (8/8)' $T/trace 2>/dev/null
}
bad=0 n=0 first= races=0
for t in $TESTS; do
    name=${t%%:*} fig=${t#*:} test=${name%%/*} opt=
    [ "$name" = "$test" ] || opt=$(echo "${name#*/}" | sed 's/^-m/-m /')
    n=$((n + 1)) try=0
    while :; do
        : > $T/trace 2>/dev/null
        timeout 60 qperf -cm1 -t 2 $opt "$PVRDMA_PEER_IP" "$test" > /tmp/q.out 2>&1
        rc=$?
        [ "$rc" != 0 ] && [ $try -lt 2 ] && listener_race || break
        try=$((try + 1)) races=$((races + 1))
        log "$name: REJ 8 (invalid service ID) before qperf's server listened: retry $try"
    done
    # "    bw  =  11.6 GB/sec", "    latency  =  124 us", "msg_rate = 246 K/sec"
    val=$(awk -v f="$fig" '$1 == f && $2 == "=" { print $3; exit }' /tmp/q.out)
    if [ "$rc" != 0 ] || [ -z "$val" ] || ! awk -v v="$val" 'BEGIN { exit !(v + 0 > 0) }' ||
       grep -qiE 'fail|error|mismatch' /tmp/q.out; then
        cat /tmp/q.out
        first=${first:-"$name: rc $rc, $fig '${val}'"}
        bad=$((bad + 1))
        log "$name: FAILED"
        continue
    fi
    log "$name: ok: $(grep -m1 " $fig " /tmp/q.out | tr -s ' ')"
done
barrier qperf-done 60
[ $races = 0 ] || log "$races run(s) retried after qperf's listener race"
[ $bad = 0 ] || fail "$bad of $n qperf runs failed (first: $first)"
