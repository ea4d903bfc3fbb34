#!/bin/sh
# L2 side of 42-hca-two-l2.sh: guest 0 serves, guest 1 is the client.
. /usr/lib/pvrdma/tests-common.sh
wait_dev vmw_pvrdma0 30 || fail "vmw_pvrdma0 not registered/ACTIVE"
me=10.0.1.$((PVRDMA_VM + 2))
ip addr add $me/24 dev eth0 || fail "ip addr add $me/24 dev eth0"
g=$(wait_gid vmw_pvrdma0 $me "RoCE v2" 20) || { dump_gids vmw_pvrdma0; fail "no GID for $me"; }
log "vmw_pvrdma0 GID index $g ($me)"
barrier l2-pair-up 1200
o="-d vmw_pvrdma0 -g $g -n 50 -c"
bad=0
vm_pair rc 240 tcp:18515 "ibv_rc_pingpong $o -s 4096" "ibv_rc_pingpong $o -s 4096 10.0.0.2" || bad=$((bad + 1))
vm_pair ud 240 tcp:18515 "ibv_ud_pingpong $o -s 1024" "ibv_ud_pingpong $o -s 1024 10.0.0.2" || bad=$((bad + 1))
vm_pair send_bw 240 tcp:18515 "ib_send_bw -d vmw_pvrdma0 -x $g -F -n 200 -s 65536" \
    "ib_send_bw -d vmw_pvrdma0 -x $g -F -n 200 -s 65536 10.0.0.2" || bad=$((bad + 1))
[ "$PVRDMA_VM" = 1 ] && log "send_bw: $(perf_result /tmp/send_bw.out)"
# RDMA CM: guest 0's listeners are reached through its device's cm-listen
vm_pair rping 240 cm:7174 "rping -s -a 10.0.1.2 -C 5 -S 4096 -V" \
    "rping -c -a 10.0.1.2 -C 5 -S 4096 -V -v" || bad=$((bad + 1))
if [ "$PVRDMA_VM" = 1 ]; then
    n=$(grep -c '^ping data' /tmp/rping.out)
    [ "$n" = 5 ] || { bad=$((bad + 1)); log "rping: $n of 5 pings"; }
    log "rping: $n pings of 4096 bytes, each validated (-V)"
fi
vm_pair write_bw_cm 240 cm:18515 "ib_write_bw -R -d vmw_pvrdma0 -x $g -F -n 200 -s 65536" \
    "ib_write_bw -R -d vmw_pvrdma0 -x $g -F -n 200 -s 65536 10.0.1.2" || bad=$((bad + 1))
[ "$PVRDMA_VM" = 1 ] && log "write_bw -R: $(perf_result /tmp/write_bw_cm.out)"
# the data check: the verbs checker, guest 0 serving through cm-listen
# (port VC_PORT), each side bound to its RoCE address
vm_pair verbs 300 "cm:$VC_PORT" "pvrdma-verbs-check -p $VC_PORT -b $me -n 200 -S 65536 -T 60 server" \
    "pvrdma-verbs-check -p $VC_PORT -b $me -n 200 -S 65536 -T 60 client 10.0.1.2" &&
    _vc_judge verbs 200 || bad=$((bad + 1))
[ "$bad" = 0 ] || fail "$bad of 6 runs between the L2 guests failed (first: $PAIR_ERR)"
log "all runs between the two L2 guests passed"
