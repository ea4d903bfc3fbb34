#!/bin/bash
# Build the nested rig's "L1" image: a TCG VM that runs soft-RoCE (rdma_rxe)
# and boots L2 test guests with our QEMU.
#
#   build/nested/l1/vmlinux      the guest kernel (same as build/guest/vmlinux)
#   build/nested/l1/initrd.img   build/guest's rootfs (busybox, rdma-core,
#                                perftest, iproute2, modules) plus:
#                                  tun bridge stp llc dummy modules
#                                  /usr/bin/qemu-system-x86_64 (a snapshot of
#                                  build/qemu's, stripped) + the shared libs
#                                  it needs that the rootfs lacks (from the
#                                  host, Debian 12 like the rootfs)
#                                  /usr/share/pvrdma/firmware (option ROMs
#                                  + SeaBIOS), /usr/share/pvrdma/l2/{vmlinux,
#                                  initrd.img} (the L2 guest image), /init
#   build/nested/l1/qemu-system-x86_64   the unstripped snapshot (run-l1.sh
#                                boots L1 with it: build/qemu may be rebuilt
#                                under our feet)
#   build/nested/l1/manifest.txt
#
# Reuses build/guest (runs scripts/guest/build-image.sh first; nothing is
# downloaded here).  Cached: rebuilds only when this script, l1-init, the
# guest image, the QEMU binary, the firmware or the host libraries change.
#
#   scripts/nested/build-l1.sh [--force] [--quiet]
#
# Environment: QEMU (default build/qemu/qemu-system-x86_64),
# PVRDMA_GUEST_DIR (build/guest), PVRDMA_NESTED_DIR (build/nested),
# PVRDMA_L1_COMPRESS (none (default: faster to boot under TCG) or gzip)
set -euo pipefail
trap 'echo "build-l1: ERROR: command failed at line $LINENO: $BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
G=${PVRDMA_GUEST_DIR:-$top/build/guest}
N=${PVRDMA_NESTED_DIR:-$top/build/nested}
QEMU=${QEMU:-$top/build/qemu/qemu-system-x86_64}
L=$N/l1
compress=${PVRDMA_L1_COMPRESS:-none}

force=0 quiet=0
for a in "$@"; do
    case $a in
        --force) force=1 ;;
        --quiet|-q) quiet=1 ;;
        -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
        *) echo "build-l1.sh: unknown argument: $a" >&2; exit 2 ;;
    esac
done
case $compress in none|gzip) ;; *) echo "build-l1.sh: PVRDMA_L1_COMPRESS must be none or gzip" >&2; exit 2 ;; esac

t0=$(date +%s.%N)
say() { [ "$quiet" = 1 ] || echo "build-l1: $*" >&2; }
die() { echo "build-l1: ERROR: $*" >&2; exit 1; }
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

for tool in cpio gzip readelf strip depmod ldd sha256sum flock; do
    command -v "$tool" >/dev/null || die "missing host tool '$tool' (run scripts/deps.sh)"
done
[ -x "$QEMU" ] || die "no QEMU at $QEMU (scripts/build.sh, or set QEMU=)"

# 1. the L2 guest image (cached, ~0.1 s)
PVRDMA_GUEST_DIR=$G "$top/scripts/guest/build-image.sh" --quiet || die "scripts/guest/build-image.sh failed"
for f in vmlinux initrd.img image.key manifest.txt firmware/pvh.bin; do
    [ -f "$G/$f" ] || die "no $G/$f"
done
KV=$(awk '$1 == "kernel" {print $2; exit}' "$G/manifest.txt")
KM=$G/kernel/$KV/lib/modules/$KV
[ -f "$KM/modules.dep" ] || die "no $KM/modules.dep (kernel package not extracted?)"
BIOS=${PVRDMA_BIOS:-/usr/share/seabios/bios-256k.bin}
[ -f "$BIOS" ] || die "no $BIOS (apt-get install seabios)"

mkdir -p "$L"
exec 9> "$N/.lock"
flock 9

# 2. snapshot QEMU (it may be relinked while we read it: check the copy runs
#    and has the device)
cp "$QEMU" "$L/qemu.new"
"$L/qemu.new" -version > /dev/null 2>&1 || die "$QEMU copy does not run (being rebuilt? retry)"
"$L/qemu.new" -nodefaults -device help 2>/dev/null | grep -q '^name "pvrdma"' ||
    die "$QEMU has no pvrdma device"
qsum=$(sha256sum < "$L/qemu.new" | cut -d' ' -f1)

# host libraries QEMU needs (resolved by the host's loader)
hostlibs=$(ldd "$L/qemu.new" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort)

key=$( {
    cat "$0" "$here/l1-init"
    echo "KV=$KV compress=$compress"
    cat "$G/image.key"
    sha256sum "$G/vmlinux" "$G/initrd.img" "$G"/firmware/* "$BIOS" | cut -d' ' -f1
    echo "qemu=$qsum"
    while read -r so path; do echo "$so $(sha256sum < "$path" | cut -d' ' -f1)"; done <<< "$hostlibs"
} | sha256sum | cut -d' ' -f1)
if [ "$force" = 0 ] && [ -f "$L/vmlinux" ] && [ -f "$L/initrd.img" ] && [ -x "$L/qemu-system-x86_64" ] &&
   [ "$(cat "$L/image.key" 2>/dev/null)" = "$key" ]; then
    rm -f "$L/qemu.new"
    say "cached (key ${key:0:12}) in $(elapsed)s"
    exit 0
fi
say "building L1 image in $L"
rm -f "$L/image.key"

# 3. root filesystem: the L2 guest's, unpacked from its (canonical) initrd
R=$N/rootfs
rm -rf "$R"; mkdir -p "$R"
(cd "$R" && cpio --quiet -i -d -m --no-absolute-filenames < "$G/initrd.img") ||
    die "unpacking $G/initrd.img failed"
[ -x "$R/usr/bin/busybox" ] || die "no busybox in the guest image"
LIBDIR=$R/usr/lib/x86_64-linux-gnu

# 4. QEMU + libraries
install -m 0755 "$L/qemu.new" "$R/usr/bin/qemu-system-x86_64"
strip --strip-unneeded "$R/usr/bin/qemu-system-x86_64"
added=
while read -r so path; do
    [ -n "$so" ] || continue
    if [ ! -e "$LIBDIR/$so" ]; then
        cp -L "$path" "$LIBDIR/$so"
        added="$added $so"
    fi
done <<< "$hostlibs"
needed() { { readelf -d "$@" 2>/dev/null || true; } | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
missing=
todo=$(needed "$R/usr/bin/qemu-system-x86_64")
declare -A SEEN
while [ -n "$todo" ]; do
    next=
    for so in $todo; do
        [ -z "${SEEN[$so]:-}" ] || continue
        SEEN[$so]=1
        if [ ! -e "$LIBDIR/$so" ]; then missing="$missing $so"; continue; fi
        next="$next $(needed "$(readlink -f "$LIBDIR/$so")")"
    done
    todo=$next
done
[ -z "$missing" ] || die "libraries QEMU needs are missing from the L1 tree:$missing"

# 5. firmware for L2 (and the L2 image)
F=$R/usr/share/pvrdma/firmware
mkdir -p "$F" "$R/usr/share/pvrdma/l2"
cp "$G"/firmware/* "$F/"
cp "$BIOS" "$F/bios-256k.bin"
cp "$G/vmlinux" "$G/initrd.img" "$G/manifest.txt" "$R/usr/share/pvrdma/l2/"

# 6. kernel modules L1 needs on top of the guest's (bridge, taps, dummy)
RM=$R/usr/lib/modules/$KV
for m in kernel/drivers/net/tun.ko kernel/net/bridge/bridge.ko kernel/net/802/stp.ko \
         kernel/net/llc/llc.ko kernel/drivers/net/dummy.ko kernel/drivers/net/veth.ko; do
    [ -f "$KM/$m" ] || die "no $m in the kernel package"
    mkdir -p "$RM/$(dirname "$m")"
    cp "$KM/$m" "$RM/$m"
done
depmod -b "$R" "$KV" || die "depmod on the L1 tree failed"
for m in tun bridge rdma_rxe ib_uverbs rdma_ucm dummy; do
    grep -q "/$m.ko:" "$RM/modules.dep" || die "module $m not in the L1 modules.dep"
done

# 7. init, identity, manifest
install -m 0755 "$here/l1-init" "$R/init"
echo pvrdma-l1 > "$R/etc/hostname"
{
    echo "# pvrdma nested rig L1 image (scripts/nested/build-l1.sh)"
    echo "kernel $KV"
    echo "l2-image $(cat "$G/image.key")"
    echo "qemu $qsum $("$L/qemu.new" -version | head -n1)"
    echo "host-libs:${added:- none}"
    echo "bios $(sha256sum < "$BIOS" | cut -d' ' -f1) $BIOS"
    echo "compress $compress"
    echo "key $key"
} > "$L/manifest.txt"
cp "$L/manifest.txt" "$R/etc/pvrdma-l1-manifest"

# 8. archive (reproducible), kernel, QEMU snapshot for the L0 side
find "$R" -exec touch -h -d @0 {} +
if [ "$compress" = gzip ]; then
    (cd "$R" && find . -mindepth 1 | LC_ALL=C sort |
        cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -n -1 > "$L/initrd.img.tmp"
else
    (cd "$R" && find . -mindepth 1 | LC_ALL=C sort |
        cpio --quiet -o -H newc -R 0:0 --reproducible) > "$L/initrd.img.tmp"
fi
mv "$L/initrd.img.tmp" "$L/initrd.img"
cp "$G/vmlinux" "$L/vmlinux.tmp"; mv "$L/vmlinux.tmp" "$L/vmlinux"
mv "$L/qemu.new" "$L/qemu-system-x86_64"
rm -rf "$R"
echo "$key" > "$L/image.key"
say "done in $(elapsed)s: $L/initrd.img ($(du -k "$L/initrd.img" | cut -f1) KiB), added libs:${added:- none}"
