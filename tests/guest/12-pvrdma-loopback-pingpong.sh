# rc/ud/srq pingpong over vmw_pvrdma0 inside one VM (client -> 127.0.0.1),
# with -c (the first byte of every page checked; "invalid data" fails the
# run) and several sizes.
# vms: 1
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)
log "vmw_pvrdma0 RoCE v2 GID index for $PVRDMA_IP: $gidx"
loopback_pingpongs vmw_pvrdma0 "$gidx"
