#!/bin/sh
# L1: two L2 guests, both with pvrdma on rxe0 (ibdev=rxe0), talk to each
# other through the host device: ibv_rc_pingpong and ibv_ud_pingpong with
# -c ("invalid data" fails; one byte per page), ib_send_bw, and over RDMA
# CM (translated by the devices into host rdma_cm; guest 0 serves through
# cm-listen): rping with data checked, ib_write_bw -R, and the data check,
# pvrdma-verbs-check (every byte of SEND, WRITE, READ and atomics both
# ways, 200 messages up to 64 KiB).  Slow (two nested guests at once:
# ~9 min), so not part of CI; run with scripts/nested/run-tests.sh 42.
# Addresses: L2 0 is 10.0.0.2 / RoCE 10.0.1.2, L2 1 is 10.0.0.3 / 10.0.1.3;
# L1 gives br0 both RoCE addresses (/32) so rxe0 has their GIDs.
# timeout: 2400
. /usr/lib/pvrdma/guest-lib.sh
for a in 10.0.1.2 10.0.1.3; do
    /usr/bin/ip addr add $a/32 dev br0 || fail "ip addr add $a/32 dev br0"
done
mem="-object memory-backend-memfd,id=mem,size=512M,share=on -machine memory-backend=mem"
for n in 0 1; do
    /usr/lib/pvrdma/l2.sh -n $n --mem 512M -e PVRDMA_VM=$n -e PVRDMA_PEER_IP=10.0.0.2 \
        -e BARRIER_PORT=18601 --device pvrdma,addr=4.1,ibdev=rxe0,cm-listen=7174:18515:18530 \
        --qemu-args "$mem" /usr/lib/pvrdma/nested/l2-42-pair.sh > /tmp/l2-$n.out 2>&1 &
    eval "pid$n=\$!"
done
wait "$pid0"; rc0=$?
wait "$pid1"; rc1=$?
cat /tmp/l2-0.out /tmp/l2-1.out
[ "$rc0" = 0 ] && [ "$rc1" = 0 ] ||
    fail "L2 guests failed (rc $rc0/$rc1): $(grep -h -m1 'FAIL' /tmp/l2-0.out /tmp/l2-1.out | head -n 1)"
log "two L2 guests over rxe0: rc, ud, send_bw, rping, write_bw -R, verbs checker ok"
