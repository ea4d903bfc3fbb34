# More rdma-core applications over vmw_pvrdma0 inside one VM (loopback
# through the device): rdma_cm examples (ucmatose RC, udaddy UD,
# rdma_server/rdma_client) and rsockets (rstream, riostream, and rcopy with
# the copied file compared byte for byte).
# vms: 1
# timeout: 500
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
ip=$PVRDMA_IP
ok=0
# srv_cli NAME PORT SERVER-CMD CLIENT-CMD: both must exit 0
srv_cli() {
    log "$1: server: $3"
    # shellcheck disable=SC2086
    timeout 120 $3 > "/tmp/$1.srv" 2>&1 &
    _p=$!
    sleep 1
    log "$1: client: $4"
    # shellcheck disable=SC2086
    if ! timeout 120 $4 > "/tmp/$1.cli" 2>&1; then
        cat "/tmp/$1.cli" "/tmp/$1.srv"
        kill $_p 2>/dev/null
        fail "$1: client failed"
    fi
    wait $_p || { cat "/tmp/$1.srv"; fail "$1: server failed"; }
    log "$1: ok: $(tail -n 1 "/tmp/$1.cli")"
    ok=$((ok + 1))
}

srv_cli ucmatose 7174 "ucmatose -c 2 -C 20 -S 1000" \
    "ucmatose -s $ip -c 2 -C 20 -S 1000"
grep -q "data transfers complete" /tmp/ucmatose.cli || fail "ucmatose: no transfers"
srv_cli udaddy 7174 "udaddy -c 2 -C 20 -S 500" "udaddy -s $ip -c 2 -C 20 -S 500"
grep -q "data transfers complete" /tmp/udaddy.cli || fail "udaddy: no transfers"
srv_cli rdma_server 7471 "rdma_server" "rdma_client -s $ip"
srv_cli rstream 7471 "rstream -S 65536 -C 200" "rstream -s $ip -S 65536 -C 200"
srv_cli riostream 7471 "riostream -S 65536 -C 200" \
    "riostream -s $ip -S 65536 -C 200"

# rcopy: a 3 MiB file through rsockets, compared
seq 1 400000 | head -c 3145728 > /tmp/rc.src
mkdir -p /tmp/rcopy-dst
(cd /tmp/rcopy-dst && timeout 120 rcopy > /tmp/rcopy.srv 2>&1) &
sp=$!
sleep 1
timeout 120 rcopy /tmp/rc.src "$ip:/tmp/rcopy-dst/rc.dst" > /tmp/rcopy.cli 2>&1 ||
    { cat /tmp/rcopy.cli /tmp/rcopy.srv; fail "rcopy failed"; }
for i in $(seq 20); do
    [ -f /tmp/rcopy-dst/rc.dst ] && [ "$(wc -c < /tmp/rcopy-dst/rc.dst)" = 3145728 ] && break
    sleep 0.2
done
kill $sp 2>/dev/null
cmp /tmp/rc.src /tmp/rcopy-dst/rc.dst || fail "rcopy: copied file differs"
log "rcopy: 3 MiB copied and identical"
log "rdma_cm and rsocket applications: $((ok + 1)) ok"
