# NVMe over Fabrics between two VMs over the co-resident transport: VM 0
# exports a RAM disk with nvmet-rdma, VM 1 connects with nvme-rdma (kernel
# rdma_cm over the GSI QPs, fast-registration MRs, SEND_WITH_INV, RDMA
# READ/WRITE between the two guests' memory).  VM 1 writes 8 MiB through the
# fabric and reads it back; VM 0 checks its disk holds the same bytes.
# While connected, each VM's rdma_cm IDs of the connection are on
# vmw_pvrdma0, and the host records both devices' QPs over QMP:
# 29-pvrdma-2vm-nvmeof.host wants the queues' RC QPs in RTS on the
# co-resident path in each VM and no RC QP on another path.
# vms: 2
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

nqn=nqn.2026-11.org.qemu:pvrdma-2vm
# 8 MiB that both VMs generate alike, different in every block
pattern() { seq 1 2000000 | head -c 8388608; }
wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
if [ "$PVRDMA_VM" = 0 ]; then
    nvmet_export "$nqn"
    barrier target-up 60
    barrier connected 90
    cm_ids_on vmw_pvrdma0 "src-addr $PVRDMA_IP:4420 dst-addr $PVRDMA_PEER_IP:"
    barrier io-done 180
    pattern > /tmp/pattern
    dd if=/dev/ram0 of=/tmp/disk bs=64k count=128 2>/dev/null
    cmp /tmp/pattern /tmp/disk || fail "target RAM disk differs from what VM 1 wrote"
    log "target disk holds the 8 MiB VM 1 wrote"
    barrier checked 60
else
    barrier target-up 60
    nvme_connect "$nqn" "$PVRDMA_PEER_IP"
    cm_ids_on vmw_pvrdma0 "dst-addr $PVRDMA_PEER_IP:4420( |\$)"
    host_query nvme
    barrier connected 60
    pattern > /tmp/pattern
    run dd if=/tmp/pattern of=/dev/nvme0n1 bs=1M oflag=direct 2>/dev/null
    run dd if=/dev/nvme0n1 of=/tmp/back bs=256k count=32 iflag=direct 2>/dev/null
    cmp /tmp/pattern /tmp/back || fail "data read back through nvme-rdma differs"
    log "nvme-rdma: 8 MiB written to VM 0 and read back, identical"
    echo 1 > /sys/class/nvme/nvme0/delete_controller || fail "disconnect"
    barrier io-done 60
    barrier checked 120
fi
kernel_clean
log "nvme-rdma between two VMs: ok"
