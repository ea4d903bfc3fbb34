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

# cm_ids_on DEV REGEX: this VM's rdma_cm IDs whose line matches REGEX
# (e.g. "dst-addr 10.0.0.2:4420 "); fails unless there is one and all are
# on DEV
cm_ids_on() {
    _ids=$(rdma resource show cm_id 2>/dev/null | grep -E "$2")
    echo "$_ids" | sed 's/^/  /'
    [ -n "$_ids" ] || { rdma resource show cm_id; fail "no rdma_cm ID matches '$2'"; }
    _n=$(echo "$_ids" | grep -vc "^link $1/")
    [ "$_n" = 0 ] || fail "$_n rdma_cm IDs matching '$2' are not on $1"
    log "$(echo "$_ids" | wc -l) rdma_cm IDs ($2), all on $1"
}

# md5_agree NAME SUM WHAT: the two VMs' md5 of the same data (WHAT: what
# each summed, for the log): VM 1 sends its SUM to VM 0 (barrier NAME-sum,
# the only way barrier_send goes), which compares it with its own; returns
# 1 in VM 0 if they differ or one is "none" (the step's reason says so).
# MD5_WAIT: how long VM 0 waits (default 60 s).
md5_agree() {
    if [ "$PVRDMA_VM" != 0 ]; then
        barrier_send "$1-sum" 60 "$2"
        return 0
    fi
    _mp=$(barrier_recv "$1-sum" "${MD5_WAIT:-60}")
    if [ "$_mp" != "$2" ] || [ "$2" = none ]; then
        [ -s /tmp/step.err ] || echo "md5 of $3: $2 here, $_mp in VM 1" > /tmp/step.err
        log "md5 of $3: $2 here, VM 1 $_mp: DIFFERENT"
        return 1
    fi
    log "md5 of $3: the same in both VMs ($2)"
}

# nvme_io NQN ADDR DEV [HOST_ADDR]: connect to subsystem NQN at ADDR:4420
# with nvme-rdma (from HOST_ADDR if given), its rdma_cm IDs on DEV; write
# NVME_MIB MiB of random data with O_DIRECT (1 MiB I/Os), read them back
# with O_DIRECT (256 KiB I/Os), compare.  Leaves /tmp/pattern and the
# controller connected (nvme_disconnect).
NVME_MIB=${NVME_MIB:-8}
nvme_io() {
    _c="nqn=$1,transport=rdma,traddr=$2,trsvcid=4420${4:+,host_traddr=$4}"
    run modprobe nvme_rdma
    log "connect: $_c"
    # the write returns once the admin and I/O queues are connected
    timeout 60 sh -c "echo '$_c' > /dev/nvme-fabrics" ||
        { _r=$?; dmesg | tail -20; fail "nvme connect over rdma to $2 failed (rc $_r; 124 = timeout)"; }
    _i=0
    while [ ! -b /dev/nvme0n1 ] && [ $_i -lt 100 ]; do sleep 0.2; _i=$((_i + 1)); done
    [ -b /dev/nvme0n1 ] || { dmesg | tail -20; fail "no /dev/nvme0n1 after connect"; }
    _t=$(cat /sys/class/nvme/nvme0/transport)
    [ "$_t" = rdma ] || fail "nvme0's transport is '$_t', not rdma"
    log "nvme0: transport $_t, $(cat /sys/class/nvme/nvme0/address), $(($(cat /sys/block/nvme0n1/size) / 2048)) MiB"
    cm_ids_on "$3" "dst-addr $2:4420( |\$)"
    run dd if=/dev/urandom of=/tmp/pattern bs=64k count=$((NVME_MIB * 16)) 2>/dev/null
    log "write $NVME_MIB MiB (O_DIRECT, 1 MiB I/Os)"
    timeout 90 dd if=/tmp/pattern of=/dev/nvme0n1 bs=1M oflag=direct 2>/tmp/dd.err ||
        { cat /tmp/dd.err; dmesg | tail -20; fail "O_DIRECT write to nvme0n1 failed or timed out"; }
    log "read back (O_DIRECT, 256 KiB I/Os)"
    timeout 90 dd if=/dev/nvme0n1 of=/tmp/back bs=256k count=$((NVME_MIB * 4)) iflag=direct 2>/tmp/dd.err ||
        { cat /tmp/dd.err; dmesg | tail -20; fail "O_DIRECT read from nvme0n1 failed or timed out"; }
    cmp /tmp/pattern /tmp/back || fail "the $NVME_MIB MiB read back through nvme-rdma differ from those written"
    log "nvme-rdma: $NVME_MIB MiB written to $2 and read back, identical"
}

# nvme_disconnect: delete nvme0 if there is one (bounded)
nvme_disconnect() {
    [ -e /sys/class/nvme/nvme0 ] || return 0
    timeout 60 sh -c 'echo 1 > /sys/class/nvme/nvme0/delete_controller' || fail "disconnect"
    _i=0
    while [ -e /sys/class/nvme/nvme0 ] && [ $_i -lt 50 ]; do sleep 0.2; _i=$((_i + 1)); done
    [ ! -e /sys/class/nvme/nvme0 ] || fail "nvme0 still there after delete_controller"
    log "disconnected"
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

# host_inject TAG ARGS [SECS]: have the host inject a fault into this VM's
# device (run-vm.sh sees "PVRDMA-INJECT TAG ARGS ." on the console and runs
# HMP "x_pvrdma_inject ARGS", answer in <out>/vmN/inject-TAG.txt), then
# wait SECS (default 1) for it: run-vm.sh polls the console every 0.1 s.
host_inject() {
    log "inject $1: $2"
    echo "PVRDMA-INJECT $1 $2 ."
    sleep "${3:-1}"
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

# vc_2vm_all: the co-resident data check of the two-VM tests: the checker
# in rc (4 SGEs, up to 1 MiB, 16 in flight), srq (VM 1 serves) and ud, and
# 4 MiB messages (the responder's pieces); fails with how many went wrong
vc_2vm_all() {
    _vb=0
    vc_2vm vc-rc 180 300 fwd -t rc -n 300 -g 4 -q 16 || _vb=$((_vb + 1))
    vc_2vm vc-srq 180 300 rev -t srq -n 300 -S 65536 || _vb=$((_vb + 1))
    vc_2vm vc-ud 180 300 fwd -t ud -n 300 || _vb=$((_vb + 1))
    # longer than the responder's byte budget per pass (1 MiB): in pieces
    vc_2vm vc-rc-4m 240 16 fwd -t rc -n 16 -S 4194304 -s 4194304,3145729 || _vb=$((_vb + 1))
    [ $_vb = 0 ] || fail "$_vb of 4 verbs checker runs failed (first: $PAIR_ERR)"
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

# vc_2vm_many NAME SECS N MIN OPTIONS...: N checker runs at once between the
# two VMs (VM 0 serves, on ports VC_PORT+100 ...), so that N connections
# end together: each side destroys its QP as soon as it has the peer's FIN,
# the teardown of many queues at once that an NVMe or NFS disconnect is.
# Every one of the 2N processes must exit 0 with "verbs-check: ok" and at
# least MIN messages each way; VM 1 reports how many of its clients failed.
vc_2vm_many() {
    _vn=$1 _vs=$2 _vk=$3 _vmin=$4
    shift 4
    _vbad=0 _vpids=
    if [ "$PVRDMA_VM" = 0 ]; then
        _vi=0
        while [ $_vi -lt "$_vk" ]; do
            # shellcheck disable=SC2086
            timeout "$_vs" pvrdma-verbs-check -p $((VC_PORT + 100 + _vi)) $* server \
                > "/tmp/$_vn.$_vi.out" 2>&1 &
            _vpids="$_vpids $!"
            _vi=$((_vi + 1))
        done
        _vi=0
        for _vp in $_vpids; do
            _wait_listening "$_vn.$_vi" "cm:$((VC_PORT + 100 + _vi))" "$_vp" || _vbad=$((_vbad + 1))
            _vi=$((_vi + 1))
        done
        barrier "$_vn-ready" 60
        _vcb=$(barrier_recv "$_vn-done" $((_vs + 30)))
    else
        barrier "$_vn-ready" 60
        log "$_vn: $_vk clients: pvrdma-verbs-check -p $((VC_PORT + 100))+i $* client $PVRDMA_PEER_IP"
        _vi=0
        while [ $_vi -lt "$_vk" ]; do
            # shellcheck disable=SC2086
            timeout "$_vs" pvrdma-verbs-check -p $((VC_PORT + 100 + _vi)) $* client \
                "$PVRDMA_PEER_IP" > "/tmp/$_vn.$_vi.out" 2>&1 &
            _vpids="$_vpids $!"
            _vi=$((_vi + 1))
        done
    fi
    _vi=0
    for _vp in $_vpids; do
        wait "$_vp"; _vr=$?
        if [ $_vr != 0 ] || ! _vc_judge "$_vn.$_vi" "$_vmin" "/tmp/$_vn.$_vi.out" >/dev/null; then
            echo "--- $_vn.$_vi (rc $_vr; 124 = timeout) ---"; tail -n 10 "/tmp/$_vn.$_vi.out"
            _vbad=$((_vbad + 1))
        fi
        _vi=$((_vi + 1))
    done
    if [ "$PVRDMA_VM" = 0 ]; then
        [ "$_vcb" = 0 ] || { PAIR_ERR="$_vn: ${_vcb:-no report from} client(s) failed"; return 1; }
    else
        barrier_send "$_vn-done" 60 "$_vbad"
    fi
    [ $_vbad = 0 ] || { PAIR_ERR="$_vn: $_vbad of $_vk runs failed"; return 1; }
    log "$_vn: $_vk runs at once, each side ok"
}

# device_version_test V: the device shows version V (the test's vm-args:
# --device-args version=V): the unmodified driver reports "device version
# V", its GIDs are of the type V has (RoCE v1 before 18), and every byte of
# SEND, WRITE, READ and atomics moves right between the two VMs (the
# co-resident transport, RC and UD) and inside VM 0 (loopback), checked by
# the verbs checker.
device_version_test() {
    _dv=$1 _dd=vmw_pvrdma0
    wait_dev $_dd 15 || fail "$_dd not registered/ACTIVE"
    _dl=$(dmesg | grep -m1 "device version [0-9]*, driver version")
    case $_dl in
        *"device version $_dv, driver version 20"*) log "driver: ${_dl#*] }" ;;
        *) fail "expected 'device version $_dv, driver version 20' from the driver, got: ${_dl:-nothing}" ;;
    esac
    _dt=$([ "$_dv" -lt 18 ] && echo "IB/RoCE v1" || echo "RoCE v2")
    wait_gid $_dd "$PVRDMA_IP" "$_dt" 10 >/dev/null ||
        { dump_gids $_dd; fail "no $_dt GID for $PVRDMA_IP at device version $_dv"; }
    barrier pvrdma-up 60
    step "coresident-rc" vc_2vm vc-rc 240 200 fwd -t rc -n 200 -S 65536 -T 60
    step "coresident-ud" vc_2vm vc-ud 240 100 fwd -t ud -n 100 -T 60
    if [ "$PVRDMA_VM" = 0 ]; then
        step "loopback-rc" vc_loopback vc-lo 240 200 -t rc -n 200 -S 65536 -T 60
    fi
    steps_done
}

# vc_2vm_catch NAME SECS WHAT "OPTIONS" "CLIENT OPTIONS": a mutant between
# the two VMs (VM 0 serves): VM 1's client delivers wrong, as a faulty
# device could (--corrupt N, --mutate KIND in CLIENT OPTIONS), and VM 0's
# server must exit 1 with a MISMATCH line that holds WHAT (the check that
# must catch it); VM 1's client must not exit 0.  0 when so.
vc_2vm_catch() {
    _vn=$1 _vs=$2 _vw=$3
    _vsrv="pvrdma-verbs-check -p $VC_PORT $4 server"
    _vcli="pvrdma-verbs-check -p $VC_PORT $4 $5 client $PVRDMA_PEER_IP"
    if vm_pair "$_vn" "$_vs" "cm:$VC_PORT" "$_vsrv" "$_vcli" > "/tmp/$_vn.pair" 2>&1; then
        PAIR_ERR="$_vn: not caught, $([ "$PVRDMA_VM" = 0 ] && echo server || echo client) exited 0 (a checker that cannot fail)"
        return 1
    fi
    PAIR_ERR=
    [ "$PVRDMA_VM" = 0 ] || return 0
    _vl=$(grep -m1 '^verbs-check: MISMATCH ' "/tmp/$_vn.out")
    if [ "$_rc" = 1 ] && [ -n "$_vl" ] && [ -z "${_vl##*"$_vw"*}" ]; then
        log "$_vn: caught: $_vl"
        return 0
    fi
    tail -n 20 "/tmp/$_vn.out"
    PAIR_ERR="$_vn: server rc $_rc, not caught by its check ('$_vw'): ${_vl:-no MISMATCH line}"
    return 1
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

# --- iSER and RDS ---
# Kernel ULPs over RDMA (tests 27, 28, 53-55): the LIO iSCSI target with an
# iSER portal (ib_isert, set up through configfs), open-iscsi's iscsistart
# logging in over the iser transport (ib_iser), and RDS over its RDMA
# transport (rds_rdma) with rds-xfer (tests/guest/tools/rds-xfer.c).  Each
# is a kernel RDMA client with rdma_cm connections of its own.

ISER_MIB=${ISER_MIB:-8}

# iser_target IQN ADDR ram|brd: export a 16 MiB LUN 0 as LIO target IQN
# (TPG 1: no authentication, any initiator, writable) with an iSER portal on
# ADDR:3260; ib_isert must listen there.  The LUN is
#   ram  LIO's own RAM disk (rd_mcp, in target_core_mod): nothing but the
#        target can read it
#   brd  /dev/ram0 (brd) through target_core_iblock: what the target wrote
#        can be read back beside it (iser_backstore_md5)
iser_target() {
    _it=/sys/kernel/config/target
    _ig=$_it/iscsi/$1/tpgt_1
    run modprobe crc32c_generic
    mount_configfs
    run modprobe ib_isert
    if [ "$3" = brd ]; then
        iser_brd_ready
        _ib=$_it/core/iblock_0/disk0
        mkdir -p "$_ib" || fail "LIO: no iblock backstore"
        echo udev_path=/dev/ram0 > "$_ib/control" || fail "LIO: iblock refuses /dev/ram0"
    else
        _ib=$_it/core/rd_mcp_0/disk0
        mkdir -p "$_ib" || fail "LIO: no rd_mcp backstore"
        echo rd_pages=4096 > "$_ib/control"
    fi
    echo 1 > "$_ib/enable" || fail "LIO: backstore $_ib not enabled"
    mkdir -p "$_ig/lun/lun_0" || fail "LIO: no target $1"
    ln -s "$_ib" "$_ig/lun/lun_0/disk0" || fail "LIO: no LUN"
    mkdir "$_ig/np/$2:3260" || fail "LIO: no portal $2:3260"
    echo 1 > "$_ig/np/$2:3260/iser" || fail "LIO: portal $2:3260 refuses iser"
    echo 0 > "$_ig/attrib/authentication"
    echo 1 > "$_ig/attrib/generate_node_acls"
    echo 0 > "$_ig/attrib/demo_mode_write_protect"
    echo 1 > "$_ig/enable" || fail "LIO: target portal group not enabled"
    rdma resource show cm_id | grep -q "state LISTEN .*\[ib_isert\] src-addr $2:3260" ||
        { rdma resource show cm_id; fail "ib_isert does not listen on $2:3260"; }
    log "LIO: $1, LUN 0 $3 ($_ib), iSER portal $2:3260"
}

# iser_brd_ready: /dev/ram0 (16 MiB, brd) and LIO's iblock backend are
# there for an iser_target brd LUN; a test calls it first in every VM, so
# a guest image without target_core_iblock fails at once, with the reason
iser_brd_ready() {
    [ -b /dev/ram0 ] || run modprobe brd rd_nr=1 rd_size=16384
    # LIO's first backstore mkdir only tries to load the backends
    # (transport_subsystem_check_init: "Unable to load ..." and on); the
    # mkdir of iblock_0 would then fail with a bare EINVAL
    modprobe target_core_iblock ||
        fail "no target_core_iblock in the guest image (scripts/guest/build-image.sh, WANT): the LUN cannot be backed by /dev/ram0, so its bytes cannot be checked beside the target"
}

# iser_login IQN ADDR: log in to target IQN at ADDR:3260 with iscsistart
# over the iser transport (at most 60 s).  The session's SCSI host must be
# iSER's (proc_name iscsi_iser); sets ISER_DISK to the session's disk (sdX,
# waited for up to 10 s).
iser_login() {
    run modprobe ib_iser
    run modprobe sd_mod
    log "iscsistart: $1 at $2:3260 over iser"
    timeout 60 iscsistart -i "iqn.2026-11.org.qemu.pvrdma:initiator$PVRDMA_VM" -t "$1" -g 1 \
        -a "$2" -p 3260 -P iface.transport_name=iser > /tmp/login.out 2>&1
    _ir=$?
    cat /tmp/login.out
    [ $_ir = 0 ] && grep -q 'is operational now' /tmp/login.out ||
        fail "iSER login to $1 at $2 failed (rc $_ir; 124 = timeout)"
    _is=
    for _f in /sys/class/iscsi_session/session*/targetname; do
        [ "$(cat "$_f" 2>/dev/null)" != "$1" ] || _is=${_f%/targetname}
    done
    [ -n "$_is" ] || fail "no iSCSI session to $1 in /sys/class/iscsi_session"
    _ih=$(basename "$(readlink -f "$_is/device/..")")
    _ip=$(cat "/sys/class/scsi_host/$_ih/proc_name" 2>/dev/null)
    [ "$_ip" = iscsi_iser ] ||
        fail "${_is##*/} runs on $_ih of '$_ip', not iscsi_iser: the session is not over iSER"
    ISER_DISK=
    _i=0
    while [ $_i -lt 50 ]; do
        for _f in "$_is"/device/target*/*/block/*; do
            [ -b "/dev/${_f##*/}" ] && ISER_DISK=${_f##*/}
        done
        [ -z "$ISER_DISK" ] || break
        sleep 0.2; _i=$((_i + 1))
    done
    [ -n "$ISER_DISK" ] || { dmesg | tail -20; fail "no disk in ${_is##*/} (target $1)"; }
    log "${_is##*/}: $_ih (iscsi_iser), /dev/$ISER_DISK, $(($(cat "/sys/block/$ISER_DISK/size") / 2048)) MiB, $(cat "/sys/block/$ISER_DISK/device/vendor" | tr -d ' ')"
}

# iser_login_refused IQN ADDR SECS: iscsistart to a target IQN that ADDR
# does not have, over iser, for SECS seconds (it retries while it is
# refused, then it is stopped): each attempt is an rdma_cm connection that
# is set up, used for a login exchange and torn down, QPs destroyed, by
# both ends in this VM while their CQs are busy.  It must never log in.
iser_login_refused() {
    run modprobe ib_iser
    timeout "$3" iscsistart -i "iqn.2026-11.org.qemu.pvrdma:initiator$PVRDMA_VM" -t "$1" -g 1 \
        -a "$2" -p 3260 -P iface.transport_name=iser > /tmp/login.out 2>&1
    ! grep -q 'is operational now' /tmp/login.out ||
        fail "iSER login to $1, which $2 does not have, succeeded"
    log "iscsistart to $1 (no such target) for $3 s: $(grep -c 'login rejected' /tmp/login.out) logins refused"
}

# iser_io DISK: write ISER_MIB MiB of random data to /dev/DISK with
# O_DIRECT (1 MiB I/Os), read them back with O_DIRECT (256 KiB I/Os) and
# compare, each bounded; the data stays in /tmp/iser-pattern
iser_io() {
    dd if=/dev/urandom of=/tmp/iser-pattern bs=1M count="$ISER_MIB" 2>/dev/null
    log "write $ISER_MIB MiB to /dev/$1 (O_DIRECT)"
    timeout 120 dd if=/tmp/iser-pattern of="/dev/$1" bs=1M oflag=direct 2>/tmp/dd.err ||
        { cat /tmp/dd.err; dmesg | tail -20; fail "O_DIRECT write to /dev/$1 failed or timed out"; }
    log "read back (O_DIRECT)"
    timeout 120 dd if="/dev/$1" of=/tmp/iser-back bs=256k count=$((ISER_MIB * 4)) iflag=direct 2>/tmp/dd.err ||
        { cat /tmp/dd.err; dmesg | tail -20; fail "O_DIRECT read from /dev/$1 failed or timed out"; }
    cmp /tmp/iser-pattern /tmp/iser-back || fail "the data read back over iSER differs from what was written"
    log "$ISER_MIB MiB written and read back over iSER with O_DIRECT: identical"
}

# iser_backstore_md5: the md5 of the first ISER_MIB MiB of an iser_target
# brd LUN, read from /dev/ram0 itself (O_DIRECT: not through a page cache)
iser_backstore_md5() {
    dd if=/dev/ram0 bs=1M count="$ISER_MIB" iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1
}

# iser_target_clean: the target logged no isert error and no failed login
iser_target_clean() {
    ! dmesg | grep -E 'isert: .*(error|failed)|Login negotiation failed' ||
        fail "the iSER target reported errors"
}

# ulp_cm_ids ULP DEV [REGEX]: the kernel client ULP (ib_iser, ib_isert,
# rds_rdma) has connected rdma_cm IDs in this VM (state CONNECT; those
# whose line also matches REGEX, e.g. "dst-addr 10.0.0.2:3260"), every one
# on DEV (cm_ids_on)
ulp_cm_ids() {
    cm_ids_on "$2" "state CONNECT .*comm \[$1\] .*${3:-}"
}

# roce_rxe_vms: the start of a test between the device and soft-RoCE
# (run-vm.sh --nic vmxnet3,virtio): VM 0 must have the pvrdma device and
# VM 1 not; each sets up its RDMA device (roce_setup: ROCE_DEV, ROCE_GIDX)
# and pings the other
roce_rxe_vms() {
    _want=$((PVRDMA_VM == 0))
    [ "$PVRDMA_DEVICE" = "$_want" ] ||
        fail "VM $PVRDMA_VM has PVRDMA_DEVICE=$PVRDMA_DEVICE, expected $_want (run-vm.sh --nic vmxnet3,virtio)"
    roce_setup
    ping_peer
}

# rxe_pkts: rxe0's RoCEv2 packet counters now, "RECEIVED SENT"
# (hw_counters rcvd_pkts and sent_pkts)
rxe_pkts() {
    _rh=/sys/class/infiniband/rxe0/ports/1/hw_counters
    echo "$(cat "$_rh/rcvd_pkts" 2>/dev/null || echo 0) $(cat "$_rh/sent_pkts" 2>/dev/null || echo 0)"
}

# rxe_grew "RECEIVED SENT" RX_BYTES TX_BYTES: since rxe_pkts printed the
# first argument, rxe0 received and sent at least the packets that
# RX_BYTES and TX_BYTES of payload need at its active MTU (the path MTU is
# no larger)
rxe_grew() {
    _rm=$(ibv_devinfo -d rxe0 2>/dev/null | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p')
    [ -n "$_rm" ] || fail "rxe0: no active MTU in ibv_devinfo"
    _rwr=$(($2 / _rm)) _rws=$(($3 / _rm))
    _rn=$(rxe_pkts)
    _rr=$((${_rn% *} - ${1% *})) _rs=$((${_rn#* } - ${1#* }))
    log "rxe0: $_rr RoCEv2 packets received, $_rs sent; $2 / $3 bytes at MTU $_rm need $_rwr / $_rws"
    [ "$_rr" -ge "$_rwr" ] && [ "$_rs" -ge "$_rws" ] ||
        fail "rxe0 received $_rr and sent $_rs packets, fewer than the $_rwr / $_rws that $2 / $3 bytes need at MTU $_rm"
}

# rds_up DEV: load rds_rdma; it must have taken DEV ("RDS/IB: DEV: added")
rds_up() {
    run modprobe rds_rdma
    dmesg | grep -q "RDS/IB: $1: added" || fail "rds_rdma did not add $1"
}

# rds_xfers RECV_VM [TAG]: RDS messages from the other VM to VM RECV_VM
# over rds_rdma: for each SIZE:COUNT of RDS_CASES (default 64:200
# 8000:100 60000:40: one RC SEND up to many RDS fragments), the sender's
# rds-xfer sends COUNT messages of SIZE bytes to port 4000, and VM
# RECV_VM's rds-xfer checks that each arrives once, in order, with its
# length, byte for byte.  All run; returns 1 if any failed (PAIR_ERR says which).
# RDS_BYTES is the number of bytes the cases carry.
rds_xfers() {
    _rv=$1 _rt=${2:-} _rbad=0 _rn=0 RDS_BYTES=0
    for _rcase in ${RDS_CASES:-64:200 8000:100 60000:40}; do
        _s=${_rcase%%:*} _k=${_rcase#*:} _rn=$((_rn + 1))
        _nm=rds-$_rt$_s RDS_BYTES=$((RDS_BYTES + _s * _k))
        if [ "$PVRDMA_VM" = "$_rv" ]; then
            rds-xfer recv "${ULP_IP:-$PVRDMA_IP}" 4000 "$_k" "$_s" > "/tmp/$_nm.out" 2>&1 &
            _p=$!
            # bound (it says so) before the sender starts: RDS drops
            # messages for a port nobody has bound
            _i=0
            until grep -qs '^rds-xfer: receiving' "/tmp/$_nm.out" || [ $_i -ge 100 ]; do
                sleep 0.1; _i=$((_i + 1))
            done
            barrier "$_nm-recv" 60
            wait "$_p"; _r=$?
            cat "/tmp/$_nm.out"
            if [ "$_r" != 0 ] || ! grep -q "received $_k messages, .* data ok" "/tmp/$_nm.out"; then
                log "$_nm: FAILED (rc $_r)"; _rbad=$((_rbad + 1))
                PAIR_ERR=${PAIR_ERR:-"$_nm: $(grep -m1 '^rds-xfer: .*:' "/tmp/$_nm.out" || echo "rc $_r")"}
            else
                log "$_nm: $_k messages of $_s bytes received intact"
            fi
        else
            barrier "$_nm-recv" 60
            timeout 90 rds-xfer send "${ULP_IP:-$PVRDMA_IP}" "${ULP_PEER_IP:-$PVRDMA_PEER_IP}" 4000 "$_k" "$_s" ||
                { log "$_nm: send FAILED"; _rbad=$((_rbad + 1)); PAIR_ERR=${PAIR_ERR:-"$_nm: send failed"}; }
        fi
        barrier "$_nm-done" 120
    done
    [ $_rbad = 0 ] || { log "$_rbad of $_rn RDS transfers failed"; return 1; }
}

# --- NFS over RDMA ---
# (tests 50-52) The kernel NFS server (nfsd, with svcrdma of module rpcrdma)
# and client (nfs, with xprtrdma) on an RDMA device.  The server exports a
# tmpfs, NFS_EXPORT, and starts as nfs-kernel-server would (rpcbind,
# nfsdcld, exportfs, rpc.mountd, rpc.nfsd), then adds the RDMA listener:
#     echo 'rdma 20049' > /proc/fs/nfsd/portlist
# The client mounts (v3 without NLM locks: no rpc.statd in the guest)
#     mount -t nfs -o proto=rdma,port=20049,vers=V,sec=sys[,nolock] SERVER:/srv/nfs /mnt/nfs
# and NFS_MIB MiB of random data go through the mount and back with
# O_DIRECT, the read after a fresh mount (nfs_io).  The guest's mount is
# busybox's, which hands "-t nfs" to the kernel itself; the helpers call
# nfs-utils' mount.nfs / umount.nfs, as util-linux's mount -t nfs does.
# NFS_DEV is the RDMA device the connections must be on (default
# vmw_pvrdma0).
NFS_EXPORT=/srv/nfs NFS_MNT=/mnt/nfs NFS_PORT=20049
NFS_MIB=${NFS_MIB:-8}
NFS_DEV=${NFS_DEV:-vmw_pvrdma0}
NFS_PIDS=

# nfs_server_start: the NFS server of this VM, listening on TCP 2049 and on
# RDMA (rdma_cm) port NFS_PORT; fails the test if any part does not come up
nfs_server_start() {
    run modprobe rpcrdma
    run modprobe nfsd
    grep -q " /proc/fs/nfsd " /proc/mounts || run mount -t nfsd nfsd /proc/fs/nfsd
    grep -q " /var/lib/nfs/rpc_pipefs " /proc/mounts ||
        run mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs
    mkdir -p "$NFS_EXPORT"
    run mount -t tmpfs -o size=$((NFS_MIB * 4 + 16))m tmpfs "$NFS_EXPORT"
    rpcbind -f -w > /tmp/rpcbind.log 2>&1 &
    NFS_PIDS="$NFS_PIDS $!"
    wait_port 111 10 || { cat /tmp/rpcbind.log; fail "rpcbind does not listen on port 111"; }
    # nfsdcld (NFSv4 client tracking) must watch rpc_pipefs before nfsd
    # starts: then nfsd skips its grace period (no clients to reclaim);
    # without it nfsd falls back to nfsdcltrack and a 10 s grace period
    nfsdcld -F -d > /tmp/nfsdcld.log 2>&1 &
    NFS_PIDS="$NFS_PIDS $!"
    _nfi=0
    until grep -q "Starting event dispatch handler" /tmp/nfsdcld.log 2>/dev/null; do
        _nfi=$((_nfi + 1)); [ $_nfi -lt 100 ] || { cat /tmp/nfsdcld.log; log "nfsdcld not ready after 10 s"; break; }
        sleep 0.1
    done
    echo "$NFS_EXPORT *(rw,sync,no_subtree_check,no_root_squash,insecure,fsid=1)" > /etc/exports
    run timeout 30 exportfs -ra
    rpc.mountd -F -p 20048 > /tmp/mountd.log 2>&1 &
    NFS_PIDS="$NFS_PIDS $!"
    wait_port 20048 10 || { cat /tmp/mountd.log; fail "rpc.mountd does not listen on port 20048"; }
    run timeout 60 rpc.nfsd --grace-time 10 4
    log "+ echo 'rdma $NFS_PORT' > /proc/fs/nfsd/portlist"
    timeout 30 sh -c "echo 'rdma $NFS_PORT' > /proc/fs/nfsd/portlist" ||
        { dmesg | tail -10; fail "nfsd refused the RDMA listener (rdma $NFS_PORT)"; }
    grep -qx "rdma $NFS_PORT" /proc/fs/nfsd/portlist ||
        fail "no 'rdma $NFS_PORT' in /proc/fs/nfsd/portlist: $(cat /proc/fs/nfsd/portlist)"
    listening "cm:$NFS_PORT" || { rdma resource show cm_id; fail "no rdma_cm listener on port $NFS_PORT"; }
    log "nfsd: ports $(tr '\n' ' ' < /proc/fs/nfsd/portlist)versions $(cat /proc/fs/nfsd/versions); $(dmesg | sed -n 's/.*NFSD: //p' | tail -n 2 | tr '\n' ' ')"
}

# nfs_server_stop: stop nfsd and the daemons; the RDMA listener and every
# rdma_cm ID on NFS_PORT must be gone within 15 s
nfs_server_stop() {
    run timeout 60 rpc.nfsd 0
    timeout 30 exportfs -ua || log "exportfs -ua: rc $?"
    # (in a step's subshell they are not children: no wait; a bounded poll
    # until each has exited, a zombie counting as exited)
    for _nfp in $NFS_PIDS; do kill "$_nfp" 2>/dev/null; done
    _nfi=0
    for _nfp in $NFS_PIDS; do
        while [ -e "/proc/$_nfp" ] && [ "$(cut -d' ' -f3 "/proc/$_nfp/stat" 2>/dev/null)" != Z ] &&
              [ $_nfi -lt 50 ]; do
            sleep 0.1; _nfi=$((_nfi + 1))
        done
    done
    NFS_PIDS=
    umount "$NFS_EXPORT" || log "umount $NFS_EXPORT: rc $?"
    _nfi=0
    while rdma resource show cm_id 2>/dev/null | grep -q ":$NFS_PORT "; do
        _nfi=$((_nfi + 1))
        [ $_nfi -lt 150 ] || { rdma resource show cm_id; fail "rdma_cm IDs on port $NFS_PORT left 15 s after rpc.nfsd 0"; }
        sleep 0.1
    done
    log "nfsd stopped, no rdma_cm ID on port $NFS_PORT left"
}

# nfs_srv_counters: the server's svcrdma counters (RDMA READ and WRITE
# contexts posted: the clients' WRITE data pulled, READ data pushed) and
# nfsd's bytes read and written ("io" of /proc/net/rpc/nfsd)
nfs_srv_counters() {
    echo "$(cat /proc/sys/sunrpc/svc_rdma/rdma_stat_read) $(cat /proc/sys/sunrpc/svc_rdma/rdma_stat_write) $(awk '$1 == "io" {print $2, $3}' /proc/net/rpc/nfsd)"
}

# nfs_srv_check "BEFORE": since nfs_srv_counters printed BEFORE, nfsd read
# and wrote at least NFS_MIB MiB and svcrdma moved them with RDMA READ and
# WRITE (at least one of each per MiB: an RPC carries at most 1 MiB over
# RDMA; data sent inline, at most a few KiB per RPC, would not count)
nfs_srv_check() {
    # shellcheck disable=SC2086,SC2046
    set -- $1 $(nfs_srv_counters)
    _nfrr=$(($5 - $1)) _nfrw=$(($6 - $2)) _nfbr=$(($7 - $3)) _nfbw=$(($8 - $4))
    log "server: $_nfrr RDMA READs and $_nfrw RDMA WRITEs posted, nfsd read $_nfbr and wrote $_nfbw bytes"
    [ $_nfbw -ge $((NFS_MIB * 1048576)) ] && [ $_nfbr -ge $((NFS_MIB * 1048576)) ] ||
        fail "nfsd read $_nfbr and wrote $_nfbw bytes, expected at least $NFS_MIB MiB each"
    [ $_nfrr -ge "$NFS_MIB" ] && [ $_nfrw -ge "$NFS_MIB" ] ||
        fail "svcrdma posted $_nfrr RDMA READs and $_nfrw RDMA WRITEs, expected at least $NFS_MIB each"
}

# nfs_cm_check DEV REGEX: this VM's rdma_cm IDs whose line matches REGEX
# (e.g. "dst-addr 10.0.0.1:20049 "); fails unless there is one and all are
# on DEV port 1
nfs_cm_check() {
    _nfids=$(rdma resource show cm_id 2>/dev/null | grep -E "$2")
    [ -n "$_nfids" ] || { rdma resource show cm_id; fail "no rdma_cm ID matches '$2'"; }
    echo "$_nfids" | sed 's/^/  /'
    _nfn=$(echo "$_nfids" | grep -vc "^link $1/1 ")
    [ "$_nfn" = 0 ] || fail "$_nfn rdma_cm IDs matching '$2' are not on $1"
}

# nfs_mount SERVER VERS: mount SERVER:NFS_EXPORT on NFS_MNT over RDMA with
# NFS version VERS (3, 4.1, 4.2); the mount must say proto=rdma and
# vers=VERS, its transport in /proc/self/mountstats must be rdma, and its
# rdma_cm IDs must be on NFS_DEV
nfs_mount() {
    _nfo="proto=rdma,port=$NFS_PORT,vers=$2,sec=sys"
    [ "$2" != 3 ] || _nfo="$_nfo,nolock${NFS_V3_OPTS:+,$NFS_V3_OPTS}"
    mkdir -p "$NFS_MNT"
    run modprobe rpcrdma
    log "+ mount.nfs $1:$NFS_EXPORT $NFS_MNT -o $_nfo"
    timeout 60 mount.nfs "$1:$NFS_EXPORT" "$NFS_MNT" -o "$_nfo" > /tmp/nfs-mount.err 2>&1 ||
        { _nfr=$?; cat /tmp/nfs-mount.err; dmesg | tail -n 20; fail "NFS v$2 mount of $1 over RDMA failed (rc $_nfr; 124 = timeout)"; }
    _nfl=$(grep " $NFS_MNT nfs" /proc/mounts) || fail "no NFS mount on $NFS_MNT after mount"
    case ",${_nfl#* * * }" in
        *,proto=rdma,*) ;;
        *) fail "not an RDMA mount: $_nfl" ;;
    esac
    case ",${_nfl#* * * }" in
        *,vers=$2,*) ;;
        *) fail "asked for vers=$2, mounted: $_nfl" ;;
    esac
    _nfx=$(awk -v m="$NFS_MNT" '$1 == "device" {f = ($5 == m)} f && $1 == "xprt:" {print $2; exit}' /proc/self/mountstats)
    [ "$_nfx" = rdma ] || fail "the mount's transport in /proc/self/mountstats is '$_nfx', not rdma"
    log "mounted: $_nfl"
    nfs_cm_check "$NFS_DEV" "dst-addr $1:$NFS_PORT( |\$)"
}

# nfs_umount [SERVER]: unmount NFS_MNT (umount.nfs, bounded); with SERVER,
# the rdma_cm IDs to SERVER:NFS_PORT must be gone within 15 s
nfs_umount() {
    grep -q " $NFS_MNT nfs" /proc/mounts || return 0
    timeout 60 umount.nfs "$NFS_MNT" || fail "umount.nfs $NFS_MNT failed (rc $?; 124 = timeout)"
    ! grep -q " $NFS_MNT nfs" /proc/mounts || fail "$NFS_MNT still mounted after umount"
    [ -n "${1:-}" ] || return 0
    _nfi=0
    while rdma resource show cm_id 2>/dev/null | grep -q "dst-addr $1:$NFS_PORT "; do
        _nfi=$((_nfi + 1))
        [ $_nfi -lt 150 ] || { rdma resource show cm_id; fail "rdma_cm IDs to $1:$NFS_PORT left 15 s after umount"; }
        sleep 0.1
    done
}

# nfs_io SERVER VERS FILE: the client's data check: NFS_MIB MiB of random
# data written to FILE on SERVER's export (O_DIRECT, 1 MiB writes), the
# mount dropped and made again (no page cache can answer), FILE read back
# (O_DIRECT, 256 KiB reads) and compared.  Leaves the mount up and the
# data's md5 in /tmp/nfs-md5.
nfs_io() {
    rm -f /tmp/nfs-md5
    nfs_umount   # what a failed step before may have left
    run dd if=/dev/urandom of=/tmp/nfs-pattern bs=64k count=$((NFS_MIB * 16)) 2>/dev/null
    nfs_mount "$1" "$2"
    log "write $NFS_MIB MiB to $NFS_MNT/$3 (O_DIRECT, 1 MiB writes)"
    timeout 120 dd if=/tmp/nfs-pattern of="$NFS_MNT/$3" bs=1M oflag=direct 2> /tmp/nfs-dd.err ||
        { _nfr=$?; cat /tmp/nfs-dd.err; dmesg | tail -n 20; fail "O_DIRECT write of $NFS_MIB MiB over NFS v$2 failed (rc $_nfr; 124 = timeout)"; }
    nfs_umount
    nfs_mount "$1" "$2"
    log "read back (O_DIRECT, 256 KiB reads)"
    timeout 120 dd if="$NFS_MNT/$3" of=/tmp/nfs-back bs=256k iflag=direct 2> /tmp/nfs-dd.err ||
        { _nfr=$?; cat /tmp/nfs-dd.err; dmesg | tail -n 20; fail "O_DIRECT read over NFS v$2 failed (rc $_nfr; 124 = timeout)"; }
    cmp /tmp/nfs-pattern /tmp/nfs-back ||
        fail "the $NFS_MIB MiB read back over NFS v$2 differ from those written"
    md5sum < /tmp/nfs-pattern | cut -d' ' -f1 > /tmp/nfs-md5
    log "NFS v$2: $NFS_MIB MiB written and read back, identical (md5 $(cat /tmp/nfs-md5))"
}

# nfs_file_md5 FILE: md5 of FILE on this VM's export, or "none"
nfs_file_md5() {
    _nfs=$(md5sum < "$NFS_EXPORT/$1" 2>/dev/null | cut -d' ' -f1)
    echo "${_nfs:-none}"
}

# nfs_step SERVER_VM VERS FILE: one NFS version in one direction between
# the two VMs: VM SERVER_VM serves (nfs_server_start done before), the
# other VM runs nfs_io against it.  While the client is still mounted, the
# server checks its side of the connection (its rdma_cm IDs from the
# client on NFS_DEV) and its counters (nfs_srv_check); then it takes the
# md5 of FILE on its export (and with NFS_HOST_QUERY set, asks the host
# to record the QPs: host_query NFS_HOST_QUERY-VERS).  VM 1 sends its md5 (server's or client's) to
# VM 0 (the only way barrier_send goes), which compares.  Every barrier is
# passed even when a side failed, so the other does not wait for nothing.
nfs_step() {
    _nfsv=$1 _nfv=$2 _nff=$3 _nfrc=0
    if [ "$PVRDMA_VM" = "$_nfsv" ]; then
        _nfc0=$(nfs_srv_counters)
        barrier "$_nff-up" 90
        log "server: waiting for the client's I/O"
        barrier "$_nff-io" 240
        ( nfs_cm_check "$NFS_DEV" "src-addr $PVRDMA_IP:$NFS_PORT dst-addr $PVRDMA_PEER_IP:" ) || _nfrc=1
        ( nfs_srv_check "$_nfc0" ) || _nfrc=1
        # the host records the device's QPs (NFS_HOST_QUERY: its tag)
        [ -z "${NFS_HOST_QUERY:-}" ] || host_query "$NFS_HOST_QUERY-$_nfv"
        _nfsum=$(nfs_file_md5 "$_nff")
        log "server: $NFS_EXPORT/$_nff: md5 $_nfsum"
        barrier "$_nff-checked" 60
    else
        barrier "$_nff-up" 90
        ( nfs_io "$PVRDMA_PEER_IP" "$_nfv" "$_nff" ) || _nfrc=1
        _nfsum=$(cat /tmp/nfs-md5 2>/dev/null)
        _nfsum=${_nfsum:-none}
        barrier "$_nff-io" 60
        barrier "$_nff-checked" 60
        ( nfs_umount "$PVRDMA_PEER_IP" ) || _nfrc=1
    fi
    md5_agree "$_nff" "$_nfsum" "the data written / the server's $NFS_EXPORT/$_nff" || _nfrc=1
    return $_nfrc
}
