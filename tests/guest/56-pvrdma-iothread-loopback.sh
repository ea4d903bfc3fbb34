# The loopback transport with the device's data path in an IOThread
# (-object iothread,id=io0 -device pvrdma,...,iothread=io0; RoCEv2 off,
# which iothread= does not take yet): the verbs checker (every byte of
# SEND, SEND with immediate, WRITE, WRITE with immediate, READ, CAS and
# FAA both ways) in rc and ud mode and with 4 MiB messages (moved in
# pieces, one per pass), then ib_send_lat and ib_write_bw, whose figures
# the log keeps beside test 13's (the same without iothread=).  The host
# check wants the IOThread to have run the passes (x-iothread-runs,
# recorded over QMP after the runs).
# vms: 1
# timeout: 600
# requires: pvrdma
# vm-args: --device-args roce=off,iothread=io0
# qemu-args: -object iothread,id=io0
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)
bad=0
for m in rc ud; do
    vc_loopback "vc-$m" 180 200 -t "$m" -n 200 -S 65536 || bad=$((bad + 1))
done
vc_loopback vc-rc-4m 300 16 -t rc -n 16 -S 4194304 -s 4194304,3145729 || bad=$((bad + 1))
[ $bad = 0 ] || fail "$bad of 3 verbs checker runs failed (first: $PAIR_ERR)"
loopback_perftest vmw_pvrdma0 "$gidx"
host_query after
