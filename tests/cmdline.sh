#!/bin/bash
# Command-line checks: bad configurations exit 1 with a clear message,
# never a crash; -device help lists pvrdma.  Prints TAP.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
Q=${QEMU:-$top/build/qemu/qemu-system-x86_64}
base="-nodefaults -display none -machine q35 -accel qtest -S -monitor none"
nic="-device vmxnet3,addr=4.0,multifunction=on,romfile="
n=0
t() { # name expected-rc expected-message-regex args...
    local name=$1 rc=$2 re=$3 out got
    shift 3
    n=$((n + 1))
    out=$(timeout "${TMO:-20}" "$Q" $base "$@" 2>&1 </dev/null)
    got=$?
    if [ "$got" = "$rc" ] && echo "$out" | grep -qE -- "$re"; then
        echo "ok $n $name"
    else
        echo "not ok $n $name (exit $got, output: $(echo "$out" | head -2))"
    fi
}
if "$Q" -device help 2>&1 | grep -q '^name "pvrdma", bus PCI'; then
    n=$((n + 1)); echo "ok $n device-help-lists-pvrdma"
else
    n=$((n + 1)); echo "not ok $n device-help-lists-pvrdma"
fi
t no-function0 1 'must be function 1 of a slot whose function 0 is a vmxnet3' \
    -device pvrdma
t function0-not-vmxnet3 1 "function 0 of this slot is 'e1000', not vmxnet3" \
    -device e1000,addr=4.0,multifunction=on,romfile= -device pvrdma,addr=4.1
t pvrdma-at-function0 1 'must be function 1' -device pvrdma,addr=5.0
t pvrdma-before-nic 1 'must be function 1 of a slot' \
    -device pvrdma,addr=4.1 $nic
t max-qp-too-small 1 'max-qp must be between 4 and 65536' \
    $nic -device pvrdma,addr=4.1,max-qp=3
t max-qp-wr-not-pow2 1 'max-qp-wr must be a power of two' \
    $nic -device pvrdma,addr=4.1,max-qp-wr=1000
t max-uar-zero 1 'max-uar must be a power of two' \
    $nic -device pvrdma,addr=4.1,max-uar=0
t max-mr-size-huge 1 'max-mr-size must be between 4 KiB and 1 GiB' \
    $nic -device pvrdma,addr=4.1,max-mr-size=1099511627776
t max-sge-huge 1 'max-sge must be between 1 and 32' \
    $nic -device pvrdma,addr=4.1,max-sge=1000
t gid-table-len-zero 1 'gid-table-len must be between 1 and 256' \
    $nic -device pvrdma,addr=4.1,gid-table-len=0
t roce-version-3 1 'roce-version must be 1 or 2' \
    $nic -device pvrdma,addr=4.1,roce-version=3
t not-a-number 1 "Parameter 'max-cq' expects" \
    $nic -device pvrdma,addr=4.1,max-cq=lots
t unknown-property 1 "can't apply global|Property 'pvrdma.no-such' not found|not found" \
    $nic -device pvrdma,addr=4.1,no-such=1
# co-resident transport: guest RAM must be shareable; sane rendezvous path
rdv=$(mktemp -d /tmp/pvrdma-cmdline.XXXXXX)
t rendezvous-private-ram 1 'memory-backend-memfd,id=mem,size=.*,share=on' \
    $nic -device pvrdma,addr=4.1,rendezvous=$rdv
t rendezvous-memfd-not-shared 1 'rendezvous needs guest RAM that other' \
    -object memory-backend-memfd,id=mem,size=128M,share=off \
    -machine memory-backend=mem -m 128M \
    $nic -device pvrdma,addr=4.1,rendezvous=$rdv
t rendezvous-path-too-long 1 'too long for a unix socket' \
    -object memory-backend-memfd,id=mem,size=128M,share=on \
    -machine memory-backend=mem -m 128M \
    $nic -device pvrdma,addr=4.1,rendezvous=$rdv/$(printf 'x%.0s' $(seq 100))
t rendezvous-not-a-dir 1 'cannot (create|lock) rendezvous directory' \
    -object memory-backend-memfd,id=mem,size=128M,share=on \
    -machine memory-backend=mem -m 128M \
    $nic -device pvrdma,addr=4.1,rendezvous=/dev/null/x
TMO=3 t rendezvous-good-config-runs 124 '' \
    -object memory-backend-memfd,id=mem,size=128M,share=on \
    -machine memory-backend=mem -m 128M \
    $nic -device pvrdma,addr=4.1,rendezvous=$rdv
rm -rf "$rdv"
# a good configuration comes up and keeps running (killed by timeout: 124)
TMO=3 t good-config-runs 124 '' $nic -device pvrdma,addr=4.1
echo "1..$n"
