# RoCEv2 under loss: the VMs meet on scripts/guest/l2switch.py, which drops
# 2% and reorders 2% (holds a frame back until the next one to the same
# port has gone) of the RoCEv2 frames (UDP 4791; ARP, IP and the tests'
# TCP control traffic pass untouched).  ACK/NAK frames are dropped as the
# others, both ways between the two pvrdma devices and those VM 0 sends to
# VM 2; the last ACK of a message whose receiver destroyed its QP at once
# (ibv_rc_pingpong exits as soon as it has everything) is then answered
# again by the device's record of the destroyed QP (10 s, 256 QPs; unit
# tests rc-last-ack-lost, rc-teardown-acks-lost).  Only VM 2's ACKs are
# kept (--lossy-keep-acks-from 2): soft-RoCE, as a RoCE HCA, forgets a
# destroyed QP at once, so a lost last ACK of its own leaves our device
# retransmitting to nobody ("retry exceeded": RC has no closing
# handshake).  Nor the CM's MADs (--lossy-keep-cm): rping's client sends
# its DREQ once and destroys its cm_id at once, which stops the kernel's
# CM from sending it again, so a lost DREQ left the server waiting for
# DISCONNECTED until its timeout (seen here, 1 run in 4).  VM 0 and VM 1 have the pvrdma
# device without the co-resident transport (run-vm.sh --no-rendezvous): as
# on two hosts, every QP between them is RoCEv2 on the wire, and the
# device's requester must recover the lost and overtaken packets
# (retransmission after a sequence NAK or the local ACK timeout, duplicate
# detection, READ responses resumed).  VM 2 runs Linux soft-RoCE (rxe0 on
# virtio-net), the same recovery against another implementation.
# Steps (VM 0 serves; "invalid data" of a pingpong's -c fails):
#   vm0-vm1: rc pingpong 64 KiB, ib_write_bw 64 KiB, ib_read_bw 64 KiB,
#            rping -V 64 KiB (RDMA CM; its MADs cross the lossy switch too)
#            and the data check, the verbs checker (every byte of SEND,
#            WRITE, READ and atomics both ways at once, up to 64 KiB),
#            then 40 checker connections at once that all end together
#            (the teardown of 40 queues with their last ACKs lost, as an
#            NVMe or NFS disconnect; unit test rc-teardown-acks-lost)
#   vm0-vm2: rc pingpong 64 KiB, pvrdma against rxe, and the verbs checker
#            (SEND, WRITE, READ: rxe 6.1's own atomics fail under loss,
#            rxe against rxe too: an atomic "returns" the guard bytes)
# Then the host records both devices' counters over QMP, and
# 32-pvrdma-roce-loss.host checks that each device retransmitted and that
# the switch dropped ACKs and other frames and reordered some.  Every client and server runs
# under a timeout.
# vms: 3
# timeout: 1500
# requires: pvrdma
# vm-args: --nic vmxnet3,vmxnet3,virtio --no-rendezvous --lossy 2,2 --lossy-keep-acks-from 2 --lossy-keep-cm
. /usr/lib/pvrdma/tests-common.sh

[ "$PVRDMA_RENDEZVOUS" = 0 ] || fail "the co-resident transport is on (run-vm.sh --no-rendezvous)"
[ "$PVRDMA_SWITCH" = 1 ] || fail "no switch between the VMs (run-vm.sh --lossy)"
roce_three_vms

P=vm0-vm1
step "rc-65536/$P" with_vm 1 pp_2vm rc 65536 fwd 180
step "ib_write_bw/$P" with_vm 1 perf_2vm ib_write_bw 65536 fwd "-x $ROCE_GIDX" 180
step "ib_read_bw/$P" with_vm 1 perf_2vm ib_read_bw 65536 fwd "-x $ROCE_GIDX" 180
step "rping-65535/$P" with_vm 1 rping_2vm 65535 5 fwd 180
step "verbs-rc/$P" with_vm 1 vc_2vm vc-rc 300 200 fwd -t rc -n 200 -S 65536 -T 60
step "verbs-rc-x40/$P" with_vm 1 vc_2vm_many vc-x40 300 40 20 -t rc -n 20 -S 4096 -T 60
# VM 2 waits here for its turn (up to 900 s) while VM 0 works with VM 1
with_vm 2 barrier turn-vm2 1200
P=vm0-vm2
step "rc-65536/$P" with_vm 2 pp_2vm rc 65536 fwd 180
step "verbs-rc/$P" with_vm 2 vc_2vm vc-rc 300 200 fwd -t rc -n 200 -S 65536 -T 60 \
    -o send,send_imm,write,write_imm,read
step kernel-clean kernel_clean
roce_diag
host_query_all end
steps_done
