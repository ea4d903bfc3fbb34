# A kernel RDMA application on the device: NVMe over Fabrics (nvmet-rdma
# target and nvme-rdma host in one VM, over the device's loopback).  It
# uses rdma_cm through the GSI QP, fast-registration MRs, SEND_WITH_INV and
# RDMA READ/WRITE from the kernel.  Data written through the fabric is read
# back and compared, and checked on the target's RAM disk directly.  The
# rdma_cm IDs of both ends must be on vmw_pvrdma0.
# vms: 1
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
nqn=nqn.2026-11.org.qemu:pvrdma-test
nvmet_export "$nqn"
nvme_connect "$nqn" "$PVRDMA_IP"
# both ends of every queue's connection, in this VM, on the device
cm_ids_on vmw_pvrdma0 "dst-addr $PVRDMA_IP:4420( |\$)"
cm_ids_on vmw_pvrdma0 "src-addr $PVRDMA_IP:4420 dst-addr $PVRDMA_IP:"

# 4 MiB of pseudo-random data through the fabric, in I/Os of up to 512 KiB
run dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 2>/dev/null
run dd if=/tmp/pattern of=/dev/nvme0n1 bs=512k oflag=direct 2>/dev/null
run dd if=/dev/nvme0n1 of=/tmp/back bs=128k count=32 iflag=direct 2>/dev/null
cmp /tmp/pattern /tmp/back || fail "data read back through nvme-rdma differs"
# and what landed on the target's disk itself
dd if=/dev/ram0 of=/tmp/disk bs=64k count=64 2>/dev/null
cmp /tmp/pattern /tmp/disk || fail "target RAM disk content differs"
log "nvme-rdma: 4 MiB written and read back, identical"

echo 1 > /sys/class/nvme/nvme0/delete_controller || fail "disconnect"
dmesg | grep -iE "nvme|nvmet" | tail -5
kernel_clean
log "nvme-rdma over vmw_pvrdma0: ok"
