#!/bin/sh
# shellcheck shell=sh
# Nested rig smoke test; runs in L1:
#     scripts/nested/run-l1.sh scripts/nested/smoke.sh [L2-TEST]
# 1. rxe0 (soft-RoCE on br0) is ACTIVE with a RoCE v2 GID for 10.0.0.1
# 2. ibv_rc_pingpong between two L1 processes over rxe0 (loopback)
# 3. our QEMU in L1 knows -device pvrdma and starts with it
# 4. one L2 guest on tap0 (vmxnet3 + pvrdma, default loopback mode): it
#    pings 10.0.0.1 (L1's br0) and runs L2-TEST (default
#    tests/guest/10-pvrdma-probe.sh); L1 pings it back while it runs
# shellcheck disable=SC1091
. /usr/lib/pvrdma/tests-common.sh
t0=$(cut -d' ' -f1 /proc/uptime)
l2test=${1:-/usr/lib/pvrdma/tests/10-pvrdma-probe.sh}

log "1. rxe0 on br0"
wait_dev rxe0 10 || fail "rxe0 not ACTIVE"
rdma link show
gidx=$(roce_v2_gid rxe0)
log "rxe0 RoCE v2 GID index for $PVRDMA_IP: $gidx"

log "2. ibv_rc_pingpong over rxe0, two L1 processes"
o="-d rxe0 -g $gidx -n ${PP_ITERS:-50} -s 4096 -c"
pair rc-4096 120 "ibv_rc_pingpong $o" "ibv_rc_pingpong $o 127.0.0.1" || fail "ibv_rc_pingpong over rxe0: $PAIR_ERR"

log "3. qemu-system-x86_64 -device pvrdma in L1"
qemu-system-x86_64 -nodefaults -device help | grep '^name "pvrdma"' || fail "L1's QEMU has no pvrdma device"
# start it for real (no guest): the device realizes next to its vmxnet3
timeout 60 qemu-system-x86_64 -L /usr/share/pvrdma/firmware -nodefaults -machine q35 -accel tcg \
    -display none -m 128M -netdev hubport,id=n0,hubid=0 \
    -device vmxnet3,netdev=n0,addr=4.0,multifunction=on,romfile= -device pvrdma,addr=4.1 \
    -S -monitor none -qmp stdio < /dev/null > /tmp/qmp.out 2>&1 &
qp=$!
sleep 3
kill -0 "$qp" 2>/dev/null || { cat /tmp/qmp.out; fail "QEMU with -device pvrdma did not start"; }
kill "$qp"; wait "$qp" 2>/dev/null
log "QEMU with -device pvrdma started: $(head -c 80 /tmp/qmp.out)"

log "4. L2 guest on tap0"
cat > /tmp/l2-smoke.sh <<EOS
. /usr/lib/pvrdma/guest-lib.sh
log "L2 up: \$PVRDMA_IP on \$PVRDMA_NETIF, L1 at \$PVRDMA_L1_IP"
ping -c 3 -W 10 "\$PVRDMA_L1_IP" || fail "L2 cannot ping L1 at \$PVRDMA_L1_IP"
log "running $(basename "$l2test")"
sh /l2-test.sh
EOS
# L1 pings the guest while it runs (first reply = the guest's network is up)
( i=0; while [ $i -lt 900 ]; do
      if ping -c 1 -W 1 10.0.0.2 > /dev/null 2>&1; then
          echo "[l1 $(cut -d' ' -f1 /proc/uptime)] L1 -> L2 10.0.0.2: ping ok"; break
      fi
      sleep 1; i=$((i + 1))
  done ) &
pp=$!
/usr/lib/pvrdma/l2.sh -v -n 0 -f "$l2test:/l2-test.sh" /tmp/l2-smoke.sh
rc=$?
kill "$pp" 2>/dev/null
[ "$rc" = 0 ] || fail "L2 guest on tap0 exited $rc"
log "smoke ok in $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "%.1f", b-a}')s"
