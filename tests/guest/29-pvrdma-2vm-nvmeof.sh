# NVMe over Fabrics between two VMs over the co-resident transport: VM 0
# exports a RAM disk with nvmet-rdma, VM 1 connects with nvme-rdma (kernel
# rdma_cm over the GSI QPs, fast-registration MRs, SEND_WITH_INV, RDMA
# READ/WRITE between the two guests' memory).  VM 1 writes 8 MiB through the
# fabric and reads it back; VM 0 checks its disk holds the same bytes.
# vms: 2
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

nqn=nqn.2026-11.org.qemu:pvrdma-2vm
# 8 MiB that both VMs generate alike, different in every block
pattern() { seq 1 2000000 | head -c 8388608; }
wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
grep -q " /sys/kernel/config " /proc/mounts ||
    run mount -t configfs none /sys/kernel/config
if [ "$PVRDMA_VM" = 0 ]; then
    run modprobe brd rd_nr=1 rd_size=16384
    run modprobe nvmet_rdma
    cfg=/sys/kernel/config/nvmet
    run mkdir "$cfg/subsystems/$nqn"
    echo 1 > "$cfg/subsystems/$nqn/attr_allow_any_host"
    run mkdir "$cfg/subsystems/$nqn/namespaces/1"
    echo /dev/ram0 > "$cfg/subsystems/$nqn/namespaces/1/device_path"
    echo 1 > "$cfg/subsystems/$nqn/namespaces/1/enable" || fail "namespace enable"
    run mkdir "$cfg/ports/1"
    echo rdma > "$cfg/ports/1/addr_trtype"
    echo ipv4 > "$cfg/ports/1/addr_adrfam"
    echo "$PVRDMA_IP" > "$cfg/ports/1/addr_traddr"
    echo 4420 > "$cfg/ports/1/addr_trsvcid"
    run ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn"
    log "nvmet: $nqn on rdma $PVRDMA_IP:4420"
    barrier target-up 60
    barrier io-done 180
    pattern > /tmp/pattern
    dd if=/dev/ram0 of=/tmp/disk bs=64k count=128 2>/dev/null
    cmp /tmp/pattern /tmp/disk || fail "target RAM disk differs from what VM 1 wrote"
    log "target disk holds the 8 MiB VM 1 wrote"
    barrier checked 60
else
    run modprobe nvme_rdma
    barrier target-up 60
    echo "nqn=$nqn,transport=rdma,traddr=$PVRDMA_PEER_IP,trsvcid=4420" > /dev/nvme-fabrics ||
        { dmesg | tail -20; fail "nvme connect over rdma to $PVRDMA_PEER_IP failed"; }
    for i in $(seq 50); do
        [ -b /dev/nvme0n1 ] && break
        sleep 0.2
    done
    [ -b /dev/nvme0n1 ] || { dmesg | tail -20; fail "no /dev/nvme0n1 after connect"; }
    [ "$(cat /sys/class/nvme/nvme0/transport)" = rdma ] || fail "nvme0 is not rdma"
    log "connected: $(cat /sys/class/nvme/nvme0/address)"
    pattern > /tmp/pattern
    run dd if=/tmp/pattern of=/dev/nvme0n1 bs=1M oflag=direct 2>/dev/null
    run dd if=/dev/nvme0n1 of=/tmp/back bs=256k count=32 iflag=direct 2>/dev/null
    cmp /tmp/pattern /tmp/back || fail "data read back through nvme-rdma differs"
    log "nvme-rdma: 8 MiB written to VM 0 and read back, identical"
    echo 1 > /sys/class/nvme/nvme0/delete_controller || fail "disconnect"
    barrier io-done 60
    barrier checked 120
fi
bad=$(dmesg | grep -v "module verification failed" |
    grep -E "BUG:|Oops:|WARNING:|pvrdma.*([Ee]rror|[Ff]ail)")
[ -z "$bad" ] || fail "kernel complained: $bad"
log "nvme-rdma between two VMs: ok"
