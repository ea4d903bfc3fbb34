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

[ "$PVRDMA_DEVICE" = "$([ "$PVRDMA_VM" = 0 ] && echo 1 || echo 0)" ] ||
    fail "VM $PVRDMA_VM has PVRDMA_DEVICE=$PVRDMA_DEVICE (run-vm.sh --nic vmxnet3,virtio)"
roce_setup
ping_peer
run modprobe nvme_rdma
run modprobe nvmet_rdma
barrier roce-up 120

MIB=8
# the rxe packets that 8 MiB need at a path MTU of 1024
MIN_PKTS=$((MIB * 1024))

# rxe_count NAME: rxe0's hw counter NAME (0 if absent)
rxe_count() {
    cat "/sys/class/infiniband/rxe0/ports/1/hw_counters/$1" 2>/dev/null || echo 0
}

# cm_ids_on DEV REGEX: this VM's rdma_cm IDs whose line matches REGEX
# (e.g. "dst-addr 10.0.0.2:4420 "); fails unless there is one and all are
# on DEV
cm_ids_on() {
    _ids=$(rdma resource show cm_id 2>/dev/null | grep -E "$2")
    echo "$_ids" | sed 's/^/  /'
    [ -n "$_ids" ] || fail "no rdma_cm ID matches '$2'"
    _n=$(echo "$_ids" | grep -vc "^link $1/")
    [ "$_n" = 0 ] || fail "$_n rdma_cm IDs matching '$2' are not on $1"
    log "$(echo "$_ids" | wc -l) rdma_cm IDs ($2), all on $1"
}

# initiator NQN ADDR: connect to ADDR:4420 over ROCE_DEV, write MIB MiB
# of random data with O_DIRECT, read them back with O_DIRECT, compare.
# Leaves /tmp/pattern and the controller connected.
initiator() {
    log "connect: nqn=$1,transport=rdma,traddr=$2,trsvcid=4420"
    # the write returns once the admin and I/O queues are connected
    timeout 60 sh -c "echo 'nqn=$1,transport=rdma,traddr=$2,trsvcid=4420' > /dev/nvme-fabrics" ||
        { _c=$?; dmesg | tail -20; fail "nvme connect over rdma to $2 failed (rc $_c; 124 = timeout)"; }
    _i=0
    while [ ! -b /dev/nvme0n1 ] && [ $_i -lt 100 ]; do sleep 0.2; _i=$((_i + 1)); done
    [ -b /dev/nvme0n1 ] || { dmesg | tail -20; fail "no /dev/nvme0n1 after connect"; }
    _t=$(cat /sys/class/nvme/nvme0/transport)
    [ "$_t" = rdma ] || fail "nvme0's transport is '$_t', not rdma"
    log "nvme0: transport $_t, $(cat /sys/class/nvme/nvme0/address), $(($(cat /sys/block/nvme0n1/size) / 2048)) MiB"
    cm_ids_on "$ROCE_DEV" "dst-addr $2:4420( |\$)"
    run dd if=/dev/urandom of=/tmp/pattern bs=64k count=$((MIB * 16)) 2>/dev/null
    log "write $MIB MiB (O_DIRECT, 1 MiB I/Os)"
    timeout 90 dd if=/tmp/pattern of=/dev/nvme0n1 bs=1M oflag=direct 2>/tmp/dd.err ||
        { cat /tmp/dd.err; dmesg | tail -20; fail "O_DIRECT write to nvme0n1 failed or timed out"; }
    log "read back (O_DIRECT, 256 KiB I/Os)"
    timeout 90 dd if=/dev/nvme0n1 of=/tmp/back bs=256k count=$((MIB * 4)) iflag=direct 2>/tmp/dd.err ||
        { cat /tmp/dd.err; dmesg | tail -20; fail "O_DIRECT read from nvme0n1 failed or timed out"; }
    cmp /tmp/pattern /tmp/back || fail "the $MIB MiB read back through nvme-rdma differ from those written"
    log "nvme-rdma: $MIB MiB written to $2 and read back, identical"
}

# disconnect: delete nvme0 if there is one (bounded)
disconnect() {
    [ -e /sys/class/nvme/nvme0 ] || return 0
    timeout 60 sh -c 'echo 1 > /sys/class/nvme/nvme0/delete_controller' || fail "disconnect"
    _i=0
    while [ -e /sys/class/nvme/nvme0 ] && [ $_i -lt 50 ]; do sleep 0.2; _i=$((_i + 1)); done
    [ ! -e /sys/class/nvme/nvme0 ] || fail "nvme0 still there after delete_controller"
    log "disconnected"
}

# nvme_step TARGET_VM NQN: one direction.  The target exports, the
# initiator does its I/O; then the target sends its disk's md5 to VM 0
# (the only direction barrier_send carries), or VM 1 sends the pattern's
# md5 when it is the initiator; VM 0 compares.  The barriers are passed
# even when a side failed, so the other side does not wait for nothing.
nvme_step() {
    _tvm=$1 _nqn=$2 _r=0
    [ "$PVRDMA_DEVICE" = 1 ] && _who=pvrdma || _who=rxe
    _rx0=$(rxe_count rcvd_pkts) _tx0=$(rxe_count sent_pkts)
    if [ "$PVRDMA_VM" = "$_tvm" ]; then
        ( nvmet_export "$_nqn" ) || _r=1
        barrier "$_nqn-up" 90
        log "target ($_who): waiting for the initiator's I/O"
        barrier "$_nqn-io" 300
        # the initiator is still connected: its queues' IDs are here
        ( cm_ids_on "$ROCE_DEV" "src-addr $PVRDMA_IP:4420 dst-addr $PVRDMA_PEER_IP:" ) || _r=1
        barrier "$_nqn-checked" 60
        _sum=$(head -c $((MIB * 1048576)) /dev/ram0 | md5sum | cut -d' ' -f1)
        log "target disk: md5 $_sum"
    else
        barrier "$_nqn-up" 90
        ( initiator "$_nqn" "$PVRDMA_PEER_IP" ) || _r=1
        _sum=$(md5sum < /tmp/pattern 2>/dev/null | cut -d' ' -f1)
        _sum=${_sum:-none}
        barrier "$_nqn-io" 60
        barrier "$_nqn-checked" 60
        ( disconnect ) || _r=1
    fi
    if [ "$PVRDMA_VM" = 0 ]; then
        _peer=$(barrier_recv "$_nqn-sum" 60)
        if [ "$_peer" != "$_sum" ]; then
            [ -s /tmp/step.err ] || echo "md5 of the written data / target disk: $_sum here, $_peer in VM 1" > /tmp/step.err
            log "md5 here $_sum, VM 1 $_peer: DIFFERENT"
            _r=1
        else
            log "the target's disk holds the $MIB MiB the initiator wrote (md5 $_sum)"
        fi
    else
        barrier_send "$_nqn-sum" 60 "$_sum"
    fi
    if [ "$PVRDMA_DEVICE" = 0 ]; then
        # soft-RoCE's view: the data went over the wire as RoCEv2 packets
        _rx=$(( $(rxe_count rcvd_pkts) - _rx0 )) _tx=$(( $(rxe_count sent_pkts) - _tx0 ))
        log "rxe0: $_rx RoCEv2 packets received, $_tx sent during this step"
        if [ "$_rx" -lt $MIN_PKTS ] || [ "$_tx" -lt $MIN_PKTS ]; then
            [ -s /tmp/step.err ] || echo "rxe0 received $_rx and sent $_tx packets, expected at least $MIN_PKTS each way" > /tmp/step.err
            _r=1
        fi
    fi
    return $_r
}

nqn_rxe=nqn.2026-11.org.qemu:roce-target-rxe
nqn_pvrdma=nqn.2026-11.org.qemu:roce-target-pvrdma
step target-rxe nvme_step 1 "$nqn_rxe"
step target-pvrdma nvme_step 0 "$nqn_pvrdma"
step kernel-clean kernel_clean
roce_diag
steps_done
