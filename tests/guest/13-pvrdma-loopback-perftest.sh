# perftest ib_send_lat and ib_write_bw over vmw_pvrdma0 inside one VM.
# vms: 1
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)
loopback_perftest vmw_pvrdma0 "$gidx"
