# A peer VM killed mid-transfer: VM 0 runs ib_write_bw (64 KiB RDMA WRITEs
# into VM 1's memory), the host kills VM 1's QEMU with SIGKILL while data
# moves (run-vm.sh --restart-peer), then boots VM 1 again.
#  - VM 0's ib_write_bw must end (no hang) with a completion error of
#    status 12, IBV_WC_RETRY_EXC_ERR (nobody answers the requests in flight
#    to a peer that went away: they fail when the QP's retries have run
#    out, 8 x 67 ms for ib_write_bw's timeout 14 and retry_cnt 7);
#  - VM 0's device still works (loopback pingpong) and its kernel logs no
#    warning;
#  - the restarted VM 1 joins again: rc/ud pingpongs and ib_write_bw
#    between the two VMs pass.
# 24-pvrdma-2vm-peer-loss.host then checks VM 0's QEMU trace: peer gone,
# the client QP's RETRY_EXC_ERR completion, the flush completions
# (IBV_WC_WR_FLUSH_ERR, status 5) of the WQEs behind it, QP to error, and
# the peer joining again.
# vms: 2
# timeout: 300
# requires: pvrdma
# vm-args: --restart-peer
# qemu-args: -trace pvrdma_cr_peer* -trace pvrdma_qp_state -trace pvrdma_cqe
. /usr/lib/pvrdma/tests-common.sh

D=vmw_pvrdma0
wait_dev $D 15 || fail "$D not registered/ACTIVE"
gidx=$(roce_v2_gid $D)
po="-d $D -x $gidx -F -s 65536"

if [ "$PVRDMA_VM" = 1 ] && [ "$PVRDMA_RESTART" = 0 ]; then
    # the victim: serve ib_write_bw until the host kills this VM
    ib_write_bw $po -D 30 > /tmp/bw.srv 2>&1 &
    wait_port 18515 10 || { cat /tmp/bw.srv; fail "ib_write_bw server not listening"; }
    barrier victim-ready 60
    log "serving ib_write_bw; waiting to be killed"
    sleep 120
    fail "still alive 120 s after serving: VM 0 never had this VM killed"
fi

if [ "$PVRDMA_VM" = 0 ]; then
    barrier victim-ready 60
    timeout 90 ib_write_bw $po -D 30 "$PVRDMA_PEER_IP" > /tmp/bw.cli 2>&1 &
    cpid=$!
    i=0
    until rdma resource show qp 2>/dev/null | grep -q 'comm ib_write_bw'; do
        i=$((i + 1))
        if [ $i -ge 150 ] || ! kill -0 $cpid 2>/dev/null; then cat /tmp/bw.cli; fail "ib_write_bw did not connect"; fi
        sleep 0.1
    done
    rdma resource show qp | sed 's/^/  /'
    sleep 2
    kill -0 $cpid 2>/dev/null || { cat /tmp/bw.cli; fail "ib_write_bw ended before the peer was killed"; }
    t0=$(cut -d' ' -f1 /proc/uptime)
    log "asking the host to kill VM 1"
    echo PVRDMA-KILL-PEER
    rc=0; wait $cpid || rc=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    log "ib_write_bw exited with $rc $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s after the kill request"
    cat /tmp/bw.cli | sed 's/^/  /'
    [ $rc != 0 ] || fail "ib_write_bw succeeded although its peer was killed"
    [ $rc != 124 ] || fail "ib_write_bw hung after its peer was killed (timeout)"
    grep -q 'Failed status 12' /tmp/bw.cli ||
        fail "ib_write_bw did not report status 12 (RETRY_EXC_ERR): $(grep -m1 -i 'status\|error' /tmp/bw.cli)"
    # the survivor's device is unharmed
    o="-d $D -g $gidx -n 20 -r $PP_RXDEPTH -c"
    pair survivor-rc 60 "ibv_rc_pingpong $o -s 4096" "ibv_rc_pingpong $o -s 4096 127.0.0.1" ||
        fail "loopback pingpong on the survivor failed ($PAIR_ERR)"
fi

# VM 0 after the kill, VM 1 after its restart
barrier reborn 120
[ "$PVRDMA_VM" = 0 ] || log "restarted VM 1 (PVRDMA_RESTART=$PVRDMA_RESTART)"
two_vm_pingpongs $D "rc:4096 ud:1024"
vm_pair write_bw 90 tcp:18515 "ib_write_bw $po -n $PERF_ITERS" "ib_write_bw $po -n $PERF_ITERS $PVRDMA_PEER_IP" ||
    fail "ib_write_bw with the restarted peer failed ($PAIR_ERR)"
[ "$PVRDMA_VM" = 0 ] || perf_check write_bw 4 || fail "ib_write_bw with the restarted peer: no result ($PAIR_ERR)"
! dmesg | grep -E 'WARNING:|BUG:|refcount' || fail "kernel warnings"
