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
    # the error is the first line; nothing may crash or assert
    if [ "$got" = "$rc" ] && echo "$out" | head -1 | grep -qE -- "$re" &&
       ! echo "$out" | grep -qiE 'segmentation|aborted|core dumped|assert|sanitizer'; then
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
# the device before its NIC: on the command line, and as libvirt does it
# (QEMU creates key=value -device options before JSON ones, and libvirt
# writes its NICs as JSON): the device pairs once the machine is built
TMO=3 t pvrdma-before-nic-runs 124 '' -device pvrdma,addr=4.1 $nic
TMO=3 t pvrdma-json-after-nic-runs 124 '' $nic \
    -device '{"driver":"pvrdma","addr":"4.1"}'
TMO=3 t nic-json-after-pvrdma-runs 124 '' -device pvrdma,addr=4.1 \
    -device '{"driver":"vmxnet3","addr":"4.0","multifunction":true,"romfile":""}'
t nic-json-not-vmxnet3 1 "function 0 of this slot is 'e1000', not vmxnet3" \
    -device pvrdma,addr=4.1 \
    -device '{"driver":"e1000","addr":"4.0","multifunction":true,"romfile":""}'
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
t max-cq-one 1 'max-cq must be between 2 and 65536' \
    $nic -device pvrdma,addr=4.1,max-cq=1
t max-mr-one 1 'max-mr must be between 2' $nic -device pvrdma,addr=4.1,max-mr=1
t max-pd-negative 1 "Parameter 'max-pd' expects uint32_t" \
    $nic -device pvrdma,addr=4.1,max-pd=-1
t max-qp-overflow 1 "Parameter 'max-qp' expects uint32_t" \
    $nic -device pvrdma,addr=4.1,max-qp=99999999999
t max-qp-huge 1 'max-qp must be between 4 and 65536' \
    $nic -device pvrdma,addr=4.1,max-qp=65537
t max-cqe-not-pow2 1 'max-cqe must be a power of two' \
    $nic -device pvrdma,addr=4.1,max-cqe=1000
t max-srq-one 1 'max-srq must be 0 \(no SRQs\) or between 2' \
    $nic -device pvrdma,addr=4.1,max-srq=1
t max-srq-wr-not-pow2 1 'max-srq-wr must be a power of two' \
    $nic -device pvrdma,addr=4.1,max-srq-wr=3
t max-srq-sge-zero 1 'max-srq-sge must be between 1 and 32' \
    $nic -device pvrdma,addr=4.1,max-srq-sge=0
t max-sge-zero 1 'max-sge must be between 1 and 32' \
    $nic -device pvrdma,addr=4.1,max-sge=0
t max-uar-huge 1 'max-uar must be a power of two between 2 and 4096' \
    $nic -device pvrdma,addr=4.1,max-uar=8192
t max-qp-wr-huge 1 'max-qp-wr must be a power of two up to 32768' \
    $nic -device pvrdma,addr=4.1,max-qp-wr=65536
t max-mr-size-small 1 'max-mr-size must be between 4 KiB and 1 GiB' \
    $nic -device pvrdma,addr=4.1,max-mr-size=4095
t max-rd-atomic-zero 1 'max-rd-atomic must be between 1 and 255' \
    $nic -device pvrdma,addr=4.1,max-rd-atomic=0
t max-rd-atomic-huge 1 'max-rd-atomic must be between 1 and 255' \
    $nic -device pvrdma,addr=4.1,max-rd-atomic=256
t counter-not-writable 1 "Property 'pvrdma.x-mapped' is not writable" \
    $nic -device pvrdma,addr=4.1,x-mapped=3
t gid-table-len-huge 1 'gid-table-len must be between 1 and 256' \
    $nic -device pvrdma,addr=4.1,gid-table-len=257
t roce-version-0 1 'roce-version must be 1 or 2' \
    $nic -device pvrdma,addr=4.1,roce-version=0
t version-16 1 'version must be between 17 and 20' \
    $nic -device pvrdma,addr=4.1,version=16
t version-21 1 'version must be between 17 and 20' \
    $nic -device pvrdma,addr=4.1,version=21
t version-17-rocev2 1 'version 17 has RoCE v1 GIDs only: add roce-version=1' \
    $nic -device pvrdma,addr=4.1,version=17
t roce-version-text 1 "Parameter 'roce-version' expects" \
    $nic -device pvrdma,addr=4.1,roce-version=v2
# function 0: missing, another NIC, not multifunction, pvrdma itself
t function0-virtio-net 1 "function 0 of this slot is 'virtio-net-pci', not vmxnet3" \
    -device virtio-net-pci,addr=4.0,multifunction=on,romfile= \
    -device pvrdma,addr=4.1
t function0-missing-function2-present 1 'must be function 1 of a slot' \
    -device e1000e,addr=4.2,multifunction=on,romfile= -device pvrdma,addr=4.1
t pvrdma-at-function0-multifunction 1 'must be function 1' \
    -device pvrdma,addr=4.0,multifunction=on
t nic-not-multifunction 1 "single function device can't be populated" \
    -device vmxnet3,addr=4.0,romfile= -device pvrdma,addr=4.1
t function1-taken 1 'slot 4 function 1 not available' \
    $nic -device pvrdma,addr=4.1 -device pvrdma,addr=4.1
t root-port-without-nic 1 'must be function 1 of a slot' \
    -device pcie-root-port,id=rp,chassis=1 -device pvrdma,bus=rp,addr=0.1
t no-pci-bus 1 "No 'PCI' bus found for device 'pvrdma'" -machine none \
    -device pvrdma
# iothread=: an IOThread that exists, the loopback and co-resident
# transports only
t iothread-missing 1 "Device 'io9' not found" \
    $nic -device pvrdma,addr=4.1,iothread=io9
t iothread-roce 1 \
    'the loopback and co-resident transports only .not with roce.' \
    -object iothread,id=io0 -netdev hubport,id=n0,hubid=0 \
    $nic,netdev=n0 -device pvrdma,addr=4.1,iothread=io0,roce=on
TMO=3 t iothread-coresident-runs 124 '' \
    -object memory-backend-memfd,id=mem,size=128M,share=on,seal=on \
    -machine memory-backend=mem -m 128M -object iothread,id=io0 \
    $nic -device pvrdma,addr=4.1,iothread=io0,coresident=on
TMO=3 t iothread-loopback-runs 124 '' -object iothread,id=io0 \
    $nic -device pvrdma,addr=4.1,iothread=io0
# co-resident transport: guest RAM must be shareable; sane rendezvous path
rdv=$(mktemp -d /tmp/pvrdma-cmdline.XXXXXX)
t rendezvous-private-ram 1 'memory-backend-memfd,id=mem,size=.*,share=on' \
    $nic -device pvrdma,addr=4.1,rendezvous=$rdv
t rendezvous-memfd-not-shared 1 'co-resident peers need guest RAM that other' \
    -object memory-backend-memfd,id=mem,size=128M,share=off \
    -machine memory-backend=mem -m 128M \
    $nic -device pvrdma,addr=4.1,rendezvous=$rdv
t rendezvous-memfd-not-sealed 1 'cannot shrink under the peers.*memory-backend-memfd with seal=on' \
    -object memory-backend-memfd,id=mem,size=128M,share=on,seal=off \
    -machine memory-backend=mem -m 128M \
    $nic -device pvrdma,addr=4.1,rendezvous=$rdv
t rendezvous-file-ram 1 'not memory-backend-file' \
    -object memory-backend-file,id=mem,size=128M,share=on,mem-path=$rdv/ram \
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
# who may join: the directory is private; a shared secret object
mem="-object memory-backend-memfd,id=mem,size=128M,share=on -machine memory-backend=mem -m 128M"
mkdir -m 0777 "$rdv/ww" && chmod 0777 "$rdv/ww"
t rendezvous-dir-world-writable 1 "rendezvous directory $rdv/ww is writable by its group or by others \(mode 0777\).*chmod 0700 $rdv/ww" \
    $mem $nic -device pvrdma,addr=4.1,rendezvous=$rdv/ww
mkdir "$rdv/gw" && chmod 0770 "$rdv/gw"
t rendezvous-dir-group-writable 1 'is writable by its group or by others \(mode 0770\)' \
    $mem $nic -device pvrdma,addr=4.1,rendezvous=$rdv/gw
if [ "$(id -u)" = 0 ]; then
    mkdir -m 0700 "$rdv/nobody" && chown 65534 "$rdv/nobody"
    t rendezvous-dir-other-user 1 "rendezvous directory $rdv/nobody belongs to uid 65534, not to this QEMU's uid 0" \
        $mem $nic -device pvrdma,addr=4.1,rendezvous=$rdv/nobody
else
    n=$((n + 1)); echo "ok $n rendezvous-dir-other-user # SKIP needs root"
fi
: > "$rdv/file"
t rendezvous-not-a-directory 1 "rendezvous path $rdv/file is not a directory" \
    $mem $nic -device pvrdma,addr=4.1,rendezvous=$rdv/file
t rendezvous-secret-unknown 1 "rendezvous-secret=nosuch: No secret with id 'nosuch'" \
    $mem $nic -device pvrdma,addr=4.1,rendezvous=$rdv,rendezvous-secret=nosuch
t rendezvous-secret-empty 1 "rendezvous-secret=s0: the secret is empty" \
    -object secret,id=s0,data= $mem $nic -device pvrdma,addr=4.1,rendezvous=$rdv,rendezvous-secret=s0
t rendezvous-secret-without-rendezvous 1 "'rendezvous-secret' applies to the co-resident transport: it needs 'coresident=on' or 'rendezvous'" \
    -object secret,id=s0,data=pass $nic -device pvrdma,addr=4.1,rendezvous-secret=s0
TMO=3 t rendezvous-secret-good-config-runs 124 '' -object secret,id=s0,data=pass \
    $mem $nic -device pvrdma,addr=4.1,rendezvous=$rdv,rendezvous-secret=s0
# peers from management (x-pvrdma-peer-add): the same RAM, no directory
t coresident-private-ram 1 'memory-backend-memfd,id=mem,size=.*,share=on' \
    $nic -device pvrdma,addr=4.1,coresident=on
TMO=3 t coresident-good-config-runs 124 '' $mem $nic -device pvrdma,addr=4.1,coresident=on
if [ "$(stat -c %a "$rdv")" = 700 ] && [ ! -e "$rdv/ww/.lock" ]; then
    n=$((n + 1)); echo "ok $n rendezvous-refused-dirs-left-alone"
else
    n=$((n + 1)); echo "not ok $n rendezvous-refused-dirs-left-alone"
fi
# host HCA mode: clear messages, no crash, when it cannot work
t ibdev-missing 1 'ibdev=nosuchdev: no host RDMA device' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev
# the host device is named, never guessed
t ibdev-auto-refused 1 'ibdev=auto is not accepted: name the host RDMA device' \
    $nic -device pvrdma,addr=4.1,ibdev=auto
# ibdev and rendezvous together: allowed; the missing host device still
# fails realize, after the join, which must leave no socket behind
t ibdev-and-rendezvous-no-hca 1 'no host RDMA device' \
    -object memory-backend-memfd,id=mem,size=128M,share=on \
    -machine memory-backend=mem -m 128M \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,rendezvous=$rdv/hca
if [ -d "$rdv/hca" ] && [ -z "$(find "$rdv/hca" -type s)" ]; then
    n=$((n + 1)); echo "ok $n ibdev-and-rendezvous-no-hca-left-no-socket"
else
    n=$((n + 1)); echo "not ok $n ibdev-and-rendezvous-no-hca-left-no-socket"
fi
t ibport-without-ibdev 1 "'ibport', 'gid-index' and 'cm-listen' .* need 'ibdev'" \
    $nic -device pvrdma,addr=4.1,ibport=2
t cm-listen-without-ibdev 1 "'ibport', 'gid-index' and 'cm-listen' .* need 'ibdev'" \
    $nic -device pvrdma,addr=4.1,cm-listen=7174
t cm-listen-port-zero 1 'cm-listen=0: give TCP-style ports 1-65535' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,cm-listen=0
t cm-listen-port-too-big 1 'cm-listen=7174:70000: give TCP-style ports' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,cm-listen=7174:70000
t cm-listen-range-reversed 1 'cm-listen=7174-7000: give TCP-style ports' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,cm-listen=7174-7000
t cm-listen-too-many 1 'cm-listen=1-1000: .*at most 256 ports' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,cm-listen=1-1000
t cm-listen-garbage 1 'cm-listen=7174x: give TCP-style ports' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,cm-listen=7174x
t cm-listen-empty-item 1 'cm-listen=7174::7175: give TCP-style ports' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,cm-listen=7174::7175
t gid-index-negative 1 'gid-index -2: use -1' \
    $nic -device pvrdma,addr=4.1,ibdev=nosuchdev,gid-index=-2
rm -rf "$rdv"
# good configurations come up and keep running (killed by timeout: 124)
TMO=3 t good-config-runs 124 '' $nic -device pvrdma,addr=4.1
TMO=3 t good-config-behind-root-port 124 '' \
    -device pcie-root-port,id=rp,chassis=1 \
    -device vmxnet3,bus=rp,addr=0.0,multifunction=on,romfile= \
    -device pvrdma,bus=rp,addr=0.1
# RoCEv2 on the vmxnet3's netdev ('roce', default off): a bad value; both
# values and the default run, with and without a netdev (the trace says
# what was done)
t roce-bad-value 1 "Parameter 'roce' expects 'on' or 'off'" \
    $nic -device pvrdma,addr=4.1,roce=maybe
TMO=3 t roce-default-off 124 'no RoCEv2 transport: roce=off' \
    -trace pvrdma_roce_not_added -netdev hubport,id=n0,hubid=0 \
    $nic,netdev=n0 -device pvrdma,addr=4.1
TMO=3 t roce-off-runs 124 'no RoCEv2 transport: roce=off' \
    -trace pvrdma_roce_not_added -netdev hubport,id=n0,hubid=0 \
    $nic,netdev=n0 -device pvrdma,addr=4.1,roce=off
TMO=3 t roce-on-without-netdev-runs 124 \
    'no RoCEv2 transport: the vmxnet3 has no netdev' \
    -trace pvrdma_roce_not_added $nic -device pvrdma,addr=4.1,roce=on
TMO=3 t roce-on-runs 124 'RoCEv2 transport on netdev n0' \
    -trace pvrdma_roce_added -netdev hubport,id=n0,hubid=0 \
    $nic,netdev=n0 -device pvrdma,addr=4.1,roce=on
# the device's frame tap: a filter on the netdev's "tx" queue (the frames
# the netdev delivers to the NIC), with roce=on only
net=$(mktemp -d /tmp/pvrdma-cmdline.XXXXXX)
dgram="dgram,id=n0,local.type=unix,local.path=$net/a"
dgram="$dgram,remote.type=unix,remote.path=$net/b"
filters() { # roce-value (default: none given)
    local dev=pvrdma,addr=4.1
    [ "$1" = default ] || dev=$dev,roce=$1
    printf 'info network\nquit\n' |
        timeout 20 "$Q" -nodefaults -display none -machine q35 -accel qtest \
            -S -monitor stdio -netdev "$dgram" \
            $nic,netdev=n0 -device "$dev" 2>&1 | tr -d '\r'
}
out=$(filters on)
n=$((n + 1))
if echo "$out" | grep -q 'roce-tap: type=pvrdma-roce-tap,.*netdev=n0,queue=tx'; then
    echo "ok $n roce-on-tap-on-netdev-tx-queue"
else
    echo "not ok $n roce-on-tap-on-netdev-tx-queue ($(echo "$out" | tail -3))"
fi
for v in off default; do
    out=$(filters $v)
    n=$((n + 1))
    if echo "$out" | grep -q 'n0: index=0,type=dgram' &&
       ! echo "$out" | grep -q 'roce-tap'; then
        echo "ok $n roce-$v-no-tap"
    else
        echo "not ok $n roce-$v-no-tap ($(echo "$out" | tail -3))"
    fi
done
rm -rf "$net"
echo "1..$n"
