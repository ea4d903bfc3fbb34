#!/bin/bash
# Boot one to four test guests under TCG, run a script in each, return its
# exit status.
#
#   scripts/guest/run-vm.sh [options] SCRIPT [SCRIPT2]
#
# One SCRIPT and --vms N runs the same script in every VM (they tell
# themselves apart by $PVRDMA_VM); two SCRIPTs imply --vms 2 (with more VMs
# the first script runs in the rest).
#
# Each VM: q35, 1 vCPU, 1G, -accel tcg, direct kernel boot of the image from
# scripts/guest/build-image.sh, console on ttyS0 -> <out>/vmN/console.log,
#   -device vmxnet3,netdev=n0,addr=4.0,multifunction=on,romfile=,mac=...
#   -device pvrdma,addr=4.1,roce=on,id=rdma0 (see --pvrdma, --nic)
# One VM: the NIC sits alone on a QEMU hub.  Two VMs: their NICs share a
# unix-socket dgram netdev (no slirp, no ports to collide), point to point.
# Three or more VMs, or --lossy/--switch: each NIC's dgram netdev is a port
# of scripts/guest/l2switch.py (a learning switch; --lossy impairs it).
# The VMs that have the pvrdma device (two or more) also get the
# co-resident transport (guest RAM from memory-backend-memfd,share=on and
# one rendezvous=DIR) unless --no-rendezvous.  VM N gets 10.0.0.(N+1)/24.
# Each QEMU has a QMP socket (<out>/vmN/qmp.sock; see PVRDMA-QMP below) and
# the device is id=rdma0 (/machine/peripheral/rdma0).
#
# Options:
#   -n, --vms N          number of VMs (1 to 4)
#   -t, --timeout SECS   per run, from QEMU start (default 300, env
#                        PVRDMA_GUEST_TIMEOUT)
#   -o, --out DIR        logs (default build/guest/runs/<script>-<time>)
#   --pvrdma MODE        auto (default: add the device if this QEMU has it),
#                        on, off  (env PVRDMA_DEVICE)
#   -f, --file SRC[:DST] put a host file in the guest (default DST /SRCNAME)
#   -e, --env NAME=VAL   add to the guest's /test.env (repeatable)
#   --mem SIZE           guest RAM (default 1G, env PVRDMA_GUEST_MEM)
#   --machine TYPE       q35 (default) or pc (env PVRDMA_MACHINE)
#   --nic MODEL[,MODEL..] vmxnet3 (default) or virtio (virtio-net-pci at 4.0,
#                        no pvrdma device: for soft-RoCE comparisons); one
#                        model for every VM, or one per VM: --nic
#                        vmxnet3,virtio is VM 0 with vmxnet3 + pvrdma and VM 1
#                        with virtio-net only (a soft-RoCE peer);
#                        vmxnet3,vmxnet3,virtio: VMs 0 and 1 co-resident
#                        pvrdma, VM 2 soft-RoCE
#   --no-rendezvous      pvrdma VMs without the co-resident transport
#                        (no rendezvous=, private guest RAM): as on separate
#                        hosts, they reach each other only over the network
#   --peers-from-management  the co-resident transport without a rendezvous
#                        directory (coresident=on): the rig, as management,
#                        connects each pair of pvrdma VMs as they start (a
#                        socketpair, one end to each QEMU over QMP: qmp.py
#                        connect-peer; its output in <out>/peers.log)
#   --switch             connect the VMs through scripts/guest/l2switch.py
#                        even when there are only two (implied by --vms 3+
#                        and --lossy); counters in <out>/switch.stats, its
#                        log in <out>/switch.log
#   --lossy DROP[,REORDER] the switch drops DROP% and reorders REORDER% (a
#                        frame held back and sent after the next one to the
#                        same port) of the RoCEv2 frames (UDP 4791); floats
#   --lossy-match roce|all  which frames --lossy touches (default roce)
#   --lossy-keep-acks    never drop RoCEv2 ACK/NAK frames (reordered they may
#                        be): a QP cannot recover a lost last ACK once its
#                        peer destroyed its QP (see l2switch.py --keep-acks)
#   --lossy-keep-acks-from N  the same for the ACK/NAK frames VM N sends
#                        only (repeatable): a peer that forgets a destroyed
#                        QP at once (rxe), while the pvrdma devices' ACKs
#                        may be lost (they answer for a destroyed QP a while)
#   --lossy-keep-cm      never drop the CM's MADs (UD to QP 1): rping's
#                        client does not wait for its DREQ's answer (see
#                        l2switch.py --keep-cm)
#   --lossy-jitter MS    the switch delays each RoCEv2 frame it does not
#                        drop by 0..MS ms (uniform): frames overtake each
#                        other (l2switch.py --jitter-ms; implies --switch)
#   --lossy-jitter-reorders  each frame its own jitter, so frames overtake
#                        each other (l2switch.py --jitter-reorders)
#   --lossy-seed N       the switch's random seed (default 1, env
#                        PVRDMA_LOSSY_SEED)
#   --capture            record each VM's netdev with QEMU's filter-dump in
#                        <out>/vmN/capture.pcap (both directions, including
#                        the pvrdma device's RoCEv2 frames)
#   --device-args PROPS  more properties for the pvrdma -device, appended to
#                        PVRDMA_DEVICE_ARGS (e.g. roce=off or max-qp=64)
#   --append ARGS        extra kernel command line (env PVRDMA_GUEST_APPEND)
#   -v, --verbose        copy the console(s) to stderr as they come
#   --shell              one VM, console on this terminal, no script needed,
#                        no timeout (quit with 'poweroff -f')
#   --reboot             let the guest reboot (no -no-reboot): the same
#                        kernel, initrd and script run again; the script
#                        tells the boots apart itself (see guest-lib.sh
#                        boot_count).  A kernel panic still ends the run.
#   --restart-peer       two VMs: each time VM 0 prints PVRDMA-KILL-PEER on
#                        its console, VM 1's QEMU is killed (SIGKILL) and
#                        started again with PVRDMA_RESTART=N (N = 1, 2, ...)
#                        in its /test.env; the killed run's console is kept
#                        as vm1/console.killed-N.log
#   --no-build           do not run build-image.sh first
# Environment:
#   QEMU                 default build/qemu/qemu-system-x86_64
#   PVRDMA_DEVICE_ARGS   the -device string (default "pvrdma,addr=4.1,roce=on":
#                        the rig's VMs are on a RoCE network; the device's
#                        own default is roce=off)
#   PVRDMA_QEMU_ARGS     extra QEMU arguments for every VM (word-split)
#   PVRDMA_GUEST_CPU     -cpu model (default qemu64: boots faster than max)
#   PVRDMA_GUEST_LOGLEVEL kernel console loglevel (default 4: warnings+)
#   PVRDMA_PEER_GRACE    two VMs: once one fails, stop the other after this
#                        many seconds (default 10) instead of its timeout
#   PVRDMA_FORCE_NIC     replaces every --nic given (a test header's too):
#                        e.g. PVRDMA_FORCE_NIC=virtio tests/guest/run.sh
#                        -e ROCE_RIG_CHECK=1 30 31 runs the RoCE interop
#                        tests soft-RoCE to soft-RoCE (a rig self-check)
#
# The guest's /test.env (see guest-lib.sh): PVRDMA_VM, PVRDMA_VMS, PVRDMA_IP,
# PVRDMA_PREFIX, PVRDMA_PEER_IP, PVRDMA_DEVICE (1: this VM has the pvrdma
# device), PVRDMA_NIC (vmxnet3 or virtio), PVRDMA_PEER_DEVICE and
# PVRDMA_PEER_NIC (the peer's: VM 0's peer is VM 1, every other VM's is
# VM 0), PVRDMA_VM_DEVICES and PVRDMA_VM_NICS (every VM's, in VM order,
# space-separated), PVRDMA_RENDEZVOUS (1: the co-resident transport is on
# for this VM), PVRDMA_SWITCH (1: through l2switch.py), PVRDMA_TEST,
# PVRDMA_RESTART, and each --env.
#
# Host queries: a line "PVRDMA-QMP TAG" (TAG: letters, digits, . _ -) on any
# VM's console makes this script ask every VM with the pvrdma device over
# QMP for the device's counters and QPs (scripts/guest/qmp.py pvrdma: the
# x-roce-* counters and the x-query-pvrdma-qps lines) into
# <out>/vmN/qmp-TAG.txt and query-pvrdma's answer into
# <out>/vmN/qmp-TAG.json (info pvrdma's text into qmp-TAG.hmp), once per TAG, and snapshot the switch's counters
# into <out>/switch-TAG.stats; <out>/vmN/qmp-TAG.err says why when QEMU
# did not answer.  The guest helpers host_query and host_query_all
# (tests/guest/common.sh) print the marker and wait for it; a test's
# NN-name.host checks the files.
#
# Injection: a line "PVRDMA-INJECT TAG ARGS ." on VM N's console (once per
# TAG) has this script ask VM N's QEMU for "x_pvrdma_inject ARGS" (HMP:
# KIND[,KEY=VALUE...]); what the monitor answered (nothing when it was
# taken) goes to <out>/vmN/inject-TAG.txt.  The guest helper host_inject
# (tests/guest/common.sh) prints the marker and waits for it.
#
# Live migration: a line "PVRDMA-MIGRATE TAG" on VM N's console (once per
# TAG) makes this script start a second QEMU for that VM with the same
# command line and -incoming, migrate the VM to it over a unix socket
# (scripts/guest/qmp.py migrate), and stop the first one; the console goes
# on in the same file, the new QEMU's stderr in qemu.stderr.migrate-TAG.
# "PVRDMA-MIGRATE TAG away" moves it as to another host: the new QEMU's
# device gets a rendezvous directory of its own (no co-resident peers);
# the next plain "PVRDMA-MIGRATE" brings it back to the shared one.
# "PVRDMA-MIGRATE TAG file" migrates it to a file (migrate file:...), stops
# the source and starts the new QEMU with -incoming file:..., as a VM
# saved and restored later.  "PVRDMA-MIGRATE TAG postcopy" migrates live with
# postcopy-ram, switching to postcopy at once (migrate-start-postcopy): the
# new QEMU runs while most of RAM is still on the source; if this host
# cannot (no userfaultfd) migrate-TAG.txt says "status unsupported".
# <out>/vmN/migrate-TAG.txt gets qmp.py's line
# ("status completed total-ms T downtime-ms D") and "console-bytes N", the
# console's size when the migration ended.
#
# Snapshots: a line "PVRDMA-SNAPSHOT TAG" on VM N's console (once per TAG)
# makes this script savevm TAG in that QEMU (the VM state in a qcow2 image,
# <out>/vmN/snap.qcow2, which qmp.py makes and attaches), let the guest run
# PVRDMA_SNAPSHOT_GAP seconds (default 2), then loadvm TAG: the guest goes
# back to the moment of the savevm.  <out>/vmN/snapshot-TAG.txt gets
# "savevm-ms T", "console-bytes-save N", "console-bytes-before-load N",
# "loadvm-ms T" and "console-bytes N" (after the loadvm).
#
# Outputs in <out>/vmN/: console.log, qemu.stderr, qemu.cmdline, qmp.sock, samples.txt
# ("TAG VmRSS-KiB VmHWM-KiB secs OWN-KiB" for each PVRDMA-SAMPLE marker the
# guest printed, plus "start"/"ready"/"exit"; OWN is VmRSS less the resident
# pages of guest RAM and of the TCG translation buffer), rc, boot.secs.  <out>/result: summary.
#
# Exit status: the guest script's (first non-zero of two VMs);
# 124 timeout, 125 guest/QEMU died without reporting, 2 usage/setup error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# the image of PVRDMA_GUEST_RELEASE (build-image.sh's own folder)
# shellcheck source=scripts/guest/release-lib.sh
. "$here/release-lib.sh"
G=$(guest_dir "${PVRDMA_GUEST_RELEASE:-bookworm}") || exit 2
QEMU=${QEMU:-$top/build/qemu/qemu-system-x86_64}

vms=0 timeout=${PVRDMA_GUEST_TIMEOUT:-300} out='' pvrdma=${PVRDMA_DEVICE:-auto}
mem=${PVRDMA_GUEST_MEM:-1G} machine=${PVRDMA_MACHINE:-q35} nic=vmxnet3
append=${PVRDMA_GUEST_APPEND:-} verbose=0 shell=0 build=1 reboot=0 restart_peer=0
rendezvous=1 mgmt_peers=0 device_args='' use_switch=0 lossy='' lossy_match=roce lossy_seed=${PVRDMA_LOSSY_SEED:-1} lossy_keep_acks=0 lossy_keep_acks_from=() lossy_keep_cm=0 lossy_jitter=0 lossy_jitter_reorders=0 capture=0
files=() envs=() scripts=()

# shellcheck source=scripts/guest/initrd-lib.sh
. "$here/initrd-lib.sh"
die() { echo "run-vm: $*" >&2; exit 2; }
need_arg() { [ $# -ge 2 ] || die "option $1 needs an argument"; }
while [ $# -gt 0 ]; do
    case $1 in
        -n|--vms) need_arg "$@"; vms=$2; shift 2 ;;
        -t|--timeout) need_arg "$@"; timeout=$2; shift 2 ;;
        -o|--out) need_arg "$@"; out=$2; shift 2 ;;
        --pvrdma) need_arg "$@"; pvrdma=$2; shift 2 ;;
        -f|--file) need_arg "$@"; files+=("$2"); shift 2 ;;
        -e|--env) need_arg "$@"; envs+=("$2"); shift 2 ;;
        --mem) need_arg "$@"; mem=$2; shift 2 ;;
        --machine) need_arg "$@"; machine=$2; shift 2 ;;
        --nic) need_arg "$@"; nic=$2; shift 2 ;;
        --append) need_arg "$@"; append="$append $2"; shift 2 ;;
        --no-rendezvous) rendezvous=0; shift ;;
        --peers-from-management) mgmt_peers=1; shift ;;
        --device-args) need_arg "$@"; device_args="$device_args,$2"; shift 2 ;;
        --switch) use_switch=1; shift ;;
        --lossy) need_arg "$@"; lossy=$2; use_switch=1; shift 2 ;;
        --lossy-match) need_arg "$@"; lossy_match=$2; shift 2 ;;
        --lossy-keep-acks) lossy_keep_acks=1; shift ;;
        --lossy-keep-acks-from) lossy_keep_acks_from+=("$2"); shift 2 ;;
        --lossy-keep-cm) lossy_keep_cm=1; shift ;;
        --lossy-seed) need_arg "$@"; lossy_seed=$2; shift 2 ;;
        --lossy-jitter) need_arg "$@"; lossy_jitter=$2; use_switch=1; shift 2 ;;
        --lossy-jitter-reorders) lossy_jitter_reorders=1; shift ;;
        --capture) capture=1; shift ;;
        -v|--verbose) verbose=1; shift ;;
        --shell) shell=1; shift ;;
        --no-build) build=0; shift ;;
        --reboot) reboot=1; shift ;;
        --restart-peer) restart_peer=1; shift ;;
        -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
        --) shift; scripts+=("$@"); break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) scripts+=("$1"); shift ;;
    esac
done
case $pvrdma in auto|on|off) ;; *) die "--pvrdma must be auto, on or off" ;; esac
# --nic: one model for all VMs or a comma-separated list, one per VM
[ -z "${PVRDMA_FORCE_NIC:-}" ] || nic=$PVRDMA_FORCE_NIC
IFS=, read -r -a nics <<< "$nic"
[ ${#nics[@]} -ge 1 ] || die "--nic needs a model"
for m in "${nics[@]}"; do
    case $m in vmxnet3|virtio) ;; *) die "--nic: '$m': each model must be vmxnet3 or virtio" ;; esac
done
[ ${#nics[@]} -le 4 ] || die "--nic: at most four models (one per VM)"
case $lossy in
    '') lossy_drop=0 lossy_reorder=0 ;;
    *,*) lossy_drop=${lossy%%,*} lossy_reorder=${lossy#*,} ;;
    *) lossy_drop=$lossy lossy_reorder=0 ;;
esac
for v in "$lossy_drop" "$lossy_reorder"; do
    [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--lossy DROP[,REORDER]: percentages, e.g. 2,2 or 0.5"
done
[[ $lossy_jitter =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--lossy-jitter MS: milliseconds, e.g. 5 or 0.5"
case $lossy_match in roce|all) ;; *) die "--lossy-match must be roce or all" ;; esac
case $lossy_seed in ''|*[!0-9]*) die "--lossy-seed must be a number" ;; esac
case $timeout in ''|*[!0-9]*) die "--timeout must be a number of seconds" ;; esac
if [ "$shell" = 1 ]; then
    vms=1
    [ ${#scripts[@]} -le 1 ] || die "--shell takes at most one script"
else
    [ ${#scripts[@]} -ge 1 ] || die "no guest script given (see --help)"
fi
[ ${#scripts[@]} -le 2 ] || die "at most two scripts"
[ "$vms" != 0 ] || vms=$(( ${#scripts[@]} > 1 ? 2 : 1 ))
case $vms in 1|2|3|4) ;; *) die "--vms must be 1 to 4" ;; esac
[ ${#scripts[@]} -le "$vms" ] || die "two scripts need --vms 2"
[ "$restart_peer" = 0 ] || [ "$vms" = 2 ] || die "--restart-peer needs two VMs"
[ ${#nics[@]} = 1 ] || [ ${#nics[@]} = "$vms" ] || die "--nic lists ${#nics[@]} models for $vms VM(s)"
while [ ${#nics[@]} -lt "$vms" ]; do nics+=("${nics[0]}"); done
[ "$vms" -lt 3 ] || use_switch=1
[ "$use_switch" = 0 ] || [ "$vms" -ge 2 ] || die "--switch/--lossy need two or more VMs"
# pvrdma needs a vmxnet3 at function 0 of its slot: virtio VMs never get it
has_vmxnet3=0
for i in $(seq 0 $((vms - 1))); do [ "${nics[$i]}" = virtio ] || has_vmxnet3=1; done
[ "$pvrdma" != on ] || [ "$has_vmxnet3" = 1 ] || die "--nic virtio: pvrdma needs a vmxnet3 at function 0"
for s in "${scripts[@]}"; do [ -f "$s" ] || die "no such script: $s"; done

[ -x "$QEMU" ] || die "QEMU not found at $QEMU (build it with scripts/build.sh, or set QEMU=)"
if [ "$build" = 1 ]; then
    "$here/build-image.sh" --quiet || die "guest image build failed"
fi
for f in vmlinux initrd.img firmware/pvh.bin manifest.txt; do
    [ -f "$G/$f" ] || die "no $G/$f: run scripts/guest/build-image.sh"
done
# the kernel the image was built for: the guest must say it booted it
image_kernel=$(image_kernel "$G")
[ -n "$image_kernel" ] || die "$G/manifest.txt names no kernel: rebuild the image"

# --- pvrdma device -----------------------------------------------------------
has_pvrdma=0
"$QEMU" -nodefaults -device help 2>/dev/null | grep -q '^name "pvrdma"' && has_pvrdma=1
case $pvrdma in
    auto) use_pvrdma=$has_pvrdma ;;
    on) use_pvrdma=1
        [ "$has_pvrdma" = 1 ] || echo "run-vm: WARNING: $QEMU has no 'pvrdma' device; QEMU will refuse to start" >&2 ;;
    off) use_pvrdma=0 ;;
esac
PVRDMA_DEVICE_ARGS=${PVRDMA_DEVICE_ARGS:-pvrdma,addr=4.1,roce=on}$device_args
# an id for QMP (qom-get /machine/peripheral/rdma0 ...) unless one is given
[[ $PVRDMA_DEVICE_ARGS =~ (^|,)id= ]] || PVRDMA_DEVICE_ARGS=$PVRDMA_DEVICE_ARGS,id=rdma0
pvrdma_qom=/machine/peripheral/$(echo ",$PVRDMA_DEVICE_ARGS" | sed -n 's/.*,id=\([^,]*\).*/\1/p')
# per VM: the device only behind a vmxnet3; the co-resident transport for
# the VMs that have it, when two or more do
declare -a vm_pvrdma
n_pvrdma=0
for i in $(seq 0 $((vms - 1))); do
    vm_pvrdma[$i]=0
    if [ "$use_pvrdma" = 1 ] && [ "${nics[$i]}" = vmxnet3 ]; then
        vm_pvrdma[$i]=1; n_pvrdma=$((n_pvrdma + 1))
    fi
done
use_rdv=0
[ "$n_pvrdma" -lt 2 ] || [ "$rendezvous" = 0 ] || use_rdv=1

# --- output directory -----------------------------------------------------------
if [ -z "$out" ]; then
    base=$(basename "${scripts[0]:-shell}"); base=${base%.sh}
    out=$G/runs/$base-$(date +%Y%m%d-%H%M%S)-$$
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

pids=() tails=() sockdir='' switch_pid=''
stop_switch() { # SIGTERM: it sends what it holds, writes switch.stats, exits
    [ -n "$switch_pid" ] || return 0
    kill "$switch_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$switch_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$switch_pid" 2>/dev/null || true
    wait "$switch_pid" 2>/dev/null || true
    switch_pid=
}
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
    stop_switch
    [ -z "$sockdir" ] || rm -rf "$sockdir"
    rm -f "$out"/vm*/snap.qcow2     # the snapshots' VM state (PVRDMA-SNAPSHOT)
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

if [ "$vms" -ge 2 ]; then
    sockdir=$(mktemp -d /tmp/pvrdma-net.XXXXXX)
fi

now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

# --- per-VM setup -------------------------------------------------------------
# shellcheck disable=SC2034  # filled through eval below
declare -a qcmd_0 qcmd_1 qcmd_2 qcmd_3
declare -a qmp_sock
for i in $(seq 0 $((vms - 1))); do
    d=$out/vm$i
    rm -rf "$d"; mkdir -p "$d/extra/usr/lib/pvrdma"
    # VM 0's peer is VM 1; every other VM's peer is VM 0
    pi=$(( i == 0 ? 1 : 0 ))
    ip=10.0.0.$((i + 1)) peer=10.0.0.$((pi + 1))
    script=${scripts[$i]:-${scripts[0]:-}}
    if [ -n "$script" ]; then
        cp "$script" "$d/extra/test.sh"
    fi
    cp "$here/guest-lib.sh" "$d/extra/usr/lib/pvrdma/guest-lib.sh"
    for f in "${files[@]}"; do
        rig_put "$d/extra" "$f" || die "cannot add $f"
    done
    {
        echo "PVRDMA_VM=$i"
        echo "PVRDMA_VMS=$vms"
        echo "PVRDMA_IP=$ip"
        echo "PVRDMA_PREFIX=24"
        [ "$vms" = 1 ] || echo "PVRDMA_PEER_IP=$peer"
        echo "PVRDMA_DEVICE=${vm_pvrdma[$i]}"
        echo "PVRDMA_NIC=${nics[$i]}"
        [ "$vms" = 1 ] || echo "PVRDMA_PEER_DEVICE=${vm_pvrdma[$pi]}"
        [ "$vms" = 1 ] || echo "PVRDMA_PEER_NIC=${nics[$pi]}"
        echo "PVRDMA_VM_DEVICES='${vm_pvrdma[*]}'"
        echo "PVRDMA_VM_NICS='${nics[*]:0:$vms}'"
        echo "PVRDMA_RENDEZVOUS=$(( use_rdv && vm_pvrdma[i] ))"
        echo "PVRDMA_SWITCH=$use_switch"
        echo "PVRDMA_TEST=$(basename "${script:-shell}" .sh)"
        echo "PVRDMA_RESTART=0"
        echo "export PVRDMA_VM PVRDMA_VMS PVRDMA_IP PVRDMA_PREFIX PVRDMA_PEER_IP PVRDMA_DEVICE PVRDMA_NIC PVRDMA_PEER_DEVICE PVRDMA_PEER_NIC PVRDMA_VM_DEVICES PVRDMA_VM_NICS PVRDMA_RENDEZVOUS PVRDMA_SWITCH PVRDMA_TEST PVRDMA_RESTART"
        rig_env ${envs[@]+"${envs[@]}"} || die "bad --env"
    } > "$d/extra/test.env"
    rig_initrd "$G/initrd.img" "$d/extra" "$d" || die "cannot build $d/initrd.img"

    if [ "$vms" = 1 ]; then
        netdev="hubport,id=n0,hubid=0"
    elif [ "$use_switch" = 1 ]; then
        netdev="dgram,id=n0,local.type=unix,local.path=$sockdir/vm$i.sock,remote.type=unix,remote.path=$sockdir/sw$i.sock"
    else
        netdev="dgram,id=n0,local.type=unix,local.path=$sockdir/vm$i.sock,remote.type=unix,remote.path=$sockdir/vm$((1 - i)).sock"
    fi
    # QMP: in the out directory unless its path is too long for a socket
    qmp_sock[$i]=$d/qmp.sock
    if [ ${#d} -gt 90 ]; then
        [ -n "$sockdir" ] || sockdir=$(mktemp -d /tmp/pvrdma-net.XXXXXX)
        qmp_sock[$i]=$sockdir/qmp$i.sock
        ln -sfn "${qmp_sock[$i]}" "$d/qmp.sock"
    fi
    # a soft lockup panics: the run ends at once, and panic() prints the
    # stack of what spun at any loglevel (the lockup report's own stack is
    # at the default level, which loglevel 4 hides)
    kapp="console=ttyS0 panic=-1 oops=panic softlockup_panic=1 loglevel=${PVRDMA_GUEST_LOGLEVEL:-4} mitigations=off pvrdma.ip=$ip/24"
    [ -n "$script" ] || kapp="$kapp pvrdma.shell"
    nicdev=vmxnet3
    if [ "${nics[$i]}" = virtio ]; then
        nicdev=virtio-net-pci
        kapp="$kapp pvrdma.modules=virtio_pci,virtio_net,ib_uverbs,rdma_ucm,ib_umad"
    fi
    cmd=("$QEMU" -L "$G/firmware" -L /usr/share/seabios -L /usr/lib/ipxe/qemu
        -nodefaults -machine "$machine" -accel tcg -cpu "${PVRDMA_GUEST_CPU:-qemu64}" -smp 1 -m "$mem"
        -display none -name "pvrdma-guest-vm$i"
        -kernel "$G/vmlinux" -initrd "$d/initrd.img"
        -append "$kapp $append"
        -netdev "$netdev"
        -device "$nicdev,netdev=n0,addr=4.0,multifunction=on,romfile=,mac=52:54:00:12:34:$((56 + i))")
    if [ "${vm_pvrdma[$i]}" = 1 ] && [ "$use_rdv" = 1 ]; then
        # co-resident transport: peers map each other's guest RAM (memfd,
        # share=on) and meet in a rendezvous directory
        cmd+=(-object "memory-backend-memfd,id=mem,size=$mem,share=on"
              -machine memory-backend=mem)
        if [ "$mgmt_peers" = 1 ]; then
            cmd+=(-device "$PVRDMA_DEVICE_ARGS,coresident=on")
        else
            cmd+=(-device "$PVRDMA_DEVICE_ARGS,rendezvous=$sockdir/rdma")
        fi
    elif [ "${vm_pvrdma[$i]}" = 1 ]; then
        cmd+=(-device "$PVRDMA_DEVICE_ARGS")
    fi
    cmd+=(-qmp "unix:${qmp_sock[$i]},server=on,wait=off")
    [ "$capture" = 0 ] || cmd+=(-object "filter-dump,id=cap,netdev=n0,file=$d/capture.pcap")
    [ "$reboot" = 1 ] || cmd+=(-no-reboot)
    # shellcheck disable=SC2206
    [ -z "${PVRDMA_QEMU_ARGS:-}" ] || cmd+=(${PVRDMA_QEMU_ARGS})
    if [ "$shell" = 1 ]; then
        cmd+=(-serial mon:stdio)
    else
        cmd+=(-serial "file:$d/console.log")
    fi
    printf '%q ' "${cmd[@]}" > "$d/qemu.cmdline"; echo >> "$d/qemu.cmdline"
    eval "qcmd_$i=(\"\${cmd[@]}\")"
done

# --- interactive shell ----------------------------------------------------------
if [ "$shell" = 1 ]; then
    echo "run-vm: interactive guest (Ctrl-A X quits QEMU); logs in $out/vm0" >&2
    exec "${qcmd_0[@]}" 2> "$out/vm0/qemu.stderr"
fi

# --- switch ---------------------------------------------------------------------
if [ "$use_switch" = 1 ]; then
    sw=(python3 "$here/l2switch.py" --stats "$out/switch.stats" --ready "$sockdir/switch.ready"
        --drop "$lossy_drop" --reorder "$lossy_reorder" --match "$lossy_match" --seed "$lossy_seed" --jitter-ms "$lossy_jitter")
    [ "$verbose" = 0 ] || [ -z "$lossy" ] || sw+=(-v)
    [ "$lossy_keep_acks" = 0 ] || sw+=(--keep-acks)
    for k in "${lossy_keep_acks_from[@]}"; do sw+=(--keep-acks-from "$k"); done
    [ "$lossy_keep_cm" = 0 ] || sw+=(--keep-cm)
    [ "$lossy_jitter_reorders" = 0 ] || sw+=(--jitter-reorders)
    for i in $(seq 0 $((vms - 1))); do sw+=(--port "$sockdir/sw$i.sock" "$sockdir/vm$i.sock"); done
    printf '%q ' "${sw[@]}" > "$out/switch.cmdline"; echo >> "$out/switch.cmdline"
    rm -f "$out/switch.stats"
    "${sw[@]}" < /dev/null > "$out/switch.log" 2>&1 &
    switch_pid=$!
    for _ in $(seq 1 100); do
        [ ! -e "$sockdir/switch.ready" ] && kill -0 "$switch_pid" 2>/dev/null || break
        sleep 0.05
    done
    [ -e "$sockdir/switch.ready" ] || { cat "$out/switch.log" >&2; die "the switch (l2switch.py) did not start"; }
fi

# --- host queries (PVRDMA-QMP TAG) ---------------------------------------------
declare -A qmp_done mig_done snap_done inject_done
migrations=0
# migrate_vm N TAG [away|file|postcopy]: VM N to a new QEMU (see "Live migration"
# above)
migrate_vm() {
    local i=$1 tag=$2 where=${3:-} d=$out/vm$1 c a k sock qs newpid r uri st mode
    migrations=$((migrations + 1))
    [ -n "$sockdir" ] || sockdir=$(mktemp -d /tmp/pvrdma-net.XXXXXX)
    sock=$sockdir/mig$i-$migrations.sock qs=$sockdir/qmp$i-$migrations.sock
    eval "c=(\"\${qcmd_${i}[@]}\")"
    a=()
    for ((k = 0; k < ${#c[@]}; k++)); do
        case ${c[$k]} in
            -qmp) a+=(-qmp "unix:$qs,server=on,wait=off"); k=$((k + 1)) ;;
            -serial) a+=(-chardev "file,id=con,path=$d/console.log,append=on"
                         -serial chardev:con); k=$((k + 1)) ;;
            # through the switch: the new QEMU binds its own path and the
            # switch follows it from its first frame (l2switch.py), so the
            # source keeps its network until it stops
            -netdev) a+=(-netdev); k=$((k + 1))
                     if [ "$use_switch" = 1 ]; then
                         a+=("${c[$k]/local.path=$sockdir\/vm$i.sock/local.path=$sockdir/vm$i-m$migrations.sock}")
                     else
                         a+=("${c[$k]}")
                     fi ;;
            # "away": another host's rendezvous directory
            -device) a+=(-device); k=$((k + 1))
                     if [ "$where" = away ]; then
                         a+=("${c[$k]/rendezvous=$sockdir\/rdma/rendezvous=$sockdir/rdma-away$migrations}")
                     else
                         a+=("${c[$k]}")
                     fi ;;
            *) a+=("${c[$k]}") ;;
        esac
    done
    if [ "$where" = file ]; then
        # to a file, the source stopped, then a new QEMU from the file
        uri=file:$d/state-$tag.mig
        a+=(-incoming "$uri")
        printf '%q ' "${a[@]}" > "$d/qemu.cmdline.migrate-$tag"
        r=$(python3 "$here/qmp.py" --timeout 120 "${qmp_sock[$i]}" migrate "$uri" 2>&1) || true
        if [[ $r == "status completed"* ]]; then
            stop_vm "$i"
            "${a[@]}" < /dev/null > "$d/qemu.stderr.migrate-$tag" 2>&1 &
            newpid=$!
            st=
            for _ in $(seq 1 600); do
                kill -0 "$newpid" 2>/dev/null || break
                st=$(python3 "$here/qmp.py" "$qs" '{"execute":"query-status"}' 2>/dev/null | sed -n 's/.*"status": "\(.*\)".*/\1/p') || true
                [ "$st" != running ] || break
                sleep 0.1
            done
            [ "$st" = running ] || r="status load-failed (${st:-no answer}) after: $r"
            rm -f "$d/state-$tag.mig"
        fi
    else
        a+=(-incoming "unix:$sock")
        printf '%q ' "${a[@]}" > "$d/qemu.cmdline.migrate-$tag"
        "${a[@]}" < /dev/null > "$d/qemu.stderr.migrate-$tag" 2>&1 &
        newpid=$!
        for _ in $(seq 1 100); do [ -S "$sock" ] && [ -S "$qs" ] && break; sleep 0.1; done
        mode=()
        if [ "$where" = postcopy ]; then
            # both sides: the destination first (it needs userfaultfd)
            mode=(postcopy)
            r=$(python3 "$here/qmp.py" "$qs" '{"execute": "migrate-set-capabilities", "arguments": {"capabilities": [{"capability": "postcopy-ram", "state": true}]}}' 2>&1) ||
                mode=(failed)
            # only QEMU's own refusal (no userfaultfd) makes it untested:
            # no QMP socket, no answer or another error is a failure
            if [ "${mode[*]}" = failed ] &&
                [[ $r == *"migrate-set-capabilities: "*[Pp]ostcopy* ]]; then
                mode=(unsupported)
            fi
        fi
        if [ "${mode[*]}" = unsupported ]; then
            r="status unsupported postcopy: ${r##*: }"
        elif [ "${mode[*]}" = failed ]; then
            r="status failed to set postcopy-ram on the destination: $r"
        else
            r=$(python3 "$here/qmp.py" --timeout 120 "${qmp_sock[$i]}" migrate "unix:$sock" "${mode[@]}" 2>&1) || true
        fi
    fi
    { echo "$r"; echo "console-bytes $(stat -c %s "$d/console.log")"; } > "$d/migrate-$tag.txt"
    if [[ $r == "status completed"* ]]; then
        [ "$where" = file ] || stop_vm "$i"     # the source, paused after the migration
        pids[$i]=$newpid qmp_sock[$i]=$qs
        ln -sfn "$qs" "$d/qmp.sock"
        echo "run-vm: vm$i: migrated ($tag): $r" >&2
    else
        kill -9 "$newpid" 2>/dev/null || true
        wait "$newpid" 2>/dev/null || true
        echo "run-vm: vm$i: migration '$tag' failed: $r" >&2
    fi
}
# snapshot_vm N TAG: savevm TAG in VM N's QEMU (into <out>/vmN/snap.qcow2),
# let the guest run on for PVRDMA_SNAPSHOT_GAP seconds (default 2), then
# loadvm TAG (see "Snapshots" above)
snapshot_vm() {
    local i=$1 tag=$2 d=$out/vm$1 r
    {
        if r=$(python3 "$here/qmp.py" --timeout 120 "${qmp_sock[$i]}" savevm "$d/snap.qcow2" "$tag" 2>&1); then
            echo "$r"
            echo "console-bytes-save $(stat -c %s "$d/console.log")"
            sleep "${PVRDMA_SNAPSHOT_GAP:-2}"
            echo "console-bytes-before-load $(stat -c %s "$d/console.log")"
            r=$(python3 "$here/qmp.py" --timeout 120 "${qmp_sock[$i]}" loadvm "$tag" 2>&1) || r="loadvm failed: $r"
            echo "$r"
        else
            echo "savevm failed: $r"
        fi
        echo "console-bytes $(stat -c %s "$d/console.log")"
    } > "$d/snapshot-$tag.txt"
    echo "run-vm: vm$i: snapshot '$tag': $(tr '\n' ' ' < "$d/snapshot-$tag.txt")" >&2
}
qmp_query() { # TAG: every pvrdma VM's counters and QPs, the switch's counters
    local tag=$1 i f s
    for i in $(seq 0 $((vms - 1))); do
        [ "${vm_pvrdma[$i]}" = 1 ] || continue
        f=$out/vm$i/qmp-$tag
        s=${qmp_sock[$i]}
        if python3 "$here/qmp.py" "$s" pvrdma "$pvrdma_qom" \
               > "$f.txt.tmp" 2> "$f.err" &&
           python3 "$here/qmp.py" "$s" '{"execute":"query-pvrdma"}' \
               > "$f.json.tmp" 2>> "$f.err" &&
           python3 "$here/qmp.py" "$s" hmp 'info pvrdma' \
               > "$f.hmp" 2>> "$f.err"; then
            mv "$f.txt.tmp" "$f.txt"; mv "$f.json.tmp" "$f.json"; rm -f "$f.err"
        else
            rm -f "$f.json.tmp"
            rm -f "$f.txt.tmp"
            echo "run-vm: vm$i: QMP query '$tag' failed: $(cat "$f.err")" >&2
        fi
    done
    if [ -n "$switch_pid" ]; then
        rm -f "$out/switch.stats"
        kill -USR1 "$switch_pid" 2>/dev/null || true
        for _ in $(seq 1 20); do [ ! -e "$out/switch.stats" ] || break; sleep 0.05; done
        cp "$out/switch.stats" "$out/switch-$tag.stats" 2>/dev/null || true
    fi
    echo "run-vm: host query '$tag' done at $(secs_since "$t0")s" >&2
}

# --- start ----------------------------------------------------------------------
t0=$(now)
declare -a start state rc boot lastsample
for i in $(seq 0 $((vms - 1))); do
    d=$out/vm$i
    : > "$d/console.log"; : > "$d/samples.txt"
    eval "cmd=(\"\${qcmd_${i}[@]}\")"
    "${cmd[@]}" < /dev/null > "$d/qemu.stderr" 2>&1 &
    pids[$i]=$!
    start[$i]=$(now); state[$i]=running; rc[$i]=; boot[$i]=; lastsample[$i]=0
    if [ "$verbose" = 1 ]; then
        # --pid: tail ends with QEMU (killing sed alone would leave it behind)
        tail -n +1 -F --pid="${pids[$i]}" "$d/console.log" 2>/dev/null | sed -u "s/\r\$//; s/^/[vm$i] /" >&2 &
        tails+=($!)
    fi
done

rss() { # pid -> "VmRSS VmHWM" in KiB
    awk '/^VmRSS:/{r=$2} /^VmHWM:/{h=$2} END{print (r==""?"-":r), (h==""?"-":h)}' "/proc/$1/status" 2>/dev/null || echo "- -"
}
# guest RAM size in KiB (--mem: a number of MiB, or with a K/M/G suffix)
case $mem in
    *[Gg]) ram_kib=$(( ${mem%[Gg]} * 1048576 )) ;;
    *[Mm]) ram_kib=$(( ${mem%[Mm]} * 1024 )) ;;
    *[Kk]) ram_kib=${mem%[Kk]} ;;
    *) ram_kib=$(( mem * 1024 )) ;;
esac
own() { # pid -> QEMU's own resident memory, KiB: VmRSS less the guest RAM
        # mapping (the one of exactly the guest RAM size: pages the guest
        # touches for the first time) and the TCG translation buffer (the
        # rwx mapping: it fills with code for each new guest code address,
        # up to its size, 1 GiB, then it is flushed)
    awk -v ram="$ram_kib" '/^[0-9a-f]+-[0-9a-f]+ /{x=($2 ~ /x/ && $6 == "")} /^Size:/{s=$2} /^Rss:/{t+=$2; if (s==ram || x) g+=$2} END{print (t==""?"-":t-g)}' "/proc/$1/smaps" 2>/dev/null || echo -
}
sample() { # tag pid secs -> a samples.txt line: TAG VmRSS VmHWM SECS OWN
    echo "$1 $(rss "$2") $3 $(own "$2")"
}
for i in $(seq 0 $((vms - 1))); do
    sample start "${pids[$i]}" 0.0 >> "$out/vm$i/samples.txt"
done
# management gives each pair of co-resident devices its connection
if [ "$use_rdv" = 1 ] && [ "$mgmt_peers" = 1 ]; then
    for i in $(seq 0 $((vms - 1))); do
        for j in $(seq $((i + 1)) $((vms - 1))); do
            [ "${vm_pvrdma[$i]}" = 1 ] && [ "${vm_pvrdma[$j]}" = 1 ] || continue
            if ! r=$(python3 "$here/qmp.py" --timeout 30 "${qmp_sock[$i]}" \
                     connect-peer "${qmp_sock[$j]}" 2>&1); then
                echo "run-vm: connecting vm$i and vm$j failed: $r" >&2
            fi
            echo "vm$i vm$j: $r" >> "$out/peers.log"
        done
    done
fi

tail_console() { # vm-index lines
    { tr -d '\r' < "$out/vm$1/console.log" | grep -av '^\s*$' || true; } | tail -n "$2" | sed 's/^/    /'
}

# --- wait -------------------------------------------------------------------------
# states: running -> exiting (reported, waiting for poweroff) -> done;
# or died / timeout / aborted (killed because the other VM already failed)
grace=${PVRDMA_PEER_GRACE:-10}
failed_at=
stop_vm() { # index: TERM, then KILL
    local p=${pids[$1]}
    kill "$p" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}
older_than() { awk -v a="$1" -v b="$(now)" -v t="$2" 'BEGIN{print (b-a > t) ? 1 : 0}'; }
# restart_vm1 N: kill VM 1's QEMU at once (no shutdown, as a crashed host
# process) and boot it again with PVRDMA_RESTART=N
kills=0
restart_vm1() {
    local d=$out/vm1 p=${pids[1]} c
    sample killed "$p" "$(secs_since "${start[1]}")" >> "$d/samples.txt"
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    echo "run-vm: vm1: killed (SIGKILL) at VM 0's request #$1; restarting it" >&2
    mv "$d/console.log" "$d/console.killed-$1.log"
    sed -i "s/^PVRDMA_RESTART=.*/PVRDMA_RESTART=$1/" "$d/extra/test.env"
    rig_initrd "$G/initrd.img" "$d/extra" "$d" || echo "run-vm: cannot rebuild $d/initrd.img" >&2
    : > "$d/console.log"
    eval "c=(\"\${qcmd_1[@]}\")"
    "${c[@]}" < /dev/null >> "$d/qemu.stderr" 2>&1 &
    pids[1]=$!
    start[1]=$(now) boot[1]= lastsample[1]=0
    if [ "$verbose" = 1 ]; then
        tail -n +1 -F --pid="${pids[1]}" "$d/console.log" 2>/dev/null | sed -u "s/\r\$//; s/^/[vm1] /" >&2 &
        tails+=($!)
    fi
}
declare -a endt exit_deadline
switch_warned=0
while :; do
    active=0
    if [ -n "$switch_pid" ] && [ "$switch_warned" = 0 ] && ! kill -0 "$switch_pid" 2>/dev/null; then
        switch_warned=1
        { echo "run-vm: the switch (l2switch.py) died: the VMs are cut off from each other; its log:"
          sed 's/^/    /' "$out/switch.log" | tail -n 15; } >&2
    fi
    for i in $(seq 0 $((vms - 1))); do
        d=$out/vm$i log=$out/vm$i/console.log pid=${pids[$i]}
        case ${state[$i]} in
            exiting)
                if ! kill -0 "$pid" 2>/dev/null || [ "$(older_than "${exit_deadline[$i]}" 0)" = 1 ]; then
                    stop_vm "$i"; state[$i]='done'
                else
                    active=$((active + 1))
                fi
                continue ;;
            running) ;;
            *) continue ;;
        esac
        # RSS samples requested by the guest
        n=$(grep -ac '^PVRDMA-SAMPLE ' "$log" || true)
        if [ "$n" -gt "${lastsample[$i]}" ]; then
            r=$(rss "$pid") o=$(own "$pid")
            grep -a '^PVRDMA-SAMPLE ' "$log" | tr -d '\r' | sed -n "$((lastsample[$i] + 1)),${n}p" |
                while read -r _ tag; do echo "$tag $r $(secs_since "${start[$i]}") $o"; done >> "$d/samples.txt"
            lastsample[$i]=$n
        fi
        # the guest asks to be migrated to a new QEMU (before the queries:
        # a query asked for after a migration goes to the new QEMU; both
        # read from one look at the log, which the guest writes meanwhile)
        # complete lines only: the guest may be writing the last one
        if [ -n "$(tail -c 1 "$log")" ]; then
            markers=$(head -n -1 "$log" | grep -a '^PVRDMA-\(MIGRATE\|QMP\|SNAPSHOT\|INJECT\) ' | tr -d '\r' || true)
        else
            markers=$(grep -a '^PVRDMA-\(MIGRATE\|QMP\|SNAPSHOT\|INJECT\) ' "$log" | tr -d '\r' || true)
        fi
        if [[ $markers == *PVRDMA-SNAPSHOT* ]]; then
            for tag in $(grep -a '^PVRDMA-SNAPSHOT ' <<< "$markers" | awk '{print $2}'); do
                [[ $tag =~ ^[A-Za-z0-9._-]+$ ]] || continue
                [ -z "${snap_done[$i.$tag]:-}" ] || continue
                snap_done[$i.$tag]=1
                snapshot_vm "$i" "$tag" < /dev/null
            done
        fi
        if [[ $markers == *PVRDMA-MIGRATE* ]]; then
            migrated=0
            while read -r tag where; do
                [[ $tag =~ ^[A-Za-z0-9._-]+$ ]] || continue
                [ -z "${mig_done[$i.$tag]:-}" ] || continue
                mig_done[$i.$tag]=1 migrated=1
                migrate_vm "$i" "$tag" "$where" < /dev/null
            done < <(grep -a '^PVRDMA-MIGRATE ' <<< "$markers" | awk '{print $2, $3}')
            if [ "$migrated" = 1 ]; then
                active=$((active + 1))
                continue    # this VM's QEMU (pid) may have changed
            fi
        fi
        # the guest asks for a fault in its own device (x_pvrdma_inject)
        if [[ $markers == *PVRDMA-INJECT* ]]; then
            while read -r tag args end; do
                # the line's last word is "." (the console may hold half a line)
                [ "$end" = . ] || continue
                [[ $tag =~ ^[A-Za-z0-9._-]+$ && $args =~ ^[A-Za-z0-9=,._-]+$ ]] || continue
                [ -z "${inject_done[$i.$tag]:-}" ] || continue
                inject_done[$i.$tag]=1
                python3 "$here/qmp.py" "${qmp_sock[$i]}" hmp "x_pvrdma_inject $args" \
                    > "$d/inject-$tag.txt" 2>&1 < /dev/null || true
                echo "run-vm: vm$i: inject '$tag' ($args) at $(secs_since "$t0")s: $(head -c 200 "$d/inject-$tag.txt")" >&2
            done < <(grep -a '^PVRDMA-INJECT ' <<< "$markers" | awk '{print $2, $3, $4}')
        fi
        # host queries over QMP
        if [[ $markers == *PVRDMA-QMP* ]]; then
            for tag in $(grep -a '^PVRDMA-QMP ' <<< "$markers" | awk '{print $2}'); do
                [[ $tag =~ ^[A-Za-z0-9._-]+$ ]] || continue
                [ -z "${qmp_done[$tag]:-}" ] || continue
                qmp_done[$tag]=1
                qmp_query "$tag"
            done
        fi
        # VM 0 asks for VM 1 to be killed and restarted
        if [ "$restart_peer" = 1 ] && [ "$i" = 0 ]; then
            n=$(grep -ac '^PVRDMA-KILL-PEER' "$log" || true)
            while [ "$n" -gt "$kills" ] && [ "${state[1]}" = running ]; do
                kills=$((kills + 1)); restart_vm1 "$kills"
            done
        fi
        # with --reboot a panic reboots the guest instead of stopping QEMU
        if [ "$reboot" = 1 ] && grep -aq 'Kernel panic - not syncing' "$log"; then
            stop_vm "$i"
        fi
        if [ -z "${boot[$i]}" ] && grep -aq '^PVRDMA-GUEST-READY' "$log"; then
            boot[$i]=$(secs_since "${start[$i]}")
            echo "${boot[$i]}" > "$d/boot.secs"
            sample ready "$pid" "${boot[$i]}" >> "$d/samples.txt"
            # a test passed on another kernel than the image's is no result
            k=$(grep -a -m1 '^PVRDMA-GUEST-READY' "$log" | tr -d '\r' | sed -n 's/.* kernel=\([^ ]*\).*/\1/p')
            echo "$k" > "$d/kernel"
            if [ "$k" != "$image_kernel" ]; then
                stop_vm "$i"
                state[$i]=died rc[$i]=125 endt[$i]=$(secs_since "${start[$i]}")
                [ -n "$failed_at" ] || failed_at=$(now)
                echo "run-vm: vm$i: the guest booted kernel '${k:-?}', not the image's $image_kernel ($G)" >&2
                continue
            fi
        fi
        if grep -aq '^PVRDMA-GUEST-EXIT=' "$log"; then
            rc[$i]=$(grep -a '^PVRDMA-GUEST-EXIT=' "$log" | head -n1 | tr -d '\r' | sed 's/.*=//')
            sample exit "$pid" "$(secs_since "${start[$i]}")" >> "$d/samples.txt"
            endt[$i]=$(secs_since "${start[$i]}")
            # the guest powers off by itself; give it 5 s
            state[$i]=exiting exit_deadline[$i]=$(awk -v t="$(now)" 'BEGIN{printf "%.3f", t + 5}')
            [ "${rc[$i]}" = 0 ] || [ -n "$failed_at" ] || failed_at=$(now)
            active=$((active + 1))
            continue
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            qrc=0; wait "$pid" 2>/dev/null || qrc=$?
            state[$i]=died rc[$i]=125 endt[$i]=$(secs_since "${start[$i]}")
            [ -n "$failed_at" ] || failed_at=$(now)
            {
                echo "run-vm: vm$i: QEMU exited (status $qrc) before the guest reported an exit status"
                echo "  (kernel panic/oops, QEMU error, or the guest powered off early)"
                t=$(tr -d '\r' < "$log" | grep -a -m1 -E 'Kernel panic|BUG:|Oops|general protection fault|WARNING:' || true)
                [ -z "$t" ] || echo "  first sign of trouble: $t"
                echo "  last console lines:"
                tail_console "$i" 25
                if [ -s "$d/qemu.stderr" ]; then echo "  QEMU stderr:"; sed 's/^/    /' "$d/qemu.stderr" | tail -n 15; fi
            } >&2
            continue
        fi
        if [ "$(older_than "${start[$i]}" "$timeout")" = 1 ]; then
            stop_vm "$i"
            state[$i]=timeout rc[$i]=124 endt[$i]=$(secs_since "${start[$i]}")
            [ -n "$failed_at" ] || failed_at=$(now)
            {
                echo "run-vm: vm$i: guest timed out after $timeout s; last console lines:"
                tail_console "$i" 25
            } >&2
            continue
        fi
        # the other VM failed: this one would only wait for it until its timeout
        if [ -n "$failed_at" ] && [ "$(older_than "$failed_at" "$grace")" = 1 ]; then
            stop_vm "$i"
            state[$i]=aborted rc[$i]=125 endt[$i]=$(secs_since "${start[$i]}")
            {
                echo "run-vm: vm$i: stopped $grace s after the other VM failed; last console lines:"
                tail_console "$i" 10
            } >&2
            continue
        fi
        active=$((active + 1))
    done
    [ "$active" -gt 0 ] || break
    sleep 0.1
done
for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
tails=()
stop_switch

# --- result -------------------------------------------------------------------------
# the first real failure wins (a timeout is 124); "aborted" VMs only count if
# nothing else failed
final=0
for i in $(seq 0 $((vms - 1))); do
    echo "${rc[$i]}" > "$out/vm$i/rc"
    if [ "${state[$i]}" = timeout ]; then final=124; fi
done
if [ "$final" = 0 ]; then
    for i in $(seq 0 $((vms - 1))); do
        if [ "${state[$i]}" != aborted ] && [ "${rc[$i]}" != 0 ]; then final=${rc[$i]}; break; fi
    done
fi
if [ "$final" = 0 ]; then
    for i in $(seq 0 $((vms - 1))); do
        if [ "${rc[$i]}" != 0 ]; then final=${rc[$i]}; break; fi
    done
fi
{
    for i in $(seq 0 $((vms - 1))); do
        echo "vm$i: ${state[$i]} rc=${rc[$i]} boot=${boot[$i]:-?}s total=${endt[$i]:-?}s nic=${nics[$i]} pvrdma=${vm_pvrdma[$i]}$([ "${vm_pvrdma[$i]}" = 0 ] || [ "$vms" = 1 ] || { [ "$mgmt_peers$use_rdv" = 11 ] && echo " peers=management" || echo " rendezvous=$use_rdv"; }) log=$out/vm$i/console.log"
    done
    if [ "$use_switch" = 1 ]; then
        echo "switch: $(awk '{printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $2}' "$out/switch.stats" 2>/dev/null | sed 's/ port0_rx.*//')$([ -z "$lossy" ] || echo " (--lossy $lossy, $lossy_match$([ "$lossy_keep_acks" = 0 ] || echo ", ACKs kept"), seed $lossy_seed)")$([ "$lossy_jitter" = 0 ] || echo " (jitter 0-$lossy_jitter ms)")"
    fi
    echo "exit $final after $(secs_since "$t0")s"
} | tee "$out/result" | sed 's/^/run-vm: /' >&2
case $final in ''|*[!0-9]*) final=125 ;; esac
exit "$final"
