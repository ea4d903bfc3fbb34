#!/bin/bash
# CI's fresh machine, reproduced: a new Debian 12 root (debootstrap, the
# packages a fresh Debian 12 machine of CI has: make, gcc, git), a clean
# clone of this repository's HEAD in it, then the README's two commands,
# timed: 'make demo', then '.ci/run' (the test command with the sanitizer
# suite, as CI runs it).  Nothing of this checkout's build/ is used: QEMU,
# the guest image and the sanitizer build are made from nothing.
#
#   scripts/fresh-machine.sh [-o DIR] [--no-demo] [--keep] [--prepare-only]
# --prepare-only: make the root and the clone, run nothing (implies --keep;
#   then mount proc, sys, dev and dev/pts in DIR/root and chroot there).
#
# As root (debootstrap, chroot, mounts); network to Debian's mirror.
# Writes DIR/demo.log, DIR/ci.log and DIR/times.txt (wall time of each
# command and of each suite, from the test command's own '# ...: N s'
# lines); the root stays in DIR/root with --keep (else it is removed).
# Takes as long as CI: about an hour on 2 cores.  Exit status: that of the
# first command that failed (make demo, then .ci/run), else 0.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out= demo=1 keep=0 prepare=0
while [ $# -gt 0 ]; do
    case $1 in
        -o|--out) out=$2; shift 2 ;;
        --no-demo) demo=0; shift ;;
        --keep) keep=1; shift ;;
        --prepare-only) prepare=1 keep=1; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "fresh-machine: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "fresh-machine: run as root" >&2; exit 1; }
[ -n "$out" ] || out=$top/build/fresh-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"; out=$(cd "$out" && pwd)
root=$out/root
mirror=http://deb.debian.org/debian

command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap > "$out/host-apt.log"

mounted=()
cleanup() {
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -l "${mounted[$i]}" 2>/dev/null || true
    done
    if [ "$keep" = 0 ] && [ -d "$root" ]; then
        rm -rf --one-file-system "$root"
    fi
}
trap cleanup EXIT

t0=$SECONDS
debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$mirror" \
    > "$out/debootstrap.log" 2>&1 || { tail -20 "$out/debootstrap.log"; exit 1; }
cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
for m in proc sys dev dev/pts; do
    mkdir -p "$root/$m"
    case $m in
        proc) mount -t proc proc "$root/proc" ;;
        sys) mount -t sysfs sys "$root/sys" ;;
        *) mount --bind "/$m" "$root/$m" ;;
    esac
    mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# what a fresh Debian 12 machine of CI has on it (the environment's list)
chroot "$root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q make gcc git procps' \
    > "$out/base-apt.log" 2>&1 || { tail -20 "$out/base-apt.log"; exit 1; }
# a clean clone: what is committed, nothing of this checkout's build/
git clone -q --no-local "$top" "$root/work/pvrdma"
echo "root ready: $((SECONDS - t0)) s (HEAD $(git -C "$top" rev-parse --short HEAD))" | tee "$out/times.txt"
[ "$prepare" = 0 ] || exit 0

status=0
run() { # name command: its exit status, the first failure's, is ours
    local t=$SECONDS rc=0
    chroot "$root" bash -c "cd /work/pvrdma && $2" > "$out/$1.log" 2>&1 || rc=$?
    echo "$1 ($2): rc $rc, $((SECONDS - t)) s" | tee -a "$out/times.txt"
    [ "$status" != 0 ] || status=$rc
}
[ "$demo" = 0 ] || run demo "make demo"
run ci ".ci/run"
grep -E '^# [a-z -]+: [0-9]+ s' "$out/ci.log" | tee -a "$out/times.txt" || true
tail -n 1 "$out/ci.log" | tee -a "$out/times.txt"
grep -E '^(FAIL|# failed)' "$out/ci.log" | tee -a "$out/times.txt" || true
exit "$status"
