#!/bin/sh
# shellcheck shell=sh
# Inside L1 (busybox ash): boot one L2 test guest with our QEMU on tapN,
# run SCRIPT in it (the real-guest rig's conventions: /test.sh, /test.env,
# /usr/lib/pvrdma/{guest-lib.sh,tests-common.sh}), return its exit status.
# run-l1.sh installs this as /usr/lib/pvrdma/l2.sh.
#
#   /usr/lib/pvrdma/l2.sh [options] SCRIPT
#
# The L2 guest: q35, 1 vCPU, TCG, direct kernel boot of the L2 image
# (/usr/share/pvrdma/l2, = build/guest), as scripts/guest/run-vm.sh:
#   -netdev tap,id=n0,ifname=tapN,script=no,downscript=no
#   -device vmxnet3,netdev=n0,addr=4.0,multifunction=on,romfile=,mac=52:54:00:12:34:(56+N)
#   -device pvrdma,addr=4.1,roce=on                      (--pvrdma on)
# L2 N gets 10.0.0.(N+2)/24 on br0's segment; L1 is 10.0.0.1 (rxe0).
# Its /test.env: PVRDMA_VM=N PVRDMA_VMS=1 PVRDMA_IP PVRDMA_PREFIX=24
# PVRDMA_PEER_IP=10.0.0.1 PVRDMA_L1_IP=10.0.0.1 PVRDMA_DEVICE PVRDMA_TEST
# PVRDMA_RESTART=0 PVRDMA_NESTED=1, plus -e NAME=VAL (may override those).
#
# Options:
#   -n, --tap N          use tapN (default 0)
#   -t, --timeout SECS   from QEMU start (default 1200, env PVRDMA_L2_TIMEOUT)
#   -o, --out DIR        logs (default /tmp/l2/<script>-tapN)
#   -e, --env NAME=VAL   add to the guest's /test.env (value without spaces
#                        or quotes)
#   -f, --file SRC[:DST] put an L1 file in the guest (default DST /SRCNAME)
#   --pvrdma on|off      add the pvrdma device (default on)
#   --device ARGS        the -device string (default pvrdma,addr=4.1,roce=on, env
#                        PVRDMA_DEVICE_ARGS)
#   --qemu-args ARGS     more QEMU arguments (word-split, env PVRDMA_QEMU_ARGS)
#   --mem SIZE           guest RAM (default 1G, env PVRDMA_GUEST_MEM)
#   --ip ADDR/LEN        the guest's address on the vmxnet3 (default
#                        10.0.0.(N+2)/24; PVRDMA_PEER_IP stays 10.0.0.1
#                        unless -e PVRDMA_PEER_IP=... says otherwise)
#   -q, --quiet          do not print the guest script's output
#   -v, --verbose        print the whole guest console as it comes
# Prints the guest script's output (console lines between the rig's markers)
# prefixed "[l2.N] " once the guest is done, then
#   l2.N: <state> rc=<rc> boot=<s> total=<s> log=<dir>/console.log
# Exit status: the guest script's; 124 timeout; 125 guest/QEMU died without
# reporting; 2 usage error.
# Logs in <out>/: console.log, qemu.stderr, qemu.cmdline, boot.secs, rc.
# Two guests at once: run two l2.sh in the background on tap0 and tap1.

tap=0 timeout=${PVRDMA_L2_TIMEOUT:-1200} out='' pvrdma=on quiet=0 verbose=0
dev=${PVRDMA_DEVICE_ARGS:-pvrdma,addr=4.1,roce=on} qargs=${PVRDMA_QEMU_ARGS:-} mem=${PVRDMA_GUEST_MEM:-1G}
envs='' files='' script='' ipopt=''
QEMU=${L2_QEMU:-/usr/bin/qemu-system-x86_64}
IMG=/usr/share/pvrdma/l2
FW=/usr/share/pvrdma/firmware
LIB=/usr/lib/pvrdma

. "$LIB/initrd-lib.sh"
die() { echo "l2: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        -n|--tap) tap=$2; shift 2 ;;
        -t|--timeout) timeout=$2; shift 2 ;;
        -o|--out) out=$2; shift 2 ;;
        -e|--env) envs="$envs $2"; shift 2 ;;
        -f|--file) files="$files $2"; shift 2 ;;
        --pvrdma) pvrdma=$2; shift 2 ;;
        --device) dev=$2; shift 2 ;;
        --qemu-args) qargs="$qargs $2"; shift 2 ;;
        --mem) mem=$2; shift 2 ;;
        --ip) ipopt=$2; shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        -v|--verbose) verbose=1; shift ;;
        -h|--help) sed -n '3,44p' "$0"; exit 0 ;;
        -*) die "unknown option $1" ;;
        *) [ -z "$script" ] || die "one script only"; script=$1; shift ;;
    esac
done
[ -n "$script" ] || die "no guest script given (see --help)"
[ -f "$script" ] || die "no such script: $script"
case $tap in ''|*[!0-9]*) die "--tap must be a number" ;; esac
case $timeout in ''|*[!0-9]*) die "--timeout must be a number of seconds" ;; esac
case $pvrdma in on|off) ;; *) die "--pvrdma must be on or off" ;; esac
[ -e "/sys/class/net/tap$tap" ] || die "no tap$tap in L1 (run-l1.sh --taps)"
for f in "$IMG/vmlinux" "$IMG/initrd.img" "$QEMU"; do [ -e "$f" ] || die "no $f"; done

name=$(basename "$script" .sh)
[ -n "$out" ] || out=/tmp/l2/$name-tap$tap
rm -rf "$out"; mkdir -p "$out/extra$LIB"
ip=10.0.0.$((tap + 2)) prefix=24
case $ipopt in
    '') ;;
    */*) ip=${ipopt%/*} prefix=${ipopt#*/} ;;
    *) die "--ip wants ADDR/LEN" ;;
esac
mac=52:54:00:12:34:$((56 + tap))

# --- second initramfs segment: script, env, helpers ---------------------------
cp "$script" "$out/extra/test.sh"
cp "$LIB/guest-lib.sh" "$LIB/tests-common.sh" "$out/extra$LIB/"
for f in $files; do
    rig_put "$out/extra" "$f" || die "cannot add $f"
done
use=0; [ "$pvrdma" = on ] && use=1
{
    echo "PVRDMA_VM=$tap"
    echo "PVRDMA_VMS=1"
    echo "PVRDMA_IP=$ip"
    echo "PVRDMA_PREFIX=$prefix"
    echo "PVRDMA_PEER_IP=10.0.0.1"
    echo "PVRDMA_L1_IP=10.0.0.1"
    echo "PVRDMA_DEVICE=$use"
    echo "PVRDMA_TEST=$name"
    echo "PVRDMA_RESTART=0"
    echo "PVRDMA_NESTED=1"
    echo "export PVRDMA_VM PVRDMA_VMS PVRDMA_IP PVRDMA_PREFIX PVRDMA_PEER_IP PVRDMA_L1_IP PVRDMA_DEVICE PVRDMA_TEST PVRDMA_RESTART PVRDMA_NESTED"
    # shellcheck disable=SC2086  # entries without spaces (see --env)
    rig_env $envs || die "bad --env"
} > "$out/extra/test.env"
rig_initrd "$IMG/initrd.img" "$out/extra" "$out" || die "cpio of the guest files failed"

# --- QEMU -----------------------------------------------------------------------
set -- "$QEMU" -L "$FW" -nodefaults -machine q35 -accel tcg -cpu "${PVRDMA_GUEST_CPU:-qemu64}" -smp 1 -m "$mem" \
    -display none -name "pvrdma-l2-$tap" \
    -kernel "$IMG/vmlinux" -initrd "$out/initrd.img" \
    -append "console=ttyS0 panic=-1 oops=panic loglevel=${PVRDMA_GUEST_LOGLEVEL:-4} mitigations=off pvrdma.ip=$ip/$prefix ${PVRDMA_GUEST_APPEND:-}" \
    -netdev "tap,id=n0,ifname=tap$tap,script=no,downscript=no" \
    -device "vmxnet3,netdev=n0,addr=4.0,multifunction=on,romfile=,mac=$mac"
[ "$use" = 0 ] || set -- "$@" -device "$dev"
# shellcheck disable=SC2086
set -- "$@" -no-reboot $qargs -serial "file:$out/console.log"
echo "$*" > "$out/qemu.cmdline"

up() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(up)" 'BEGIN{printf "%.1f", b-a}'; }
: > "$out/console.log"
t0=$(up)
"$@" < /dev/null > "$out/qemu.stderr" 2>&1 &
qpid=$!
trap 'kill $qpid 2>/dev/null' EXIT
trap 'kill $qpid 2>/dev/null; exit 130' INT TERM

# show_new: with -v, print the console lines completed since the last call
shown=0
show_new() {
    [ "$verbose" = 1 ] || return 0
    _n=$(wc -l < "$out/console.log")
    [ "$_n" -gt "$shown" ] || return 0
    sed -n "$((shown + 1)),${_n}p" "$out/console.log" | tr -d '\r' | sed "s/^/[l2.$tap] /"
    shown=$_n
}
boot='' rc='' state=running
while :; do
    show_new
    if [ -z "$boot" ] && grep -aq '^PVRDMA-GUEST-READY' "$out/console.log"; then
        boot=$(since "$t0"); echo "$boot" > "$out/boot.secs"
    fi
    if grep -aq '^PVRDMA-GUEST-EXIT=' "$out/console.log"; then
        rc=$(grep -a -m1 '^PVRDMA-GUEST-EXIT=' "$out/console.log" | tr -d '\r' | sed 's/.*=//')
        state='done'
        i=0
        while kill -0 "$qpid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        break
    fi
    if ! kill -0 "$qpid" 2>/dev/null; then
        state=died rc=125
        break
    fi
    if [ "$(awk -v a="$t0" -v b="$(up)" -v t="$timeout" 'BEGIN{print (b-a > t) ? 1 : 0}')" = 1 ]; then
        state=timeout rc=124
        break
    fi
    sleep 0.5
done
total=$(since "$t0")
kill "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null
case $rc in ''|*[!0-9]*) rc=125 ;; esac
echo "$rc" > "$out/rc"
show_new

if [ "$verbose" = 1 ]; then
    [ ! -s "$out/qemu.stderr" ] || sed "s/^/[l2.$tap] QEMU: /" "$out/qemu.stderr" | tail -n 15
elif [ "$quiet" = 0 ] || [ "$state" != 'done' ]; then
    if [ "$state" = 'done' ]; then
        tr -d '\r' < "$out/console.log" |
            awk '/^PVRDMA-GUEST-READY/ {on = 1; next} /^PVRDMA-GUEST-EXIT=/ {on = 0} on' |
            sed "s/^/[l2.$tap] /"
    else
        echo "l2.$tap: $state; last console lines:"
        tr -d '\r' < "$out/console.log" | grep -v '^\s*$' | tail -n 25 | sed "s/^/[l2.$tap]     /"
        [ ! -s "$out/qemu.stderr" ] || sed "s/^/[l2.$tap] QEMU: /" "$out/qemu.stderr" | tail -n 15
    fi
fi
echo "l2.$tap: $state rc=$rc boot=${boot:-?}s total=${total}s log=$out/console.log"
exit "$rc"
