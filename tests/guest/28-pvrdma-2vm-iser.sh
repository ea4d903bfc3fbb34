# iSCSI over RDMA (iSER) between two VMs over vmw_pvrdma0: VM 0 exports a
# 16 MiB RAM disk (/dev/ram0, brd, through LIO's iblock backend) with an
# iSER portal (ib_isert), VM 1 logs in with open-iscsi's iscsistart over
# the iser transport (ib_iser), writes 8 MiB of random data to the disk
# with O_DIRECT, reads it back with O_DIRECT and compares; VM 0 then reads
# /dev/ram0 itself: the target's copy must have the md5 of what VM 1
# wrote (sent over the barrier).  Both are kernel RDMA clients with their
# own rdma_cm connections (port 3260), each on vmw_pvrdma0 (rdma resource
# show cm_id); the host records both devices' QPs over QMP while the
# session is up, and 28-pvrdma-2vm-iser.host wants the session's RC QP
# in RTS on the co-resident path in each VM and no RC QP on another path.
# vms: 2
# timeout: 300
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

IQN=iqn.2026-11.org.qemu.pvrdma:target

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
if [ "$PVRDMA_VM" = 0 ]; then
    iser_target "$IQN" "$PVRDMA_IP" brd
    barrier iser-target 60
    want=$(barrier_recv iser-done 200)
    [ "$want" != none ] || fail "VM 1 did not finish its I/O"
    ulp_cm_ids ib_isert vmw_pvrdma0 "src-addr $PVRDMA_IP:3260 dst-addr $PVRDMA_PEER_IP:"
    got=$(iser_backstore_md5)
    [ "$got" = "$want" ] ||
        fail "the target's /dev/ram0 holds md5 $got, the initiator wrote md5 $want"
    log "the target's backstore holds the $ISER_MIB MiB written (md5 $got)"
    barrier iser-checked 60
    iser_target_clean
    exit 0
fi
barrier iser-target 60
iser_login "$IQN" "$PVRDMA_PEER_IP"
ulp_cm_ids ib_iser vmw_pvrdma0 "dst-addr $PVRDMA_PEER_IP:3260( |\$)"
host_query iser
iser_io "$ISER_DISK"
barrier_send iser-done 60 "$(md5sum < /tmp/iser-pattern | cut -d' ' -f1)"
barrier iser-checked 60
