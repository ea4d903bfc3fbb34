# iSCSI over RDMA (iSER) on the device's loopback transport: one VM is the
# LIO target, with an iSER portal (ib_isert) on its own address, and the
# open-iscsi initiator (iscsistart over the iser transport, ib_iser)
# logging in to it: both ends of the connection on vmw_pvrdma0.  The
# LUN is /dev/ram0 (brd) through LIO's iblock backstore.  The initiator
# writes 8 MiB of random data with O_DIRECT, reads it back with O_DIRECT
# and compares; the backstore must hold the same bytes (/dev/ram0's md5
# against the data's).  That it is iSER over the device: the session's SCSI
# host is iscsi_iser's, the rdma_cm IDs of ib_iser (to :3260) and of
# ib_isert (from :3260) are on vmw_pvrdma0, and the host check
# (53-pvrdma-iser-loopback.host) finds the two RC QPs in RTS on the
# device's loopback path, recorded over QMP while the session was up.
# vms: 1
# timeout: 180
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

IQN=iqn.2026-11.org.qemu.pvrdma:loopback

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
iser_target "$IQN" "$PVRDMA_IP" brd
iser_login "$IQN" "$PVRDMA_IP"
# both ends of the session's connection, in this VM, on the device
ulp_cm_ids ib_iser vmw_pvrdma0 "dst-addr $PVRDMA_IP:3260( |\$)"
ulp_cm_ids ib_isert vmw_pvrdma0 "src-addr $PVRDMA_IP:3260 dst-addr $PVRDMA_IP:"
host_query iser
iser_io "$ISER_DISK"
want=$(md5sum < /tmp/iser-pattern | cut -d' ' -f1)
got=$(iser_backstore_md5)
[ "$got" = "$want" ] ||
    fail "the target's /dev/ram0 holds md5 $got, the initiator wrote md5 $want"
log "the target's backstore holds the $ISER_MIB MiB written (md5 $got)"
iser_target_clean
kernel_clean
