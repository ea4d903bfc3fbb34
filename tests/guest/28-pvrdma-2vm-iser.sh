# iSCSI over RDMA (iSER) between two VMs over vmw_pvrdma0: VM 0 exports a
# 16 MiB RAM disk through the kernel's LIO target with an iSER portal
# (ib_isert), VM 1 logs in with open-iscsi's iscsistart over the iser
# transport (ib_iser), writes 8 MiB of random data to the disk with
# O_DIRECT, reads it back with O_DIRECT and compares.  Both are kernel
# RDMA clients with their own rdma_cm connections (port 3260).
# vms: 2
# timeout: 300
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

IQN=iqn.2026-11.org.qemu.pvrdma:target

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
if [ "$PVRDMA_VM" = 0 ]; then
    iser_target "$IQN" "$PVRDMA_IP" ram
    barrier iser-target 60
    barrier iser-done 200
    iser_target_clean
    exit 0
fi
barrier iser-target 60
iser_login "$IQN" "$PVRDMA_PEER_IP"
iser_io "$ISER_DISK"
barrier iser-done 60
