# rc/ud/srq pingpong between two VMs over vmw_pvrdma0 (VM 0 serves).
# vms: 2
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
barrier pvrdma-up 60
two_vm_pingpongs vmw_pvrdma0
