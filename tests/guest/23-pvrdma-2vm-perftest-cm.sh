# perftest between two VMs over vmw_pvrdma0 with connections made by RDMA CM
# (-R: address resolution, route, CM REQ/REP/RTU over the GSI QP, QP state
# driven by librdmacm), otherwise as 22-pvrdma-2vm-perftest.
# vms: 2
# timeout: 500
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
roce_v2_gid vmw_pvrdma0 >/dev/null
barrier pvrdma-up 60
perftest_2vm vmw_pvrdma0 "-R" cm:18515 \
    "ib_send_lat:64 ib_write_lat:64 ib_read_lat:64 ib_atomic_lat:8 ib_send_bw:65536 ib_write_bw:65536 ib_read_bw:65536"
