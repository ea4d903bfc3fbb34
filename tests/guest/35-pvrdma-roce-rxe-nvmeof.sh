# NVMe over RDMA over RoCEv2 between the device and Linux soft-RoCE: VM 0
# has vmxnet3 + the pvrdma device, VM 1 virtio-net + rdma_rxe (rxe0), on
# one QEMU netdev, no co-resident transport.  Kernel ULPs on both ends
# (rdma_cm over the GSI QPs, fast-registration MRs and SEND_WITH_INV from
# nvme-rdma, RDMA READ/WRITE from nvmet-rdma), every byte over the wire.
# Two steps (the step name says where the target is):
#   target-rxe     VM 1 exports a 16 MiB RAM disk with nvmet-rdma on
#                  10.0.0.2:4420 (rxe0), VM 0 connects over vmw_pvrdma0
#   target-pvrdma  the reverse: VM 0 exports on 10.0.0.1:4420
#                  (vmw_pvrdma0), VM 1 connects over rxe0
# In each the initiator writes 8 MiB of random data with O_DIRECT, reads it
# back with O_DIRECT and compares; the target's disk must hold the same
# bytes (its md5 against the initiator's).  That it really is RDMA over
# RoCEv2 between the two devices: the controller's transport is rdma, the
# rdma_cm IDs to/from :4420 sit on vmw_pvrdma0 in VM 0 and on rxe0 in VM 1,
# and rxe0's packet counters grew by at least the 8 MiB in 1 KiB packets
# (path MTU 1024) both ways.  Every connect, I/O and barrier is bounded.
# vms: 2
# timeout: 500
# requires: pvrdma
# vm-args: --nic vmxnet3,virtio
. /usr/lib/pvrdma/tests-common.sh

roce_rxe_vms
run modprobe nvme_rdma
run modprobe nvmet_rdma
barrier roce-up 120

# nvme_step TARGET_VM NQN: one direction.  The target exports, the
# initiator does its I/O; then the target sends its disk's md5 to VM 0
# (the only direction barrier_send carries), or VM 1 sends the pattern's
# md5 when it is the initiator; VM 0 compares.  The barriers are passed
# even when a side failed, so the other side does not wait for nothing.
nvme_step() {
    _tvm=$1 _nqn=$2 _r=0
    [ "$PVRDMA_DEVICE" = 1 ] && _who=pvrdma || _who=rxe
    _pk=$(rxe_pkts)
    if [ "$PVRDMA_VM" = "$_tvm" ]; then
        ( nvmet_export "$_nqn" ) || _r=1
        barrier "$_nqn-up" 90
        log "target ($_who): waiting for the initiator's I/O"
        barrier "$_nqn-io" 300
        # the initiator is still connected: its queues' IDs are here
        ( cm_ids_on "$ROCE_DEV" "src-addr $PVRDMA_IP:4420 dst-addr $PVRDMA_PEER_IP:" ) || _r=1
        barrier "$_nqn-checked" 60
        _sum=$(head -c $((NVME_MIB * 1048576)) /dev/ram0 | md5sum | cut -d' ' -f1)
        log "target disk: md5 $_sum"
    else
        barrier "$_nqn-up" 90
        ( nvme_io "$_nqn" "$PVRDMA_PEER_IP" "$ROCE_DEV" ) || _r=1
        _sum=$(md5sum < /tmp/pattern 2>/dev/null | cut -d' ' -f1)
        _sum=${_sum:-none}
        barrier "$_nqn-io" 60
        barrier "$_nqn-checked" 60
        ( nvme_disconnect ) || _r=1
    fi
    md5_agree "$_nqn" "$_sum" "the written data / the target's disk" || _r=1
    # soft-RoCE's view: the data went over the wire as RoCEv2 packets
    _b=$((NVME_MIB * 1048576))
    [ "$PVRDMA_DEVICE" = 1 ] || ( rxe_grew "$_pk" "$_b" "$_b" ) || _r=1
    return $_r
}

nqn_rxe=nqn.2026-11.org.qemu:roce-target-rxe
nqn_pvrdma=nqn.2026-11.org.qemu:roce-target-pvrdma
step target-rxe nvme_step 1 "$nqn_rxe"
step target-pvrdma nvme_step 0 "$nqn_pvrdma"
step kernel-clean kernel_clean
roce_diag
steps_done
