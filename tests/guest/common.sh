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

# loopback_pingpongs DEV GIDX: rc, ud and srq pingpong with -c (the first
# byte of every page checked; "invalid data" fails the run, see
# pp_invalid), a few sizes, server and client in this VM (client ->
# 127.0.0.1)
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

# two_vm_pingpongs DEV [CASES]: VM 0 serves, VM 1 connects to it; CASES are
# KIND:SIZE with KIND rc, ud or srq (default "rc:4096 ud:1024 srq:4096"),
# every run with -c (pp_invalid).  All cases run; the test fails at the
# end if any failed.
two_vm_pingpongs() {
    _d=$1 _cases=${2:-rc:4096 ud:1024 srq:4096} _bad=0 _n=0
    _x=$(roce_v2_gid "$_d")
    _o="-d $_d -g $_x -n $PP_ITERS -r $PP_RXDEPTH -c"
    for _t in $_cases; do
        _k=${_t%%:*} _s=${_t#*:} _o2=
        [ "$_k" != srq ] || _o2="-q 4"
        _n=$((_n + 1))
        vm_pair "$_k-$_s" 90 tcp:18515 "ibv_${_k}_pingpong $_o $_o2 -s $_s" \
            "ibv_${_k}_pingpong $_o $_o2 -s $_s $PVRDMA_PEER_IP" || { _bad=$((_bad + 1)); continue; }
        # both sides print "N bytes in S seconds = R Mbit/sec" and
        # "N iters in S seconds = U usec/iter" when every iteration completed
        if ! _l=$(grep -E "^$((_s * 2 * PP_ITERS)) bytes in " "/tmp/$_k-$_s.out") ||
           ! grep -qE "^$PP_ITERS iters in .* usec/iter" "/tmp/$_k-$_s.out"; then
            cat "/tmp/$_k-$_s.out"
            PAIR_ERR=${PAIR_ERR:-"$_k-$_s: no '$((_s * 2 * PP_ITERS)) bytes in' / '$PP_ITERS iters' line"}
            _bad=$((_bad + 1)); continue
        fi
        log "$_k-$_s: ok: $_l"
    done
    [ $_bad = 0 ] || fail "$_bad of $_n two-VM pingpongs on $_d failed (first: $PAIR_ERR)"
}

# listening tcp:PORT|cm:PORT|cm:ADDR:PORT: something listens on TCP PORT
# (over IPv4 or IPv6: a tcp6 line's wildcard peer has 32 zero digits), or
# an rdma_cm ID listens on PORT (of ADDR), in this VM now (rping and
# perftest -R listen through rdma_cm, not TCP)
listening() {
    case $1 in
        tcp:*) grep -qE ":$(printf '%04X' "${1#tcp:}") 0+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null ;;
        cm:*:*) rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr ${1#cm:} " ;;
        cm:*) rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr [^ ]*:${1#cm:} " ;;
        *) return 1 ;;
    esac
}

# vm_pair NAME SECS LISTEN "SERVER CMD" "CLIENT CMD": one client/server run
# across the two VMs: VM 0 starts SERVER in the background and waits until
# it listens (LISTEN is tcp:PORT or cm:PORT), VM 1 then runs CLIENT (which
# names $PVRDMA_PEER_IP itself); both limited to SECS seconds.  With
# PAIR_STAYS=1, SERVER is one that serves until stopped (cmtime, rcopy):
# VM 0 stops it once the client succeeded.  VM 1 reports
# the client's exit status to VM 0 in the NAME-done barrier; a server whose
# client failed is stopped after 5 s instead of waiting for a client that
# will not come.  Output in /tmp/NAME.out; returns this VM's side's status
# (0 ok) and keeps the first failure line in PAIR_ERR.
#
# perftest 4.5 with -R has a race of its own: the server creates its data
# listener only after the control exchange, so the client's connect can be
# rejected with "invalid service ID" (REJ reason 8), and the client's retry
# path then crashes in librdmacm (GPF in rdma_resolve_addr on a destroyed
# ID).  Upstream's retry_rdma_connect() exists for exactly this window.
# Such a run is repeated, at most twice, with both sides restarted.
vm_pair() {
    _name=$1 _secs=$2 _lis=$3 _srv=$4 _cli=$5 _try=1
    while :; do
        _vm_pair_once "$_name" "$_secs" "$_lis" "$_srv" "$_cli"
        [ "$_rc" = retry ] && [ $_try -lt 3 ] || break
        _try=$((_try + 1))
        log "$_name: listener race of perftest -R (REJ 8): run $_try"
    done
    [ "$_rc" = retry ] && _rc=1
    # a pingpong's -c: "invalid data" with exit status 0 (pp_invalid)
    [ "$_rc" != 0 ] || ! pp_invalid "/tmp/$_name.out" >/dev/null || _rc="invalid data"
    if [ "$_rc" != 0 ]; then
        echo "--- $_name output (rc $_rc; 124/143 = timeout) ---"; cat "/tmp/$_name.out"
        _e=$(grep -m1 -iE "fail|error|couldn|exceeded|unable|invalid|mismatch|reject" "/tmp/$_name.out") || _e="rc $_rc"
        PAIR_ERR=${PAIR_ERR:-"$_name ($([ "$PVRDMA_VM" = 0 ] && echo server || echo client)): $_e"}
        log "$_name: FAILED (rc $_rc)"
        return 1
    fi
    return 0
}

# _wait_listening NAME LISTEN PID: until the server PID listens on LISTEN
# (at most 15 s), not longer than it lives; 1 if it never did
_wait_listening() {
    _i=0
    until listening "$2"; do
        _i=$((_i + 1))
        sleep 0.1
        if [ $_i -ge 150 ] || ! kill -0 "$3" 2>/dev/null; then
            log "$1: server does not listen on $2"; return 1
        fi
    done
}

# vm_pair_rev NAME SECS LISTEN "SERVER CMD" "CLIENT CMD": vm_pair with the
# roles swapped: VM 1 runs SERVER, VM 0 runs CLIENT (a server behind VM 1's
# device, e.g. reached through the device's cm-listen).  VM 1 reports the
# server's exit status in the NAME-done barrier; both sides return 0 only
# if client and server succeeded.  No perftest REJ-8 retries here.
vm_pair_rev() {
    _rc=0
    if [ "$PVRDMA_VM" = 0 ]; then
        barrier "$1-ready" $(($2 + 60))
        log "$1: client: $5"
        # shellcheck disable=SC2086
        timeout "$2" $5 > "/tmp/$1.out" 2>&1 || _rc=$?
        _src=$(barrier_recv "$1-done" $(($2 + 30)))
        [ "$_rc" = 0 ] && [ "$_src" != 0 ] && _rc="server $_src"
    else
        log "$1: server: $4"
        # shellcheck disable=SC2086
        timeout "$2" $4 > "/tmp/$1.out" 2>&1 &
        _spid=$!
        _wait_listening "$1" "$3" "$_spid" || _rc=1
        barrier "$1-ready" 60
        wait "$_spid"; _w=$?
        [ "$_rc" != 0 ] || _rc=$_w
        barrier_send "$1-done" 60 "$_rc"
    fi
    [ "$_rc" != 0 ] || ! pp_invalid "/tmp/$1.out" >/dev/null || _rc="invalid data"
    [ "$_rc" = 0 ] && return 0
    echo "--- $1 output (rc $_rc; 124/143 = timeout) ---"; cat "/tmp/$1.out"
    PAIR_ERR=${PAIR_ERR:-"$1: rc $_rc"}
    log "$1: FAILED (rc $_rc)"
    return 1
}

# one run of vm_pair; sets _rc to 0, an exit status, or "retry"
_vm_pair_once() {
    _rc=0
    if [ "$PVRDMA_VM" = 0 ]; then
        log "$1: server: $4"
        # shellcheck disable=SC2086
        timeout "$2" $4 > "/tmp/$1.out" 2>&1 &
        _spid=$!
        _wait_listening "$1" "$3" "$_spid" || _rc=1
        barrier "$1-ready" 60
        _crc=$(barrier_recv "$1-done" $(($2 + 30)))
        _stayed=0
        case $_crc in
            0) # a server that serves until stopped (PAIR_STAYS=1) is
               # stopped now; still running counts as success
               if [ "${PAIR_STAYS:-0}" = 1 ] && kill -0 "$_spid" 2>/dev/null; then
                   _stayed=1; kill "$_spid" 2>/dev/null
               fi ;;
            *) # the client failed or never reported: stop the server
               sleep 5; kill "$_spid" 2>/dev/null ;;
        esac
        wait "$_spid"; _src=$?
        [ $_stayed = 0 ] || _src=0
        [ "$_rc" != 0 ] || _rc=$_src
        [ "$_crc" = retry ] && _rc=retry
    else
        barrier "$1-ready" 60
        log "$1: client: $5"
        # shellcheck disable=SC2086
        timeout "$2" $5 > "/tmp/$1.out" 2>&1 || _rc=$?
        if [ "$_rc" != 0 ] && grep -q "RDMA_CM_EVENT_REJECTED; error: 8\." "/tmp/$1.out"; then
            _rc=retry
        fi
        barrier_send "$1-done" 60 "$_rc"
    fi
}

# perf_result FILE: the last result line of a perftest run (first field the
# message size), or nothing
perf_result() {
    grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$1" | tail -n 1
}

# perf_check NAME FIELD: the client's perftest output has a result line
# whose FIELD-th column is a positive number; prints it.  Returns 1 if not.
# One exception: perftest measures its clock against gettimeofday() before
# it computes a figure, and refuses a fit with "Correlation coefficient r^2:
# ... < 0.9" (a TCG vCPU on a loaded host), then prints 0 for every figure.
# The run itself is judged then: its result line must show the work
# requested done (a positive iteration count, column 2; the run exited 0),
# and the log says the figure is missing.
perf_check() {
    _l=$(perf_result "/tmp/$1.out")
    _v=$(echo "$_l" | awk -v f="$2" '{print $f}')
    if [ -n "$_l" ] && grep -q 'Correlation coefficient r^2: .* < 0.9' "/tmp/$1.out" &&
       echo "$_l" | awk '{exit !($2 + 0 > 0)}'; then
        log "$1: $_l (no figure: perftest's clock calibration failed, $(grep -o 'r^2: [0-9.]*' "/tmp/$1.out" | head -1))"
        return 0
    fi
    if [ -z "$_l" ] || ! awk -v v="$_v" 'BEGIN{exit !(v + 0 > 0)}'; then
        cat "/tmp/$1.out"
        PAIR_ERR=${PAIR_ERR:-"$1: no result line with a positive column $2"}
        log "$1: no result line with a positive column $2"
        return 1
    fi
    log "$1: $_l"
}

# perftest_2vm DEV "OPTS" LISTEN "TEST:SIZE ...": each perftest TEST with
# message SIZE between the two VMs (VM 0 serves); all run, the test fails at
# the end if any failed.  The client's last result line must have a positive
# average: column 6 (t_avg, usec) for *_lat, column 4 (BW average, MB/s) for
# *_bw.
perftest_2vm() {
    _d=$1 _po=$2 _lis=$3 _bad=0 _n=0
    for _t in $4; do
        _b=${_t%%:*} _s=${_t#*:} _n=$((_n + 1))
        _o="-d $_d $_po -F -n $PERF_ITERS -s $_s"
        vm_pair "$_b" 120 "$_lis" "$_b $_o" "$_b $_o $PVRDMA_PEER_IP" || { _bad=$((_bad + 1)); continue; }
        [ "$PVRDMA_VM" = 1 ] || continue
        case $_b in *_lat) _c=6 ;; *) _c=4 ;; esac
        perf_check "$_b" "$_c" || _bad=$((_bad + 1))
    done
    [ $_bad = 0 ] || fail "$_bad of $_n perftest runs on $_d failed (first: $PAIR_ERR)"
}

# mount_configfs: configfs at /sys/kernel/config (nvmet, the LIO target)
mount_configfs() {
    grep -q " /sys/kernel/config " /proc/mounts ||
        run mount -t configfs none /sys/kernel/config
}

# nvmet_export NQN: export a 16 MiB RAM disk (/dev/ram0) as NVMe namespace 1
# of subsystem NQN with nvmet-rdma on $PVRDMA_IP:4420
nvmet_export() {
    _nqn=$1 _cfg=/sys/kernel/config/nvmet
    run modprobe brd rd_nr=1 rd_size=16384
    run modprobe nvmet_rdma
    mount_configfs
    run mkdir "$_cfg/subsystems/$_nqn"
    echo 1 > "$_cfg/subsystems/$_nqn/attr_allow_any_host"
    run mkdir "$_cfg/subsystems/$_nqn/namespaces/1"
    echo /dev/ram0 > "$_cfg/subsystems/$_nqn/namespaces/1/device_path"
    echo 1 > "$_cfg/subsystems/$_nqn/namespaces/1/enable" ||
        fail "nvmet: namespace enable"
    run mkdir "$_cfg/ports/1"
    echo rdma > "$_cfg/ports/1/addr_trtype"
    echo ipv4 > "$_cfg/ports/1/addr_adrfam"
    echo "$PVRDMA_IP" > "$_cfg/ports/1/addr_traddr"
    echo 4420 > "$_cfg/ports/1/addr_trsvcid"
    run ln -s "$_cfg/subsystems/$_nqn" "$_cfg/ports/1/subsystems/$_nqn"
    log "nvmet: $_nqn on rdma $PVRDMA_IP:4420"
}

# nvme_connect NQN ADDR: what nvme-cli's "connect" does; waits for nvme0n1
nvme_connect() {
    run modprobe nvme_rdma
    echo "nqn=$1,transport=rdma,traddr=$2,trsvcid=4420" > /dev/nvme-fabrics ||
        { dmesg | tail -20; fail "nvme connect over rdma to $2 failed"; }
    for _i in $(seq 50); do
        [ -b /dev/nvme0n1 ] && break
        sleep 0.2
    done
    [ -b /dev/nvme0n1 ] || { dmesg | tail -20; fail "no /dev/nvme0n1 after connect"; }
    [ "$(cat /sys/class/nvme/nvme0/transport)" = rdma ] ||
        fail "nvme0 is not an rdma controller"
    log "connected: $(cat /sys/class/nvme/nvme0/address)"
}

# kernel_clean: no oops, warning or pvrdma error in dmesg
kernel_clean() {
    _bad=$(dmesg | grep -v "module verification failed" |
        grep -E "BUG:|Oops:|WARNING:|pvrdma.*([Ee]rror|[Ff]ail)")
    [ -z "$_bad" ] || fail "kernel complained: $_bad"
}

# --- RoCEv2 interop (tests 3x): the device against Linux soft-RoCE, and two
# --- devices without the co-resident transport, over the shared netdev

# roce_setup: this VM's RDMA device for a RoCEv2 test: vmw_pvrdma0 when the
# pvrdma device was given to this VM ($PVRDMA_DEVICE=1: the module must be
# loaded and the port ACTIVE), else soft-RoCE rxe0 on the NIC (setup_rxe).
# Sets ROCE_DEV and ROCE_GIDX, the index of its RoCE v2 GID of $PVRDMA_IP;
# fails the test if any of that is missing.
roce_setup() {
    if [ "$PVRDMA_DEVICE" = 1 ]; then
        ROCE_DEV=vmw_pvrdma0
        grep -q '^vmw_pvrdma ' /proc/modules || fail "vmw_pvrdma is not loaded"
        wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
    else
        ROCE_DEV=rxe0
        setup_rxe
        wait_dev rxe0 10 || fail "rxe0 not ACTIVE"
    fi
    ROCE_GIDX=$(roce_v2_gid "$ROCE_DEV") || { echo "$ROCE_GIDX"; fail "$ROCE_DEV: no RoCE v2 GID for $PVRDMA_IP"; }
    log "$ROCE_DEV on $PVRDMA_NETIF ($(readlink "/sys/class/net/$PVRDMA_NETIF/device/driver" | sed 's|.*/||')): RoCE v2 GID index $ROCE_GIDX ($(cat "/sys/class/infiniband/$ROCE_DEV/ports/1/gids/$ROCE_GIDX")), active MTU $(ibv_devinfo -d "$ROCE_DEV" 2>/dev/null | sed -n 's/.*active_mtu:[[:space:]]*//p')"
}

# roce_diag: what each side saw on the wire, for the log: the device's
# counters (rxe's hw_counters, non-zero ones), UDP datagrams to no listener
# (RoCEv2 frames that the device did not take reach the IP stack as UDP to
# port 4791) and the NIC's packet counts
roce_diag() {
    log "diag: $PVRDMA_NETIF rx $(cat "/sys/class/net/$PVRDMA_NETIF/statistics/rx_packets") tx $(cat "/sys/class/net/$PVRDMA_NETIF/statistics/tx_packets") packets; UDP to no port: $(awk '/^Udp: [0-9]/{print $3; exit}' /proc/net/snmp)"
    for _f in /sys/class/infiniband/"${ROCE_DEV:-none}"/ports/1/hw_counters/*; do
        [ -f "$_f" ] || continue
        _v=$(cat "$_f" 2>/dev/null)
        [ "${_v:-0}" = 0 ] || echo "  ${ROCE_DEV} ${_f##*/} $_v"
    done
}

# step NAME CMD...: one check of a test made of several independent ones.
# CMD runs in a subshell: a fail() in it ends only this step (its message
# printed as "step NAME failed: ...", not as the test's FAIL line).  Logs
# "step NAME: ok (Ns)" or "step NAME: FAILED (Ns): reason", the reason
# being the step's PAIR_ERR or fail() message.  Both VMs run the same steps
# in the same order (their barriers are named after the step).
# steps_done fails the test with every failed step's name and the first
# one's reason.
STEPS_N=0 STEPS_BAD=0 STEPS_FAILED='' STEPS_FIRST=''
step() {
    _stn=$1; shift
    STEPS_N=$((STEPS_N + 1))
    log "=== step $_stn"
    _st0=$(cut -d' ' -f1 /proc/uptime)
    rm -f /tmp/step.err
    (
        fail() { echo "step $_stn failed: $*"; echo "$*" > /tmp/step.err; exit 1; }
        PAIR_ERR=
        "$@"
        _r=$?
        [ $_r = 0 ] || [ -s /tmp/step.err ] || echo "${PAIR_ERR:-exit status $_r}" > /tmp/step.err
        exit $_r
    )
    _str=$?
    _sts=$(awk -v a="$_st0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "%.1f", b - a}')
    if [ $_str = 0 ]; then
        log "step $_stn: ok (${_sts}s)"
        return 0
    fi
    _ste=$(head -n 1 /tmp/step.err 2>/dev/null)
    log "step $_stn: FAILED (${_sts}s): ${_ste:-exit status $_str}"
    STEPS_BAD=$((STEPS_BAD + 1))
    STEPS_FAILED="$STEPS_FAILED $_stn"
    [ -n "$STEPS_FIRST" ] || STEPS_FIRST="$_stn: ${_ste:-exit status $_str}"
    return 1
}

steps_done() {
    [ "$STEPS_BAD" = 0 ] || fail "$STEPS_BAD of $STEPS_N steps failed:$STEPS_FAILED (first: $STEPS_FIRST)"
    log "all $STEPS_N steps passed"
}

# pp_2vm KIND SIZE [rev] [SECS]: one ibv_KIND_pingpong (rc, ud, srq) of
# SIZE bytes on ROCE_DEV with -g ROCE_GIDX (each VM its own) and -c
# (pp_invalid fails it); VM 0 serves, or with "rev" VM 1 serves and VM 0
# connects.  SECS limits each side (default 30; a pass takes 1-3 s under
# TCG).  Each side must print "2*SIZE*PP_ITERS bytes in" and "PP_ITERS
# iters in".  Returns 1 on failure (PAIR_ERR says why).
pp_2vm() {
    _k=$1 _s=$2 _dir=${3:-fwd} _secs=${4:-30}
    _nm=$_k-$_s$([ "$_dir" = rev ] && echo -rev)
    _o="-d $ROCE_DEV -g $ROCE_GIDX -n $PP_ITERS -r $PP_RXDEPTH -c -s $_s"
    [ "$_k" != srq ] || _o="$_o -q 4"
    if [ "$_dir" = rev ]; then
        vm_pair_rev "$_nm" "$_secs" tcp:18515 "ibv_${_k}_pingpong $_o" \
            "ibv_${_k}_pingpong $_o $PVRDMA_PEER_IP" || return 1
    else
        vm_pair "$_nm" "$_secs" tcp:18515 "ibv_${_k}_pingpong $_o" \
            "ibv_${_k}_pingpong $_o $PVRDMA_PEER_IP" || return 1
    fi
    if ! _l=$(grep -E "^$((_s * 2 * PP_ITERS)) bytes in " "/tmp/$_nm.out") ||
       ! grep -qE "^$PP_ITERS iters in .* usec/iter" "/tmp/$_nm.out"; then
        cat "/tmp/$_nm.out"
        PAIR_ERR=${PAIR_ERR:-"$_nm: no '$((_s * 2 * PP_ITERS)) bytes in' / '$PP_ITERS iters' line"}
        return 1
    fi
    log "$_nm: ok: $_l"
}

# perf_2vm BIN SIZE [rev] [OPTS] [SECS]: one perftest run between the VMs
# (SECS default 45)
# on ROCE_DEV (-F -n PERF_ITERS -s SIZE and OPTS, by default "-x
# ROCE_GIDX"; "-R" for RDMA CM); VM 0 serves, or with "rev" VM 1 serves
# (no REJ-8 retries then, see vm_pair).  Both sides must exit 0 and the
# client print a result line with a positive average (perf_check).  The
# run is named BIN, BIN-rev, BIN-cm or BIN-cm-rev.
perf_2vm() {
    _b=$1 _s=$2 _dir=${3:-fwd} _po=${4:--x $ROCE_GIDX} _secs=${5:-45}
    _nm=$_b
    case $_po in *-R*) _nm=$_nm-cm _lis=cm:18515 ;; *) _lis=tcp:18515 ;; esac
    [ "$_dir" != rev ] || _nm=$_nm-rev
    _o="-d $ROCE_DEV $_po -F -n $PERF_ITERS -s $_s"
    case $_b in *_lat) _c=6 ;; *) _c=4 ;; esac
    if [ "$_dir" = rev ]; then
        vm_pair_rev "$_nm" "$_secs" "$_lis" "$_b $_o" "$_b $_o $PVRDMA_PEER_IP" || return 1
        [ "$PVRDMA_VM" = 1 ] || perf_check "$_nm" "$_c" || return 1
    else
        vm_pair "$_nm" "$_secs" "$_lis" "$_b $_o" "$_b $_o $PVRDMA_PEER_IP" || return 1
        [ "$PVRDMA_VM" = 0 ] || perf_check "$_nm" "$_c" || return 1
    fi
}

# rping_2vm SIZE COUNT [rev] [SECS, default 45]: rping -V (every ping's data checked by
# the client) of COUNT pings of SIZE bytes; VM 0 serves, or with "rev" VM 1
# serves.  The client (-v) must print exactly COUNT "ping data:" lines and
# no mismatch.
rping_2vm() {
    _s=$1 _k=$2 _dir=${3:-fwd} _secs=${4:-45}
    _nm=rping-$_s$([ "$_dir" = rev ] && echo -rev)
    _srv="rping -s -a $PVRDMA_IP -p 7174 -S $_s -C $_k -V"
    _cli="rping -c -a $PVRDMA_PEER_IP -p 7174 -S $_s -C $_k -V -v"
    if [ "$_dir" = rev ]; then
        vm_pair_rev "$_nm" "$_secs" cm:7174 "$_srv" "$_cli" || return 1
        _cvm=0
    else
        vm_pair "$_nm" "$_secs" cm:7174 "$_srv" "$_cli" || return 1
        _cvm=1
    fi
    [ "$PVRDMA_VM" = "$_cvm" ] || return 0
    _got=$(grep -c '^ping data: rdma-ping-' "/tmp/$_nm.out")
    if [ "$_got" != "$_k" ]; then
        head -c 2000 "/tmp/$_nm.out"
        PAIR_ERR=${PAIR_ERR:-"$_nm: client printed $_got pings, expected $_k"}
        return 1
    fi
    if grep -q 'mismatch' "/tmp/$_nm.out"; then
        PAIR_ERR=${PAIR_ERR:-"$_nm: data mismatch"}
        return 1
    fi
    log "$_nm: $_got pings of $_s bytes validated"
}

# udaddy_2vm [SECS, default 45]: udaddy (UD over RDMA CM: SIDR, address handles) with
# 2 connections of 20 messages of 500 bytes, VM 0 serving; both sides must
# print "data transfers complete"
udaddy_2vm() {
    vm_pair udaddy "${1:-45}" cm:7174 "udaddy -c 2 -C 20 -S 500" \
        "udaddy -s $PVRDMA_PEER_IP -c 2 -C 20 -S 500" || return 1
    if ! grep -q "data transfers complete" /tmp/udaddy.out; then
        cat /tmp/udaddy.out
        PAIR_ERR=${PAIR_ERR:-"udaddy: no 'data transfers complete'"}
        return 1
    fi
    log "udaddy: data transfers complete"
}

# ping_peer: the peer answers IP ping over the NIC (up to 30 s)
ping_peer() {
    _i=0
    until ping -c 1 -W 1 "$PVRDMA_PEER_IP" >/dev/null 2>&1; do
        _i=$((_i + 1)); [ $_i -lt 30 ] || fail "peer $PVRDMA_PEER_IP does not answer ping"
    done
    ping -c 3 -i 0.2 "$PVRDMA_PEER_IP" > /tmp/ping.out 2>&1 ||
        { cat /tmp/ping.out; fail "ping $PVRDMA_PEER_IP"; }
    tail -n 2 /tmp/ping.out
}

# --- three VMs, host queries, a lossy switch (tests 32-34; run-vm.sh --vms 3,
# --- --lossy, --capture)

# vm_ip K: the address of VM K (run-vm.sh: 10.0.0.(K+1))
vm_ip() {
    echo "${PVRDMA_IP%.*}.$(($1 + 1))"
}

# with_vm K CMD...: CMD is a two-VM exchange (vm_pair, pp_2vm, perf_2vm,
# rping_2vm, barrier, ...) between VM 0 and VM K: in VM 0 it runs with
# PVRDMA_PEER_IP set to VM K's address, in VM K as it is (its peer is VM
# 0), and in every other VM not at all (status 0).  The pair's barriers use
# TCP port 18600+K: a VM that waits for its turn knocks on a port VM 0 does
# not listen on yet, instead of meeting VM 0's barrier with another VM.
with_vm() {
    _wk=$1; shift
    [ "$PVRDMA_VM" = 0 ] || [ "$PVRDMA_VM" = "$_wk" ] || return 0
    _wpeer=$PVRDMA_PEER_IP _wport=${BARRIER_PORT:-}
    [ "$PVRDMA_VM" != 0 ] || PVRDMA_PEER_IP=$(vm_ip "$_wk")
    BARRIER_PORT=$((18600 + _wk))
    "$@"; _wr=$?
    PVRDMA_PEER_IP=$_wpeer BARRIER_PORT=$_wport
    [ -n "$BARRIER_PORT" ] || unset BARRIER_PORT
    return $_wr
}

# in_pair K: true in VM 0 and VM K (for logs: a step of another pair is
# "ok" in a VM that takes no part in it)
in_pair() {
    [ "$PVRDMA_VM" = 0 ] || [ "$PVRDMA_VM" = "$1" ]
}

# host_query TAG [SECS]: have the host record every pvrdma VM's counters
# and QPs now (run-vm.sh sees "PVRDMA-QMP TAG" on the console and writes
# <out>/vmN/qmp-TAG.txt through QMP, and the switch's counters to
# <out>/switch-TAG.stats), then wait SECS (default 3) for it: run-vm.sh
# polls the consoles every 0.1 s and a query takes a fraction of a second.
host_query() {
    echo "PVRDMA-QMP $1"
    sleep "${2:-3}"
}

# run_across NAME SECS SERVER CLIENT [REQUEST...]: a run inside this VM
# (loopback QPs) across what the host is asked to do: SERVER and CLIENT in
# the background, limited to SECS seconds; once they are connected, each
# REQUEST in turn is printed for run-vm.sh and the QPs recorded after it
# (host_query TAG, TAG the request's second word).  REQUEST: "PVRDMA-MIGRATE
# TAG" (the default, TAG = NAME: a live migration to a new QEMU),
# "PVRDMA-MIGRATE TAG file", "PVRDMA-SNAPSHOT TAG".  Both must exit 0 with
# no "invalid data" or "mismatch" in /tmp/NAME.{srv,cli}; "NAME: done" on
# the console tells a host check when the run ended.  The server listens
# on TCP port 18515, or on RA_LISTEN if set (tcp:PORT or cm:PORT).
run_across() {
    _n=$1 _s=$2 _srv=$3 _cli=$4
    shift 4
    [ $# -gt 0 ] || set -- "PVRDMA-MIGRATE $_n"
    # shellcheck disable=SC2086
    timeout "$_s" $_srv > "/tmp/$_n.srv" 2>&1 &
    _sp=$!
    if [ -n "${RA_LISTEN:-}" ]; then
        _wait_listening "$_n" "$RA_LISTEN" $_sp || { cat "/tmp/$_n.srv"; fail "$_n: server does not listen"; }
    else
        wait_port 18515 10 || { cat "/tmp/$_n.srv"; fail "$_n: server does not listen"; }
    fi
    # shellcheck disable=SC2086
    timeout "$_s" $_cli > "/tmp/$_n.cli" 2>&1 &
    _cp=$!
    sleep 3
    kill -0 "$_cp" 2>/dev/null || { cat "/tmp/$_n.cli"; fail "$_n: ended before the host was asked"; }
    for _r in "$@"; do
        log "$_n: running; asked: $_r"
        echo "$_r"
        # run-vm.sh acts before it answers the query: the QEMU that runs on answers
        _t=${_r#* }
        host_query "${_t%% *}" 3
        kill -0 "$_cp" 2>/dev/null || log "$_n: ended before the query (the host check will say)"
    done
    wait "$_cp"; _crc=$?
    wait "$_sp"; _src=$?
    log "$_n: done (client rc $_crc, server rc $_src)"
    if [ $_crc != 0 ] || [ $_src != 0 ] || grep -qiE "invalid data|mismatch" "/tmp/$_n.cli" "/tmp/$_n.srv"; then
        echo "--- server ---"; cat "/tmp/$_n.srv"; echo "--- client ---"; cat "/tmp/$_n.cli"
        fail "$_n across $*: client rc $_crc, server rc $_src"
    fi
}

# across_migration NAME SECS LISTEN SRV MV "SERVER" "CLIENT": one run across
# two VMs while one of them moves: VM SRV runs SERVER (and waits until it
# listens on LISTEN, tcp:PORT or cm:PORT), the other VM runs CLIENT, both
# limited to SECS seconds; once both run, VM MV asks the host to migrate it
# to a new QEMU ("PVRDMA-MIGRATE NAME", run-vm.sh; with MIG_WHERE=away
# set, as to another host) and records its QPs there (host_query NAME).  Each side must exit 0 with no "invalid data"
# or "mismatch" in its output (/tmp/NAME.out); "NAME: rc N" on the console
# tells a host check when the run ended.
across_migration() {
    _n=$1 _s=$2 _lis=$3 _sv=$4 _mv=$5
    if [ "$PVRDMA_VM" = "$_sv" ]; then
        # shellcheck disable=SC2086
        timeout "$_s" $6 > "/tmp/$_n.out" 2>&1 &
        _p=$!
        _wait_listening "$_n" "$_lis" $_p || { cat "/tmp/$_n.out"; fail "$_n: the server does not listen"; }
        barrier "$_n-listening" 60
    else
        barrier "$_n-listening" 60
        # shellcheck disable=SC2086
        timeout "$_s" $7 > "/tmp/$_n.out" 2>&1 &
        _p=$!
    fi
    sleep 4
    kill -0 $_p 2>/dev/null || { cat "/tmp/$_n.out"; fail "$_n: ended before the migration was asked"; }
    if [ "$PVRDMA_VM" = "$_mv" ]; then
        log "$_n: running; migration asked"
        echo "PVRDMA-MIGRATE $_n ${MIG_WHERE:-}"
        host_query "$_n" 3
    fi
    wait $_p; _rc=$?
    echo "$_n: rc $_rc"
    barrier "$_n-done" $((_s + 60))
    if [ $_rc != 0 ] || grep -qiE "invalid data|mismatch" "/tmp/$_n.out"; then
        cat "/tmp/$_n.out"
        fail "$_n across a migration of VM $_mv: rc $_rc"
    fi
}

# rping_checked N: in VM 1, the rping client of across_migration's rping
# run (-V -v, 4 KiB), exactly N pings were validated (/tmp/rping.out)
rping_checked() {
    [ "$PVRDMA_VM" = 1 ] || return 0
    _got=$(grep -c '^ping data: rdma-ping-' /tmp/rping.out)
    [ "$_got" = "$1" ] || { tail -5 /tmp/rping.out; fail "rping: $_got validated pings, expected $1"; }
    log "rping: $_got pings of 4096 bytes validated"
}

# host_query_all TAG: host_query in VM 0 while every other VM waits for it
# in a barrier (a VM that powered off could not be asked)
host_query_all() {
    if [ "$PVRDMA_VM" = 0 ]; then
        host_query "$1"
        _qk=1
        while [ $_qk -lt "$PVRDMA_VMS" ]; do
            with_vm $_qk barrier "queried-$1" 60
            _qk=$((_qk + 1))
        done
    else
        with_vm "$PVRDMA_VM" barrier "queried-$1" 300
    fi
}

# barrier_all NAME [SECS]: every VM meets VM 0 (one barrier per VM, in VM
# order; a VM waits up to SECS + 60 s for its turn)
barrier_all() {
    if [ "$PVRDMA_VM" = 0 ]; then
        _bk=1
        while [ $_bk -lt "$PVRDMA_VMS" ]; do
            with_vm $_bk barrier "$1" "${2:-120}"
            _bk=$((_bk + 1))
        done
    else
        with_vm "$PVRDMA_VM" barrier "$1" $((${2:-120} + 60))
    fi
}

# roce_three_vms: the start of the three-VM RoCEv2 tests (run-vm.sh --nic
# vmxnet3,vmxnet3,virtio): VMs 0 and 1 must have the device, VM 2 must not
# (soft-RoCE); each sets up its RDMA device (roce_setup), VM 0 pings the
# other two and they ping VM 0, then all three meet.
roce_three_vms() {
    _want=$([ "$PVRDMA_VM" = 2 ] && echo 0 || echo 1)
    [ "$PVRDMA_DEVICE" = "$_want" ] ||
        fail "VM $PVRDMA_VM has PVRDMA_DEVICE=$PVRDMA_DEVICE, expected $_want (run-vm.sh --nic vmxnet3,vmxnet3,virtio)"
    roce_setup
    if [ "$PVRDMA_VM" = 0 ]; then
        for _k in 1 2; do with_vm $_k ping_peer; done
    else
        ping_peer
    fi
    barrier_all roce-up 120
}

# --- the verbs data checker (tests/verbs-check: /usr/bin/pvrdma-verbs-check)
# Every byte of every message compared, SEND, SEND with immediate, WRITE,
# WRITE with immediate, READ and atomics in both directions at once (see
# the header of tests/verbs-check/verbs-check.c).  The pingpongs' -c looks
# at one byte per page; the checker is the tests' data check.
VC_PORT=${VC_PORT:-18530}

# vc_result FILE MIN: the last line of FILE is the checker's "verbs-check:
# ok ..." with at least MIN messages of this side done and checked, and
# some of the peer's received and checked (recv: the SENDs and WRITEs that
# reached this side; READs and atomics are checked by their requester);
# prints it.  Returns 1 otherwise.
vc_result() {
    _vl=$(tail -n 1 "$1" 2>/dev/null)
    case $_vl in "verbs-check: ok "*) ;; *) return 1 ;; esac
    _vm=$(vc_field "$1" msgs)
    _vr=$(vc_field "$1" recv)
    [ "${_vm:-0}" -ge "$2" ] && [ "${_vr:-0}" -gt 0 ] || return 1
    echo "$_vl"
}

# vc_field FILE NAME: the value of NAME=VALUE in the checker's last line
# in FILE (msgs, recv, bytes, ...)
vc_field() { tail -n 1 "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# _vc_judge NAME MIN [FILE]: a checker's output (FILE, default
# /tmp/NAME.out) passed
_vc_judge() {
    _vf=${3:-/tmp/$1.out}
    if ! _vl=$(vc_result "$_vf" "$2"); then
        tail -n 20 "$_vf"
        _ve=$(grep -m1 '^verbs-check: \(MISMATCH\|FAILED\)' "$_vf") ||
            _ve="no 'verbs-check: ok' line with >= $2 messages (last: $(tail -n 1 "$_vf"))"
        PAIR_ERR=${PAIR_ERR:-"$1: $_ve"}
        return 1
    fi
    log "$1: $_vl"
}

# vc_2vm NAME SECS MIN [fwd|rev] OPTIONS...: one checker run between the
# two VMs (VM 0 serves, VM 1 with rev), both limited to SECS; each side must
# end with "verbs-check: ok" and at least MIN messages each way (-n or -D
# and the rest are in OPTIONS, e.g. "-n 200 -S 65536").
vc_2vm() {
    _vn=$1 _vs=$2 _vmin=$3 _vd=$4
    shift 4
    _vsrv="pvrdma-verbs-check -p $VC_PORT $* server"
    _vcli="pvrdma-verbs-check -p $VC_PORT $* client $PVRDMA_PEER_IP"
    if [ "$_vd" = rev ]; then
        vm_pair_rev "$_vn" "$_vs" "cm:$VC_PORT" "$_vsrv" "$_vcli" || return 1
    else
        vm_pair "$_vn" "$_vs" "cm:$VC_PORT" "$_vsrv" "$_vcli" || return 1
    fi
    _vc_judge "$_vn" "$_vmin"
}

# vc_loopback NAME SECS MIN OPTIONS...: server and client in this VM (to
# this VM's own address: the device's loopback path); both must pass
vc_loopback() {
    _vn=$1 _vs=$2 _vmin=$3
    shift 3
    # shellcheck disable=SC2086
    timeout "$_vs" pvrdma-verbs-check -p "$VC_PORT" $* server > "/tmp/$_vn-srv.out" 2>&1 &
    _vp=$!
    _wait_listening "$_vn" "cm:$VC_PORT" $_vp || { cat "/tmp/$_vn-srv.out"; PAIR_ERR="$_vn: the server does not listen"; return 1; }
    # shellcheck disable=SC2086
    timeout "$_vs" pvrdma-verbs-check -p "$VC_PORT" $* client "$PVRDMA_IP" > "/tmp/$_vn-cli.out" 2>&1
    _vcr=$?
    wait $_vp; _vsr=$?
    if [ $_vcr != 0 ] || [ $_vsr != 0 ]; then
        echo "--- $_vn server (rc $_vsr) ---"; tail -n 20 "/tmp/$_vn-srv.out"
        echo "--- $_vn client (rc $_vcr) ---"; tail -n 20 "/tmp/$_vn-cli.out"
        _ve=$(grep -h -m1 '^verbs-check: \(MISMATCH\|FAILED\)' "/tmp/$_vn-cli.out" "/tmp/$_vn-srv.out" | head -n 1)
        PAIR_ERR=${PAIR_ERR:-"$_vn: client rc $_vcr, server rc $_vsr${_ve:+: $_ve}"}
        return 1
    fi
    _vc_judge "$_vn-srv" "$_vmin" && _vc_judge "$_vn-cli" "$_vmin"
}

# vc_across NAME SECS DURATION REQUEST...: the checker in time mode (-D
# DURATION) between two processes of this VM (the loopback path) across
# what the host is asked to do (run_across: migrations, snapshots); both
# sides must pass with at least 100 messages each
vc_across() {
    _van=$1 _vas=$2 _vad=$3
    shift 3
    _vac="pvrdma-verbs-check -p $VC_PORT -D $_vad -S 65536 -T 60"
    RA_LISTEN=cm:$VC_PORT run_across "$_van" "$_vas" "$_vac server" \
        "$_vac client $PVRDMA_IP" "$@"
    _vc_judge "$_van-srv" 100 "/tmp/$_van.srv" &&
        _vc_judge "$_van-cli" 100 "/tmp/$_van.cli" || fail "$PAIR_ERR"
}

# --- the RoCEv2 soak (tests 90 and 91; scripts/soak-roce.sh sets the
# --- switch's loss and the host's load)

# soak_run K SIZE COUNT fwd|rev SELF PEER: one soak cell, the checker
# between VM 0 (device SELF, "pvrdma" or "rxe") and VM K (device PEER):
# COUNT messages of SIZE bytes each way, SEND, SEND with immediate, WRITE,
# WRITE with immediate, READ and, between two pvrdma devices, atomics (rxe
# 6.1 fails its own atomics under loss, rxe against rxe too), 8 in flight,
# the applications' usual local ACK timeout 14 and retry_cnt 7, within
# SOAK_SECS; VM 0 serves (fwd) or connects (rev).  VM 0 logs
#   soak-cell SELF-server/PEER SIZE COUNT RESULT SECS   (-client/ with rev)
# and VM K, if its side failed, "soak-peer PAIR SIZE COUNT rc N [data]".
# RESULT: ok, hang (no completion for 60 s, or the limit killed it), retry
# (a completion with RETRY_EXC_ERR), data (the checker found a byte,
# length, immediate or atomic value that differs), error (anything else).
# Always returns 0: the soak script counts the results.
soak_run() {
    _k=$1 _s=$2 _c=$3 _d=$4
    _pair=$([ "$_d" = rev ] && echo "$5-client/$6" || echo "$5-server/$6")
    _ops=
    [ "$5/$6" = pvrdma/pvrdma ] || _ops="-o send,send_imm,write,write_imm,read"
    _t0=$(cut -d' ' -f1 /proc/uptime)
    # shellcheck disable=SC2086
    with_vm "$_k" vc_2vm soak "$SOAK_SECS" "$_c" "$_d" -t rc -s "$_s" -n "$_c" \
        -q 8 -g 2 -T 60 --ack-timeout 14 $_ops > /tmp/soak.log 2>&1
    _r=$?
    _secs=$(awk -v a="$_t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "%.1f", b - a}')
    if [ "$PVRDMA_VM" = 0 ]; then
        if [ $_r = 0 ]; then
            _res=ok
        elif grep -q "status=12 " /tmp/soak.out /tmp/soak.log; then
            _res=retry
        elif grep -q "MISMATCH" /tmp/soak.out /tmp/soak.log; then
            _res=data
        elif grep -qE "no completion for|rc (server )?(124|143)[;)]" /tmp/soak.out /tmp/soak.log; then
            _res=hang
        else
            _res=error
        fi
        log "soak-cell $_pair $_s $_c $_res $_secs"
        [ "$_res" = ok ] || cat /tmp/soak.log /tmp/soak.out | sed 's/^/  | /' | tail -n 20
    elif [ "$PVRDMA_VM" = "$_k" ] && [ $_r != 0 ]; then
        # the peer's side of a cell that failed here; "data" if the
        # checker found a difference on this side (the soak script then
        # counts the cell as data, whatever VM 0 saw)
        _pres=
        ! grep -q "MISMATCH" /tmp/soak.out /tmp/soak.log || _pres=" data"
        log "soak-peer $_pair $_s $_c rc $_r$_pres"
        cat /tmp/soak.log /tmp/soak.out | sed 's/^/  | /' | tail -n 20
    fi
    return 0
}
