# The unmodified driver and rdma-core against faults injected on purpose
# (x-pvrdma-inject, through run-vm.sh's PVRDMA-INJECT marker), each seen as
# the guest sees it:
#   port-down/up       ibv_devinfo's port state, IBV_EVENT_PORT_ERR and
#                      IBV_EVENT_PORT_ACTIVE (ibv_asyncwatch), traffic after
#   command-error      CREATE_CQ fails: ibv_rc_pingpong "Couldn't create CQ"
#   command-delay      QUERY_PORT answered 2 s late: ibv_devinfo waits and
#                      succeeds; 15 s late: the driver's 10 s timeout
#                      ("completion timeout"), then the next query works
#   command-drop       CREATE_PD never answered: "Couldn't allocate PD"
#   completion-error   a running ibv_rc_pingpong's QP gets "transport retry
#                      counter exceeded (12)"
#   async-event        qp-fatal on a running pingpong's QP, qp-req-err on
#                      the server's, qp-access-err on the client's: its
#                      work is flushed (status 5); device-fatal reaches
#                      ibv_asyncwatch; gid-change leaves the GID table
#                      as it was (the core forwards only changed entries);
#                      cq-err, srq-err and srq-limit-reached on the CQ and
#                      SRQ of an application (pvrdma-async-objects), named
#                      by its QP (of-qp), reach that application
# After each, a loopback pingpong works again; at the end no oops, WARN or
# BUG in the kernel log, and the kernel's RDMA resources are back to what
# they were before (rdma resource show).  40-pvrdma-inject.host checks that
# QEMU took every injection, and query-pvrdma's guest-errors: 0 after a
# clean run and after the faults (the driver did nothing illegal in
# reaction), then 1 for a send doorbell of a QP the process does not own
# (pvrdma-uar-poke, tests/verbs-check/uar-poke.c).
# vms: 1
# timeout: 300
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

D=vmw_pvrdma0
wait_dev $D 15 || fail "$D not registered/ACTIVE"
G=$(roce_v2_gid $D)
O="-d $D -g $G"
res0=$(rdma resource show | grep "$D")
log "resources before: $res0"
ibv_asyncwatch -d $D > /tmp/asyncwatch.out 2>&1 &
AW=$!
sleep 1

port_state() { ibv_devinfo -d $D | awk '/state:/ { print $2; exit }'; }

# until CMD's output matches RE (at most SECS)
wait_for() {
    _i=0
    until eval "$1" 2>/dev/null | grep -q "$2"; do
        _i=$((_i + 1)); [ $_i -lt $(($3 * 10)) ] || return 1
        sleep 0.1
    done
}

pp_works() {
    pair "pp-$1" 60 "ibv_rc_pingpong $O -n 20 -s 4096 -c" \
        "ibv_rc_pingpong $O -n 20 -s 4096 -c 127.0.0.1"
}

# the number of the RTS QP of process PID (rdma resource show qp), or
# nothing
qpn_of() {
    [ -n "$1" ] || return 0
    rdma resource show qp 2>/dev/null | awk -v p="$1" '
        { q = ""; s = ""; pid = ""
          for (i = 1; i < NF; i++) {
              if ($i == "lqpn") q = $(i + 1)
              if ($i == "state") s = $(i + 1)
              if ($i == "pid") pid = $(i + 1)
          }
          if (pid == p && s == "RTS") { print q; exit } }'
}

# a long loopback pingpong in the background (SRV, CLI: its pids; the
# step ends it, pp_long_end, or it ends with the test's timeout); the
# server's and the client's QP numbers in SQPN and CQPN (its own output is
# buffered until it exits: the kernel's QP table says)
pp_long() {
    ibv_rc_pingpong $O -n 100000000 -s 64 > /tmp/long.srv 2>&1 &
    SRV=$!
    wait_port 18515 10 || { pp_long_end; cat /tmp/long.srv; return 1; }
    ibv_rc_pingpong $O -n 100000000 -s 64 127.0.0.1 > /tmp/long.cli 2>&1 &
    CLI=$!
    _i=0
    SQPN= CQPN=
    while [ -z "$SQPN" ] || [ -z "$CQPN" ]; do
        _i=$((_i + 1))
        [ $_i -lt 200 ] || { rdma resource show qp; pp_long_end; return 1; }
        sleep 0.1
        SQPN=$(qpn_of "$SRV")
        CQPN=$(qpn_of "$CLI")
    done
    log "long pingpong: server QP $SQPN, client QP $CQPN"
}

pp_long_end() {
    kill "$SRV" "$CLI" 2>/dev/null
    wait "$SRV" "$CLI" 2>/dev/null
    true
}

port_flap() {
    host_inject port-down port-down
    wait_for port_state PORT_DOWN 10 || fail "port not DOWN: $(port_state)"
    wait_for "cat /tmp/asyncwatch.out" IBV_EVENT_PORT_ERR 10 ||
        fail "no IBV_EVENT_PORT_ERR: $(cat /tmp/asyncwatch.out)"
    host_inject port-up port-up
    wait_for port_state PORT_ACTIVE 10 || fail "port not ACTIVE: $(port_state)"
    wait_for "cat /tmp/asyncwatch.out" IBV_EVENT_PORT_ACTIVE 10 ||
        fail "no IBV_EVENT_PORT_ACTIVE: $(cat /tmp/asyncwatch.out)"
    pp_works port
}

command_error() {
    host_inject cq-err command-error,opcode=create-cq,status=12
    timeout 20 ibv_rc_pingpong $O > /tmp/cmderr.out 2>&1 && fail "the server ran"
    grep -q "Couldn't create CQ" /tmp/cmderr.out || fail "not the CQ: $(cat /tmp/cmderr.out)"
    log "command-error: $(head -n 1 /tmp/cmderr.out)"
    pp_works cmd-error
}

command_delay() {
    host_inject late command-delay,opcode=query-port,delay-ms=2000
    _t0=$(cut -d' ' -f1 /proc/uptime)
    [ "$(port_state)" = PORT_ACTIVE ] || fail "ibv_devinfo after a late answer"
    _dt=$(awk -v a="$_t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print b - a }')
    log "command-delay 2000 ms: ibv_devinfo took $_dt s"
    awk -v d="$_dt" 'BEGIN { exit !(d >= 1.8) }' || fail "ibv_devinfo took $_dt s, not 2"
    host_inject too-late command-delay,opcode=query-port,delay-ms=15000
    ibv_devinfo -d $D > /tmp/late.out 2>&1
    dmesg | grep -q "completion timeout or interrupted" ||
        fail "no driver timeout in dmesg ($(cat /tmp/late.out))"
    log "command-delay 15000 ms: $(dmesg | grep -m1 'completion timeout'); ibv_devinfo: $(grep -m1 -i 'fail\|state' /tmp/late.out)"
    [ "$(port_state)" = PORT_ACTIVE ] || fail "the next query failed"
}

command_drop() {
    host_inject drop command-drop,opcode=create-pd
    timeout 30 ibv_rc_pingpong $O > /tmp/drop.out 2>&1 && fail "the server ran"
    grep -q "Couldn't allocate PD" /tmp/drop.out || fail "not the PD: $(cat /tmp/drop.out)"
    pp_works cmd-drop
}

completion_error() {
    pp_long || fail "the long pingpong did not start"
    host_inject wc "completion-error,handle=$CQPN,status=12" 2
    _w=0
    while kill -0 "$CLI" 2>/dev/null && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
    grep -q "transport retry counter exceeded (12)" /tmp/long.cli ||
        fail "client: $(tail -n 3 /tmp/long.cli)"
    log "completion-error: $(grep -m1 'Failed status' /tmp/long.cli)"
    pp_long_end
    pp_works wc-error
}

qp_fatal() {
    pp_long || fail "the long pingpong did not start"
    host_inject qp-fatal "async-event,event=qp-fatal,handle=$SQPN" 2
    _w=0
    while kill -0 "$SRV" 2>/dev/null && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
    grep -q "Failed status .* (5)" /tmp/long.srv || fail "server: $(tail -n 3 /tmp/long.srv)"
    log "qp-fatal: $(grep -m1 'Failed status' /tmp/long.srv)"
    pp_long_end
    pp_works qp-fatal
}

# qp-req-err on the server's QP, qp-access-err on the client's: as
# qp-fatal, the QP goes to the error state and its work is flushed
qp_err() { # EVENT server|client
    pp_long || fail "the long pingpong did not start"
    if [ "$2" = server ]; then _q=$SQPN _p=$SRV _o=/tmp/long.srv; else _q=$CQPN _p=$CLI _o=/tmp/long.cli; fi
    host_inject "$1" "async-event,event=$1,handle=$_q" 2
    _w=0
    while kill -0 "$_p" 2>/dev/null && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
    grep -q "Failed status .* (5)" $_o || fail "$2: $(tail -n 3 $_o)"
    log "$1 on the $2's QP: $(grep -m1 'Failed status' $_o)"
    pp_long_end
    pp_works "$1"
}

# GID_CHANGE: the driver passes it to the core, whose cache task re-reads
# the port's GIDs and tells its clients only of entries that changed
# (ib_cache_event_task, 6.1): here none did, so ibv_asyncwatch gets
# nothing; the GID table stays as it was and traffic goes on
gid_change() {
    _g0=$(ibv_devinfo -v -d $D | grep 'GID\[')
    host_inject gid-change async-event,event=gid-change 2
    _g1=$(ibv_devinfo -v -d $D | grep 'GID\[')
    [ -n "$_g0" ] && [ "$_g0" = "$_g1" ] || fail "GID table changed: $_g0 -> $_g1"
    if grep -q IBV_EVENT_GID_CHANGE /tmp/asyncwatch.out; then
        log "gid-change: forwarded to ibv_asyncwatch"
    else
        log "gid-change: not forwarded (no GID entry changed), GID table as before"
    fi
    pp_works gid-change
}

# cq-err, srq-err, srq-limit-reached: an application does not see the
# device's handles of its CQ and SRQ, so the host names them by its QP
# (of-qp: the QP's send CQ, its SRQ); the driver hands each event to the
# application that owns the object
obj_events() {
    pvrdma-async-objects $D 30 > /tmp/objs.out 2>&1 &
    _ao=$!
    wait_for "cat /tmp/objs.out" '^qpn ' 10 || fail "pvrdma-async-objects: $(cat /tmp/objs.out)"
    _q=$(awk '/^qpn/ { print $2; exit }' /tmp/objs.out)
    host_inject obj-cq-err "async-event,event=cq-err,handle=$_q,of-qp=on"
    host_inject obj-srq-err "async-event,event=srq-err,handle=$_q,of-qp=on"
    host_inject obj-srq-limit "async-event,event=srq-limit-reached,handle=$_q,of-qp=on"
    for _e in "CQ error on cq" "SRQ catastrophic error on srq" "SRQ limit reached on srq"; do
        wait_for "cat /tmp/objs.out" "^event $_e\$" 10 || fail "no 'event $_e': $(cat /tmp/objs.out)"
    done
    kill $_ao 2>/dev/null
    wait $_ao 2>/dev/null
    log "objects' events: $(grep '^event' /tmp/objs.out | tr '\n' ';')"
    pp_works objs
}

device_fatal() {
    host_inject dev-fatal async-event,event=device-fatal
    wait_for "cat /tmp/asyncwatch.out" IBV_EVENT_DEVICE_FATAL 10 ||
        fail "no IBV_EVENT_DEVICE_FATAL: $(cat /tmp/asyncwatch.out)"
    # the driver only passes the event on: the device still works
    pp_works dev-fatal
}

# a clean run first: traffic, no guest error (the host checks)
pp_works clean || fail "loopback pingpong before any fault"
host_query clean 2
step port-flap port_flap
step command-error command_error
step command-delay command_delay
step command-drop command_drop
step completion-error completion_error
step qp-fatal qp_fatal
step qp-req-err qp_err qp-req-err server
step qp-access-err qp_err qp-access-err client
step gid-change gid_change
step object-events obj_events
step device-fatal device_fatal
kill $AW 2>/dev/null
log "asyncwatch: $(tr '\n' ';' < /tmp/asyncwatch.out)"
step kernel-log sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace|general protection"'
res1=$(rdma resource show | grep "$D")
log "resources after: $res1"
step resources test "$res0" = "$res1"
host_query faults 2
# and one deliberate guest error: a send doorbell for a QP this process
# does not own, from its own UAR page (tests/verbs-check/uar-poke.c)
bad_doorbell() {
    pvrdma-uar-poke $D
}
step bad-doorbell bad_doorbell
host_query bad 2
steps_done
