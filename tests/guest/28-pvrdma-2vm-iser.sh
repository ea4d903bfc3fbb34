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
T=/sys/kernel/config/target

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
run modprobe crc32c_generic
mount_configfs
if [ "$PVRDMA_VM" = 0 ]; then
    run modprobe ib_isert
    G=$T/iscsi/$IQN/tpgt_1
    mkdir -p "$T/core/rd_mcp_0/disk0" || fail "LIO: no rd_mcp backstore"
    echo rd_pages=4096 > "$T/core/rd_mcp_0/disk0/control"
    echo 1 > "$T/core/rd_mcp_0/disk0/enable" || fail "LIO: RAM disk not enabled"
    mkdir -p "$G/lun/lun_0" || fail "LIO: no target $IQN"
    ln -s "$T/core/rd_mcp_0/disk0" "$G/lun/lun_0/disk0" || fail "LIO: no LUN"
    mkdir "$G/np/$PVRDMA_IP:3260" || fail "LIO: no portal"
    echo 1 > "$G/np/$PVRDMA_IP:3260/iser" || fail "LIO: portal refuses iser"
    echo 0 > "$G/attrib/authentication"
    echo 1 > "$G/attrib/generate_node_acls"
    echo 0 > "$G/attrib/demo_mode_write_protect"
    echo 1 > "$G/enable" || fail "LIO: target portal group not enabled"
    rdma resource show cm_id | grep -q 'state LISTEN .*\[ib_isert\] src-addr '"$PVRDMA_IP"':3260' ||
        { rdma resource show cm_id; fail "ib_isert does not listen on $PVRDMA_IP:3260"; }
    barrier iser-target 60
    barrier iser-done 200
    ! dmesg | grep -E 'isert: .*(error|failed)|Login negotiation failed' ||
        fail "the target reported errors"
    exit 0
fi
run modprobe ib_iser
run modprobe sd_mod
barrier iser-target 60
timeout 60 iscsistart -i iqn.2026-11.org.qemu.pvrdma:initiator -t "$IQN" -g 1 \
    -a "$PVRDMA_PEER_IP" -p 3260 -P iface.transport_name=iser > /tmp/login.out 2>&1
rc=$?
cat /tmp/login.out
[ $rc = 0 ] && grep -q 'is operational now' /tmp/login.out || fail "iSER login failed (rc $rc)"
# the SCSI host of the session is iSER's, not iSCSI over TCP's
cat /sys/class/scsi_host/host*/proc_name 2>/dev/null | grep -qx iscsi_iser ||
    fail "no iSER SCSI host: the session is not over iSER"
dev=
for _ in $(seq 50); do
    dev=$(grep -l 'LIO-ORG' /sys/block/sd*/device/vendor 2>/dev/null | head -n1 | cut -d/ -f4)
    [ -n "$dev" ] && [ -b "/dev/$dev" ] && break
    sleep 0.2
done
[ -n "$dev" ] && [ -b "/dev/$dev" ] || { dmesg | tail -20; fail "no disk from the iSER target"; }
log "iSER disk: /dev/$dev ($(cat "/sys/block/$dev/size") sectors)"
dd if=/dev/urandom of=/tmp/pat bs=1M count=8 2>/dev/null
run dd if=/tmp/pat of="/dev/$dev" bs=1M count=8 oflag=direct
run dd if="/dev/$dev" of=/tmp/back bs=1M count=8 iflag=direct
cmp /tmp/pat /tmp/back || fail "data read back over iSER differs from what was written"
log "8 MiB written and read back over iSER with O_DIRECT: identical"
barrier iser-done 60
