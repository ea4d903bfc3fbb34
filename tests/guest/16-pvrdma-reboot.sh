# Warm reboot with the driver loaded: boot 1 runs a pingpong, starts an
# ib_send_bw that is still moving data, and reboots at once ("reboot -f": no
# module unload, the device is reset by the machine reset while QPs are
# active and MRs mapped).  Boot 2 must find the device as new: probe
# messages, port ACTIVE, GID, rc/ud pingpongs with -c (pp_invalid), and
# the data check: the verbs checker (every byte of SEND, WRITE, READ and
# atomics both ways) over the device's loopback path.
# (run-vm.sh --reboot runs the same script again after the reset; the boot
# number is kept in CMOS RAM, see boot_count.)
# vms: 1
# timeout: 300
# requires: pvrdma
# vm-args: --reboot
. /usr/lib/pvrdma/tests-common.sh

D=vmw_pvrdma0
boot=$(boot_count)
log "boot $((boot + 1))"
wait_dev $D 15 || { dmesg | grep -i pvrdma; fail "boot $((boot + 1)): $D not registered/ACTIVE"; }
gidx=$(roce_v2_gid $D)
o="-d $D -g $gidx -n $PP_ITERS -r $PP_RXDEPTH -c"
case $boot in
0)
    pair rc-4096 60 "ibv_rc_pingpong $o -s 4096" "ibv_rc_pingpong $o -s 4096 127.0.0.1" ||
        fail "boot 1: pingpong failed ($PAIR_ERR)"
    # a transfer in progress at the reset: a bandwidth run of 30 s
    po="-d $D -x $gidx -F -D 30 -s 65536"
    ib_send_bw $po > /tmp/bw.srv 2>&1 &
    wait_port 18515 10 || { cat /tmp/bw.srv; fail "boot 1: ib_send_bw server not listening"; }
    ib_send_bw $po 127.0.0.1 > /tmp/bw.cli 2>&1 &
    cpid=$!
    # both QPs connected (server RTR, client RTS): the client is sending (its output is buffered)
    i=0
    until [ "$(rdma resource show qp 2>/dev/null | grep -cE 'type RC state (RTR|RTS)')" -ge 2 ]; do
        i=$((i + 1))
        if [ $i -ge 150 ] || ! kill -0 $cpid 2>/dev/null; then
            rdma resource show qp; cat /tmp/bw.srv /tmp/bw.cli; fail "boot 1: ib_send_bw did not start"
        fi
        sleep 0.1
    done
    rdma resource show qp | sed 's/^/  /'
    sleep 1
    kill -0 $cpid 2>/dev/null || { cat /tmp/bw.srv /tmp/bw.cli; fail "boot 1: ib_send_bw ended early"; }
    boot_count 1
    [ "$(boot_count)" = 1 ] || fail "boot 1: cannot keep the boot count in CMOS"
    log "rebooting with ib_send_bw running"
    reboot -f
    sleep 30
    fail "boot 1: still running 30 s after reboot -f" ;;
1)
    boot_count 0
    dmesg | grep -q 'vmw_pvrdma .*device version 20,' || fail "boot 2: no 'device version 20' in dmesg"
    dmesg | grep -q 'vmw_pvrdma .*attached to device' || fail "boot 2: no 'attached to device' in dmesg"
    ! dmesg | grep -E 'vmw_pvrdma .*(failed|error|[Ee]rror)' || fail "boot 2: vmw_pvrdma reported errors"
    bad=0
    pair rc-65536 60 "ibv_rc_pingpong $o -s 65536" "ibv_rc_pingpong $o -s 65536 127.0.0.1" || bad=1
    pair ud-1024 60 "ibv_ud_pingpong $o -s 1024" "ibv_ud_pingpong $o -s 1024 127.0.0.1" || bad=1
    vc_loopback vc-rc 120 200 -n 200 -S 65536 || bad=1
    [ $bad = 0 ] || fail "boot 2: data failed after the reboot ($PAIR_ERR)"
    log "device works after the reboot" ;;
*)
    boot_count 0
    fail "boot $((boot + 1)): unexpected third boot (the guest rebooted by itself?)" ;;
esac
