# shellcheck shell=sh
# Test bodies shared by several guest tests (busybox ash).  tests/guest/run.sh
# ships this file into every guest as /usr/lib/pvrdma/tests-common.sh, next
# to /usr/lib/pvrdma/guest-lib.sh (scripts/guest/guest-lib.sh).
#
# The same functions run over rdma_rxe (rig self-test, works without the
# pvrdma device) and over vmw_pvrdma0.
. /usr/lib/pvrdma/guest-lib.sh

# Iteration counts: small, TCG is slow.  Override with --env in run-vm.sh.
PP_ITERS=${PP_ITERS:-50}
PP_RXDEPTH=${PP_RXDEPTH:-16}
PERF_ITERS=${PERF_ITERS:-100}

# setup_rxe: soft-RoCE device rxe0 on the vmxnet3 interface
setup_rxe() {
    run modprobe rdma_rxe
    run rdma link add rxe0 type rxe netdev "$PVRDMA_NETIF"
}

# wait_port_active DEV [SECS]: port 1 of DEV reaches ACTIVE
wait_port_active() {
    _i=0
    while [ $_i -lt $((${2:-10} * 10)) ]; do
        case $(cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null) in
            *ACTIVE*) return 0 ;;
        esac
        sleep 0.1; _i=$((_i + 1))
    done
    return 1
}

# wait_dev DEV [SECS]: DEV registered with its port ACTIVE
wait_dev() {
    _i=0
    while [ ! -d "/sys/class/infiniband/$1" ] && [ $_i -lt $((${2:-10} * 10)) ]; do
        sleep 0.1; _i=$((_i + 1))
    done
    [ -d "/sys/class/infiniband/$1" ] || { log "no /sys/class/infiniband/$1; have: $(ls /sys/class/infiniband 2>/dev/null)"; return 1; }
    wait_port_active "$1" "${2:-10}" || { log "$1 port 1: $(cat /sys/class/infiniband/$1/ports/1/state)"; return 1; }
}

# roce_v2_gid DEV: the RoCE v2 GID index of this VM's IPv4 address (or fail)
roce_v2_gid() {
    _g=$(wait_gid "$1" "$PVRDMA_IP" "RoCE v2" 10) || {
        dump_gids "$1"
        fail "$1: no RoCE v2 GID for $PVRDMA_IP"
    }
    echo "$_g"
}

# loopback_pingpongs DEV GIDX: rc, ud and srq pingpong with data validation
# (-c), a few sizes, server and client in this VM (client -> 127.0.0.1)
loopback_pingpongs() {
    _d=$1 _x=$2 _bad=0
    _o="-d $_d -g $_x -n $PP_ITERS -r $PP_RXDEPTH -c"
    for _s in 1 64 4096 65536; do
        pair "rc-$_s" 60 "ibv_rc_pingpong $_o -s $_s" "ibv_rc_pingpong $_o -s $_s 127.0.0.1" || _bad=$((_bad + 1))
    done
    # UD messages must fit the path MTU (1024 on a 1500-byte Ethernet)
    for _s in 1 64 1024; do
        pair "ud-$_s" 60 "ibv_ud_pingpong $_o -s $_s" "ibv_ud_pingpong $_o -s $_s 127.0.0.1" || _bad=$((_bad + 1))
    done
    for _s in 64 4096; do
        pair "srq-$_s" 60 "ibv_srq_pingpong $_o -q 4 -s $_s" "ibv_srq_pingpong $_o -q 4 -s $_s 127.0.0.1" || _bad=$((_bad + 1))
    done
    [ $_bad = 0 ] || fail "$_bad of 9 loopback pingpongs on $_d failed (first: $PAIR_ERR)"
}

# loopback_perftest DEV GIDX: ib_send_lat and ib_write_bw on loopback
loopback_perftest() {
    _d=$1 _x=$2 _bad=0
    _o="-d $_d -x $_x -F -n $PERF_ITERS"
    pair send_lat 120 "ib_send_lat $_o -s 64" "ib_send_lat $_o -s 64 127.0.0.1" || _bad=$((_bad + 1))
    pair write_bw 120 "ib_write_bw $_o -s 65536" "ib_write_bw $_o -s 65536 127.0.0.1" || _bad=$((_bad + 1))
    grep -E '^ *[0-9]' /tmp/send_lat.cli | tail -n 1 | sed 's/^/  send_lat: /'
    grep -E '^ *[0-9]' /tmp/write_bw.cli | tail -n 1 | sed 's/^/  write_bw: /'
    [ $_bad = 0 ] || fail "$_bad of 2 perftest runs on $_d failed (first: $PAIR_ERR)"
}

# two_vm_pingpongs DEV: VM 0 serves, VM 1 connects to it, rc then ud
two_vm_pingpongs() {
    _d=$1
    _x=$(roce_v2_gid "$_d")
    _o="-d $_d -g $_x -n $PP_ITERS -r $PP_RXDEPTH -c"
    for _t in rc-4096:ibv_rc_pingpong:4096 ud-1024:ibv_ud_pingpong:1024 srq-4096:ibv_srq_pingpong:4096; do
        _n=${_t%%:*} _rest=${_t#*:}; _b=${_rest%%:*} _s=${_rest#*:}
        case $_b in ibv_srq_pingpong) _o2="-q 4" ;; *) _o2= ;; esac
        if [ "$PVRDMA_VM" = 0 ]; then
            log "2vm $_n: server"
            # shellcheck disable=SC2086
            timeout 90 $_b $_o $_o2 -s "$_s" > "/tmp/$_n.srv" 2>&1 &
            _spid=$!
            wait_port 18515 10 || { cat "/tmp/$_n.srv"; fail "2vm $_n: server not listening"; }
            barrier "$_n-ready" 60
            wait "$_spid" || { cat "/tmp/$_n.srv"; fail "2vm $_n: server failed: $(grep -m1 -iE 'fail|error|couldn|exceeded' "/tmp/$_n.srv")"; }
            log "2vm $_n: server ok: $(grep -E 'bytes in' "/tmp/$_n.srv")"
        else
            barrier "$_n-ready" 60
            log "2vm $_n: client -> $PVRDMA_PEER_IP"
            # shellcheck disable=SC2086
            timeout 90 $_b $_o $_o2 -s "$_s" "$PVRDMA_PEER_IP" > "/tmp/$_n.cli" 2>&1 ||
                { cat "/tmp/$_n.cli"; fail "2vm $_n: client failed: $(grep -m1 -iE 'fail|error|couldn|exceeded' "/tmp/$_n.cli")"; }
            log "2vm $_n: client ok: $(grep -E 'bytes in' "/tmp/$_n.cli")"
        fi
        barrier "$_n-done" 60
    done
}
