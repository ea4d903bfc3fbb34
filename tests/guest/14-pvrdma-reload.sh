# Unload/reload vmw_pvrdma 20 times with a short rc pingpong after each load.
# (rmmod rather than "modprobe -r": busybox's modprobe -r also tries to
# remove the dependencies, fails on ib_uverbs/ib_core which rdma_ucm still
# holds, and returns 1 although vmw_pvrdma itself went away.)
# The host samples QEMU's RSS at "warm" (after 3 rounds) and "end"; run.sh
# fails the test if it grew by more than the limit below.
# vms: 1
# timeout: 900
# requires: pvrdma
# rss-growth: warm end 32768
. /usr/lib/pvrdma/tests-common.sh

ROUNDS=${RELOAD_ROUNDS:-20}
D=vmw_pvrdma0
wait_dev $D 15 || fail "$D not registered/ACTIVE"
host_sample initial
i=1
while [ $i -le "$ROUNDS" ]; do
    rmmod vmw_pvrdma || fail "round $i: rmmod vmw_pvrdma failed"
    ! grep -q '^vmw_pvrdma ' /proc/modules || fail "round $i: vmw_pvrdma still loaded"
    [ ! -e /sys/class/infiniband/$D ] || fail "round $i: $D still present after unload"
    modprobe vmw_pvrdma || fail "round $i: modprobe vmw_pvrdma failed"
    wait_dev $D 15 || { dmesg | tail -n 20; fail "round $i: $D not ACTIVE after reload"; }
    gidx=$(wait_gid $D "$PVRDMA_IP" "RoCE v2" 10) || { dump_gids $D; fail "round $i: no RoCE v2 GID"; }
    o="-d $D -g $gidx -n 10 -r $PP_RXDEPTH -s 4096 -c"
    pair "reload-$i" 60 "ibv_rc_pingpong $o" "ibv_rc_pingpong $o 127.0.0.1" || fail "round $i: pingpong failed"
    [ $i != 3 ] || host_sample warm
    i=$((i + 1))
done
host_sample end
n=$(dmesg | grep -c 'vmw_pvrdma .*attached to device')
log "$n attach messages in dmesg"
[ "$n" -ge "$ROUNDS" ] || fail "expected >= $ROUNDS 'attached to device' messages, got $n"
! dmesg | grep -E 'WARNING:|BUG:|refcount|leak' || fail "kernel warnings during reload"
