#!/bin/bash
# pvrdma under libvirt: two VMs started by Debian's libvirtd (QEMU driver,
# <emulator> our QEMU, the device through <qemu:commandline>), the verbs
# data checker between them, query-pvrdma through virsh
# qemu-monitor-command, and a live migration with virsh migrate while the
# checker runs.
#
#   tests/libvirt/run.sh [options] [RUN...]      RUN: coresident, roce, doc
#
# Runs (all by default):
#   coresident  the two VMs on the co-resident transport (shared memfd
#               guest RAM, one rendezvous directory: pvrdma-coresident.xml)
#   roce        the two VMs on RoCEv2 over their vmxnet3 network, as on two
#               hosts (private RAM, no rendezvous: pvrdma-roce.xml)
#   mgmt        the co-resident transport with peers from management:
#               pvrdma-coresident.xml with coresident=on,roce=off instead of
#               the rendezvous, VM 0 on host A, VM 1 on host C, a libvirtd
#               (and QEMU) running as another user (as root: the user
#               PVRDMA_LIBVIRT_USER2, default pvrdma-libvirt2; libvirt's
#               per-VM DAC separation); once both run, the runner makes a
#               socketpair and gives each QEMU one end through its libvirtd
#               (virsh qemu-monitor-command --pass-fds: getfd, then
#               x-pvrdma-peer-add).  Only the fixed-count checker run (no
#               migration); the host check also wants each QEMU unable to
#               open the other's /proc/PID/mem (confine.txt) while it opens
#               its own
#   doc         notes/libvirt.rst shows both
#               domain XML templates exactly as the test uses them
# Prints "ok RUN (SECSs)" or "FAIL RUN: reason", then "N passed, N failed".
# Exit status 1 if anything failed, 2 for a setup error.
#
# Two libvirt "hosts", A and B, on this machine: each a libvirtd of its own
# in session mode (its own XDG_CONFIG_HOME, XDG_RUNTIME_DIR, XDG_CACHE_HOME
# under a private directory in /tmp, so its own socket, domain state and
# logs) with its own host_uuid (libvirt refuses to migrate to a host with
# its own UUID).  virsh reaches them as
#   qemu+unix:///session?socket=<dir>/A/runtime/libvirt/libvirt-sock
# As root, the daemons (and so the QEMUs) run as the unprivileged user
# pvrdma-libvirt, created here if missing (env PVRDMA_LIBVIRT_USER): a
# root libvirtd is always the system instance, with fixed paths in /run
# and /var.  Both hosts' QEMUs run as that one user, which the co-resident
# transport needs (its peers must be the same uid).  Not as root: the
# daemons run as the calling user.
#
# A run: both VMs are created on host A (virsh create of the template with
# its @PLACEHOLDERS@ filled), each boots the test kernel with an initrd
# made as scripts/guest/run-vm.sh makes it (/test.env with the same
# variables, tests/libvirt/guest.sh as /test.sh, tests/guest/common.sh).
# Their vmxnet3 NICs have UDP socket netdevs on 127.0.0.1 (<interface
# type='udp'>), joined by tests/libvirt/udp-relay.py, which turns to a
# migrated VM's new address at its first frame (the destination binds a
# port of its own: see udp-relay.py for why).  The runner watches the consoles
# (serial to a file, append='on' so the migrated QEMU goes on writing the
# same file) and answers the guest:
#   PVRDMA-QMP TAG      each VM's query-pvrdma (virsh qemu-monitor-command
#                       on the host the VM is on) into vmN/qmp-TAG.json,
#                       info pvrdma into vmN/qmp-TAG.hmp
#   PVRDMA-MIGRATE TAG  virsh migrate --live of that VM to the other host
#                       (--migrateuri tcp://127.0.0.1:PORT, --xml: its
#                       domain XML with another <local port> for the NIC);
#                       vmN/migrate-TAG.txt gets the result, the time,
#                       where the domain is after it and the console's size
#                       at its end
# Then the host check (tests/libvirt/check.py): both guests passed, each
# checker run printed "verbs-check: ok" on both consoles, the migration
# completed (virsh exit 0, the domain running on B and gone from A), the
# relay turned to the migrated VM's new port, and the checker ran on past it, query-pvrdma showed the two RC QPs connected
# to each other on the expected path (coresident or roce) before the
# migration, the same QP on that path in the migrated QEMU on host B after
# it, and at the end host B's device still on that transport.
#
# Options:
#   -o, --out DIR      logs (default build/libvirt/<time>)
#   -t, --timeout SECS per run (default 420, env PVRDMA_LIBVIRT_TIMEOUT)
#   -e, --env NAME=VAL into both guests' /test.env: LV_VC_SECS (the
#                      checker's time-mode run across the migration,
#                      default 60), LV_VC_COUNT (messages of the first run,
#                      default 200), LV_VC_ARGS (more checker options, e.g.
#                      "--corrupt 50": the run must then fail)
#   -v, --verbose      copy the consoles to stderr as they come
#   --no-build         do not run scripts/guest/build-image.sh first
# Environment: QEMU (default build/qemu/qemu-system-x86_64),
# PVRDMA_GUEST_DIR (the guest image, default build/guest),
# PVRDMA_LIBVIRT_USER, PVRDMA_LIBVIRT_TIMEOUT.
# Logs in <out>/RUN/: vmN/console.log, vmN/domain.xml (as given to virsh),
# vmN/qmp-*.json, vmN/migrate-*.txt, relay.log, harness.log, check.log, and
# <out>/hosts/{A,B}/ (libvirtd.log, the QEMU logs libvirt wrote, with
# each QEMU's command line).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
G=${PVRDMA_GUEST_DIR:-$top/build/guest}
QEMU=${QEMU:-$top/build/qemu/qemu-system-x86_64}
DOC=$top/notes/libvirt.rst
timeout=${PVRDMA_LIBVIRT_TIMEOUT:-420}
out='' build=1 verbose=0
envs=() runs=()

# shellcheck source=scripts/guest/initrd-lib.sh
. "$top/scripts/guest/initrd-lib.sh"
die() { echo "libvirt/run.sh: $*" >&2; exit 2; }
say() { echo "# $*" >&2; }
while [ $# -gt 0 ]; do
    case $1 in
        -o|--out) [ $# -ge 2 ] || die "$1 needs an argument"; out=$2; shift 2 ;;
        -t|--timeout) [ $# -ge 2 ] || die "$1 needs an argument"; timeout=$2; shift 2 ;;
        -e|--env) [ $# -ge 2 ] || die "$1 needs an argument"; envs+=("$2"); shift 2 ;;
        -v|--verbose) verbose=1; shift ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        coresident|roce|mgmt|doc) runs+=("$1"); shift ;;
        *) die "unknown run '$1' (coresident, roce, mgmt, doc)" ;;
    esac
done
[ ${#runs[@]} -gt 0 ] || runs=(doc coresident roce mgmt)
case $timeout in ''|*[!0-9]*) die "--timeout must be a number of seconds" ;; esac

# --- the doc check needs nothing else -----------------------------------------
pass=0 failn=0
result() { # RUN rc reason secs [logdir]
    if [ "$2" = 0 ]; then
        echo "ok $1 ($4s)"; pass=$((pass + 1))
    else
        echo "FAIL $1: $3 ($4s)${5:+ [logs: $5]}"; failn=$((failn + 1))
    fi
}
now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
vm_runs=()
for r in "${runs[@]}"; do
    if [ "$r" = doc ]; then
        t0=$(now)
        if why=$(python3 "$here/check.py" doc "$DOC" "$here/pvrdma-coresident.xml" "$here/pvrdma-roce.xml" 2>&1); then
            result doc 0 '' "$(secs_since "$t0")"
        else
            result doc 1 "$(echo "$why" | tail -n 1)" "$(secs_since "$t0")"
        fi
    else
        vm_runs+=("$r")
    fi
done
if [ ${#vm_runs[@]} = 0 ]; then
    echo "$pass passed, $failn failed"
    [ "$failn" = 0 ]; exit
fi

# --- prerequisites ------------------------------------------------------------
for c in virsh libvirtd setpriv python3 cpio gzip; do
    command -v "$c" >/dev/null || die "no '$c': install Debian's libvirt-daemon-driver-qemu and libvirt-clients (scripts/deps.sh)"
done
[ -x "$QEMU" ] || die "no QEMU at $QEMU (scripts/build.sh)"
"$QEMU" -nodefaults -device help 2>/dev/null | grep -q '^name "pvrdma"' || die "$QEMU has no pvrdma device"
if [ "$build" = 1 ]; then
    "$top/scripts/guest/build-image.sh" --quiet || die "guest image build failed"
fi
for f in vmlinux initrd.img firmware/pvh.bin; do
    [ -f "$G/$f" ] || die "no $G/$f: run scripts/guest/build-image.sh"
done

# the users the daemons and QEMUs run as
sys_user() { # NAME WHO: create the system user NAME if missing
    id "$1" >/dev/null 2>&1 && return 0
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$1" || die "cannot create user $1"
    say "created the system user $1 ($2 run as it)"
}
if [ "$(id -u)" = 0 ]; then
    lvuser=${PVRDMA_LIBVIRT_USER:-pvrdma-libvirt}
    sys_user "$lvuser" "libvirtd and QEMU"
    as_user=(setpriv --reuid="$(id -u "$lvuser")" --regid="$(id -g "$lvuser")" --init-groups)
    # host C's user (the mgmt run): another user, as libvirt gives each VM
    lvuser2=${PVRDMA_LIBVIRT_USER2:-pvrdma-libvirt2}
    sys_user "$lvuser2" "host C's libvirtd and QEMU"
    as_user2=(setpriv --reuid="$(id -u "$lvuser2")" --regid="$(id -g "$lvuser2")" --init-groups)
else
    lvuser=$(id -un) lvuser2=$(id -un)
    as_user=() as_user2=()
fi
lvgroup=$(id -gn "$lvuser")
lvgroup2=$(id -gn "$lvuser2")

[ -n "$out" ] || out=$top/build/libvirt/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
out=$(cd "$out" && pwd)
# the hosts' state: short paths (unix sockets), the user's own directory
state=$(mktemp -d /tmp/pvrdma-lv.XXXXXX)
chown "$lvuser:$lvgroup" "$state"
chmod 0711 "$state"     # host C's user reaches its own directory in it
say "libvirt $(libvirtd --version | awk '{print $NF}'), QEMU $QEMU, hosts in $state (user $lvuser), logs in $out"

# The daemons' user must reach QEMU, the guest's kernel and firmware and
# each run's files (initrds, consoles, the rendezvous).  A checkout in a
# private directory (root's home, mode 0700) is out of its reach: then
# those are staged in the private state directory, the runs happen there
# and each run's directory is copied to $out when it ends.
runroot=$out GX=$G
if [ ${#as_user[@]} -gt 0 ] &&
   ! "${as_user[@]}" sh -c 'test -x "$1" && test -r "$2" && test -x "$3"' _ \
        "$QEMU" "$G/vmlinux" "$out"; then
    mkdir -p "$state/stage/guest" "$state/run"
    cp "$QEMU" "$state/stage/qemu-system-x86_64"
    cp -rL "$G/vmlinux" "$G/firmware" "$state/stage/guest/"
    chown -R "$lvuser:$lvgroup" "$state/stage" "$state/run"
    chmod -R a+rX "$state/stage"
    chmod 0755 "$state/run"
    QEMU=$state/stage/qemu-system-x86_64 GX=$state/stage/guest runroot=$state/run
    say "$lvuser cannot reach this checkout: QEMU and the guest image staged in $state/stage, runs in $state/run (copied to $out)"
fi

# --- the two hosts ---------------------------------------------------------------
declare -A daemon_pid uri
host_user() { [ "$1" = C ] && echo "$lvuser2:$lvgroup2" || echo "$lvuser:$lvgroup"; }
host_env() { # HOST: the environment of that host's libvirtd
    local h=$state/$1
    echo "HOME=$h/home XDG_CONFIG_HOME=$h/config XDG_RUNTIME_DIR=$h/runtime XDG_CACHE_HOME=$h/cache XDG_DATA_HOME=$h/data"
}
start_host() { # HOST
    local h=$state/$1 _
    mkdir -p "$h/config/libvirt" "$h/runtime" "$h/cache" "$h/data" "$h/home"
    chmod 0700 "$h/runtime"
    {
        echo "# host $1 of tests/libvirt/run.sh"
        echo "host_uuid = \"$(cat /proc/sys/kernel/random/uuid)\""
        echo "log_outputs = \"3:file:$h/libvirtd.log\""
    } > "$h/config/libvirt/libvirtd.conf"
    # QEMU's stderr straight into the domain log, no virtlogd to start
    echo 'stdio_handler = "file"' > "$h/config/libvirt/qemu.conf"
    chown -R "$(host_user "$1")" "$h"
    local run_as=("${as_user[@]}")
    [ "$1" != C ] || run_as=("${as_user2[@]}")
    # shellcheck disable=SC2046
    "${run_as[@]}" env $(host_env "$1") libvirtd < /dev/null > "$h/libvirtd.out" 2>&1 &
    daemon_pid[$1]=$!
    uri[$1]="qemu+unix:///session?socket=$h/runtime/libvirt/libvirt-sock"
    for _ in $(seq 1 300); do
        virsh -q -c "${uri[$1]}" list --all > /dev/null 2>&1 && return 0
        kill -0 "${daemon_pid[$1]}" 2>/dev/null || break
        sleep 0.1
    done
    cat "$h/libvirtd.out" >&2
    die "libvirtd of host $1 did not come up"
}
vsh() { # HOST virsh-args...
    local h=$1; shift
    virsh -q -c "${uri[$h]}" "$@"
}
other() { [ "$1" = A ] && echo B || echo A; }

declare -a dom where tails
relay_pid=''
stop_relay() {
    [ -n "$relay_pid" ] || return 0
    kill "$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
    relay_pid=
}
cleanup() {
    local h n p f
    for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
    stop_relay
    for h in A B C; do
        [ -n "${daemon_pid[$h]:-}" ] || continue
        # the domains first: libvirtd leaves its QEMUs running when it exits
        for n in $(vsh "$h" list --name 2>/dev/null); do
            vsh "$h" destroy "$n" > /dev/null 2>&1 || true
        done
        p=${daemon_pid[$h]}
        kill "$p" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
        # a QEMU this host started that is still there (its pid file)
        for f in "$state/$h"/runtime/libvirt/qemu/run/*.pid; do
            [ -f "$f" ] || continue
            p=$(cat "$f" 2>/dev/null) || continue
            case $p in ''|*[!0-9]*) continue ;; esac
            if [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$QEMU")" ]; then
                kill -9 "$p" 2>/dev/null || true
            fi
        done
        mkdir -p "$out/hosts/$h"
        cp "$state/$h"/libvirtd.log "$state/$h"/libvirtd.out "$out/hosts/$h/" 2>/dev/null || true
        cp "$state/$h"/cache/libvirt/qemu/log/*.log "$out/hosts/$h/" 2>/dev/null || true
    done
    rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_host A
start_host B
say "hosts up: A ${uri[A]}, B ${uri[B]}"

free_port() { # udp|tcp [N]: N (default 1) different ports nobody has
               # bound now on 127.0.0.1, one a line
    python3 -c '
import socket, sys
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1] == "udp" else socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    held.append(s)
for s in held:
    print(s.getsockname()[1])' "$1" "${2:-1}"
}

# --- one run -------------------------------------------------------------------------
# migrate_vm I TAG: virsh migrate --live of VM I to the other host, its
# NIC's netdev bound at a new port there (the source keeps its own until
# it stops; udp-relay.py follows the destination from its first frame)
migrate_vm() {
    local i=$1 tag=$2 d=$rd/vm$1 src=${where[$1]} dst port lport t rc=0 secs
    dst=$(other "$src")
    port=$(free_port tcp) lport=$(free_port udp)
    t=$(now)
    if vsh "$src" dumpxml --migratable "${dom[$i]}" > "$d/domain-$tag.xml.tmp" 2> "$d/migrate-$tag.log" &&
       [ "$(grep -c "<local address='127.0.0.1' port='[0-9]*'/>" "$d/domain-$tag.xml.tmp")" = 1 ]; then
        sed "s|<local address='127.0.0.1' port='[0-9]*'/>|<local address='127.0.0.1' port='$lport'/>|" \
            "$d/domain-$tag.xml.tmp" > "$d/domain-$tag.xml"
        rm -f "$d/domain-$tag.xml.tmp"
        echo "virsh -c '${uri[$src]}' migrate --live ${dom[$i]} '${uri[$dst]}' --migrateuri tcp://127.0.0.1:$port --xml $d/domain-$tag.xml" >> "$d/migrate-$tag.log"
        vsh "$src" migrate --live "${dom[$i]}" "${uri[$dst]}" \
            --migrateuri "tcp://127.0.0.1:$port" --xml "$d/domain-$tag.xml" >> "$d/migrate-$tag.log" 2>&1 || rc=$?
    else
        echo "no migratable XML with one <local address='127.0.0.1' port=.../> (dumpxml: $d/domain-$tag.xml.tmp)" >> "$d/migrate-$tag.log"
        rc=99
    fi
    secs=$(secs_since "$t")
    {
        if [ "$rc" = 0 ]; then echo "status completed"; else echo "status failed virsh-rc $rc: $(grep -m1 'error\|no migratable' "$d/migrate-$tag.log")"; fi
        echo "virsh-rc $rc"
        echo "secs $secs"
        echo "from $src to $dst"
        echo "local-port $lport"
        echo "state-on-$dst $(vsh "$dst" domstate "${dom[$i]}" 2>/dev/null | head -n 1 || echo absent)"
        echo "state-on-$src $(vsh "$src" domstate "${dom[$i]}" 2>/dev/null | head -n 1 || echo absent)"
        echo "console-bytes $(stat -c %s "$d/console.log")"
    } > "$d/migrate-$tag.txt"
    [ "$rc" != 0 ] || where[$i]=$dst
    echo "vm$i: migration '$tag' $src -> $dst: $(head -n 1 "$d/migrate-$tag.txt") in ${secs}s" >> "$rd/harness.log"
}
# query_all TAG: every VM's query-pvrdma, on the host it is on
query_all() {
    local tag=$1 i d
    for i in 0 1; do
        d=$rd/vm$i
        echo "${where[$i]}" > "$d/qmp-$tag.host"
        if vsh "${where[$i]}" qemu-monitor-command "${dom[$i]}" '{"execute":"query-pvrdma"}' \
               > "$d/qmp-$tag.json" 2> "$d/qmp-$tag.err"; then
            rm -f "$d/qmp-$tag.err"
        else
            echo "vm$i: query-pvrdma '$tag' on ${where[$i]} failed: $(cat "$d/qmp-$tag.err")" >> "$rd/harness.log"
        fi
        vsh "${where[$i]}" qemu-monitor-command "${dom[$i]}" --hmp 'info pvrdma' \
            > "$d/qmp-$tag.hmp" 2>&1 || true
    done
    echo "query '$tag' done at $(secs_since "$t0")s" >> "$rd/harness.log"
}

# mgmt: the runner as management: a socketpair, one end to each QEMU
# through the libvirtd it runs under (qemu-monitor-command --pass-fds:
# getfd, then x-pvrdma-peer-add), into connect.log
mgmt_connect() {
    python3 - "${uri[A]}" "${dom[0]}" "${uri[C]}" "${dom[1]}" > "$rd/connect.log" 2>&1 <<'EOPY'
import socket
import subprocess
import sys

ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
for k in (0, 1):
    uri, dom, peer = sys.argv[1 + 2 * k], sys.argv[2 + 2 * k], sys.argv[4 - 2 * k]
    fd = ends[k].fileno()
    for cmd, extra in (
            ('{"execute":"getfd","arguments":{"fdname":"pvrdma-peer"}}',
             ["--pass-fds", str(fd)]),
            ('{"execute":"x-pvrdma-peer-add","arguments":{"fd":"pvrdma-peer",'
             '"name":"%s"}}' % peer, [])):
        r = subprocess.run(["virsh", "-q", "-c", uri, "qemu-monitor-command",
                            dom] + extra + [cmd], pass_fds=[fd],
                           capture_output=True, text=True)
        print("%s: %s -> %s %s" % (dom, cmd, r.stdout.strip(), r.stderr.strip()))
        if r.returncode or '"error"' in r.stdout:
            sys.exit(1)
    ends[k].close()
print("connected")
EOPY
}
# mgmt: the QEMUs' uids, and whether each QEMU's user can open its own
# QEMU's /proc/PID/mem (the method works) and the other's (it must not:
# the only way into the other VM's memory is what the connection gives)
try_mem() { # USER-ARRAY-NAME PID
    local -n who=$1
    "${who[@]}" /usr/bin/python3 -c 'import sys
try:
    open("/proc/%s/mem" % sys.argv[1], "rb").close()
    print("opened")
except OSError as e:
    print("refused errno %d" % e.errno)' "$2"
}
confine_check() {
    local p0 p1
    p0=$(cat "$state/A/runtime/libvirt/qemu/run/${dom[0]}.pid" 2>/dev/null) || p0=0
    p1=$(cat "$state/C/runtime/libvirt/qemu/run/${dom[1]}.pid" 2>/dev/null) || p1=0
    {
        echo "uid vm0 $(stat -c %u "/proc/$p0" 2>/dev/null || echo none)"
        echo "uid vm1 $(stat -c %u "/proc/$p1" 2>/dev/null || echo none)"
        echo "vm0-own $(try_mem as_user "$p0")"
        echo "vm0-other $(try_mem as_user "$p1")"
        echo "vm1-own $(try_mem as_user2 "$p1")"
        echo "vm1-other $(try_mem as_user2 "$p0")"
    } > "$rd/confine.txt" 2>&1
}

run_vms() { # MODE
    local mode=$1 i d ip rdv name reason='' rc0 ports vmports relports
    local -A mig_done qmp_done
    local -a rc vmstate
    rd=$runroot/$mode
    rm -rf "$rd"; mkdir -p "$rd"
    t0=$(now)
    rdv=$state/rdv-$mode
    # the NICs' own ports, and the relay's port for each
    mapfile -t ports < <(free_port udp 4)
    [ ${#ports[@]} = 4 ] || die "no free UDP ports on 127.0.0.1"
    vmports=("${ports[0]}" "${ports[1]}")
    relports=("${ports[2]}" "${ports[3]}")
    for i in 0 1; do
        d=$rd/vm$i
        mkdir -p "$d/extra/usr/lib/pvrdma"
        ip=10.0.0.$((i + 1))
        cp "$here/guest.sh" "$d/extra/test.sh"
        cp "$top/scripts/guest/guest-lib.sh" "$d/extra/usr/lib/pvrdma/guest-lib.sh"
        cp "$top/tests/guest/common.sh" "$d/extra/usr/lib/pvrdma/tests-common.sh"
        # the variables run-vm.sh gives its guests (guest-lib.sh, common.sh)
        {
            echo "PVRDMA_VM=$i"
            echo "PVRDMA_VMS=2"
            echo "PVRDMA_IP=$ip"
            echo "PVRDMA_PREFIX=24"
            echo "PVRDMA_PEER_IP=10.0.0.$((2 - i))"
            echo "PVRDMA_DEVICE=1"
            echo "PVRDMA_NIC=vmxnet3"
            echo "PVRDMA_PEER_DEVICE=1"
            echo "PVRDMA_PEER_NIC=vmxnet3"
            echo "PVRDMA_VM_DEVICES='1 1'"
            echo "PVRDMA_VM_NICS='vmxnet3 vmxnet3'"
            echo "PVRDMA_RENDEZVOUS=$([ "$mode" = roce ] && echo 0 || echo 1)"
            echo "PVRDMA_SWITCH=0"
            echo "PVRDMA_TEST=libvirt-$mode"
            echo "PVRDMA_RESTART=0"
            echo "export PVRDMA_VM PVRDMA_VMS PVRDMA_IP PVRDMA_PREFIX PVRDMA_PEER_IP PVRDMA_DEVICE PVRDMA_NIC PVRDMA_PEER_DEVICE PVRDMA_PEER_NIC PVRDMA_VM_DEVICES PVRDMA_VM_NICS PVRDMA_RENDEZVOUS PVRDMA_SWITCH PVRDMA_TEST PVRDMA_RESTART"
            rig_env "LV_MODE=$mode" "LV_MOVER=1" ${envs[@]+"${envs[@]}"} || die "bad --env"
        } > "$d/extra/test.env"
        rig_initrd "$G/initrd.img" "$d/extra" "$d" || die "cannot build $d/initrd.img"
        : > "$d/console.log"
        name=pvrdma-lv-$mode-vm$i
        dom[$i]=$name where[$i]=A rc[$i]='' vmstate[$i]=running
        # mgmt: VM 1 on host C, as another user
        [ "$mode$i" != mgmt1 ] || where[$i]=C
        sed -e "s|,rendezvous=@RENDEZVOUS@|$([ "$mode" = mgmt ] && echo ,coresident=on,roce=off || echo '&')|" \
            -e "s|@NAME@|$name|g" -e "s|@QEMU@|$QEMU|g" \
            -e "s|@KERNEL@|$GX/vmlinux|g" -e "s|@INITRD@|$d/initrd.img|g" \
            -e "s|@IP@|$ip|g" -e "s|@MAC@|52:54:00:12:34:$((56 + i))|g" \
            -e "s|@LOCAL_PORT@|${vmports[$i]}|g" -e "s|@REMOTE_PORT@|${relports[$i]}|g" \
            -e "s|@CONSOLE@|$d/console.log|g" -e "s|@FIRMWARE@|$GX/firmware|g" \
            -e "s|@RENDEZVOUS@|$rdv|g" \
            "$here/pvrdma-$([ "$mode" = mgmt ] && echo coresident || echo "$mode").xml" > "$d/domain.xml"
        ! grep -n '@[A-Z_]*@' "$d/domain.xml" || die "$d/domain.xml: a placeholder is left"
    done
    chown -R "$lvuser:$lvgroup" "$rd"
    chmod 0755 "$rd"
    if [ "$mode" = mgmt ]; then
        [ -n "${daemon_pid[C]:-}" ] || start_host C
        chown -R "$(host_user C)" "$rd/vm1"
    fi
    python3 "$here/udp-relay.py" --ready "$rd/relay.ready" --log "$rd/relay.log" \
        "${relports[0]}:${vmports[0]}" "${relports[1]}:${vmports[1]}" < /dev/null 2>> "$rd/relay.log" &
    relay_pid=$!
    for _ in $(seq 1 100); do [ ! -e "$rd/relay.ready" ] && kill -0 "$relay_pid" 2>/dev/null || break; sleep 0.05; done
    [ -e "$rd/relay.ready" ] || { cat "$rd/relay.log" >&2; die "udp-relay.py did not start"; }
    for i in 0 1; do
        if ! vsh "${where[$i]}" create "$rd/vm$i/domain.xml" >> "$rd/harness.log" 2>&1; then
            reason="virsh create ${dom[$i]} failed: $(grep -m1 error "$rd/harness.log")"
            break
        fi
        if [ "$verbose" = 1 ]; then
            tail -n +1 -F "$rd/vm$i/console.log" 2>/dev/null | sed -u "s/\r\$//; s/^/[$mode vm$i] /" >&2 &
            tails+=($!)
        fi
    done
    if [ -z "$reason" ] && [ "$mode" = mgmt ]; then
        if mgmt_connect; then
            confine_check
        else
            reason="management could not connect the VMs: $(tail -n 1 "$rd/connect.log")"
        fi
    fi

    # watch the consoles, answer the markers, until both guests reported
    local log markers tag active polls=0 failed_at=''
    while [ -z "$reason" ]; do
        active=0 polls=$((polls + 1))
        for i in 0 1; do
            [ "${vmstate[$i]}" = running ] || continue
            log=$rd/vm$i/console.log
            markers=$(grep -a '^PVRDMA-\(MIGRATE\|QMP\) ' "$log" | tr -d '\r' || true)
            # migrations before queries: a query asked for with or after a
            # migration goes to the migrated QEMU
            for tag in $(grep -a '^PVRDMA-MIGRATE ' <<< "$markers" | awk '{print $2}'); do
                [[ $tag =~ ^[A-Za-z0-9._-]+$ ]] || continue
                [ -z "${mig_done[$i.$tag]:-}" ] || continue
                mig_done[$i.$tag]=1
                migrate_vm "$i" "$tag"
            done
            for tag in $(grep -a '^PVRDMA-QMP ' <<< "$markers" | awk '{print $2}'); do
                [[ $tag =~ ^[A-Za-z0-9._-]+$ ]] || continue
                [ -z "${qmp_done[$tag]:-}" ] || continue
                qmp_done[$tag]=1
                query_all "$tag"
            done
            if grep -aq '^PVRDMA-GUEST-EXIT=' "$log"; then
                rc[$i]=$(grep -a '^PVRDMA-GUEST-EXIT=' "$log" | head -n 1 | tr -d '\r' | sed 's/.*=//')
                vmstate[$i]=exited
                echo "vm$i: guest exit status ${rc[$i]} at $(secs_since "$t0")s" >> "$rd/harness.log"
                continue
            fi
            # the domain went away without the guest's exit status (asked
            # every 2 s: a virsh call costs a few tens of ms)
            if [ $((polls % 10)) = 0 ] && ! vsh "${where[$i]}" domstate "${dom[$i]}" 2>/dev/null | grep -qx running; then
                vmstate[$i]=died rc[$i]=125
                reason="vm$i: the domain on host ${where[$i]} is $(vsh "${where[$i]}" domstate "${dom[$i]}" 2>&1 | head -n 1) before the guest reported"
                continue
            fi
            active=$((active + 1))
        done
        [ "$active" -gt 0 ] || break
        if [ "$(awk -v a="$t0" -v b="$(now)" -v t="$timeout" 'BEGIN{print (b-a > t)}')" = 1 ]; then
            reason="timed out after ${timeout}s"
            break
        fi
        # one guest failed: the other would only wait for it (10 s to say
        # its own failure)
        for i in 0 1; do
            if [ "${vmstate[$i]}" = exited ] && [ "${rc[$i]}" != 0 ] && [ -z "$failed_at" ]; then
                failed_at=$(now)
            fi
        done
        if [ -n "$failed_at" ] && [ "$(awk -v a="$failed_at" -v b="$(now)" 'BEGIN{print (b-a > 10)}')" = 1 ]; then
            reason=failed
            break
        fi
        sleep 0.2
    done
    for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
    tails=()
    # the guests power off (on_poweroff destroy); whatever is left goes
    for i in 0 1; do
        for _ in $(seq 1 50); do
            vsh "${where[$i]}" domstate "${dom[$i]}" > /dev/null 2>&1 || continue 2
            sleep 0.1
        done
        vsh "${where[$i]}" destroy "${dom[$i]}" >> "$rd/harness.log" 2>&1 || true
    done
    stop_relay

    # the result: the first guest's FAIL line, or the host check
    for i in 0 1; do echo "${rc[$i]:-none}" > "$rd/vm$i/rc"; done
    if [ -n "$reason" ] || [ "${rc[0]}" != 0 ] || [ "${rc[1]}" != 0 ]; then
        rc0=$(for i in 0 1; do tr -d '\r' < "$rd/vm$i/console.log" | grep -a -m1 '^FAIL: ' | sed "s/^FAIL: /vm$i: /" || true; done | head -n 1)
        [ -z "$rc0" ] || reason="$rc0"
        [ "$reason" != failed ] || reason="guest exit status ${rc[0]:-?}/${rc[1]:-?}"
        result "$mode" 1 "$reason" "$(secs_since "$t0")" "$rd"
        return
    fi
    if python3 "$here/check.py" run "$rd" "$mode" "$([ "$mode" = mgmt ] && echo -1 || echo 1)" > "$rd/check.log" 2>&1; then
        sed 's/^/  /' "$rd/check.log" >&2
        result "$mode" 0 '' "$(secs_since "$t0")"
    else
        sed 's/^/  /' "$rd/check.log" >&2
        result "$mode" 1 "host check: $(tail -n 1 "$rd/check.log")" "$(secs_since "$t0")" "$rd"
    fi
}

for r in "${vm_runs[@]}"; do
    run_vms "$r"
    # staged: the run's files where the logs are
    [ "$runroot" = "$out" ] || cp -a "$runroot/$r" "$out/" 2>/dev/null || true
done
echo "$pass passed, $failn failed"
[ "$failn" = 0 ]
