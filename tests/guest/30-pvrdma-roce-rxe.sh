# RoCEv2 interop with Linux soft-RoCE: VM 0 has vmxnet3 + the pvrdma device,
# VM 1 has virtio-net and rdma_rxe (rxe0), on the same QEMU netdev.  No
# co-resident transport: everything goes over the wire as standard RoCEv2
# (UDP 4791), so the device's requester, responder and completer must
# interoperate with rxe's.  Each check is a step of its own ("step NAME:
# ok" / "FAILED" in the console; the test's FAIL line names every failed
# step); the step name says the pvrdma VM's role (server or client):
#   rc pingpong 4 KiB and 64 KiB both ways, ud pingpong 1 KiB, srq pingpong
#   4 KiB (all with -g <RoCE v2 IPv4 GID index> and -c; "invalid data"
#   fails), perftest ib_write_bw 64 KiB, ib_read_lat and ib_atomic_lat both
#   ways, ib_send_lat with -x and with -R (rdma_cm), rping -V 4 KiB and
#   64 KiB both ways, udaddy; and the data check, the verbs checker
#   (pvrdma-verbs-check: every byte of SEND, SEND with immediate, WRITE,
#   WRITE with immediate, READ, CAS, FAA in both directions at once) in rc
#   mode both ways, srq and ud (the pingpongs' -c looks at one byte per
#   page: they are application runs, not the data check).
# Every client and server runs under a timeout, so a device that does not
# answer fails its step instead of hanging the test.
# Rig self-check, soft-RoCE on both VMs (no pvrdma):
#   PVRDMA_FORCE_NIC=virtio tests/guest/run.sh -e ROCE_RIG_CHECK=1 30
# vms: 2
# timeout: 1200
# requires: pvrdma
# vm-args: --nic vmxnet3,virtio
. /usr/lib/pvrdma/tests-common.sh

if [ "${ROCE_RIG_CHECK:-0}" != 1 ]; then
    want=$([ "$PVRDMA_VM" = 0 ] && echo 1 || echo 0)
    [ "$PVRDMA_DEVICE" = "$want" ] ||
        fail "VM $PVRDMA_VM has PVRDMA_DEVICE=$PVRDMA_DEVICE, expected $want (run-vm.sh --nic vmxnet3,virtio)"
fi
roce_setup
dump_gids "$ROCE_DEV"
ping_peer
barrier roce-up 120

# the pvrdma VM's role in each step (VM 0 serves unless "rev")
S=pvrdma-server C=pvrdma-client
step "rc-4096/$S" pp_2vm rc 4096
step "rc-65536/$S" pp_2vm rc 65536
step "rc-4096/$C" pp_2vm rc 4096 rev
step "rc-65536/$C" pp_2vm rc 65536 rev
step "ud-1024/$S" pp_2vm ud 1024
step "srq-4096/$S" pp_2vm srq 4096
step "ib_write_bw/$S" perf_2vm ib_write_bw 65536
step "ib_write_bw/$C" perf_2vm ib_write_bw 65536 rev
step "ib_read_lat/$S" perf_2vm ib_read_lat 64
step "ib_read_lat/$C" perf_2vm ib_read_lat 64 rev
step "ib_atomic_lat/$S" perf_2vm ib_atomic_lat 8
step "ib_atomic_lat/$C" perf_2vm ib_atomic_lat 8 rev
step "ib_send_lat/$S" perf_2vm ib_send_lat 64
step "ib_send_lat-cm/$S" perf_2vm ib_send_lat 64 fwd -R
step "rping-4096/$S" rping_2vm 4096 10
step "rping-65535/$S" rping_2vm 65535 5
step "rping-4096/$C" rping_2vm 4096 10 rev
step "rping-65535/$C" rping_2vm 65535 5 rev
step "udaddy/$S" udaddy_2vm
step "verbs-rc/$S" vc_2vm vc-rc 240 200 fwd -t rc -n 200 -S 65536
step "verbs-rc/$C" vc_2vm vc-rc-rev 240 200 rev -t rc -n 200 -S 65536
step "verbs-srq/$S" vc_2vm vc-srq 240 200 fwd -t srq -n 200 -S 16384
step "verbs-ud/$C" vc_2vm vc-ud 120 200 rev -t ud -n 200
step kernel-clean kernel_clean
roce_diag
steps_done
