# Two VMs on the co-resident transport, each device's data path in an
# IOThread (-object iothread,id=io0 -device pvrdma,...,iothread=io0;
# RoCEv2 off, which iothread= does not take): the verbs checker (every
# byte of every operation both ways) in rc with 4 SGEs up to 1 MiB, srq
# (VM 1 serves) and ud, and 4 MiB messages (the responder's pieces); then
# ib_send_lat and ib_write_bw between the VMs, whose figures the log keeps
# beside test 22's (the same without iothread=).  The host check wants
# both devices' peer sockets served in their IOThread (x-iothread-events,
# recorded over QMP after the runs).
# vms: 2
# timeout: 600
# requires: pvrdma
# vm-args: --device-args roce=off,iothread=io0
# qemu-args: -object iothread,id=io0
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)
barrier pvrdma-up 60
vc_2vm_all
perftest_2vm vmw_pvrdma0 "-x $gidx" tcp:18515 "ib_send_lat:64 ib_write_bw:65536"
host_query_all after
