# The device's RoCEv2 frames as a network analyser sees them: three VMs on
# scripts/guest/l2switch.py, each netdev recorded with QEMU's filter-dump
# (run-vm.sh --capture: vmN/capture.pcap).  VM 0 and VM 1 have the pvrdma
# device without the co-resident transport (--no-rendezvous: everything
# between them is RoCEv2 on the wire), VM 2 runs Linux soft-RoCE (rxe0 on
# virtio-net).  VM 0 runs the same small set against each peer, so both
# captures hold every kind of packet the device sends and answers:
#   rc pingpong 4 KiB (SEND first/middle/last, ACK), ud pingpong 1 KiB (UD
#   SEND), ib_write_bw 64 KiB (RDMA WRITE), ib_read_lat (READ request and
#   responses), ib_atomic_lat (compare-and-swap / fetch-and-add, atomic
#   ACK), rping -V 4 KiB (RDMA CM MADs on QP1, SEND, READ, WRITE).
# 34-pvrdma-roce-capture.host then decodes the captures on the host with
# tshark (every UDP 4791 frame must decode as InfiniBand, no malformed
# packet, no expert error, IP/UDP checksums verified) and checks every
# RoCEv2 frame's headers and ICRC with scripts/guest/roce-pcap-check.py
# (Wireshark shows the ICRC but does not verify it).  The host needs tshark
# (scripts/deps.sh installs it); without it the test fails.
# vms: 3
# timeout: 600
# requires: pvrdma
# vm-args: --nic vmxnet3,vmxnet3,virtio --no-rendezvous --capture
. /usr/lib/pvrdma/tests-common.sh

# small runs: the captures stay a few MB
# shellcheck disable=SC2034  # read by common.sh's pp_2vm/perf_2vm
PERF_ITERS=${CAPTURE_PERF_ITERS:-20} PP_ITERS=${CAPTURE_PP_ITERS:-20}

[ "$PVRDMA_RENDEZVOUS" = 0 ] || fail "the co-resident transport is on (run-vm.sh --no-rendezvous)"
roce_three_vms

# the set, VM 0 serving VM $1
run_set() {
    _p=vm0-vm$1
    step "rc-4096/$_p" with_vm "$1" pp_2vm rc 4096
    step "ud-1024/$_p" with_vm "$1" pp_2vm ud 1024
    step "ib_write_bw/$_p" with_vm "$1" perf_2vm ib_write_bw 65536
    step "ib_read_lat/$_p" with_vm "$1" perf_2vm ib_read_lat 64
    step "ib_atomic_lat/$_p" with_vm "$1" perf_2vm ib_atomic_lat 8
    step "rping-4096/$_p" with_vm "$1" rping_2vm 4096 5
}
run_set 1
# VM 2 waits here for its turn while VM 0 works with VM 1
with_vm 2 barrier turn-vm2 300
run_set 2
step kernel-clean kernel_clean
roce_diag
host_query_all end
steps_done
