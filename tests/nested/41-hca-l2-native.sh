#!/bin/sh
# L1: an L2 guest whose pvrdma device uses rxe0 (ibdev=rxe0) against
# rdma-core programs running natively in L1: ibv_rc_pingpong and
# ibv_ud_pingpong with -c ("invalid data" fails; one byte per page, not a
# data check), ib_write_bw and ib_read_lat;
# then rdma_cm both ways: rping (-V: every payload checked) and udaddy (UD,
# SIDR) from L2 to a server in L1, and from L1 to a server in L2 (the
# device's cm-listen); rdma_xclient (an inline send) to rdma_xserver in L1;
# the data check: pvrdma-verbs-check from L2 to a server in L1 (every byte
# of every operation, both directions, through rdma_cm translation).
#
# Addresses: L2 is 10.0.0.2 on tap0 (the TCP exchange of the tools) and
# also 10.0.1.2, its RoCE address; L1 gives br0 10.0.1.2/32 too, so rxe0
# has that GID and the L2 guest's traffic can use it (what the device's
# warning tells a user to do).  L1's own GID is 10.0.0.1's.
# timeout: 1500
. /usr/lib/pvrdma/tests-common.sh
export PVRDMA_VM=0 BARRIER_PORT=18600
/usr/bin/ip addr add 10.0.1.2/32 dev br0 || fail "ip addr add 10.0.1.2/32 dev br0"
# 10.0.1.1: an L1 address that L2 reaches from its RoCE address, for the
# programs that cannot bind a source address (rdma_xclient)
/usr/bin/ip addr add 10.0.1.1/32 dev br0 || fail "ip addr add 10.0.1.1/32 dev br0"
# L2's ARP request for 10.0.1.1 comes from 10.0.1.2, which L1 has too: a
# packet from a local source address is dropped unless accept_local is set
echo 1 > /proc/sys/net/ipv4/conf/br0/accept_local ||
    fail "net.ipv4.conf.br0.accept_local=1"
gidx=$(wait_gid rxe0 10.0.0.1 "RoCE v2" 10) || fail "rxe0: no RoCE v2 GID for 10.0.0.1"
log "rxe0 GID index $gidx (10.0.0.1)"
/usr/lib/pvrdma/l2.sh -n 0 -e PVRDMA_VM=1 --mem 512M \
    --device pvrdma,addr=4.1,ibdev=rxe0,cm-listen=7174:7175 \
    --qemu-args "-object memory-backend-memfd,id=mem,size=512M,share=on -machine memory-backend=mem -d guest_errors -trace pvrdma_hv_modify_qp -trace pvrdma_hv_async -trace pvrdma_cm_*" \
    /usr/lib/pvrdma/nested/l2-41-peer.sh > /tmp/l2.out 2>&1 &
l2=$!
o="-d rxe0 -g $gidx -n 50 -c"
barrier l2-up 900 || fail "L2 guest did not come up"
bad=0
vm_pair rc 180 tcp:18515 "ibv_rc_pingpong $o -s 4096" "" || bad=$((bad + 1))
vm_pair ud 180 tcp:18515 "ibv_ud_pingpong $o -s 1024" "" || bad=$((bad + 1))
vm_pair write_bw 180 tcp:18515 "ib_write_bw -d rxe0 -x $gidx -F -n 200 -s 65536" "" || bad=$((bad + 1))
vm_pair read_lat 180 tcp:18515 "ib_read_lat -d rxe0 -x $gidx -F -n 100 -s 64" "" || bad=$((bad + 1))
# rdma_cm, L2 -> L1: the guest's REQ becomes a host rdma_cm connection
# (port 7176: the device listens on 10.0.1.2 port 7174 and 7175)
vm_pair rping 180 cm:10.0.0.1:7176 "rping -s -a 10.0.0.1 -p 7176 -C 5 -S 4096 -V" "" ||
    bad=$((bad + 1))
# rdma_cm over UD (SIDR), L2 -> L1; udaddy always uses port 7174
vm_pair udaddy 120 cm:10.0.0.1:7174 "udaddy -b 10.0.0.1 -C 5" "" || bad=$((bad + 1))
# rdma_cm, L1 -> L2: the device listens on 10.0.1.2 port 7175 for the guest
vm_pair_rev rping_in 120 cm:10.0.1.2:7175 "" \
    "rping -c -a 10.0.1.2 -I 10.0.0.1 -p 7175 -C 5 -S 4096 -V -v" || bad=$((bad + 1))
n=$(grep -c '^ping data' /tmp/rping_in.out)
[ "$n" = 5 ] || { bad=$((bad + 1)); log "rping_in: $n of 5 pings"; }
log "rping_in: $n pings of 4096 bytes from L1 to the L2 guest, each validated"
# rdma_cm over UD, L1 -> L2: the device's UDP listener on 10.0.1.2:7174
vm_pair_rev udaddy_in 60 cm:10.0.1.2:7174 "" "udaddy -s 10.0.1.2 -b 10.0.0.1 -C 5" ||
    bad=$((bad + 1))
grep -q 'data transfers complete' /tmp/udaddy_in.out ||
    { bad=$((bad + 1)); log "udaddy_in: no transfers"; }
# librdmacm's rdma_xclient in L2 posts its SEND with IBV_SEND_INLINE and
# lkey 0: the device reads it through the MR's host key
vm_pair xrc 120 cm:7471 "rdma_xserver -c r" "" || bad=$((bad + 1))
grep -q 'rdma_xserver: end 0' /tmp/xrc.out || { bad=$((bad + 1)); log "xrc: server did not end 0"; }
# the data check: the verbs checker, L2 (host HCA path) -> L1 (native
# rxe0), every byte of SEND, WRITE, READ and atomics both ways at once
vm_pair verbs 300 cm:10.0.0.1:7177 "pvrdma-verbs-check -p 7177 -b 10.0.0.1 -n 200 -S 65536 -T 60 server" "" &&
    _vc_judge verbs 200 || bad=$((bad + 1))
wait $l2; rc=$?
cat /tmp/l2.out
if [ "$rc" != 0 ] || [ "$bad" != 0 ]; then
    echo "--- L2 QEMU stderr (last 40 lines) ---"
    tail -n 40 /tmp/l2/l2-41-peer-tap0/qemu.stderr 2>/dev/null || ls -R /tmp/l2
fi
[ "$rc" = 0 ] || fail "L2 guest side failed (rc $rc): $(grep -m1 'FAIL' /tmp/l2.out)"
[ "$bad" = 0 ] || fail "$bad runs failed on the L1 side"
log "L2 over rxe0 <-> L1 native: rc, ud, write_bw, read_lat, rping and udaddy both ways, rdma_xclient, verbs checker ok"
