# A kernel RDMA application on the device: NVMe over Fabrics (nvmet-rdma
# target and nvme-rdma host in one VM, over the device's loopback).  It
# uses rdma_cm through the GSI QP, fast-registration MRs, SEND_WITH_INV and
# RDMA READ/WRITE from the kernel.  Data written through the fabric is read
# back and compared, and checked on the target's RAM disk directly.
# vms: 1
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
run modprobe brd rd_nr=1 rd_size=16384         # /dev/ram0, 16 MiB
run modprobe nvmet_rdma
run modprobe nvme_rdma
grep -q " /sys/kernel/config " /proc/mounts ||
    run mount -t configfs none /sys/kernel/config

nqn=nqn.2026-11.org.qemu:pvrdma-test
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

# host side: what nvme-cli's "connect" writes
echo "nqn=$nqn,transport=rdma,traddr=$PVRDMA_IP,trsvcid=4420" > /dev/nvme-fabrics ||
    { dmesg | tail -20; fail "nvme connect over rdma failed"; }
for i in $(seq 50); do
    [ -b /dev/nvme0n1 ] && break
    sleep 0.2
done
[ -b /dev/nvme0n1 ] || { dmesg | tail -20; fail "no /dev/nvme0n1 after connect"; }
log "connected: $(cat /sys/class/nvme/nvme0/transport) $(cat /sys/class/nvme/nvme0/address)"
[ "$(cat /sys/class/nvme/nvme0/transport)" = rdma ] || fail "nvme0 is not an rdma controller"

# 4 MiB of pseudo-random data through the fabric, in I/Os of up to 512 KiB
run dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 2>/dev/null
run dd if=/tmp/pattern of=/dev/nvme0n1 bs=512k oflag=direct 2>/dev/null
run dd if=/dev/nvme0n1 of=/tmp/back bs=128k count=32 iflag=direct 2>/dev/null
cmp /tmp/pattern /tmp/back || fail "data read back through nvme-rdma differs"
# and what landed on the target's disk itself
dd if=/dev/ram0 of=/tmp/disk bs=64k count=64 2>/dev/null
cmp /tmp/pattern /tmp/disk || fail "target RAM disk content differs"
log "nvme-rdma: 4 MiB written and read back, identical"
ls /sys/class/infiniband/vmw_pvrdma0/ports/1/ >/dev/null

echo 1 > /sys/class/nvme/nvme0/delete_controller || fail "disconnect"
dmesg | grep -iE "nvme|nvmet" | tail -5
bad=$(dmesg | grep -v "module verification failed" |
    grep -E "BUG:|Oops:|WARNING:|pvrdma.*([Ee]rror|[Ff]ail)")
[ -z "$bad" ] || fail "kernel complained: $bad"
log "nvme-rdma over vmw_pvrdma0: ok"
