# Live migration with RDMA traffic running inside one VM (loopback QPs):
# ibv_rc_pingpong (4 KiB, -c) runs while the host migrates the VM to a new
# QEMU (run-vm.sh, on "PVRDMA-MIGRATE pingpong") and then again with
# postcopy-ram (the new QEMU runs while most of RAM is still on the old
# one), ib_send_bw runs across two more, precopy and postcopy, and the
# verbs data checker (pvrdma-verbs-check, every byte of every operation,
# both directions) across two more.  Every run must end well: a lost
# completion hangs it, a duplicate fails it; the checker's data check
# fails it on the first byte that differs (the pingpong's -c looks at one
# byte per page: a real application's run, not a data check).  The host check
# (18-pvrdma-migrate.host) wants every migration completed while its run
# was under way, and the QPs in RTS on the loopback path in the new QEMU.
# vms: 1
# timeout: 420
# requires: pvrdma
# qemu-args: -trace pvrdma_state_saved -trace pvrdma_state_loaded
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)

pp="ibv_rc_pingpong -d vmw_pvrdma0 -g $gidx -s 4096 -n ${MIG_PP_ITERS:-2500} -c"
run_across pingpong 200 "$pp" "$pp 127.0.0.1" \
    "PVRDMA-MIGRATE pingpong" "PVRDMA-MIGRATE pingpong-postcopy postcopy"
grep -E "iters in" /tmp/pingpong.cli | sed 's/^/  /'

bw="ib_send_bw -d vmw_pvrdma0 -x $gidx -F -s 65536 -D 16"
run_across sendbw 200 "$bw" "$bw 127.0.0.1" \
    "PVRDMA-MIGRATE sendbw" "PVRDMA-MIGRATE sendbw-postcopy postcopy"
grep -E '^ *65536' /tmp/sendbw.cli | sed 's/^/  send_bw: /'
grep -qE '^ *65536' /tmp/sendbw.cli || { cat /tmp/sendbw.cli; fail "ib_send_bw printed no result"; }

vc_across verbs 200 "${MIG_VC_SECS:-40}" "PVRDMA-MIGRATE verbs" "PVRDMA-MIGRATE verbs-postcopy postcopy"
