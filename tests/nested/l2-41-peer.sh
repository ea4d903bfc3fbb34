#!/bin/sh
# L2 side of 41-hca-l2-native.sh: clients against the servers in L1.
. /usr/lib/pvrdma/tests-common.sh
wait_dev vmw_pvrdma0 30 || fail "vmw_pvrdma0 not registered/ACTIVE"
ip addr add 10.0.1.2/24 dev eth0 || fail "ip addr add 10.0.1.2/24 dev eth0"
g=$(wait_gid vmw_pvrdma0 10.0.1.2 "RoCE v2" 20) || { dump_gids vmw_pvrdma0; fail "no GID for 10.0.1.2"; }
log "vmw_pvrdma0 GID index $g (10.0.1.2)"
barrier l2-up 120
o="-d vmw_pvrdma0 -g $g -n 50 -c"
bad=0
vm_pair rc 180 tcp:18515 "" "ibv_rc_pingpong $o -s 4096 10.0.0.1" || bad=$((bad + 1))
vm_pair ud 180 tcp:18515 "" "ibv_ud_pingpong $o -s 1024 10.0.0.1" || bad=$((bad + 1))
# perftest: every iteration completed (exit 0); its figures come from the
# TSC, which is not trustworthy two TCG levels down, so they are only shown
vm_pair write_bw 180 tcp:18515 "" "ib_write_bw -d vmw_pvrdma0 -x $g -F -n 200 -s 65536 10.0.0.1" ||
    bad=$((bad + 1))
log "write_bw: $(perf_result /tmp/write_bw.out)"
vm_pair read_lat 180 tcp:18515 "" "ib_read_lat -d vmw_pvrdma0 -x $g -F -n 100 -s 64 10.0.0.1" ||
    bad=$((bad + 1))
log "read_lat: $(perf_result /tmp/read_lat.out)"
# rdma_cm out: rping to the server in L1, from the RoCE address
vm_pair rping 180 cm:10.0.0.1:7176 "" "rping -c -a 10.0.0.1 -I 10.0.1.2 -p 7176 -C 5 -S 4096 -V -v" ||
    bad=$((bad + 1))
n=$(grep -c '^ping data' /tmp/rping.out)
[ "$n" = 5 ] || { bad=$((bad + 1)); log "rping: $n of 5 pings"; }
log "rping: $n pings of 4096 bytes to 10.0.0.1, each validated (-V)"
# rdma_cm over UD (SIDR) out: udaddy to the server in L1
vm_pair udaddy 120 cm:10.0.0.1:7174 "" "udaddy -s 10.0.0.1 -b 10.0.1.2 -C 5" ||
    bad=$((bad + 1))
grep -q 'data transfers complete' /tmp/udaddy.out || { bad=$((bad + 1)); log "udaddy: no transfers"; }
# rdma_cm in: servers here, reached through the device's cm-listen=7174:7175
vm_pair_rev rping_in 120 cm:7175 "rping -s -a 10.0.1.2 -p 7175 -C 5 -S 4096 -V" "" ||
    bad=$((bad + 1))
vm_pair_rev udaddy_in 60 cm:10.0.1.2:7174 "udaddy -b 10.0.1.2 -C 5" "" ||
    bad=$((bad + 1))
grep -q 'data transfers complete' /tmp/udaddy_in.out ||
    { bad=$((bad + 1)); log "udaddy_in: no transfers"; }
# rdma_xclient (IBV_SEND_INLINE, lkey 0) to rdma_xserver on L1's 10.0.1.1
vm_pair xrc 120 cm:7471 "" "rdma_xclient -s 10.0.1.1 -c r" || bad=$((bad + 1))
grep -q 'rdma_xclient: end 0' /tmp/xrc.out || { bad=$((bad + 1)); log "xrc: client did not end 0"; }
# the verbs checker to the server in L1, from the RoCE address
vm_pair verbs 300 cm:10.0.0.1:7177 "" \
    "pvrdma-verbs-check -p 7177 -b 10.0.1.2 -n 200 -S 65536 -T 60 client 10.0.0.1" &&
    _vc_judge verbs 200 || bad=$((bad + 1))
[ "$bad" = 0 ] || fail "$bad of 10 runs against L1 failed (first: $PAIR_ERR)"
log "all 10 runs against the native endpoint passed"
