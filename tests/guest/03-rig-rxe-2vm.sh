# Rig self-test: rc/ud/srq pingpong between two VMs over soft-RoCE on the
# shared dgram netdev, exactly as 20-pvrdma-2vm runs it over vmw_pvrdma0.
# vms: 2
# timeout: 300
. /usr/lib/pvrdma/tests-common.sh

setup_rxe
wait_dev rxe0 10 || fail "rxe0 not ACTIVE"
barrier rxe-up 60
two_vm_pingpongs rxe0
