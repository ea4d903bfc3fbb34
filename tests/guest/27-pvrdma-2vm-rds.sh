# RDS (Reliable Datagram Sockets) over its RDMA transport (rds_rdma, a
# kernel RDMA client with its own rdma_cm connection) between two VMs over
# vmw_pvrdma0: VM 1 sends COUNT messages of several sizes (one RC SEND up
# to many RDS fragments) to VM 0, which checks that each arrives once, in
# order, byte for byte (rds-xfer, tests/guest/tools/rds-xfer.c).  The RDS
# connection must be over IB, not TCP; its rdma_cm IDs on vmw_pvrdma0; and
# the host records both devices' QPs over QMP while it is up:
# 27-pvrdma-2vm-rds.host wants its RC QPs in RTS on the co-resident path
# in each VM and no RC QP on another path.
# vms: 2
# timeout: 300
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
rds_up vmw_pvrdma0
barrier rds-up 60
rds_xfers 0 || fail "RDS transfers failed (first: $PAIR_ERR)"
dmesg | grep 'RDS/IB' | sed 's/^/  dmesg: /'
[ "$PVRDMA_VM" = 1 ] || dmesg | grep -q 'RDS/IB: .*conn connected' || fail "no RDS/IB connection in dmesg"
ulp_cm_ids rds_rdma vmw_pvrdma0 "dst-addr $PVRDMA_PEER_IP:"
[ "$PVRDMA_VM" = 0 ] || host_query rds
barrier rds-recorded 60
