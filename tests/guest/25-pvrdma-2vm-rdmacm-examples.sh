# rdma-core's example programs between two VMs over vmw_pvrdma0 and the
# co-resident transport (VM 0 serves): librdmacm's rdma_xserver/rdma_xclient
# (RC; the client posts with IBV_SEND_INLINE and lkey 0: the server waited
# forever before the device read inline SGEs through their MR),
# rdma_server/rdma_client, ucmatose, udaddy, cmtime, the rsocket programs
# rstream, riostream and rcopy (the copied file compared byte for byte),
# and the perftest programs the other tests leave out (ib_atomic_bw, UD
# ib_send_lat / ib_send_bw).  Every program must exit 0 on both sides and
# print what it prints when all its transfers completed.
# Then the programs that need what the device (or its driver) does not
# have must fail at once with their reason, not hang: XRC (rdma_xclient
# -c x, ibv_xsrq_pingpong), UC (ibv_uc_pingpong), multicast (mckey), ODP,
# completion timestamps, device memory and the new post-send API
# (ibv_rc_pingpong -o, -t, -j, -N).
# vms: 2
# timeout: 700
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gx=$(roce_v2_gid vmw_pvrdma0)
barrier pvrdma-up 60
P=$PVRDMA_PEER_IP
bad=0 n=0

# ok_pair NAME SECS LISTEN "SERVER" "CLIENT" SERVER-TEXT CLIENT-TEXT: a
# vm_pair run after which each side's output has its TEXT (if not empty)
ok_pair() {
    n=$((n + 1))
    vm_pair "$1" "$2" "$3" "$4" "$5" || { bad=$((bad + 1)); return; }
    if [ "$PVRDMA_VM" = 0 ]; then _want=$6; else _want=$7; fi
    if [ -n "$_want" ] && ! grep -q -- "$_want" "/tmp/$1.out"; then
        cat "/tmp/$1.out"
        PAIR_ERR=${PAIR_ERR:-"$1: no '$_want' in the output"}
        bad=$((bad + 1)); return
    fi
    log "$1: ok${_want:+: $_want}"
}

ok_pair xrc-rc 60 cm:7471 "rdma_xserver -c r" "rdma_xclient -s $P -c r" \
    "rdma_xserver: end 0" "rdma_xclient: end 0"
ok_pair rdma_server 60 cm:7471 "rdma_server" "rdma_client -s $P" \
    "rdma_server: end 0" "rdma_client: end 0"
ok_pair ucmatose 90 cm:7471 "ucmatose -c 2 -C 20 -S 1000" \
    "ucmatose -s $P -c 2 -C 20 -S 1000" "data transfers complete" "data transfers complete"
ok_pair udaddy 90 cm:7174 "udaddy -c 2 -C 20 -S 500" "udaddy -s $P -c 2 -C 20 -S 500" \
    "data transfers complete" "data transfers complete"
ok_pair rstream 90 cm:7471 "rstream -S 65536 -C 100" "rstream -s $P -S 65536 -C 100" \
    "" "64k *100 "
ok_pair riostream 90 cm:7471 "riostream -S 65536 -C 100" "riostream -s $P -S 65536 -C 100" \
    "" "64k *100 "
# servers that serve until stopped: stopped once the client succeeded
PAIR_STAYS=1
ok_pair cmtime 90 cm:7471 "cmtime" "cmtime -s $P -c 20" "" "connect *:"
# rcopy: a 3 MiB file into VM 0, compared with the same bytes made there
seq 1 400000 | head -c 3145728 > /tmp/rc.src
mkdir -p /tmp/rcopy-dst && cd /tmp/rcopy-dst || fail "cd /tmp/rcopy-dst"
ok_pair rcopy 90 cm:7427 "rcopy" "rcopy /tmp/rc.src $P:/tmp/rcopy-dst/rc.dst" "" ""
cd / || fail "cd /"
PAIR_STAYS=0
if [ "$PVRDMA_VM" = 0 ]; then
    if cmp /tmp/rc.src /tmp/rcopy-dst/rc.dst; then
        log "rcopy: 3 MiB copied from VM 1 and identical"
    else
        bad=$((bad + 1)); PAIR_ERR=${PAIR_ERR:-"rcopy: copied file differs"}
    fi
fi
perftest_2vm vmw_pvrdma0 "-x $gx" tcp:18515 "ib_atomic_bw:8"
perftest_2vm vmw_pvrdma0 "-x $gx -c UD" tcp:18515 "ib_send_lat:64 ib_send_bw:1024"

# unsupported: CMD must end (not time out) with its reason in its output;
# EXIT is the exit status it must have ("nonzero" for any but 0)
refused() { # NAME EXIT REASON CMD...
    _nm=$1 _ex=$2 _why=$3
    shift 3
    n=$((n + 1))
    timeout 30 "$@" > "/tmp/$_nm.out" 2>&1
    _st=$?
    if [ $_st = 124 ] || [ $_st = 143 ] ||
       { [ "$_ex" = nonzero ] && [ $_st = 0 ]; } ||
       { [ "$_ex" != nonzero ] && [ $_st != "$_ex" ]; } ||
       ! grep -q -- "$_why" "/tmp/$_nm.out"; then
        cat "/tmp/$_nm.out"
        PAIR_ERR=${PAIR_ERR:-"$_nm: exit $_st, expected $_ex with '$_why'"}
        bad=$((bad + 1)); return
    fi
    log "$_nm: refused at once (exit $_st): $_why"
}
if [ "$PVRDMA_VM" = 1 ]; then
    refused xrc-xrc nonzero "rdma_create_ep: Operation not supported" \
        rdma_xclient -s "$P" -c x
    refused xsrq nonzero "Couldn't Open the XRC Domain" \
        ibv_xsrq_pingpong -d vmw_pvrdma0 -g "$gx" "$P"
    refused uc nonzero "Couldn't create QP" \
        ibv_uc_pingpong -d vmw_pvrdma0 -g "$gx" "$P"
    refused mckey 0 "RDMA_CM_EVENT_MULTICAST_ERROR" \
        mckey -m 239.1.1.1 -b "$PVRDMA_IP" -s -C 5
    refused rc-odp nonzero "isn't ODP capable" \
        ibv_rc_pingpong -d vmw_pvrdma0 -g "$gx" -o "$P"
    refused rc-ts nonzero "isn't completion timestamp capable" \
        ibv_rc_pingpong -d vmw_pvrdma0 -g "$gx" -t "$P"
    refused rc-dm nonzero "doesn't support dm" \
        ibv_rc_pingpong -d vmw_pvrdma0 -g "$gx" -j "$P"
    refused rc-new-api nonzero "Couldn't create QP" \
        ibv_rc_pingpong -d vmw_pvrdma0 -g "$gx" -N "$P"
fi
kernel_clean
[ $bad = 0 ] || fail "$bad of $n runs failed (first: $PAIR_ERR)"
log "$n example programs: all as expected"
