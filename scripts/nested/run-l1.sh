#!/bin/bash
# Boot the nested rig's L1 VM under TCG, run SCRIPT [ARGS...] in it as root
# (after br0 10.0.0.1/24, tap0/tap1 and rxe0 are up), print the script's
# output, and exit with its status.
#
#   scripts/nested/run-l1.sh [options] SCRIPT [ARGS...]
#
# Inside L1: /usr/lib/pvrdma/l2.sh boots L2 test guests with our QEMU (see
# scripts/nested/l2.sh), /usr/lib/pvrdma/tests/ holds tests/guest/*.sh,
# /usr/lib/pvrdma/nested/ holds scripts/nested/*.sh, /test.env sets
# PVRDMA_IP=10.0.0.1 PVRDMA_NETIF=br0 PVRDMA_DEV=rxe0 so guest-lib.sh and
# tests-common.sh work in L1 too.
#
# Options:
#   -t, --timeout SECS   from QEMU start (default 1800, env PVRDMA_L1_TIMEOUT)
#   -o, --out DIR        logs (default build/nested/results/<script>-<time>)
#   -f, --file SRC[:DST] put a host file in L1 (default DST /SRCNAME)
#   -e, --env NAME=VAL   add to L1's /test.env (repeatable)
#   --mem SIZE           L1 RAM (default 3G, env PVRDMA_L1_MEM)
#   --smp N              L1 vCPUs (default 2, env PVRDMA_L1_SMP)
#   --taps N             tap devices on br0 (default 2)
#   -q, --quiet          do not print the script's output (still logged)
#   -v, --verbose        also copy the whole L1 console to stderr
#   --shell              interactive L1 on this terminal (no script)
#   --no-build           do not run build-l1.sh first
# Environment: QEMU (L0's QEMU; default the snapshot build-l1.sh took,
# build/nested/l1/qemu-system-x86_64), PVRDMA_L1_CPU (qemu64),
# PVRDMA_L1_QEMU_ARGS (extra L0 QEMU arguments, word-split).
#
# Logs in <out>/: console.log, qemu.stderr, qemu.cmdline, boot.secs (L1
# boot, QEMU start to PVRDMA-L1-READY), rc, result.
# Exit status: the script's; 124 timeout; 125 L1 died without reporting;
# 2 usage/setup error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
G=${PVRDMA_GUEST_DIR:-$top/build/guest}
N=${PVRDMA_NESTED_DIR:-$top/build/nested}
L=$N/l1

timeout=${PVRDMA_L1_TIMEOUT:-1800} out='' mem=${PVRDMA_L1_MEM:-3G} smp=${PVRDMA_L1_SMP:-2}
taps=2 quiet=0 verbose=0 shell=0 build=1
files=() envs=() script='' args=()

# shellcheck source=scripts/guest/initrd-lib.sh
. "$top/scripts/guest/initrd-lib.sh"
die() { echo "run-l1: $*" >&2; exit 2; }
need_arg() { [ $# -ge 2 ] || die "option $1 needs an argument"; }
while [ $# -gt 0 ] && [ -z "$script" ]; do
    case $1 in
        -t|--timeout) need_arg "$@"; timeout=$2; shift 2 ;;
        -o|--out) need_arg "$@"; out=$2; shift 2 ;;
        -f|--file) need_arg "$@"; files+=("$2"); shift 2 ;;
        -e|--env) need_arg "$@"; envs+=("$2"); shift 2 ;;
        --mem) need_arg "$@"; mem=$2; shift 2 ;;
        --smp) need_arg "$@"; smp=$2; shift 2 ;;
        --taps) need_arg "$@"; taps=$2; shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        -v|--verbose) verbose=1; shift ;;
        --shell) shell=1; shift ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
        --) shift; [ $# -gt 0 ] || die "no script after --"; script=$1; shift ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) script=$1; shift ;;
    esac
done
args=("$@")
case $timeout in ''|*[!0-9]*) die "--timeout must be a number of seconds" ;; esac
case $smp in ''|*[!0-9]*|0) die "--smp must be a number >= 1" ;; esac
case $taps in ''|*[!0-9]*) die "--taps must be a number" ;; esac
if [ "$shell" = 0 ]; then
    [ -n "$script" ] || die "no L1 script given (see --help)"
    [ -f "$script" ] || die "no such script: $script"
fi

if [ "$build" = 1 ]; then
    "$here/build-l1.sh" --quiet || die "L1 image build failed"
fi
for f in vmlinux initrd.img qemu-system-x86_64; do
    [ -f "$L/$f" ] || die "no $L/$f: run scripts/nested/build-l1.sh"
done
QEMU=${QEMU:-$L/qemu-system-x86_64}

if [ -z "$out" ]; then
    base=$(basename "${script:-shell}"); base=${base%.sh}
    out=$N/results/$base-$(date +%Y%m%d-%H%M%S)-$$
fi
rm -rf "$out"; mkdir -p "$out"
out=$(cd "$out" && pwd)

# --- per-run cpio: the script, its arguments, the rig's helpers, the tests ---
X=$out/extra
mkdir -p "$X/usr/lib/pvrdma/tests" "$X/usr/lib/pvrdma/nested"
[ -z "$script" ] || cp "$script" "$X/test.sh"
for a in ${args[@]+"${args[@]}"}; do rig_sq "$a"; printf ' '; done > "$X/test.args"
install -m 0755 "$here/l2.sh" "$X/usr/lib/pvrdma/l2.sh"
cp "$top/scripts/guest/guest-lib.sh" "$top/scripts/guest/initrd-lib.sh" "$X/usr/lib/pvrdma/"
cp "$top/tests/guest/common.sh" "$X/usr/lib/pvrdma/tests-common.sh"
cp "$top"/tests/guest/[0-9][0-9]-*.sh "$X/usr/lib/pvrdma/tests/"
cp "$here"/*.sh "$X/usr/lib/pvrdma/nested/"
# nested tests and their L2 guest scripts (tests/nested)
cp "$top"/tests/nested/*.sh "$X/usr/lib/pvrdma/nested/" 2>/dev/null || true
for f in ${files[@]+"${files[@]}"}; do
    rig_put "$X" "$f" || die "cannot add $f"
done
{
    echo "PVRDMA_VM=l1"
    echo "PVRDMA_IP=10.0.0.1"
    echo "PVRDMA_PREFIX=24"
    echo "PVRDMA_NETIF=br0"
    echo "PVRDMA_DEV=rxe0"
    echo "PVRDMA_TAPS=$taps"
    echo "export PVRDMA_VM PVRDMA_IP PVRDMA_PREFIX PVRDMA_NETIF PVRDMA_DEV PVRDMA_TAPS"
    rig_env ${envs[@]+"${envs[@]}"} || die "bad --env"
} > "$X/test.env"
rig_initrd "$L/initrd.img" "$X" "$out" || die "cannot build $out/initrd.img"

kapp="console=ttyS0 panic=-1 oops=panic loglevel=${PVRDMA_L1_LOGLEVEL:-4} mitigations=off pvrdma.taps=$taps"
[ "$shell" = 0 ] || kapp="$kapp pvrdma.shell"
cmd=("$QEMU" -L "$G/firmware" -L /usr/share/seabios
     -nodefaults -machine q35 -accel tcg -cpu "${PVRDMA_L1_CPU:-qemu64}" -smp "$smp" -m "$mem"
     -display none -name pvrdma-l1
     -kernel "$L/vmlinux" -initrd "$out/initrd.img" -append "$kapp" -no-reboot)
# shellcheck disable=SC2206
[ -z "${PVRDMA_L1_QEMU_ARGS:-}" ] || cmd+=(${PVRDMA_L1_QEMU_ARGS})
if [ "$shell" = 1 ]; then
    echo "run-l1: interactive L1 (Ctrl-A X quits QEMU); logs in $out" >&2
    exec "${cmd[@]}" -serial mon:stdio 2> "$out/qemu.stderr"
fi
cmd+=(-serial "file:$out/console.log")
printf '%q ' "${cmd[@]}" > "$out/qemu.cmdline"; echo >> "$out/qemu.cmdline"

now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
older_than() { awk -v a="$1" -v b="$(now)" -v t="$2" 'BEGIN{print (b-a > t) ? 1 : 0}'; }

qpid='' fpid=''
# shellcheck disable=SC2317  # called from the traps
cleanup() {
    [ -z "$qpid" ] || kill "$qpid" 2>/dev/null || true
    [ -z "$fpid" ] || kill "$fpid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

: > "$out/console.log"
t0=$(now)
"${cmd[@]}" < /dev/null > "$out/qemu.stderr" 2>&1 &
qpid=$!
# the script's output (between the markers) on stdout as it comes; with -v
# the rest of the console on stderr
# (a read loop, not awk: mawk buffers its input from a pipe)
tail -n +1 -F --pid="$qpid" "$out/console.log" 2>/dev/null | {
    on=0
    while IFS= read -r line; do
        line=${line%$'\r'}
        case $line in
            PVRDMA-L1-READY*) on=1; [ "$verbose" = 0 ] || echo "$line" >&2; continue ;;
            PVRDMA-L1-EXIT=*) on=0 ;;
        esac
        if [ "$on" = 1 ]; then
            [ "$quiet" = 1 ] || echo "$line"
        elif [ "$verbose" = 1 ]; then
            echo "$line" >&2
        fi
    done
} &
fpid=$!

boot='' rc='' state=running
while :; do
    if [ -z "$boot" ] && grep -aq '^PVRDMA-L1-READY' "$out/console.log"; then
        boot=$(secs_since "$t0"); echo "$boot" > "$out/boot.secs"
    fi
    if grep -aq '^PVRDMA-L1-EXIT=' "$out/console.log"; then
        rc=$(grep -a -m1 '^PVRDMA-L1-EXIT=' "$out/console.log" | tr -d '\r' | sed 's/.*=//')
        state='done'
        # L1 powers off by itself; give it 10 s
        for _ in $(seq 1 100); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
        break
    fi
    if ! kill -0 "$qpid" 2>/dev/null; then
        state=died rc=125
        {
            echo "run-l1: QEMU exited before L1 reported an exit status; last console lines:"
            { tr -d '\r' < "$out/console.log" | grep -av '^\s*$' || true; } | tail -n 25 | sed 's/^/    /'
            [ ! -s "$out/qemu.stderr" ] || { echo "  QEMU stderr:"; tail -n 15 "$out/qemu.stderr" | sed 's/^/    /'; }
        } >&2
        break
    fi
    if [ "$(older_than "$t0" "$timeout")" = 1 ]; then
        state=timeout rc=124
        {
            echo "run-l1: L1 timed out after $timeout s; last console lines:"
            { tr -d '\r' < "$out/console.log" | grep -av '^\s*$' || true; } | tail -n 25 | sed 's/^/    /'
        } >&2
        break
    fi
    sleep 0.2
done
total=$(secs_since "$t0")
kill "$qpid" 2>/dev/null || true
wait "$qpid" 2>/dev/null || true
qpid=''
wait "$fpid" 2>/dev/null || true
fpid=''
case $rc in ''|*[!0-9]*) rc=125 ;; esac
echo "$rc" > "$out/rc"
echo "l1: $state rc=$rc boot=${boot:-?}s total=${total}s log=$out/console.log" | tee "$out/result" | sed 's/^/run-l1: /' >&2
exit "$rc"
