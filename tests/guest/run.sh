#!/bin/bash
# End-to-end tests: boot real Linux guests (Debian 6.1 kernel, vmw_pvrdma
# from Debian's linux-source) on the QEMU in build/qemu and run
# tests/guest/NN-*.sh inside them.
#
#   tests/guest/run.sh [options] [NAME-OR-GLOB...]     e.g. run.sh 1 '*gid*'
#
# Prints one line per test, "ok NAME (SECSs)", "FAIL NAME: reason" or
# "skip NAME: reason", then "N passed, N failed[, N skipped]".  Exit status
# 1 if anything failed.
#
# Options:
#   -l, --list             list the tests and their settings
#   -v, --verbose          stream guest consoles to stderr
#   -j, --jobs N           run tests in parallel on N vCPUs (a two-VM test
#                          counts 2; default 1, env PVRDMA_TEST_JOBS).  -j 2
#                          fits a 2-core CI runner.
#   --require-pvrdma       tests marked "requires: pvrdma" FAIL instead of
#                          being skipped when the device is unavailable
#                          (env PVRDMA_REQUIRE=1)
#   --pvrdma auto|on|off   passed to run-vm.sh (env PVRDMA_DEVICE)
#   -o, --out DIR          logs (default build/guest/results/<time>)
#   -e, --env NAME=VAL     passed into every guest (e.g. PP_ITERS=20)
# Env PVRDMA_VM_ARGS: more run-vm.sh options for every test, after the
# test's own (scripts/soak-roce.sh sets the switch's loss this way).
# Arguments select tests: a number prefix (12), a name (11-pvrdma-gid) or a
# glob ('*rxe*').
#
# Test headers (comment lines in the test file):
#   # vms: 1|2               number of VMs (two: same script, $PVRDMA_VM 0/1)
#   # timeout: SECS          QEMU run limit
#   # requires: pvrdma       skip unless the pvrdma device is available
#   # rss-growth: T1 T2 KiB  QEMU's own resident memory (VmRSS less guest
#                            RAM and the TCG translation buffer, column OWN
#                            of run-vm.sh's samples.txt) may grow at most KiB
#                            between the guest's "host_sample T1" and
#                            "host_sample T2", not counting the largest
#                            step between two samples in between (a one-off:
#                            a new malloc arena, a table that doubled); a
#                            leak grows in every step
#   # vm-args: ARGS          more run-vm.sh options (--reboot, --restart-peer)
#   # qemu-args: ARGS        more QEMU arguments for every VM (e.g. -trace ...)
# A file NN-name.host next to the test, if present, is run on the host after
# the guests passed, as "bash NN-name.host LOGDIR"; exit 77 makes the test a
# skip (a part the host cannot do), another non-zero exit fails
# the test with its last output line as the reason.
# A test exits 0 (pass), 77 (skip) or anything else (fail); fail() in the
# guest prints "FAIL: reason", which becomes the reason here.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# the image of PVRDMA_GUEST_RELEASE, as build-image.sh and run-vm.sh find it
# shellcheck source=scripts/guest/release-lib.sh
. "$top/scripts/guest/release-lib.sh"
G=$(guest_dir "${PVRDMA_GUEST_RELEASE:-bookworm}") || exit 2
QEMU=${QEMU:-$top/build/qemu/qemu-system-x86_64}
export QEMU

list=0 verbose=0 jobs=${PVRDMA_TEST_JOBS:-1} require=${PVRDMA_REQUIRE:-0} pvrdma=${PVRDMA_DEVICE:-auto} out=
envs=() sel=()
while [ $# -gt 0 ]; do
    case $1 in
        -l|--list) list=1; shift ;;
        -v|--verbose) verbose=1; shift ;;
        -j|--jobs) jobs=$2; shift 2 ;;
        --require-pvrdma) require=1; shift ;;
        --pvrdma) pvrdma=$2; shift 2 ;;
        -o|--out) out=$2; shift 2 ;;
        -e|--env) envs+=(-e "$2"); shift 2 ;;
        -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
        *) sel+=("$1"); shift ;;
    esac
done

case $jobs in ''|*[!0-9]*|0) echo "run.sh: --jobs wants a number >= 1" >&2; exit 2 ;; esac

hdr() { # file key -> value of "# key: value"
    sed -n "s/^# $2: *//p" "$1" | head -n1
}

tests=()
for t in "$here"/[0-9][0-9]-*.sh; do
    n=$(basename "$t" .sh)
    if [ ${#sel[@]} -gt 0 ]; then
        m=0
        for s in "${sel[@]}"; do
            s=${s%.sh}; s=${s##*/}
            # shellcheck disable=SC2254
            case $n in $s|$s-*) m=1 ;; esac
        done
        [ $m = 1 ] || continue
    fi
    tests+=("$t")
done
[ ${#tests[@]} -gt 0 ] || { echo "run.sh: no test matches: ${sel[*]}" >&2; exit 2; }

if [ "$list" = 1 ]; then
    for t in "${tests[@]}"; do
        printf '%-32s vms=%s timeout=%s%s%s\n' "$(basename "$t" .sh)" \
            "$(hdr "$t" vms)" "$(hdr "$t" timeout)" \
            "$( [ -z "$(hdr "$t" requires)" ] || echo " requires=$(hdr "$t" requires)")" \
            "$( [ -z "$(hdr "$t" rss-growth)" ] || echo " rss-growth=$(hdr "$t" rss-growth | tr ' ' ,)")"
    done
    exit 0
fi

[ -x "$QEMU" ] || { echo "run.sh: no QEMU at $QEMU (scripts/build.sh)" >&2; exit 2; }
"$top/scripts/guest/build-image.sh" --quiet || { echo "run.sh: guest image build failed" >&2; exit 2; }

has_pvrdma=0
"$QEMU" -nodefaults -device help 2>/dev/null | grep -q '^name "pvrdma"' && has_pvrdma=1
case $pvrdma in
    auto) pvrdma_ok=$has_pvrdma; why="this QEMU has no pvrdma device" ;;
    on) pvrdma_ok=1 ;;
    off) pvrdma_ok=0; why="pvrdma disabled (--pvrdma off)" ;;
    *) echo "run.sh: --pvrdma must be auto, on or off" >&2; exit 2 ;;
esac

[ -n "$out" ] || out=$G/results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
echo "# guest tests: QEMU $QEMU (pvrdma device: $([ "$pvrdma_ok" = 1 ] && echo yes || echo no)), logs in $out" >&2

first_line() { # dir pattern -> first matching console line (any VM), cleaned
    local c
    for c in "$1"/vm*/console.log; do
        tr -d '\r' < "$c" 2>/dev/null | grep -a -m1 -E "$2" | sed "s|^|$(basename "$(dirname "$c")"): |"
    done | head -n1
}

# run_one TEST: run it, write its result line to $out/NAME.result
run_one() {
    local t=$1 n vms to d args t0 rc secs reason extra rg p q f a b g
    n=$(basename "$t" .sh)
    vms=$(hdr "$t" vms); vms=${vms:-1}
    to=$(hdr "$t" timeout); to=${to:-300}
    d=$out/$n
    rm -rf "$d"
    args=(--no-build -n "$vms" -t "$to" -o "$d" --pvrdma "$pvrdma"
          -f "$here/common.sh:/usr/lib/pvrdma/tests-common.sh" "${envs[@]}")
    [ "$verbose" = 0 ] || args+=(-v)
    # shellcheck disable=SC2206
    args+=($(hdr "$t" vm-args) ${PVRDMA_VM_ARGS:-})
    t0=$(date +%s.%N)
    PVRDMA_QEMU_ARGS="${PVRDMA_QEMU_ARGS:-} $(hdr "$t" qemu-args)" \
        "$top/scripts/guest/run-vm.sh" "${args[@]}" "$t" 2> "$out/$n.harness.log"
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    [ "$verbose" = 0 ] || cat "$out/$n.harness.log" >&2

    reason=
    case $rc in
        0) ;;
        77) reason=$(first_line "$d" '^SKIP: ' | sed 's/SKIP: //') ;;
        124) reason=$(grep -m1 'timed out' "$out/$n.harness.log" | sed 's/^run-vm: //') ;;
        125) reason=$(grep -m1 'QEMU exited' "$out/$n.harness.log" | sed 's/^run-vm: //')
             p=$(first_line "$d" 'Kernel panic|BUG:|Oops|general protection') || true
             [ -z "$p" ] || reason="$reason; guest: $p"
             q=$(cat "$d"/vm*/qemu.stderr 2>/dev/null | grep -v -m1 'warning:') || true
             [ -z "$q" ] || reason="$reason; QEMU: $q" ;;
        *) reason=$(first_line "$d" '^FAIL: ' | sed 's/FAIL: //')
           [ -n "$reason" ] || reason="guest script exited with status $rc" ;;
    esac
    [ -n "$reason" ] || [ "$rc" = 0 ] || reason="run-vm.sh exited with status $rc ($(tail -n1 "$out/$n.harness.log"))"

    # host-side checks of the logs
    if [ "$rc" = 0 ] && [ -f "${t%.sh}.host" ]; then
        bash "${t%.sh}.host" "$d" > "$d/host-check.log" 2>&1
        case $? in
            0) ;;
            77) rc=77; reason="host check: $(tail -n 1 "$d/host-check.log")" ;;
            *) rc=1; reason="host check: $(tail -n 1 "$d/host-check.log")" ;;
        esac
    fi

    # host-side RSS check
    extra=
    rg=$(hdr "$t" rss-growth)
    if [ "$rc" = 0 ] && [ -n "$rg" ]; then
        # shellcheck disable=SC2086
        set -- $rg
        f=$d/vm0/samples.txt
        a=$(awk -v t="$1" '$1==t {print $5; exit}' "$f" 2>/dev/null)
        b=$(awk -v t="$2" '$1==t {print $5; exit}' "$f" 2>/dev/null)
        # the largest step between consecutive samples from T1 to T2
        m=$(awk -v t1="$1" -v t2="$2" '$1==t1 {on=1; p=$5; next}
                on && $5 ~ /^[0-9]+$/ { if ($5 - p > m) m = $5 - p; p = $5 }
                $1==t2 {exit} END {print m + 0}' "$f" 2>/dev/null)
        case "$a$b$m" in
            ''|*[!0-9]*) rc=1; reason="no RSS samples '$1'/'$2' in $f" ;;
            *) g=$((b - a)); l=$((g - m))
               extra=", QEMU own RSS +${g} KiB from $1 to $2"
               extra+=", +${l} without its largest step (+${m})"
               if [ "$l" -gt "$3" ]; then
                   rc=1
                   reason="QEMU's own RSS (less guest RAM and TCG buffer)"
                   reason+=" grew ${g} KiB between '$1' (${a} KiB) and '$2'"
                   reason+=" (${b} KiB), ${l} KiB without its largest step"
                   reason+=" of ${m} KiB, limit $3 KiB"
               fi ;;
        esac
    fi

    if [ "$rc" = 0 ]; then
        echo "ok $n (${secs}s$extra)"
    elif [ "$rc" = 77 ]; then
        echo "skip $n: ${reason:-skipped by the guest}"
    else
        echo "FAIL $n: $reason (${secs}s) [logs: $d]"
    fi > "$out/$n.result"
}

# a result left in a reused --out directory is not this run's
for t in "${tests[@]}"; do rm -f "$out/$(basename "$t" .sh).result"; done

# schedule: at most $jobs vCPUs busy (a two-VM test takes two); results are
# printed in test order
declare -A slot_of pid_of
busy=0
( for t in "${tests[@]}"; do
    n=$(basename "$t" .sh)
    rm -f "$out/$n.result"
    req=$(hdr "$t" requires)
    if [ "$req" = pvrdma ] && [ "$pvrdma_ok" = 0 ]; then
        if [ "$require" = 1 ]; then
            echo "FAIL $n: $why (--require-pvrdma)"
        else
            echo "skip $n: $why"
        fi > "$out/$n.result"
        continue
    fi
    vms=$(hdr "$t" vms); vms=${vms:-1}
    [ "$vms" -le "$jobs" ] || vms=$jobs
    while [ $((busy + vms)) -gt "$jobs" ]; do
        wait -n 2>/dev/null || true
        busy=0
        for m in "${!pid_of[@]}"; do
            if kill -0 "${pid_of[$m]}" 2>/dev/null; then busy=$((busy + slot_of[$m])); else unset "pid_of[$m]"; fi
        done
    done
    run_one "$t" &
    pid_of[$n]=$! slot_of[$n]=$vms
    busy=$((busy + vms))
    if [ "$jobs" = 1 ]; then wait; busy=0; unset "pid_of[$n]"; fi
  done
  wait ) &
sched=$!

# print results in order as they appear
pass=0 failn=0 skipn=0
for t in "${tests[@]}"; do
    n=$(basename "$t" .sh)
    while [ ! -s "$out/$n.result" ]; do
        kill -0 "$sched" 2>/dev/null || [ -s "$out/$n.result" ] || { echo "FAIL $n: harness error (no result)" > "$out/$n.result"; break; }
        sleep 0.2
    done
    line=$(cat "$out/$n.result")
    echo "$line"
    case $line in
        ok\ *) pass=$((pass + 1)) ;;
        skip\ *) skipn=$((skipn + 1)) ;;
        *) failn=$((failn + 1)) ;;
    esac
done
wait "$sched" 2>/dev/null || true

summary="$pass passed, $failn failed"
[ "$skipn" = 0 ] || summary="$summary, $skipn skipped"
echo "$summary"
[ "$failn" = 0 ]
