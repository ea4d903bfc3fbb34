# Two VMs whose devices have the co-resident transport without a
# rendezvous directory (coresident=on): nothing listens or scans; the rig,
# as management would, gives each QEMU one end of a socketpair over QMP
# (getfd, then x-pvrdma-peer-add: scripts/guest/qmp.py connect-peer) as
# they start.  Over that connection: the verbs checker (every byte of
# every operation, both directions) in rc mode (up to 1 MiB, 4 SGEs, 16
# in flight) and ud mode, and ibv_rc_pingpong.  RoCEv2 is off
# (roce=off): the connection management gave is the only way between the
# VMs, so the data could not have taken another path.  The host check
# wants the connection made, neither command line with a rendezvous
# directory and both devices with one peer after the runs.
# vms: 2
# timeout: 400
# requires: pvrdma
# vm-args: --peers-from-management --device-args roce=off
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
barrier pvrdma-up 60
two_vm_pingpongs vmw_pvrdma0 "rc:4096"
bad=0
vc_2vm vc-rc 180 200 fwd -t rc -n 200 -g 4 -q 16 || bad=$((bad + 1))
vc_2vm vc-ud 120 200 fwd -t ud -n 200 || bad=$((bad + 1))
[ $bad = 0 ] || fail "$bad of 2 verbs checker runs failed (first: $PAIR_ERR)"
host_query_all after
