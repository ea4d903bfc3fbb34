#!/bin/sh
# shellcheck shell=sh
# Two L2 guests at once (tap0: 10.0.0.2, tap1: 10.0.0.3); each pings L1
# (10.0.0.1) and the other guest.  Runs in L1:
#     scripts/nested/run-l1.sh scripts/nested/smoke-2l2.sh
# shellcheck disable=SC1091
. /usr/lib/pvrdma/guest-lib.sh
cat > /tmp/l2-ping.sh <<'EOS'
. /usr/lib/pvrdma/guest-lib.sh
ping -c 3 -W 10 "$PVRDMA_L1_IP" > /tmp/p1 2>&1 || { cat /tmp/p1; fail "cannot ping L1 $PVRDMA_L1_IP"; }
log "pinged L1 $PVRDMA_L1_IP"
# the other guest may still be booting: try for up to 10 minutes
i=0
until ping -c 1 -W 2 "$OTHER_IP" > /dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "cannot ping the other L2 guest $OTHER_IP"
done
log "pinged the other L2 guest $OTHER_IP"
# stay up until the other one has pinged us too
sleep 20
EOS
/usr/lib/pvrdma/l2.sh -n 0 -e OTHER_IP=10.0.0.3 /tmp/l2-ping.sh > /tmp/l2-0.out 2>&1 &
p0=$!
/usr/lib/pvrdma/l2.sh -n 1 -e OTHER_IP=10.0.0.2 /tmp/l2-ping.sh > /tmp/l2-1.out 2>&1 &
p1=$!
wait $p0; r0=$?
wait $p1; r1=$?
cat /tmp/l2-0.out /tmp/l2-1.out
if [ $r0 != 0 ] || [ $r1 != 0 ]; then fail "L2 guests exited $r0 and $r1"; fi
log "two L2 guests ok"
