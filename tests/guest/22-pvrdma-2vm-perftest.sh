# perftest between two VMs over vmw_pvrdma0 (VM 0 serves, VM 1 is the
# client): every latency and bandwidth test of the RC verbs set, exchanging
# QP numbers over TCP.  Each run must exit 0 on both sides and the client
# must print a result line with a positive figure (average latency, average
# bandwidth).
# vms: 2
# timeout: 500
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)
barrier pvrdma-up 60
perftest_2vm vmw_pvrdma0 "-x $gidx" tcp:18515 \
    "ib_send_lat:64 ib_write_lat:64 ib_read_lat:64 ib_atomic_lat:8 ib_send_bw:65536 ib_write_bw:65536 ib_read_bw:65536"
