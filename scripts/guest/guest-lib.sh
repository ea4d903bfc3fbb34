# shellcheck shell=sh
# Helpers for guest test scripts (busybox ash).  run-vm.sh puts this file in
# every guest as /usr/lib/pvrdma/guest-lib.sh; tests start with
#     . /usr/lib/pvrdma/guest-lib.sh
# Environment from /test.env (written by run-vm.sh):
#   PVRDMA_VM        index of this VM (0, 1)      PVRDMA_VMS   number of VMs
#   PVRDMA_IP        this VM's address (no /len)  PVRDMA_PREFIX prefix length
#   PVRDMA_PEER_IP   the other VM's address (two-VM mode)
#   PVRDMA_DEVICE    1 if a pvrdma device was given to this VM, else 0
#   PVRDMA_NETIF     the vmxnet3 interface (set by /init), normally eth0

PVRDMA_NETIF=${PVRDMA_NETIF:-eth0}
PVRDMA_DEV=${PVRDMA_DEV:-vmw_pvrdma0}

log() { echo "[$PVRDMA_VM $(cut -d' ' -f1 /proc/uptime)] $*"; }
fail() { echo "FAIL: $*"; exit 1; }
# skip: exit status 77 is reported as "skipped" by tests/guest/run.sh
skip() { echo "SKIP: $*"; exit 77; }
# run CMD...: log and run, fail the test if it fails
run() { log "+ $*"; "$@" || fail "'$*' exited with $?"; }

# host_sample TAG: ask the host harness to record QEMU's VmRSS under TAG
# (run-vm.sh watches the console for this marker; it samples within ~0.1 s)
host_sample() {
    echo "PVRDMA-SAMPLE $1"
    sleep 0.3
}

# boot_count [SET]: how many times this guest has rebooted (0 on the first
# boot), or set it to SET.  Kept in byte 0x7e of the CMOS RAM, which a warm
# reset does not clear (QEMU zeroes it at start; neither QEMU nor SeaBIOS
# uses 0x70-0x7f); written through /dev/port (index 0x70, data 0x71).
boot_count() {
    printf "\\$(printf %o 126)" | dd of=/dev/port bs=1 seek=112 count=1 2>/dev/null
    if [ $# -gt 0 ]; then
        printf "\\$(printf %o "$1")" | dd of=/dev/port bs=1 seek=113 count=1 2>/dev/null
    else
        dd if=/dev/port bs=1 skip=113 count=1 2>/dev/null | od -An -tu1 | tr -d ' '
    fi
}

# ipv4_gid A.B.C.D -> 0000:0000:0000:0000:0000:ffff:aabb:ccdd (sysfs format)
ipv4_gid() {
    echo "$1" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", $1, $2, $3, $4}'
}

# gid_index DEV IPV4 [TYPE]: index of the GID ::ffff:IPV4 of type TYPE
# ("RoCE v2" by default, or "IB/RoCE v1") on port 1; prints nothing and
# returns 1 when absent.
gid_index() {
    _p=/sys/class/infiniband/$1/ports/1 _type=${3:-RoCE v2}
    # one grep over the whole table: forking per entry is slow under TCG
    for _f in $(grep -l -s -x "$(ipv4_gid "$2")" "$_p"/gids/*); do
        _n=${_f##*/}
        [ "$(cat "$_p/gid_attrs/types/$_n" 2>/dev/null)" = "$_type" ] || continue
        echo "$_n"
        return 0
    done
    return 1
}

# wait_gid DEV IPV4 [TYPE] [SECS]: wait for gid_index to succeed; prints it
wait_gid() {
    _i=0
    while [ $_i -lt $((${4:-10} * 10)) ]; do
        gid_index "$1" "$2" "${3:-RoCE v2}" && return 0
        sleep 0.1; _i=$((_i + 1))
    done
    return 1
}

# dump_gids DEV: the non-zero GID table with types and netdevs (for logs)
dump_gids() {
    _p=/sys/class/infiniband/$1/ports/1
    grep -s -H . "$_p"/gids/* | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$' |
    while IFS= read -r _l; do
        _f=${_l%%:*} _g=${_l#*:} _n=${_f##*/}
        echo "  gid[$_n] $_g $(cat "$_p/gid_attrs/types/$_n" 2>/dev/null) $(cat "$_p/gid_attrs/ndevs/$_n" 2>/dev/null)"
    done
}

# wait_port PORT [SECS]: wait until something listens on TCP PORT locally
wait_port() {
    _i=0
    _hex=$(printf '%04X' "$1")
    while [ $_i -lt $((${2:-10} * 10)) ]; do
        # a listener: local port PORT, remote 0, state 0A; in tcp6 the
        # remote address is 32 digits (rdma-core 65's pingpongs listen there)
        grep -qE ":$_hex 0+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
        sleep 0.1; _i=$((_i + 1))
    done
    return 1
}

# pair NAME SECS "SERVER CMD" "CLIENT CMD": run a server in the background,
# wait for its TCP port (PAIR_PORT, default 18515), run the client, wait for
# the server; both limited to SECS seconds.  Output goes to /tmp/NAME.{srv,cli}
# and is printed on failure.  Returns 0 only if both succeed; the first
# failure's first error line is kept in PAIR_ERR.
# pp_invalid FILE...: the first "invalid data" line of the FILEs (true if
# there is one).  rdma-core's pingpongs with -c: the client writes 0 into
# the first byte of each page of its buffer, and only the server looks,
# once, after its last iteration; it prints "invalid data in page N" and
# still exits 0: a run that printed it failed.  One byte per page: not a
# data check (tests/verbs-check is).
pp_invalid() {
    grep -h -m1 "invalid data" "$@" 2>/dev/null
}

pair() {
    _name=$1 _secs=$2 _srv=$3 _cli=$4
    log "pair $_name: server: $_srv"
    # shellcheck disable=SC2086
    timeout "$_secs" $_srv > "/tmp/$_name.srv" 2>&1 &
    _spid=$!
    if ! wait_port "${PAIR_PORT:-18515}" 10; then
        kill "$_spid" 2>/dev/null; wait "$_spid" 2>/dev/null
        echo "--- $_name server output ---"; cat "/tmp/$_name.srv"
        log "pair $_name: server did not listen on port ${PAIR_PORT:-18515}"
        return 1
    fi
    log "pair $_name: client: $_cli"
    # shellcheck disable=SC2086
    timeout "$_secs" $_cli > "/tmp/$_name.cli" 2>&1
    _crc=$?
    wait "$_spid"
    _src=$?
    if [ $_crc != 0 ] || [ $_src != 0 ]; then
        echo "--- $_name server output (rc $_src) ---"; cat "/tmp/$_name.srv"
        echo "--- $_name client output (rc $_crc) ---"; cat "/tmp/$_name.cli"
        log "pair $_name: FAILED (server rc $_src, client rc $_crc; 124/143 = timeout)"
        # first error line, for the one-line failure reason (PAIR_ERR)
        _e=$(cat "/tmp/$_name.cli" "/tmp/$_name.srv" | grep -m1 -iE "fail|error|couldn|exceeded|unable|invalid") ||
            _e="server rc $_src, client rc $_crc"
        PAIR_ERR=${PAIR_ERR:-"$_name: $_e"}
        return 1
    fi
    if _e=$(pp_invalid "/tmp/$_name.srv" "/tmp/$_name.cli"); then
        echo "--- $_name server output ---"; cat "/tmp/$_name.srv"
        echo "--- $_name client output ---"; cat "/tmp/$_name.cli"
        log "pair $_name: FAILED: $_e"
        PAIR_ERR=${PAIR_ERR:-"$_name: $_e"}
        return 1
    fi
    log "pair $_name: ok: $(grep -E 'bytes in|iters in|usec/iter' "/tmp/$_name.cli" | tail -n 1)"
    return 0
}

# barrier NAME [SECS]: two-VM rendezvous over TCP (port 18600).  VM 0 waits
# for VM 1 to connect, VM 1 retries connecting to VM 0.  VM 1 sends the
# barrier's name and VM 0 waits for that name: a message VM 1 sent twice
# (its nc gave up waiting for the close and retried) cannot pass a later
# barrier.
barrier() {
    if [ "$PVRDMA_VM" = 0 ]; then
        _barrier_listen "$1" "${2:-60}" >/dev/null ||
            fail "barrier $1: peer did not arrive within ${2:-60}s"
    else
        _barrier_connect "$1" "${2:-60}" "$1"
    fi
    log "barrier $1 passed"
}

# VM 0: accept connections until one says "NAME" or "NAME WORD" (at most
# SECS seconds); prints WORD.  Each connection runs a small program (nc -e)
# that reads VM 1's line first, keeps it, and only then answers NAME, and
# only if the line is for NAME: the answer is VM 1's proof of delivery.
# (An answer written before the line was read let nc close on its own
# stdin's end with VM 1's line unread: VM 1 took it as delivered, VM 0
# never saw it.)
_barrier_listen() {
    _end=$(( $(cut -d. -f1 /proc/uptime) + $2 ))
    _f=/tmp/barrier-msg.$$
    while :; do
        _left=$(( _end - $(cut -d. -f1 /proc/uptime) ))
        [ "$_left" -gt 0 ] || return 1
        rm -f "$_f"
        # shellcheck disable=SC2016  # expanded by the sh that nc runs
        timeout "$_left" nc -l -p "${BARRIER_PORT:-18600}" -e sh -c '
            read -r m
            echo "$m" > "$2"
            case $m in "$1"|"$1 "*) echo "$1" ;; esac' sh "$1" "$_f" \
            > /dev/null 2>&1
        _m=$(cat "$_f" 2>/dev/null)
        case $_m in
            "$1") echo ""; return 0 ;;
            "$1 "*) echo "${_m#"$1 "}"; return 0 ;;
            ?*) log "barrier $1: ignored a late '$_m'" >&2 ;;
        esac
    done
}

# VM 1: connect until VM 0 takes MSG (at most SECS seconds).  Taken means
# acknowledged: VM 0's listener for NAME answers with NAME after it read
# MSG.  A connect alone proves nothing: it can land in the backlog of a
# listener that is closing (the message is then lost), and nc's exit status
# can report failure for a message that was taken (it was then sent again,
# stale).
_barrier_connect() {
    _i=0
    until [ "$(echo "$3" | nc -w 2 "$PVRDMA_PEER_IP" "${BARRIER_PORT:-18600}" 2>/dev/null |
               head -n 1)" = "$1" ]; do
        _i=$((_i + 1))
        [ $_i -lt $(($2 * 4)) ] || fail "barrier $1: peer $PVRDMA_PEER_IP not reachable"
        sleep 0.25
    done
}

# barrier_send NAME SECS WORD (VM 1) / barrier_recv NAME SECS (VM 0): a
# barrier that carries one word from VM 1 to VM 0, printed by barrier_recv
# ("none" if VM 1 did not arrive in time, which does not fail the test).
barrier_send() {
    _barrier_connect "$1" "$2" "$1 $3"
    log "barrier $1 passed ($3)"
}

barrier_recv() {
    _m=$(_barrier_listen "$1" "$2") || _m=none
    log "barrier $1 passed (${_m:-none})" >&2
    echo "${_m:-none}"
}
