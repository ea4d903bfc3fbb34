# Rig self-test of pvrdma-verbs-check (tests/verbs-check), the device-neutral
# verbs data checker: server and client in this VM (rdma_cm to $PVRDMA_IP),
# first on vmw_pvrdma0 (the device's loopback transport) when the VM has
# the device, then on soft-RoCE rxe0, the reference (vmw_pvrdma is
# unloaded first: it has the same GIDs and rdma_cm would pick it); only
# one of them with VC_DEV=pvrdma or VC_DEV=rxe (run.sh -e VC_DEV=...).
# Each device gets all of 1 to 3:
#   1. every mode (rc, srq, ud) with every op the mode has, default sizes
#      up to VC_S (65536), VC_N (200) messages per side, 4 SGEs, depth 8;
#      rc also with 1 SGE / depth 1 and in time mode (-D 3).  Both sides
#      must exit 0 and print "verbs-check: ok mode=M dev=DEV ..." with each
#      op's count at least its share of the messages and recv at least the
#      peer's receive-generating share.
#   2. --corrupt on send, send_imm, write, write_imm (the peer must catch
#      it), read, cas, faa (this side must), a UD send, and a server-side
#      send (the client must catch it): the checking side must exit 1 with
#      a "verbs-check: MISMATCH" line, the corrupting side must not exit 0.
#   3. a mutant per kind of check (--mutate: immediate of a send_imm and of
#      a write_imm, byte_len, completion opcode, guard bytes before and
#      after a write's data and at the far end of its slot, the data
#      itself): the server must catch each
#      with that check's own message.  Atomic results are 2's (cas, faa:
#      an unannounced fetch-and-add); completion order has no mutant (an
#      application cannot make a device complete out of order).
# vms: 1
# timeout: 600
. /usr/lib/pvrdma/tests-common.sh

# pvrdma (this VM's device, the loopback transport) first, then soft-RoCE
VC_DEVS=${VC_DEV:-$([ "$PVRDMA_DEVICE" = 1 ] && echo pvrdma) rxe}
VC_N=${VC_N:-200}
VC_S=${VC_S:-65536}
command -v pvrdma-verbs-check >/dev/null ||
    fail "no pvrdma-verbs-check in the guest image"

# use_dev rxe|pvrdma: the device the runs below use ($dev)
use_dev() {
    case $1 in
        rxe)
            if grep -q '^vmw_pvrdma ' /proc/modules; then
                run rmmod vmw_pvrdma
            fi
            setup_rxe
            wait_dev rxe0 10 || fail "rxe0 not ACTIVE"
            dev=rxe0 ;;
        pvrdma)
            [ "$PVRDMA_DEVICE" = 1 ] || skip "no pvrdma device in this VM"
            wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
            dev=vmw_pvrdma0 ;;
        *) fail "VC_DEV must be rxe or pvrdma" ;;
    esac
}


bad=0 n=0 first=

bad() { # REASON
    bad=$((bad + 1))
    [ -n "$first" ] || first=$1
    log "FAILED: $1"
}

# vc NAME SECS "OPTS" ["SERVER OPTS" "CLIENT OPTS"]: one server/client run;
# sets SRC/CRC (exit statuses), output in /tmp/NAME.srv and /tmp/NAME.cli
vc() {
    _n=$1 _s=$2
    rm -f "/tmp/$_n.srv" "/tmp/$_n.cli"
    # shellcheck disable=SC2086
    timeout "$_s" pvrdma-verbs-check $3 ${4:-} server > "/tmp/$_n.srv" 2>&1 &
    _sp=$!
    _i=0
    until grep -q "server listening" "/tmp/$_n.srv" 2>/dev/null; do
        _i=$((_i + 1))
        sleep 0.1
        if [ $_i -ge 150 ] || ! kill -0 $_sp 2>/dev/null; then
            break
        fi
    done
    # shellcheck disable=SC2086
    timeout "$_s" pvrdma-verbs-check $3 ${5:-} client "$PVRDMA_IP" \
        > "/tmp/$_n.cli" 2>&1
    CRC=$?
    wait $_sp
    SRC=$?
    n=$((n + 1))
}

show() { # NAME
    echo "--- $1 server (rc $SRC) ---"; tail -n 12 "/tmp/$1.srv"
    echo "--- $1 client (rc $CRC) ---"; tail -n 12 "/tmp/$1.cli"
}

# field LINE NAME: the value of NAME=... in LINE
field() {
    echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# pass NAME MODE N "OPS" "RECV-OPS" SECS "OPTS": a run that must pass
pass() {
    _n=$1 _m=$2 _cnt=$3 _ops=$4 _rops=$5
    vc "$_n" "$6" "$7"
    if [ $SRC != 0 ] || [ $CRC != 0 ]; then
        show "$_n"
        bad "$_n: server rc $SRC, client rc $CRC ($(grep -h -m1 -E 'MISMATCH|FAILED|error' "/tmp/$_n.srv" "/tmp/$_n.cli" | head -n 1))"
        return
    fi
    _nops=$(echo $_ops | wc -w) _nr=$(echo $_rops | wc -w)
    for _f in srv cli; do
        _l=$(tail -n 1 "/tmp/$_n.$_f")
        case $_l in
            "verbs-check: ok mode=$_m dev=$dev "*) ;;
            *) show "$_n"; bad "$_n ($_f): last line is not 'verbs-check: ok mode=$_m dev=$dev ...': $_l"; return ;;
        esac
        _msgs=$(field "$_l" msgs)
        [ "$_cnt" = 0 ] || [ "$_msgs" = "$_cnt" ] ||
            { bad "$_n ($_f): msgs=$_msgs, expected $_cnt"; return; }
        [ "$_msgs" -ge "$_nops" ] ||
            { bad "$_n ($_f): only $_msgs messages"; return; }
        for _o in $_ops; do
            _v=$(field "$_l" "$_o")
            [ "${_v:-0}" -ge $((_msgs / _nops)) ] ||
                { bad "$_n ($_f): $_o=$_v, expected >= $((_msgs / _nops))"; return; }
        done
        # the peer's receive-generating messages: at least its share
        # (time mode: the peer's own count may differ; at least 1 each)
        _r=$(field "$_l" recv)
        _min=$([ "$_cnt" = 0 ] && echo "$_nr" || echo $((_cnt / _nops * _nr)))
        [ "${_r:-0}" -ge "$_min" ] ||
            { bad "$_n ($_f): recv=$_r, expected >= $_min"; return; }
    done
    log "$_n: ok: $(tail -n 1 "/tmp/$_n.cli")"
}

# catch NAME CHECKER SECS "OPTS" "SERVER OPTS" "CLIENT OPTS" [WHAT]: a
# corrupted run: CHECKER (srv or cli) must exit 1 with a MISMATCH line
# (holding WHAT, the check that must catch it, if given), the other side
# must not exit 0
catch() {
    _n=$1 _who=$2 _what=${7:-}
    vc "$_n" "$3" "$4" "$5" "$6"
    if [ "$_who" = srv ]; then _c=$SRC _o=$CRC; else _c=$CRC _o=$SRC; fi
    if [ "$_c" != 1 ] || ! grep -q "^verbs-check: MISMATCH " "/tmp/$_n.$_who"; then
        show "$_n"
        bad "$_n: the checking side ($_who) exited $_c without a MISMATCH line (a checker that cannot fail)"
        return
    fi
    if [ -n "$_what" ] &&
        ! grep -m1 "^verbs-check: MISMATCH " "/tmp/$_n.$_who" | grep -qF -- "$_what"; then
        show "$_n"
        bad "$_n: caught, but not by its check ('$_what'): $(grep -m1 '^verbs-check: MISMATCH' "/tmp/$_n.$_who")"
        return
    fi
    if [ "$_o" = 0 ]; then
        show "$_n"
        bad "$_n: the corrupting side exited 0"
        return
    fi
    log "$_n: caught ($_who rc $_c, other side rc $_o): $(grep -m1 '^verbs-check: MISMATCH' "/tmp/$_n.$_who")"
}

ALL="send send_imm write write_imm read cas faa"
RECV="send send_imm write write_imm"
UD="send send_imm"
O="-S $VC_S -n $VC_N -g 4 -q 8"

for VC_DEV in $VC_DEVS; do
use_dev "$VC_DEV"
log "checker on $dev: $(ls /sys/class/infiniband | tr '\n' ' ')"

# 1. every mode, every op
pass rc rc "$VC_N" "$ALL" "$RECV" 120 "$O"
pass srq srq "$VC_N" "$ALL" "$RECV" 120 "-t srq $O"
pass ud ud "$VC_N" "$UD" "$UD" 120 "-t ud $O"
pass rc-g1-q1 rc 100 "$ALL" "$RECV" 120 "-S 8192 -n 100 -g 1 -q 1 --seed 7"
pass rc-time rc 0 "$ALL" "$RECV" 120 "-S 16384 -D 3"

# 2. corruption must be caught
C="-T 10 -S 8192 -n 100"
for op in send send_imm write write_imm; do
    catch "corrupt-$op" srv 60 "$C -o $op" "" "--corrupt 20"
done
for op in read cas faa; do
    catch "corrupt-$op" cli 60 "$C -o $op" "" "--corrupt 20"
done
catch corrupt-ud-send srv 60 "-T 5 -t ud -n 100" "" "--corrupt 20"
catch corrupt-server cli 60 "$C" "--corrupt 30" ""

# 3. every kind of check fires, each on its own: the client delivers its
#    message 20 (or the next that can carry it) wrong as a faulty device
#    could (--mutate), and the server must fail with that check's message
M="--corrupt 20 --mutate"
catch mutate-imm srv 60 "$C -o send_imm" "" "$M imm" "immediate"
catch mutate-imm-write srv 60 "$C -o write_imm" "" "$M imm" "expected RECV_RDMA_WITH_IMM imm"
catch mutate-len srv 60 "$C -o send" "" "$M len" "byte_len"
catch mutate-opcode srv 60 "$C -o send" "" "$M opcode" "completion opcode"
catch mutate-guard-before srv 60 "$C -o write" "" "$M guard-before" "at=guard before data"
catch mutate-guard-after srv 60 "$C -o write" "" "$M guard-after" "at=guard after data"
catch mutate-guard-far srv 60 "$C -o write" "" "$M guard-far" "at=guard after data offset=8191"
catch corrupt-data srv 60 "$C -o write" "" "--corrupt 20" "at=data"

done

kernel_clean
[ $bad = 0 ] || fail "$bad of $n checker runs went wrong (first: $first)"
log "$n checker runs on $(echo $VC_DEVS): all as expected"
