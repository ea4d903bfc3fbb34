# Rig self-test: the loopback pingpong/perftest recipe of the pvrdma tests,
# run over soft-RoCE (rdma_rxe on the vmxnet3 interface).  Proves the guest
# userspace, GID lookup and the pair() helper; needs no pvrdma device.
# vms: 1
# timeout: 400
. /usr/lib/pvrdma/tests-common.sh

setup_rxe
wait_dev rxe0 10 || fail "rxe0 not ACTIVE"
gidx=$(roce_v2_gid rxe0)
log "rxe0 RoCE v2 GID index for $PVRDMA_IP: $gidx"
dump_gids rxe0
loopback_pingpongs rxe0 "$gidx"
loopback_perftest rxe0 "$gidx"
