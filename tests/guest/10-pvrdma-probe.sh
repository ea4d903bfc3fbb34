# vmw_pvrdma binds the device: "device version 20", paired with the vmxnet3
# netdev, vmw_pvrdma0 with port 1 ACTIVE and link_layer Ethernet.
# vms: 1
# timeout: 120
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || { dmesg | grep -i pvrdma; fail "vmw_pvrdma0 not registered/ACTIVE"; }
dmesg | grep -i -E 'pvrdma' | sed 's/^/  dmesg: /'
dmesg | grep -q 'vmw_pvrdma .*device version 20,' || fail "dmesg lacks 'vmw_pvrdma ... device version 20,'"
dmesg | grep -q "vmw_pvrdma .*paired device to $PVRDMA_NETIF" || fail "dmesg lacks 'paired device to $PVRDMA_NETIF'"
dmesg | grep -q 'vmw_pvrdma .*attached to device' || fail "dmesg lacks 'attached to device'"
! dmesg | grep -E 'vmw_pvrdma .*(failed|error|[Ee]rror)' || fail "vmw_pvrdma reported errors"
ibv_devinfo -v -d vmw_pvrdma0 > /tmp/devinfo 2>&1 || { cat /tmp/devinfo; fail "ibv_devinfo -v -d vmw_pvrdma0 failed"; }
sed 's/^/  /' /tmp/devinfo | head -n 80
grep -Eq 'hca_id:[[:space:]]+vmw_pvrdma0' /tmp/devinfo || fail "ibv_devinfo: no hca_id vmw_pvrdma0"
grep -Eq 'state:[[:space:]]+PORT_ACTIVE' /tmp/devinfo || fail "ibv_devinfo: port not PORT_ACTIVE"
grep -Eq 'link_layer:[[:space:]]+Ethernet' /tmp/devinfo || fail "ibv_devinfo: link_layer not Ethernet"
# fw_ver is (bits 63-32).(31-16).(15-0): "1.0.0" from the kernel driver,
# "1.0.000" from the provider (%03d)
grep -Eq 'fw_ver:[[:space:]]+1\.0\.000$' /tmp/devinfo || fail "ibv_devinfo: fw_ver not 1.0.000"
[ "$(cat /sys/class/infiniband/vmw_pvrdma0/fw_ver)" = 1.0.0 ] || fail "sysfs fw_ver not 1.0.0"
rdma link show > /tmp/link 2>&1; cat /tmp/link
grep -q "vmw_pvrdma0/1 state ACTIVE .*netdev $PVRDMA_NETIF" /tmp/link || fail "rdma link: vmw_pvrdma0/1 not ACTIVE on $PVRDMA_NETIF"
[ "$(cat /sys/class/infiniband/vmw_pvrdma0/ports/1/link_layer)" = Ethernet ] || fail "sysfs link_layer not Ethernet"
run ibv_devices
