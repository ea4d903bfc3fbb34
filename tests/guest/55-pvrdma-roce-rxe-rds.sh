# RDS (Reliable Datagram Sockets) over its RDMA transport (rds_rdma) over
# RoCEv2 between the device and Linux soft-RoCE: VM 0 has vmxnet3 + the
# pvrdma device, VM 1 virtio-net + rdma_rxe (rxe0), on one QEMU netdev,
# no co-resident transport.  rds_rdma is a kernel RDMA client: rdma_cm over
# the GSI QPs, an RC QP per RDS connection, SENDs of RDS fragments.  Two
# steps (the step name says which device receives), each with its own RDS
# connection, set up by the sending side (rds_rdma is reloaded in both VMs
# in between):
#   to-pvrdma  VM 1 (rxe0) sends, VM 0 (vmw_pvrdma0) receives
#   to-rxe     VM 0 (vmw_pvrdma0) sends, VM 1 (rxe0) receives
# Each sends messages of 64, 8000 and 60000 bytes (one RC SEND up to many
# RDS fragments); the receiver's rds-xfer checks that each arrives once,
# in order, byte for byte (tests/guest/tools/rds-xfer.c; both ends ask for
# the IB transport, SO_RDS_TRANSPORT, and fail rather than fall back to
# TCP).  That it went over RDMA: each side logs "RDS/IB: Active|Passive
# conn connected" for the step's connection (the sender the active side),
# rds_rdma's connected rdma_cm ID to the peer sits on vmw_pvrdma0 in VM 0
# and on rxe0 in VM 1, and rxe0's packet counters grew by at least the
# packets that the messages' bytes need at its MTU, in the step's
# direction.
# vms: 2
# timeout: 240
# requires: pvrdma
# vm-args: --nic vmxnet3,virtio
. /usr/lib/pvrdma/tests-common.sh

roce_rxe_vms
rds_up "$ROCE_DEV"
barrier roce-up 120

# rds_step RECV_VM: the messages from the other VM to VM RECV_VM
# (rds_xfers), then this side's checks of the connection they took
rds_step() {
    _r=0 _mark=$(rxe_pkts) _dm=$(dmesg | wc -l)
    rds_xfers "$1" "to$1-" || _r=1
    _side=$([ "$PVRDMA_VM" = "$1" ] && echo Passive || echo Active)
    _conn=$(dmesg | sed -n "$((_dm + 1)),\$p" | grep "RDS/IB: .* conn connected")
    echo "$_conn" | sed 's/^/  dmesg: /'
    echo "$_conn" | grep -q "RDS/IB: $_side conn connected <::ffff:$PVRDMA_IP,::ffff:$PVRDMA_PEER_IP," || {
        [ -s /tmp/step.err ] || echo "no 'RDS/IB: $_side conn connected <::ffff:$PVRDMA_IP,::ffff:$PVRDMA_PEER_IP,...>' in dmesg" > /tmp/step.err
        _r=1
    }
    ( ulp_cm_ids rds_rdma "$ROCE_DEV" "dst-addr $PVRDMA_PEER_IP:" ) || _r=1
    if [ "$PVRDMA_DEVICE" = 0 ]; then
        if [ "$PVRDMA_VM" = "$1" ]; then
            ( rxe_grew "$_mark" "$RDS_BYTES" 0 ) || _r=1
        else
            ( rxe_grew "$_mark" 0 "$RDS_BYTES" ) || _r=1
        fi
    fi
    return $_r
}

# rds_reload: both VMs unload rds_rdma (its connections go) and load it
# again, which must take this VM's device anew
rds_reload() {
    barrier rds-unload 60
    _added=$(dmesg | grep -c "RDS/IB: $ROCE_DEV: added")
    timeout 60 rmmod rds_rdma || fail "rmmod rds_rdma failed or hung (rc $?)"
    barrier rds-unloaded 90
    run modprobe rds_rdma
    [ "$(dmesg | grep -c "RDS/IB: $ROCE_DEV: added")" -gt "$_added" ] ||
        fail "rds_rdma, loaded again, did not add $ROCE_DEV"
    rdma resource show cm_id | grep -F "comm [rds_rdma] " | grep -v ' state LISTEN ' &&
        fail "rds_rdma has connected rdma_cm IDs right after loading"
    barrier rds-reloaded 60
}

step to-pvrdma rds_step 0
step reload rds_reload
step to-rxe rds_step 1
step kernel-clean kernel_clean
roce_diag
barrier rds-end 60
steps_done
