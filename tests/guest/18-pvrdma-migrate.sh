# Live migration with RDMA traffic running inside one VM (loopback QPs):
# ibv_rc_pingpong (4 KiB, -c) runs while the host migrates the VM to a new
# QEMU (run-vm.sh, on "PVRDMA-MIGRATE pingpong"), and ib_send_bw runs
# across a second migration, from that QEMU to a third.  Both runs must end
# well: a lost completion hangs them, a duplicate fails them, a data error
# prints "invalid data" (-c).  The host check (18-pvrdma-migrate.host)
# wants both migrations completed while the runs were under way, and the
# QPs in RTS on the loopback path in the new QEMU.
# vms: 1
# timeout: 300
# requires: pvrdma
# qemu-args: -trace pvrdma_state_saved -trace pvrdma_state_loaded
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)

# run_across NAME SECS SERVER CLIENT: both in the background; once they
# are connected, ask for a migration; both must exit 0
run_across() {
    _n=$1 _s=$2
    # shellcheck disable=SC2086
    timeout "$_s" $3 > "/tmp/$_n.srv" 2>&1 &
    _sp=$!
    wait_port 18515 10 || { cat "/tmp/$_n.srv"; fail "$_n: server does not listen"; }
    # shellcheck disable=SC2086
    timeout "$_s" $4 > "/tmp/$_n.cli" 2>&1 &
    _cp=$!
    sleep 3
    kill -0 "$_cp" 2>/dev/null || { cat "/tmp/$_n.cli"; fail "$_n: ended before the migration"; }
    log "$_n: running; migration asked"
    echo "PVRDMA-MIGRATE $_n"
    # run-vm.sh migrates before it answers the query: the new QEMU answers
    host_query "$_n" 3
    kill -0 "$_cp" 2>/dev/null || log "$_n: ended before the query (the host check will say)"
    wait "$_cp"; _crc=$?
    wait "$_sp"; _src=$?
    log "$_n: done (client rc $_crc, server rc $_src)"
    if [ $_crc != 0 ] || [ $_src != 0 ] || grep -qi "invalid data" "/tmp/$_n.cli" "/tmp/$_n.srv"; then
        echo "--- server ---"; cat "/tmp/$_n.srv"; echo "--- client ---"; cat "/tmp/$_n.cli"
        fail "$_n across a migration: client rc $_crc, server rc $_src"
    fi
}

pp="ibv_rc_pingpong -d vmw_pvrdma0 -g $gidx -s 4096 -n ${MIG_PP_ITERS:-2000} -c"
run_across pingpong 200 "$pp" "$pp 127.0.0.1"
grep -E "iters in" /tmp/pingpong.cli | sed 's/^/  /'

bw="ib_send_bw -d vmw_pvrdma0 -x $gidx -F -s 65536 -D 16"
run_across sendbw 200 "$bw" "$bw 127.0.0.1"
grep -E '^ *65536' /tmp/sendbw.cli | sed 's/^/  send_bw: /'
grep -qE '^ *65536' /tmp/sendbw.cli || { cat /tmp/sendbw.cli; fail "ib_send_bw printed no result"; }
