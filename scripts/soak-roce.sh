#!/bin/bash
# RoCEv2 soak (not in make check): does the transport ever hang, exhaust
# its retries or corrupt data under loss, reordering, delay and load?
#
#  1. unit: /pvrdma/roce/rc-soak of tests/unit/test-pvrdma-roce, two
#     devices on the unit tests' fake wire (no QEMU, fake time): a pingpong
#     of 1 KiB, 64 KiB and 1 MiB messages, 0 %, 1 % and 5 % lost in both
#     directions (ACKs too) with 1 % reordered, on a wire with 1 ms latency
#     and on one that stalls up to 100 ms; UNIT_ITERS exchanges per cell.
#  2. guest: tests/guest/90-roce-soak.sh, three TCG VMs on the rig's switch
#     (pvrdma, pvrdma, soft-RoCE): the verbs checker (pvrdma-verbs-check,
#     every byte of SEND, WRITE, READ and, between pvrdma devices, atomics,
#     both directions at once, local ACK timeout 14, retry_cnt 7), pvrdma
#     as server and as client, against pvrdma and against rxe; for each
#     loss in LOSS the switch drops that share of the RoCEv2 frames and
#     reorders 1 %, ACKs and NAKs too (ACKS=keep: not), delays every
#     RoCEv2 frame by 0 to JITTER ms (frames overtake each other), CM
#     MADs kept (the
#     checker's own end survives a lost last ACK: the peer that has our
#     FIN disconnects); a busy loop on every host core (--no-hog: none).
#     Results: ok, hang (no completion for 60 s), retry (RETRY_EXC_ERR),
#     data (a byte that differs), error.  Then, as the reference, test 91:
#     the same cells between two soft-RoCE VMs under the same loss and
#     load (pairs rxe-server/rxe, rxe-client/rxe; --no-reference: not).
#
# Exit status: 0 when the unit soak passed and every cell of the device
# (test 90) ran and ended ok; 1 on any hang, retry (RETRY_EXC_ERR), data
# or other error, or a cell that did not run (each named on a "# FAILED"
# line).  The reference's cells (test 91, rxe against rxe) are printed but
# not counted: they measure rxe, not the device.
#
#   scripts/soak-roce.sh [--unit-only|--guest-only] [--no-hog]
#                        [--no-reference|--reference-only] [-o DIR]
# Environment: UNIT_ITERS (default 1000), CELLS (guest, "SIZE:COUNT ...",
# messages per direction, default "1024:1000 65536:1000 1048576:1000"),
# LOSS (guest, percent, default "0 1 5"), JITTER (guest, ms, default 5),
# SECS (guest limit per run, default 7200), ACKS (guest: "drop", the default, loses ACKs and NAKs like any
# other frame; "keep" loses only requests and responses), PEERS (guest:
# pvrdma's peers, "1" pvrdma, "2" rxe, default "1 2"), QEMU (guest: run
# this binary and do not build; default build/qemu after scripts/build.sh).
# Prints one table per part; the raw lines are in DIR.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
unit=1 guest=1 hog=1 ref=1 dut=1 out=
while [ $# -gt 0 ]; do
    case $1 in
        --unit-only) guest=0; shift ;;
        --guest-only) unit=0; shift ;;
        --no-hog) hog=0; shift ;;
        --no-reference) ref=0; shift ;;
        --reference-only) ref=1; dut=0; shift ;;
        -o|--out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set /{/^#/p}' "$0"; exit 0 ;;
        *) echo "soak-roce: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || out=build/soak/roce-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"; out=$(cd "$out" && pwd)
UNIT_ITERS=${UNIT_ITERS:-1000} SECS=${SECS:-7200} JITTER=${JITTER:-5}
CELLS=${CELLS:-1024:1000 65536:1000 1048576:1000} LOSS=${LOSS:-0 1 5} ACKS=${ACKS:-drop}
failed=0
failure() { echo "# FAILED: $*"; failed=$((failed + 1)); }

if [ "$unit" = 1 ]; then
    make -s -C tests/unit "$top/build/unit/test-pvrdma-roce" > "$out/unit-build.log" 2>&1 ||
        { tail -20 "$out/unit-build.log"; exit 1; }
    echo "# unit: $UNIT_ITERS exchanges per cell (fake wire, fake time)"
    t0=$SECONDS
    PVRDMA_ROCE_SOAK=$UNIT_ITERS build/unit/test-pvrdma-roce -p /pvrdma/roce/rc-soak \
        > "$out/unit.log" 2>&1 || true
    printf '%-8s %-6s %-9s %-10s %-6s %-6s %-6s %-6s %-8s %-8s %s\n' size loss delay done hangs retry error data retrans timeouts fake-s
    sed -n 's/^# soak //p' "$out/unit.log" | awk '{
        printf "%-8s %-6s %-9s %-10s %-6s %-6s %-6s %-6s %-8s %-8s %s\n",
            $1, $4, $8 "ms", $10, $12, $14, $16, $19, $26, $28, $33 }'
    grep -q '^ok 1 /pvrdma/roce/rc-soak' "$out/unit.log" ||
        failure "unit soak: $(grep -m1 'ERROR\|not ok' "$out/unit.log")"
    echo "# unit: $((SECONDS - t0)) s"
fi

if [ "$guest" = 1 ]; then
    if [ -z "${QEMU:-}" ]; then
        scripts/build.sh > "$out/build.log" 2>&1 ||
            { tail -20 "$out/build.log"; exit 1; }
    fi
    scripts/guest/build-image.sh --quiet
    pids=()
    if [ "$hog" = 1 ]; then
        for _ in $(seq "$(nproc)"); do
            sh -c 'while :; do :; done' & pids+=($!)
        done
    fi
    trap '[ ${#pids[@]} = 0 ] || kill "${pids[@]}" 2>/dev/null' EXIT
    tests=()
    [ "$dut" = 0 ] || tests+=(90)
    [ "$ref" = 0 ] || tests+=(91)
    [ ${#tests[@]} -gt 0 ] || { echo "soak-roce: nothing to run" >&2; exit 2; }
    for loss in $LOSS; do
        echo "# guest: loss $loss % (ACKs: $ACKS), jitter 0-$JITTER ms, cells (size:messages) $CELLS$([ "$hog" = 1 ] && echo ", a busy loop on each of $(nproc) cores")"
        t0=$SECONDS
        if [ "$loss" = 0 ]; then
            va="--switch --lossy-jitter $JITTER"
        else
            va="--lossy $loss,1 --lossy-keep-cm --lossy-jitter $JITTER"
            [ "$ACKS" = drop ] || va+=" --lossy-keep-acks"
        fi
        # the VMs' limit: every run of the cells at most SECS
        nruns=$(( $(echo $CELLS | wc -w) * $(echo ${PEERS:-1 2} | wc -w) * 2 ))
        va+=" -t $((nruns * SECS + 900))"
        PVRDMA_VM_ARGS="$va" tests/guest/run.sh -o "$out/guest-$loss" \
            -e SOAK_CELLS="$CELLS" -e SOAK_SECS="$SECS" \
            -e SOAK_PEERS="${PEERS:-1 2}" \
            "${tests[@]}" > "$out/guest-$loss.log" 2>&1 || true
        # VM 0's result of each cell, made "data" where the peer's checker
        # found a difference (its "soak-peer PAIR SIZE COUNT rc N data")
        for t in "${tests[@]}"; do
            d=$out/guest-$loss/$t-*
            # shellcheck disable=SC2086
            { grep -h -a 'soak-peer .* data' $d/vm[1-9]*/console.log 2>/dev/null |
                  sed 's/.*soak-peer /peer /' || true
              grep -h -a 'soak-cell' $d/vm0/console.log 2>/dev/null |
                  sed 's/.*soak-cell /cell /' || true; } | tr -d '\r' |
                awk '$1 == "peer" { bad[$2 " " $3 " " $4]++; next }
                     { k = $2 " " $3 " " $4
                       if (bad[k] > 0 && $5 != "data") { $5 = "data"; bad[k]-- }
                       print $2, $3, $4, $5, $6 }'
        done > "$out/guest-$loss.cells"
        printf '%-24s %-8s %-6s %-6s %-8s %s\n' pair size msgs loss result secs
        awk -v l="$loss" '{ printf "%-24s %-8s %-6s %-6s %-8s %s\n", $1, $2, $3, l, $4, $5 }' \
            "$out/guest-$loss.cells"
        [ -s "$out/guest-$loss.cells" ] || echo "# no cell ran: $(tail -n 1 "$out/guest-$loss.log")"
        # the device's cells: every one there, every one ok
        if [ "$dut" = 1 ]; then
            for sc in $CELLS; do
                for k in ${PEERS:-1 2}; do
                    pe=$([ "$k" = 2 ] && echo rxe || echo pvrdma)
                    for role in server client; do
                        r=$(awk -v p="pvrdma-$role/$pe" -v s="${sc%%:*}" -v c="${sc#*:}" \
                                '$1 == p && $2 == s && $3 == c { print $4; exit }' "$out/guest-$loss.cells")
                        [ "$r" = ok ] || failure "loss $loss %: pvrdma-$role/$pe ${sc%%:*} x ${sc#*:}: ${r:-did not run}"
                    done
                done
            done
        fi
        echo "# guest, loss $loss %: $((SECONDS - t0)) s"
    done
fi
if [ "$failed" -gt 0 ]; then
    echo "# soak-roce: $failed failed (see the # FAILED lines; raw results in $out)"
    exit 1
fi
echo "# soak-roce: every cell of the device ok (raw results in $out)"
