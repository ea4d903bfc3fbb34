# Two pvrdma VMs without the co-resident transport (run-vm.sh
# --no-rendezvous: no rendezvous=, private guest RAM), as on two hosts: the
# devices can only reach each other as RoCEv2 over the shared QEMU netdev.
# Steps (each one "step NAME: ok" / "FAILED" in the console; the FAIL line
# names every failed step): rc pingpong 4 KiB and 64 KiB with -g <RoCE v2
# IPv4 GID index> and -c ("invalid data" fails), perftest ib_write_bw
# 64 KiB and ib_read_lat, rping -V 4 KiB and 64 KiB, the verbs checker
# (every byte) in rc up to 64 KiB, rc with messages of 1 MiB, srq and ud.
# VM 0 serves.  Every client and server runs under a timeout.
# Rig self-check, soft-RoCE on both VMs (no pvrdma):
#   PVRDMA_FORCE_NIC=virtio tests/guest/run.sh -e ROCE_RIG_CHECK=1 31
# vms: 2
# timeout: 600
# requires: pvrdma
# vm-args: --no-rendezvous
. /usr/lib/pvrdma/tests-common.sh

if [ "${ROCE_RIG_CHECK:-0}" != 1 ]; then
    [ "$PVRDMA_DEVICE" = 1 ] || fail "VM $PVRDMA_VM has no pvrdma device"
    [ "$PVRDMA_RENDEZVOUS" = 0 ] || fail "the co-resident transport is on (run-vm.sh --no-rendezvous)"
fi
roce_setup
dump_gids "$ROCE_DEV"
ping_peer
barrier roce-up 120

step rc-4096 pp_2vm rc 4096
step rc-65536 pp_2vm rc 65536
step ib_write_bw perf_2vm ib_write_bw 65536
step ib_read_lat perf_2vm ib_read_lat 64
step rping-4096 rping_2vm 4096 10
step rping-65535 rping_2vm 65535 5
step verbs-rc vc_2vm vc-rc 240 200 fwd -t rc -n 200 -S 65536
step verbs-rc-1m vc_2vm vc-rc-1m 300 20 fwd -t rc -n 20 -s 1048576,1048575
step verbs-srq vc_2vm vc-srq 240 200 rev -t srq -n 200 -S 16384
step verbs-ud vc_2vm vc-ud 120 200 fwd -t ud -n 200
step kernel-clean kernel_clean
roce_diag
steps_done
