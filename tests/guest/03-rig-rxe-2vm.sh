# Rig self-test: rc/ud/srq pingpong between two VMs over soft-RoCE on the
# shared dgram netdev, exactly as 20-pvrdma-2vm runs it over vmw_pvrdma0.
# On virtio-net without the device: a vmxnet3 paired with pvrdma is a RoCE
# port, whose device takes the RoCEv2 frames for the NIC's addresses (as a
# RoCE NIC does), so soft-RoCE on it would never see its peer's packets.
# vms: 2
# timeout: 300
# vm-args: --nic virtio
. /usr/lib/pvrdma/tests-common.sh

setup_rxe
wait_dev rxe0 10 || fail "rxe0 not ACTIVE"
barrier rxe-up 60
two_vm_pingpongs rxe0
