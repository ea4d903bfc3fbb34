# iSCSI over RDMA (iSER) over RoCEv2 between the device and Linux soft-RoCE:
# VM 0 has vmxnet3 + the pvrdma device, VM 1 virtio-net + rdma_rxe (rxe0),
# on one QEMU netdev, no co-resident transport.  The LIO target with an
# iSER portal (ib_isert) on one side, open-iscsi's iscsistart over the
# iser transport (ib_iser) on the other, each a kernel RDMA client with
# rdma_cm over the GSI QPs, fast-registration MRs, RDMA READ (the target
# fetching written data) and WRITE (the target returning read data).  Two
# steps (the step name says where the target is):
#   target-rxe     VM 1 exports a 16 MiB LUN (/dev/ram0 through LIO's
#                  iblock) with an iSER portal on 10.0.0.2:3260 (rxe0),
#                  VM 0 logs in over vmw_pvrdma0
#   target-pvrdma  the reverse: VM 0 exports on 10.0.0.1:3260
#                  (vmw_pvrdma0), VM 1 logs in over rxe0
# In each the initiator writes 8 MiB of random data with O_DIRECT, reads it
# back with O_DIRECT and compares; the target's /dev/ram0 must hold the
# same bytes (its md5 against the data's).  That it is iSER over RoCEv2
# between the two devices: the session's SCSI host is iscsi_iser's, the
# rdma_cm IDs of ib_iser (to :3260) and ib_isert (from :3260) sit on
# vmw_pvrdma0 in VM 0 and on rxe0 in VM 1, and rxe0's packet counters
# grew by at least the packets that 8 MiB need each way.  Every login, I/O
# and barrier is bounded.
# vms: 2
# timeout: 300
# requires: pvrdma
# vm-args: --nic vmxnet3,virtio
. /usr/lib/pvrdma/tests-common.sh

roce_rxe_vms
iser_brd_ready
barrier roce-up 120

# iser_step TARGET_VM IQN: one direction.  The target exports, the
# initiator logs in and does its I/O; each side checks its rdma_cm IDs
# while the session is up.  Then VM 1 carries its md5 (the target's disk,
# or the data it wrote) to VM 0, which compares it with its own.  Each
# side's checks run in subshells: a failed one still passes the barriers,
# the peer does not wait for nothing.
iser_step() {
    _r=0 _mark=$(rxe_pkts)
    if [ "$PVRDMA_VM" = "$1" ]; then
        ( iser_target "$2" "$PVRDMA_IP" brd ) || _r=1
        barrier "$2-up" 90
        log "target on $ROCE_DEV: waiting for the initiator's login and I/O"
        barrier "$2-io" 300
        ( ulp_cm_ids ib_isert "$ROCE_DEV" "src-addr $PVRDMA_IP:3260 dst-addr $PVRDMA_PEER_IP:" ) || _r=1
        _sum=$(iser_backstore_md5)
        log "target's /dev/ram0: md5 $_sum"
    else
        barrier "$2-up" 90
        ( iser_login "$2" "$PVRDMA_PEER_IP" &&
          ulp_cm_ids ib_iser "$ROCE_DEV" "dst-addr $PVRDMA_PEER_IP:3260( |\$)" &&
          iser_io "$ISER_DISK" ) || _r=1
        _sum=$(md5sum < /tmp/iser-pattern 2>/dev/null | cut -d' ' -f1)
        barrier "$2-io" 60
    fi
    if [ "$PVRDMA_VM" = 0 ]; then
        _other=$(barrier_recv "$2-sum" 60)
        if [ "$_other" != none ] && [ "$_other" = "${_sum:-none}" ]; then
            log "the target's disk holds the $ISER_MIB MiB the initiator wrote (md5 $_sum)"
        else
            log "md5 here ${_sum:-none}, in VM 1 $_other: DIFFERENT"
            [ -s /tmp/step.err ] || echo "md5 of the data written / the target's disk: ${_sum:-none} in VM 0, $_other in VM 1" > /tmp/step.err
            _r=1
        fi
    else
        barrier_send "$2-sum" 60 "${_sum:-none}"
        # the data went over the wire as RoCEv2 packets, both ways
        ( rxe_grew "$_mark" $((ISER_MIB << 20)) $((ISER_MIB << 20)) ) || _r=1
    fi
    return $_r
}

step target-rxe iser_step 1 iqn.2026-11.org.qemu.pvrdma:roce-target-rxe
step target-pvrdma iser_step 0 iqn.2026-11.org.qemu.pvrdma:roce-target-pvrdma
step target-clean iser_target_clean
step kernel-clean kernel_clean
roce_diag
# neither VM powers off under the other's sessions before both checked
barrier iser-end 60
steps_done
