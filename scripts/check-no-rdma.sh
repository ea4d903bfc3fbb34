#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make check-no-rdma: QEMU configured with --disable-rdma (its own 'rdma'
# feature, which the device's host HCA transport uses) builds the device
# without libibverbs and librdmacm, says so in the configure summary, and
# runs: the device with the loopback, co-resident and RoCEv2 transports
# works, 'ibdev' is refused with a message and exit 1, and the pvrdma
# qtests pass (their host HCA cases skip).  A cold build: about 8 minutes
# on 2 cores.  Prints TAP and "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
q=build/qemu-nordma
n=0 pass=0 fail=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n $1"; }
no() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $1${2:+ ($2)}"; }

if PVRDMA_NO_RDMA=1 scripts/build.sh qemu-system-x86_64 \
        tests/qtest/pvrdma-test tests/qtest/pvrdma-hostile-test \
        > build/check-no-rdma-build.log 2>&1; then
    ok build
else
    no build "$(tail -3 build/check-no-rdma-build.log | tr '\n' ' ')"
    echo "$pass passed, $fail failed"
    exit 1
fi
sum=$(grep -E '^ +RDMA support +:' "$q/meson-logs/meson-log.txt" | tail -n1)
case $sum in
    *NO*) ok "configure-summary-says-no-rdma" ;;
    *) no "configure-summary-says-no-rdma" "$sum" ;;
esac
if nm -D "$q/qemu-system-x86_64" 2>/dev/null | grep -q ibv_; then
    no "no-libibverbs-linked" "$(nm -D "$q/qemu-system-x86_64" | grep -m1 ibv_)"
else
    ok "no-libibverbs-linked"
fi
nic="-device vmxnet3,addr=4.0,multifunction=on"
out=$(printf 'info pvrdma\nquit\n' | timeout 20 "$q/qemu-system-x86_64" \
    -nodefaults -display none -machine q35 -accel qtest -S -monitor stdio \
    $nic -device pvrdma,addr=4.1,id=pv 2>&1 | tr -d '\r')
if echo "$out" | grep -q 'loopback'; then
    ok "device-runs-with-loopback"
else
    no "device-runs-with-loopback" "$(echo "$out" | tail -2 | tr '\n' ' ')"
fi
out=$(timeout 20 "$q/qemu-system-x86_64" -nodefaults -display none \
    -machine q35 -accel qtest -S $nic -device pvrdma,addr=4.1,ibdev=rxe0 \
    2>&1 < /dev/null)
rc=$?
if [ "$rc" = 1 ] && echo "$out" | grep -q 'built without RDMA support'; then
    ok "ibdev-refused-exit-1"
else
    no "ibdev-refused-exit-1" "exit $rc: $out"
fi
for t in pvrdma-test pvrdma-hostile-test; do
    if QTEST_QEMU_BINARY=$q/qemu-system-x86_64 timeout 900 \
            "$q/tests/qtest/$t" > "build/check-no-rdma-$t.log" 2>&1; then
        ok "$t ($(grep -c '^ok' "build/check-no-rdma-$t.log") ok, $(grep -c \
            '# SKIP' "build/check-no-rdma-$t.log") skipped)"
    else
        no "$t" "$(grep -m3 'not ok\|ERROR' "build/check-no-rdma-$t.log" | tr '\n' ' ')"
    fi
done
echo "1..$n"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
