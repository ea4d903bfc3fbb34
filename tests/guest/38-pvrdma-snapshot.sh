# Snapshots and migration to a file with RDMA traffic running inside one VM
# (loopback QPs).  ibv_rc_pingpong (4 KiB, -c) runs across a savevm and,
# 2 s later, a loadvm of that snapshot (the guest, the device and the run
# go back to the savevm and go on from there), then across a migration to
# a file and a new QEMU started from it; ib_send_bw runs across the same
# two in the other order, and the verbs data checker (pvrdma-verbs-check:
# every byte of every operation, both directions) across a savevm/loadvm
# and a migration to a file.  Every run must end well: a lost completion
# hangs it, a duplicate fails it, the checker fails on the first byte that
# differs (the pingpong's -c looks at one byte per page).
# A tick on the console every 0.5 s shows the rewind: after a loadvm the
# guest prints ticks again that it had printed after the savevm.  The host
# check (38-pvrdma-snapshot.host) wants every savevm, loadvm and migration
# done while its run was under way, ticks printed twice, and the QPs in
# RTR or RTS on the loopback path after each.
# vms: 1
# timeout: 420
# requires: pvrdma
# qemu-args: -trace pvrdma_state_saved -trace pvrdma_state_loaded
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)

( _k=0; while :; do echo "tick $_k"; _k=$((_k + 1)); sleep 0.5; done ) &
ticker=$!

pp="ibv_rc_pingpong -d vmw_pvrdma0 -g $gidx -s 4096 -n ${SNAP_PP_ITERS:-2500} -c"
run_across pingpong 200 "$pp" "$pp 127.0.0.1" \
    "PVRDMA-SNAPSHOT pingpong-snap" "PVRDMA-MIGRATE pingpong-file file"
grep -E "iters in" /tmp/pingpong.cli | sed 's/^/  /'

bw="ib_send_bw -d vmw_pvrdma0 -x $gidx -F -s 65536 -D ${SNAP_BW_SECS:-16}"
run_across sendbw 200 "$bw" "$bw 127.0.0.1" \
    "PVRDMA-MIGRATE sendbw-file file" "PVRDMA-SNAPSHOT sendbw-snap"
grep -E '^ *65536' /tmp/sendbw.cli | sed 's/^/  send_bw: /'
grep -qE '^ *65536' /tmp/sendbw.cli || { cat /tmp/sendbw.cli; fail "ib_send_bw printed no result"; }
vc_across verbs 200 "${SNAP_VC_SECS:-40}" "PVRDMA-SNAPSHOT verbs-snap" "PVRDMA-MIGRATE verbs-file file"
kill "$ticker"
