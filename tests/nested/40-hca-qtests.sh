#!/bin/sh
# L1: the qtests of host HCA mode (/pvrdma/hca/*) against rxe0: RC and UD
# data through the host device (compared byte for byte; x-loopback=off, so
# QPs to the device's own GID use the host device's loopback), RC data
# through the device's loopback path with the host's QP numbers and keys
# (/pvrdma/hca/rc-loopback), a guest GID the
# host lacks, hostile accesses and a reset with work on the host, the host
# port going down and up, 1 GiB MR registration (times printed), hostile
# CM MADs on the GSI QP (RDMA CM translation), pinning over the memlock
# limit.
# l1-files: build/qemu/tests/qtest/pvrdma-test:/pvrdma-test
# timeout: 900
. /usr/lib/pvrdma/guest-lib.sh
# qtest starts QEMU itself: give it the firmware directory.  The QEMU is
# L1's, or PVRDMA_QTEST_QEMU's (43: the sanitizer build)
mkdir -p /tmp/qb
printf '#!/bin/sh\nexec %s -L /usr/share/pvrdma/firmware "$@"\n' \
    "${PVRDMA_QTEST_QEMU:-/usr/bin/qemu-system-x86_64}" > /tmp/qb/qemu-system-x86_64
chmod +x /tmp/qb/qemu-system-x86_64
export QTEST_QEMU_BINARY=/tmp/qb/qemu-system-x86_64
# L1 is disposable: the qtest may take the RDMA netdev down and up
export PVRDMA_HCA_DISRUPT=1
# /pvrdma/hca/frmr-cost, a benchmark (scripts/bench-mr.sh), runs here as a
# check: 3 fast registrations of each size, every completion a success
export PVRDMA_BENCH_FRMR=3
bad=0 n=0 what=''
for t in $(/pvrdma-test -l | grep '^/.*/pvrdma/hca/'); do
    n=$((n + 1))
    /pvrdma-test --tap -p "$t" > /tmp/qt.log 2>&1
    st=$?
    if [ "$st" != 0 ] || ! grep -q '^ok ' /tmp/qt.log; then
        cat /tmp/qt.log; log "FAILED $t (exit status $st)"; bad=$((bad + 1))
        # the first error line, for the summary (CI shows only the end)
        e=$(grep -m1 -E 'ERROR|assert|not ok|Bail out|failed' /tmp/qt.log)
        what="$what; ${t##*/pvrdma/} failed (exit $st): ${e:-no error line}"
    elif grep -q '^ok .*# SKIP' /tmp/qt.log; then
        e=$(sed -n 's/^ok .*# SKIP *//p' /tmp/qt.log)
        log "SKIPPED $t: $e"; bad=$((bad + 1))
        what="$what; ${t##*/pvrdma/} skipped: $e"
    else
        log "ok $t $(grep '^# CREATE_MR' /tmp/qt.log | tr '\n' ' ')"
    fi
done
[ "$n" -gt 0 ] || fail "no /pvrdma/hca/ qtests in /pvrdma-test"
[ "$bad" = 0 ] || fail "$bad of $n host HCA qtests failed or skipped$what"
log "$n host HCA qtests passed"
