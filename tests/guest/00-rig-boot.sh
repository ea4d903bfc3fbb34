# Rig self-test: the guest boots, vmxnet3 has its address, the RDMA stack
# and vmw_pvrdma.ko load, and verbs userspace runs.  Needs no pvrdma device.
# vms: 1
# timeout: 120
. /usr/lib/pvrdma/tests-common.sh

log "kernel $(uname -r); $(sed -n 2,4p /etc/pvrdma-guest-manifest | tr '\n' ';')"
[ "$(readlink /sys/class/net/$PVRDMA_NETIF/device/driver | sed 's|.*/||')" = vmxnet3 ] ||
    fail "$PVRDMA_NETIF is not a vmxnet3 interface"
ip -4 addr show dev "$PVRDMA_NETIF" | grep -q "inet $PVRDMA_IP/$PVRDMA_PREFIX" ||
    fail "$PVRDMA_NETIF does not have $PVRDMA_IP/$PVRDMA_PREFIX: $(ip -4 addr show dev $PVRDMA_NETIF)"
[ "$(cat /sys/class/net/$PVRDMA_NETIF/operstate)" = up ] || fail "$PVRDMA_NETIF is not up"
for m in vmxnet3 ib_core ib_uverbs rdma_ucm ib_umad vmw_pvrdma; do
    grep -q "^$m " /proc/modules || fail "module $m is not loaded"
done
[ -c /dev/infiniband/rdma_cm ] || fail "no /dev/infiniband/rdma_cm"
run modprobe rdma_rxe
grep -q '^rdma_rxe ' /proc/modules || fail "rdma_rxe did not load"
run ibv_devices
ls -l /sys/bus/pci/drivers/vmw_pvrdma/ | sed 's/^/  /'
if [ "$PVRDMA_DEVICE" = 0 ]; then
    [ ! -e /sys/class/infiniband/vmw_pvrdma0 ] || fail "vmw_pvrdma0 exists without a pvrdma device"
    log "no pvrdma device in this VM (as configured): OK"
else
    wait_dev vmw_pvrdma0 10 || fail "pvrdma device present but vmw_pvrdma0 not ACTIVE"
fi
log "rig OK"
