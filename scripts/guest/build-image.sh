#!/bin/bash
# Build the "real guest" image used by scripts/guest/run-vm.sh:
#   build/guest/vmlinuz       Debian bookworm 6.1 kernel (linux-image-6.1.0-N-amd64)
#   build/guest/vmlinux       the same kernel, its XZ payload decompressed
#                             once here: an ELF with the PVH entry note,
#                             which QEMU boots directly (-kernel); what the
#                             rig boots (under TCG the bzImage spends
#                             5-15 s decompressing itself at every boot)
#   build/guest/initrd.img    (uncompressed newc cpio, for the same reason)
#                             busybox + rdma-core + perftest + qperf +
#                             iscsistart + nfs-utils + rpcbind +
#                             iproute2 + kernel modules +
#                             vmw_pvrdma.ko built from Debian's
#                             linux-source-6.1 (unmodified)
#   build/guest/manifest.txt  exact package versions, kernel, vermagic
#
# Everything comes from Debian packages (apt-get download / dpkg-deb -x);
# only linux-headers-6.1.0-N-amd64 is installed on the host (to build the
# module).  Cached: a key over this script, the init, and the exact package
# versions; rebuilds only when one of those changes.
#
#   scripts/guest/build-image.sh [--force] [--quiet]
#
# Environment:
#   PVRDMA_GUEST_KERNEL  kernel ABI to use, e.g. 6.1.0-56-amd64
#                        (default: whatever linux-headers-amd64's candidate
#                        in bookworm(-security) depends on)
#   PVRDMA_GUEST_DIR     output directory (default build/guest; another
#                        release's: build/guest-RELEASE)
#   PVRDMA_GUEST_RELEASE the Debian release whose kernel, vmw_pvrdma source
#                        and userspace the image has (default bookworm, 6.1;
#                        trixie: 6.12, sid).  Another release than the
#                        host's is fetched through a private apt root in
#                        $G/apt, and vmw_pvrdma is built in a debootstrapped
#                        chroot of that release ($G/chroot: its kbuild wants
#                        its own glibc and gcc)
set -euo pipefail
trap 'echo "build-image: ERROR: command failed at line $LINENO: $BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/guest/release-lib.sh
. "$here/release-lib.sh"
RELEASE=${PVRDMA_GUEST_RELEASE:-bookworm}
G=$(guest_dir "$RELEASE") || exit 2
MIRROR=${PVRDMA_DEBIAN_MIRROR:-http://deb.debian.org/debian}

force=0 quiet=0
for a in "$@"; do
    case $a in
        --force) force=1 ;;
        --quiet|-q) quiet=1 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "build-image.sh: unknown argument: $a" >&2; exit 2 ;;
    esac
done

t0=$(date +%s.%N)
say() { [ "$quiet" = 1 ] || echo "build-image: $*" >&2; }
die() { echo "build-image: ERROR: $*" >&2; exit 1; }
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
# apt-get download as root warns that _apt cannot write the target dir
APT_DL=(apt-get -q -o APT::Sandbox::User=root download)
[ "$(id -u)" = 0 ] || APT_DL=(apt-get -q download)

# the release's packages: the host's apt for bookworm, else a private root
APTO=()
if [ "$RELEASE" != bookworm ]; then
    mkdir -p "$G/apt/state/lists/partial" "$G/apt/cache/archives/partial"
    touch "$G/apt/state/status"
    echo "deb $MIRROR $RELEASE main" > "$G/apt/sources.list"
    APTO=(-o "Dir::Etc::SourceList=$G/apt/sources.list"
          -o Dir::Etc::SourceParts=/dev/null -o "Dir::State=$G/apt/state"
          -o "Dir::Cache=$G/apt/cache" -o "Dir::State::status=$G/apt/state/status"
          -o Debug::NoLocking=1
          # a mirror's copy of unstable may be older than its Release's
          # week of validity (seen: a fresh machine without this machine's
          # Check-Valid-Until=false refused it); the signatures still count
          -o Acquire::Check-Valid-Until=false)
    if [ -z "$(ls "$G"/apt/state/lists/*_Packages 2>/dev/null)" ] ||
       [ -n "$(find "$G/apt/state/lists" -name '*_Packages' -mmin +1440)" ]; then
        apt-get -q "${APTO[@]}" update > "$G/apt-update.log" 2>&1 ||
            die "apt-get update for $RELEASE failed ($G/apt-update.log)"
    fi
fi

for tool in apt-cache apt-get dpkg-deb depmod modinfo cpio gzip xz readelf make; do
    command -v "$tool" >/dev/null || die "missing host tool '$tool' (run scripts/deps.sh)"
done

# ---------------------------------------------------------------------------
# 1. Resolve the kernel ABI and the exact package versions
# ---------------------------------------------------------------------------
candidate() { # pkg -> candidate version in the release (or empty)
    apt-cache "${APTO[@]}" policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}' | sed 's/^(none)$//'
}

USER_PKGS="busybox-static libc6 libgcc-s1
 libibverbs1 ibverbs-providers ibverbs-utils librdmacm1 rdmacm-utils libibumad3
 perftest qperf libpci3 libudev1 zlib1g libnl-3-200 libnl-route-3-200
 iproute2 libbpf1 libbsd0 libmd0 libcap2 libelf1 libmnl0 libselinux1
 libpcre2-8-0 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2
 libkrb5support0 libkeyutils1
 open-iscsi libopeniscsiusr libssl3 libkmod2 libzstd1 liblzma5
 nfs-kernel-server nfs-common rpcbind libtirpc-common netbase libnfsidmap1
 libevent-core-2.1-7 libsqlite3-0 libwrap0 libnsl2 libblkid1 libuuid1
 libmount1 libsystemd0 libgcrypt20 libgpg-error0 liblz4-1"
declare -A VER
resolve() {
    KV=${PVRDMA_GUEST_KERNEL:-}
    if [ -z "$KV" ]; then
        hv=$(candidate linux-headers-amd64)
        [ -n "$hv" ] || die "no candidate for linux-headers-amd64; is apt updated (scripts/deps.sh)?"
        KV=$(apt-cache "${APTO[@]}" show "linux-headers-amd64=$hv" |
             sed -n 's/^Depends:.*linux-headers-\([0-9][^ ,]*-amd64\).*/\1/p' | head -n1)
        [ -n "$KV" ] || die "linux-headers-amd64 $hv does not depend on an -amd64 headers package (backports pinned?); set PVRDMA_GUEST_KERNEL"
    fi
    if [ "$RELEASE" = bookworm ]; then
        case $KV in 6.1.0-*-amd64) ;; *) die "PVRDMA_GUEST_KERNEL=$KV: expected 6.1.0-N-amd64" ;; esac
    fi
    SRCPKG=linux-source-$(echo "$KV" | cut -d. -f1,2)

    # newer kernels split the image: linux-binary (vmlinuz), linux-modules,
    # linux-base (modules.builtin, modules.order)
    IMG_PKGS="linux-image-$KV"
    for p in "linux-binary-$KV" "linux-modules-$KV" "linux-base-$KV"; do
        [ -z "$(candidate "$p")" ] || IMG_PKGS="$IMG_PKGS $p"
    done
    KPKGS="$IMG_PKGS linux-headers-$KV linux-headers-${KV%-amd64}-common"

    # another release names some libraries anew (64-bit time_t: t64) and
    # drops others; the closure check below finds what is then missing
    if [ "$RELEASE" != bookworm ]; then
        local up="" p
        # what newer nfs-utils (rpc.mountd, nfsdctl) link besides; a|b:
        # the first the release has (unstable renamed libxml2 by soname)
        local alt q found names="" wanted
        wanted="$USER_PKGS libxml2-16|libxml2 libreadline8 libtinfo6 libnl-genl-3-200"
        declare -A HAS=()
        for p in $wanted; do
            for alt in ${p//|/ }; do names="$names $alt ${alt}t64"; done
        done
        # one apt-cache call for every name (one a name costs 0.6 s)
        while read -r q v; do
            [ "$v" = "(none)" ] || HAS[$q]=1
        done < <(
            # shellcheck disable=SC2086
            apt-cache "${APTO[@]}" policy $names 2>/dev/null |
            awk '/^[^ ].*:$/ {p=substr($0,1,length($0)-1)} /Candidate:/ {print p, $2}')
        for p in $wanted; do
            found=
            for alt in ${p//|/ }; do
                for q in "$alt" "${alt}t64"; do
                    if [ -z "$found" ] && [ -n "${HAS[$q]:-}" ]; then
                        found=$q
                    fi
                done
            done
            if [ -n "$found" ]; then up="$up $found"
            else say "$RELEASE has no $p: left out"
            fi
        done
        USER_PKGS=$up
    fi
    # one apt-cache call for all candidates
    while read -r p v; do VER[$p]=$v; done < <(
        # shellcheck disable=SC2086
        apt-cache "${APTO[@]}" policy $KPKGS $SRCPKG $USER_PKGS 2>/dev/null |
        awk '/^[^ ].*:$/ {p=substr($0,1,length($0)-1)} /Candidate:/ {print p, $2}')
    for p in $KPKGS $SRCPKG $USER_PKGS; do
        v=${VER[$p]:-}
        [ -n "$v" ] && [ "$v" != "(none)" ] || die "package '$p' not available from apt (run scripts/deps.sh / apt-get update)"
    done
    KVER=${VER[linux-image-$KV]}
    [ "${VER[linux-headers-$KV]}" = "$KVER" ] ||
        die "linux-image-$KV ($KVER) and linux-headers-$KV (${VER[linux-headers-$KV]}) differ"
    # the kernel's source package of exactly its version if the archive has it
    SRCVER=$KVER
    if ! apt-cache "${APTO[@]}" show "$SRCPKG=$SRCVER" >/dev/null 2>&1; then
        SRCVER=${VER[$SRCPKG]}
        say "WARNING: $SRCPKG=$KVER not available, using $SRCVER"
    fi
    VER[$SRCPKG]=$SRCVER
    # Option ROMs for -kernel boot (linuxboot_dma.bin, kvmvapic.bin): Debian's
    # QEMU source (+ds) has no prebuilt blobs and the lean build does not build
    # pc-bios/optionrom, so take them from qemu-system-data, preferably the
    # 10.0 build in bookworm-backports.
    FWVER=$(apt-cache madison qemu-system-data 2>/dev/null | awk -F'|' '$2 ~ /1:10\.0\./ {gsub(/ /,"",$2); print $2; exit}')
    [ -n "$FWVER" ] || FWVER=$(apt-cache policy qemu-system-data 2>/dev/null |
                               awk '/Candidate:/ {print $2; exit}')
    [ -n "$FWVER" ] || die "qemu-system-data not available from apt"
    VER[qemu-system-data]=$FWVER
}
# Asking apt costs ~0.6 s a call: remember the answer until the apt lists,
# the apt configuration, this script or PVRDMA_GUEST_KERNEL change.
mkdir -p "$G"
aptstamp=$( { stat -c '%n %Y %s' /var/lib/apt/lists/*_Packages* /var/lib/apt/lists/*_Release \
        /etc/apt/sources.list /etc/apt/sources.list.d/* /etc/apt/preferences /etc/apt/preferences.d/* 2>/dev/null || true
    ls -l --time-style=+%s "$G"/apt/state/lists 2>/dev/null
    echo "kernel=${PVRDMA_GUEST_KERNEL:-} release=$RELEASE"; cat "$0"; } | sha256sum | cut -d' ' -f1)
if [ "$(sed -n 1p "$G/resolved" 2>/dev/null)" = "# $aptstamp" ]; then
    . "$G/resolved"
else
    resolve
    { echo "# $aptstamp"; declare -p KV KVER SRCVER SRCPKG USER_PKGS IMG_PKGS VER; } > "$G/resolved.tmp"
    mv "$G/resolved.tmp" "$G/resolved"
fi
KPKGS="$IMG_PKGS linux-headers-$KV linux-headers-${KV%-amd64}-common"

# ---------------------------------------------------------------------------
# 2. Cache key (under a lock: several harnesses may start at once)
# ---------------------------------------------------------------------------
mkdir -p "$G"
exec 9> "$G/.lock"
flock 9
key=$( {
    cat "$0" "$here/init" "$top"/tests/guest/tools/*.c "$top"/tests/verbs-check/*.[ch] \
        "$top"/tests/verbs-check/Makefile
    echo "KV=$KV"
    for p in $KPKGS $SRCPKG qemu-system-data $USER_PKGS; do echo "$p=${VER[$p]}"; done
} | sha256sum | cut -d' ' -f1)
if [ "$force" = 0 ] && [ -f "$G/vmlinuz" ] && [ -f "$G/vmlinux" ] && [ -f "$G/initrd.img" ] && [ -f "$G/firmware/pvh.bin" ] &&
   [ "$(cat "$G/image.key" 2>/dev/null)" = "$key" ]; then
    say "cached ($KV, key ${key:0:12}) in $(elapsed)s"
    exit 0
fi
say "building guest image for $KV ($KVER) in $G"
rm -f "$G/image.key"

# ---------------------------------------------------------------------------
# 3. Download the .debs (cached in $G/debs)
# ---------------------------------------------------------------------------
D=$G/debs
mkdir -p "$D"
debfile() { # pkg -> path of the cached .deb for VER[pkg], or empty
    local v=${VER[$1]//:/%3a}
    ls "$D/${1}_${v}_"*.deb 2>/dev/null | head -n1
}
need=()
for p in $IMG_PKGS $SRCPKG $USER_PKGS; do
    [ -n "$(debfile "$p")" ] || need+=("$p=${VER[$p]}")
done
if [ ${#need[@]} -gt 0 ]; then
    say "downloading ${#need[@]} packages"
    (cd "$D" && "${APT_DL[@]}" "${APTO[@]}" "${need[@]}" >/dev/null) ||
        die "apt-get download failed for: ${need[*]}"
fi
# the option ROMs from the host's apt (the QEMU 10.0 build)
if [ -z "$(debfile qemu-system-data)" ]; then
    (cd "$D" && "${APT_DL[@]}" "qemu-system-data=${VER[qemu-system-data]}" >/dev/null) ||
        die "apt-get download failed for qemu-system-data"
fi
for p in $IMG_PKGS $SRCPKG qemu-system-data $USER_PKGS; do
    [ -n "$(debfile "$p")" ] || die "download of $p=${VER[$p]} did not produce a .deb in $D"
done

# option ROMs -> $G/firmware (run-vm.sh passes -L $G/firmware)
rm -rf "$G/firmware" "$G/firmware.x"; mkdir -p "$G/firmware.x"
dpkg-deb -x "$(debfile qemu-system-data)" "$G/firmware.x"
mkdir -p "$G/firmware"
for f in linuxboot_dma.bin linuxboot.bin kvmvapic.bin multiboot_dma.bin pvh.bin; do
    cp "$G/firmware.x/usr/share/qemu/$f" "$G/firmware/" || die "no $f in qemu-system-data"
done
rm -rf "$G/firmware.x"

# ---------------------------------------------------------------------------
# 4. Headers (needed to build vmw_pvrdma.ko): on the host for bookworm, in
#    a chroot of the release otherwise
# ---------------------------------------------------------------------------
CH=
if [ "$RELEASE" != bookworm ]; then
    CH=$G/chroot
    if [ ! -f "$CH/usr/src/linux-headers-$KV/Makefile" ]; then
        say "debootstrapping $RELEASE with linux-headers-$KV into $CH"
        rm -rf "$CH"
        $SUDO debootstrap --variant=minbase \
            --include=gcc,make,libc6-dev,"linux-headers-$KV" \
            "$RELEASE" "$CH" "$MIRROR" > "$G/debootstrap.log" 2>&1 ||
            { tail -n 20 "$G/debootstrap.log" >&2; die "debootstrap of $RELEASE failed ($G/debootstrap.log)"; }
    fi
fi
HDR=$CH/usr/src/linux-headers-$KV
hdr_installed() {
    [ -n "$CH" ] && { [ -f "$HDR/Makefile" ]; return; }
    [ "$(dpkg-query -W -f='${Status} ${Version}' "linux-headers-$KV" 2>/dev/null)" = "install ok installed $KVER" ] &&
    [ -f "$HDR/Makefile" ]
}
if ! hdr_installed; then
    say "installing linux-headers-$KV=$KVER with apt"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "linux-headers-$KV=$KVER" "linux-headers-${KV%-amd64}-common=$KVER" > "$G/apt-headers.log" 2>&1 ||
        { tail -n 20 "$G/apt-headers.log" >&2; die "apt-get install linux-headers-$KV failed (log: $G/apt-headers.log)"; }
    hdr_installed || die "linux-headers-$KV=$KVER still not installed"
fi

# ---------------------------------------------------------------------------
# 5. Kernel package: extract once per version
# ---------------------------------------------------------------------------
K=$G/kernel/$KV
if [ "$(cat "$K/.done" 2>/dev/null)" != "$KVER" ]; then
    say "extracting linux-image-$KV"
    rm -rf "$K"; mkdir -p "$K"
    for p in $IMG_PKGS; do
        dpkg-deb -x "$(debfile "$p")" "$K"
    done
    # newer packages leave the kernel in the modules directory (the
    # kernel-install layout); /boot is made at installation
    if [ ! -f "$K/boot/vmlinuz-$KV" ] && [ -f "$K/usr/lib/modules/$KV/vmlinuz" ]; then
        mkdir -p "$K/boot"
        cp "$K/usr/lib/modules/$KV/vmlinuz" "$K/boot/vmlinuz-$KV"
    fi
    [ -f "$K/boot/vmlinuz-$KV" ] || die "no boot/vmlinuz-$KV in $IMG_PKGS"
    # a merged-/usr package (trixie) has its modules in usr/lib/modules
    if [ ! -d "$K/lib/modules" ] && [ -d "$K/usr/lib/modules" ]; then
        ln -s usr/lib "$K/lib"
    fi
    echo "$KVER" > "$K/.done"
fi

# ---------------------------------------------------------------------------
# 6. vmw_pvrdma.ko from the kernel's linux-source (unmodified), against the
#    headers
# ---------------------------------------------------------------------------
S=$G/pvrdma-src/$SRCVER
if [ ! -f "$S/.done" ]; then
    say "extracting vmw_pvrdma from $SRCPKG $SRCVER"
    rm -rf "$S"; mkdir -p "$S"
    dpkg-deb --fsys-tarfile "$(debfile $SRCPKG)" |
        tar -xO "./usr/src/$SRCPKG.tar.xz" | xz -dc |
        tar -x -C "$S" --strip-components=1 \
            "$SRCPKG/Makefile" \
            "$SRCPKG/drivers/infiniband/hw/vmw_pvrdma" \
            "$SRCPKG/include/uapi/rdma/vmw_pvrdma-abi.h" ||
        die "extracting vmw_pvrdma from $SRCPKG failed"
    [ -f "$S/drivers/infiniband/hw/vmw_pvrdma/pvrdma_main.c" ] || die "no vmw_pvrdma sources in $SRCPKG"
    touch "$S/.done"
fi
mkver() { awk '/^VERSION =/{v=$3} /^PATCHLEVEL =/{p=$3} /^SUBLEVEL =/{s=$3} END{print v"."p"."s}' "$1"; }
src_kv=$(mkver "$S/Makefile")
hdr_kv=$(mkver "$CH/usr/src/linux-headers-${KV%-amd64}-common/Makefile")
if [ "$src_kv" != "$hdr_kv" ]; then
    say "WARNING: linux-source is $src_kv but the headers are $hdr_kv"
fi
# The uapi ABI header the module compiles against comes from the headers
# package; it must be the same as the source's copy.
cmp -s "$S/include/uapi/rdma/vmw_pvrdma-abi.h" \
       "$CH/usr/src/linux-headers-${KV%-amd64}-common/include/uapi/rdma/vmw_pvrdma-abi.h" ||
    say "WARNING: include/uapi/rdma/vmw_pvrdma-abi.h differs between source and headers"

M=$G/pvrdma-mod/$KV-$SRCVER
if [ ! -f "$M/vmw_pvrdma.ko" ] || [ "$(cat "$M/.flags" 2>/dev/null)" != prefix-map ]; then
    say "building vmw_pvrdma.ko against $HDR"
    rm -rf "$M"; mkdir -p "$M"
    cp -r "$S/drivers/infiniband/hw/vmw_pvrdma/." "$M/"
    # -ffile-prefix-map: __FILE__ strings and the build-id do not depend on
    # where build/ lives (reproducible module)
    if [ -n "$CH" ]; then       # in the release's chroot, its gcc
        rm -rf "$CH/tmp/pvrdma-mod"
        cp -r "$M" "$CH/tmp/pvrdma-mod"
        # objtool of newer kernels reads /proc
        mountpoint -q "$CH/proc" || $SUDO mount -t proc proc "$CH/proc"
        $SUDO chroot "$CH" make -s -C "/usr/src/linux-headers-$KV" \
            M=/tmp/pvrdma-mod CONFIG_INFINIBAND_VMWARE_PVRDMA=m -j"$(nproc)" \
            KCFLAGS="-ffile-prefix-map=/tmp/pvrdma-mod/=drivers/infiniband/hw/vmw_pvrdma/" \
            modules > "$M/build.log" 2>&1 && st=0 || st=$?
        $SUDO umount "$CH/proc"
        [ $st = 0 ] ||
            { tail -n 30 "$M/build.log" >&2; die "vmw_pvrdma build failed (log: $M/build.log)"; }
        cp "$CH/tmp/pvrdma-mod/vmw_pvrdma.ko" "$M/"
    else
        make -s -C "$HDR" M="$M" CONFIG_INFINIBAND_VMWARE_PVRDMA=m -j"$(nproc)" \
            KCFLAGS="-ffile-prefix-map=$M/=drivers/infiniband/hw/vmw_pvrdma/" modules \
            > "$M/build.log" 2>&1 || { tail -n 30 "$M/build.log" >&2; die "vmw_pvrdma build failed (log: $M/build.log)"; }
    fi
    echo prefix-map > "$M/.flags"
fi
vm_mod=$(modinfo -F vermagic "$M/vmw_pvrdma.ko")
vm_ker=$(modinfo -F vermagic "$(ls "$K"/lib/modules/$KV/kernel/drivers/infiniband/core/ib_core.ko* | head -n1)")
[ "$vm_mod" = "$vm_ker" ] || die "vermagic mismatch: vmw_pvrdma.ko '$vm_mod' vs kernel '$vm_ker'"

# ---------------------------------------------------------------------------
# 7. Root filesystem
# ---------------------------------------------------------------------------
R=$G/rootfs
rm -rf "$R" "$G/rootfs.x"; mkdir -p "$G/rootfs.x"
for p in $USER_PKGS; do
    dpkg-deb -x "$(debfile "$p")" "$G/rootfs.x"
done
# merged /usr: move /bin /sbin /lib /lib64 contents under /usr
mkdir -p "$R/usr"
cp -a "$G/rootfs.x/." "$R/"
rm -rf "$G/rootfs.x"
for d in bin sbin lib lib64; do
    mkdir -p "$R/usr/$d"
    if [ -d "$R/$d" ] && [ ! -L "$R/$d" ]; then
        cp -a "$R/$d/." "$R/usr/$d/"
        rm -rf "${R:?}/$d"
    fi
    ln -s "usr/$d" "$R/$d"
done
# prune what a test guest never needs
rm -rf "$R"/usr/share/{doc,man,info,locale,lintian,bug,bash-completion,zsh,pci.ids} \
       "$R"/usr/lib/x86_64-linux-gnu/{gconv,tc,krb5,audit} \
       "$R"/usr/lib/x86_64-linux-gnu/*.a \
       "$R"/etc/{init.d,default,cron.daily,logrotate.d,apparmor.d} \
       "$R"/usr/share/{perftest,iproute2}/*.sh 2>/dev/null || true
# only the verbs providers we use: rxe (soft RoCE) and vmw_pvrdma
for f in "$R"/etc/libibverbs.d/*.driver; do
    case $(basename "$f") in rxe.driver|vmw_pvrdma.driver) ;; *) rm -f "$f" ;; esac
done
for f in "$R"/usr/lib/x86_64-linux-gnu/libibverbs/*.so; do
    case $(basename "$f") in librxe-*|libvmw_pvrdma-*) ;; *) rm -f "$f" ;; esac
done
# (perftest links some providers' libraries directly, libmlx5 and libefa,
# trixie's libhns too: the closure below keeps what it needs, drops the rest)

# busybox applets for everything the packages do not provide
bb=$R/usr/bin/busybox
[ -x "$bb" ] || die "no busybox in busybox-static"
for a in $("$bb" --list); do
    case $a in busybox|linuxrc) continue ;; esac
    if [ ! -e "$R/usr/bin/$a" ] && [ ! -e "$R/usr/sbin/$a" ] && [ ! -L "$R/usr/bin/$a" ]; then
        ln -s busybox "$R/usr/bin/$a"
    fi
done
ln -sf ../bin/busybox "$R/usr/sbin/modprobe"   # kernel's request_module path
mkdir -p "$R"/{proc,sys,dev,tmp,run,root,mnt,var/tmp,etc}
ln -sf /proc/self/mounts "$R/etc/mtab"
# _rpc: rpcbind drops to it (Debian's rpcbind.postinst adds it)
printf '%s\n' "root:x:0:0:root:/root:/bin/sh" "_rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin" \
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin" > "$R/etc/passwd"
printf '%s\n' "root:x:0:" "nogroup:x:65534:" > "$R/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$R/etc/hosts"
echo pvrdma-guest > "$R/etc/hostname"
install -m 0755 "$here/init" "$R/init"

# iproute2 tools we do not use (they pull in libdb, libxtables, ...)
rm -f "$R"/usr/sbin/{tc,bridge,devlink,dcb,tipc,vdpa,rtacct,rtmon,arpd,genl} \
      "$R"/usr/bin/{lnstat,nstat,ctstat,rtstat,routel}
# open-iscsi: only iscsistart (an iSCSI / iSER login without iscsid)
rm -f "$R"/usr/sbin/{iscsiadm,iscsid,iscsi-iname,iscsi_discovery}
# NFS (tests 5x: the kernel server and client over RDMA): rpcbind,
# rpc.nfsd, rpc.mountd, exportfs, nfsdcld, mount.nfs stay; not the Python
# tools, pNFS block layout (libdevmapper), the GSS daemons, nfsrahead.
# What the packages' maintainer scripts would have created: /etc/exports,
# the state directories under /var/lib/nfs, /var/run (the kernel's rpcbind
# client tries /var/run/rpcbind.sock first).
rm -f "$R"/usr/sbin/{mountstats,nfsiostat,nfsdclddb,nfsdclnts,rpcctl,blkmapd,rpc.gssd,rpc.svcgssd} \
      "$R"/usr/libexec/nfsrahead
mkdir -p "$R"/var/lib/nfs/{rpc_pipefs,nfsdcld,sm,sm.bak} "$R"/etc/exports.d
: > "$R/etc/exports"
[ -e "$R/var/run" ] || ln -s /run "$R/var/run"

# shared libraries: keep what the programs (and the dlopen()ed verbs
# providers, libgcc_s for pthread_cancel) need, drop the rest; fail if a
# NEEDED soname is missing
LIBDIR=$R/usr/lib/x86_64-linux-gnu
needed() { { readelf -d "$@" 2>/dev/null || true; } | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
declare -A KEEP
# shellcheck disable=SC2046
todo=$(needed $(find "$R/usr/bin" "$R/usr/sbin" "$LIBDIR/libibverbs" -type f) | sort -u)
todo="$todo libgcc_s.so.1 ld-linux-x86-64.so.2"
missing=
while [ -n "$todo" ]; do
    next=
    for so in $todo; do
        [ -z "${KEEP[$so]:-}" ] || continue
        if [ ! -e "$LIBDIR/$so" ]; then missing="$missing $so"; KEEP[$so]=missing; continue; fi
        KEEP[$so]=1
        next="$next $(needed "$(readlink -f "$LIBDIR/$so")")"
    done
    todo=$next
done
[ -z "$missing" ] || die "shared libraries missing from the guest tree:$missing"
keepfiles=$(for so in "${!KEEP[@]}"; do readlink -f "$LIBDIR/$so"; done | sort -u)
for f in "$LIBDIR"/*.so*; do
    [ -L "$f" ] && continue
    grep -qxF "$f" <<< "$keepfiles" || rm -f "$f"
done
find "$LIBDIR" -maxdepth 1 -xtype l -delete   # dangling dev/soname links
rm -rf "$LIBDIR/rsocket"

# kernel modules: closure of what the tests need, via depmod on the package
KM=$K/lib/modules/$KV
if [ ! -f "$KM/modules.dep" ] || [ "$KM/modules.dep" -ot "$K/.done" ]; then
    depmod -b "$K" "$KV" || die "depmod on the kernel package failed"
fi
WANT="vmxnet3 virtio_net virtio_pci ib_core ib_uverbs rdma_ucm rdma_cm iw_cm ib_cm
 ib_umad rdma_rxe ip6_udp_tunnel udp_tunnel configfs crc32_generic crc32_pclmul
 nvme_rdma nvmet_rdma brd rds_rdma ib_iser ib_isert iscsi_target_mod
 target_core_mod target_core_iblock sd_mod crc32c_generic nfsd nfs nfsv3 nfsv4 rpcrdma"
# (rdma_rxe needs the "crc32" shash: CONFIG_CRYPTO_CRC32=m, loaded on demand
# through modules.alias; it is not a symbol dependency; likewise the iSCSI
# target's login needs "crc32c")
declare -A DEP
# (a release may compress its modules: name.ko.xz)
while IFS=: read -r m deps; do
    n=${m##*/}; n=${n%.ko*}; DEP[${n//-/_}]="$m:$deps"
done < "$KM/modules.dep"
declare -A HAVE
add_mod() {
    local n=${1//-/_} e m deps d
    [ -z "${HAVE[$n]:-}" ] || return 0
    e=${DEP[$n]:-}
    if [ -z "$e" ]; then
        if ! grep -q "/$n.ko\$" "$KM/modules.builtin" &&
           ! grep -q "/${n//_/-}.ko\$" "$KM/modules.builtin"; then
            [ "$RELEASE" = bookworm ] && die "module $n is neither modular nor built in"
            say "$KV has no module $n: left out"
        fi
        HAVE[$n]=builtin; return 0
    fi
    m=${e%%:*}; deps=${e#*:}
    HAVE[$n]=$m
    for d in $deps; do d=${d##*/}; add_mod "${d%.ko*}"; done
}
for n in $WANT; do add_mod "$n"; done
RM=$R/usr/lib/modules/$KV
mkdir -p "$RM"
builtin_list=
for n in "${!HAVE[@]}"; do
    m=${HAVE[$n]}
    if [ "$m" = builtin ]; then builtin_list="$builtin_list $n"; continue; fi
    mkdir -p "$RM/$(dirname "$m")"
    case $m in      # busybox's modprobe reads plain modules
        *.ko.xz) xz -dc "$KM/$m" > "$RM/${m%.xz}" ;;
        *.ko.zst) zstd -qdc "$KM/$m" > "$RM/${m%.zst}" ;;
        *) cp "$KM/$m" "$RM/$m" ;;
    esac
done
cp "$KM"/modules.builtin "$RM/"
for f in modules.builtin.modinfo modules.order; do     # (not in every release's package)
    [ ! -f "$KM/$f" ] || cp "$KM/$f" "$RM/"
done
mkdir -p "$RM/extra"
# stripped like Debian's own modules (the unstripped one stays in $M for
# decoding oopses: gdb $M/vmw_pvrdma.ko)
strip --strip-debug -o "$RM/extra/vmw_pvrdma.ko" "$M/vmw_pvrdma.ko"
depmod -b "$R" "$KV" || die "depmod on the guest tree failed"
grep -q '^extra/vmw_pvrdma.ko:.*ib_core' "$RM/modules.dep" || die "vmw_pvrdma not in guest modules.dep"

# test helpers the Debian packages lack (tests/guest/tools), static
for c in "$top"/tests/guest/tools/*.c; do
    "${CC:-cc}" -O2 -static -Wall -Wextra -Werror -o "$R/usr/bin/$(basename "$c" .c)" "$c" ||
        die "building $c failed (a static libc is in libc6-dev)"
done

# the verbs data checker (tests/verbs-check): dynamic, as libibverbs loads
# its providers with dlopen; built against the host's rdma-core -dev
# packages, the same Debian version as the image's libraries
make -s -C "$top/tests/verbs-check" O="$G/verbs-check" > "$G/verbs-check.log" 2>&1 ||
    die "building tests/verbs-check failed ($G/verbs-check.log; libibverbs-dev and librdmacm-dev: scripts/deps.sh)"
install -m 0755 "$G/verbs-check/pvrdma-verbs-check" "$R/usr/bin/pvrdma-verbs-check"
install -m 0755 "$G/verbs-check/pvrdma-uar-poke" "$R/usr/bin/pvrdma-uar-poke"
install -m 0755 "$G/verbs-check/pvrdma-async-objects" "$R/usr/bin/pvrdma-async-objects"

# ---------------------------------------------------------------------------
# 8. Manifest, cpio, kernel
# ---------------------------------------------------------------------------
{
    echo "# pvrdma guest image (scripts/guest/build-image.sh)"
    echo "kernel $KV $KVER"
    echo "release $RELEASE"
    echo "vmw_pvrdma.ko $SRCPKG $SRCVER (source $src_kv, headers $hdr_kv)"
    echo "vermagic $vm_mod"
    echo "modules:$(for n in "${!HAVE[@]}"; do [ "${HAVE[$n]}" = builtin ] || printf ' %s' "$n"; done | tr ' ' '\n' | sort | tr '\n' ' ')"
    echo "builtin:$builtin_list"
    for p in "linux-image-$KV" "linux-headers-$KV" $SRCPKG qemu-system-data $USER_PKGS; do
        echo "deb $p ${VER[$p]}"
    done
    echo "key $key"
} > "$G/manifest.txt"
cp "$G/manifest.txt" "$R/etc/pvrdma-guest-manifest"

# reproducible archive: fixed mtimes, sorted names, root-owned
find "$R" -exec touch -h -d @0 {} +
(cd "$R" && find . -mindepth 1 | LC_ALL=C sort |
    cpio --quiet -o -H newc -R 0:0 --reproducible) > "$G/initrd.img.tmp"
mv "$G/initrd.img.tmp" "$G/initrd.img"
cp "$K/boot/vmlinuz-$KV" "$G/vmlinuz.tmp"
mv "$G/vmlinuz.tmp" "$G/vmlinuz"
# the bzImage's payload (Debian: XZ) decompressed: the kernel's vmlinux,
# unchanged; it must carry the PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY,
# 0x12; Debian's config has CONFIG_PVH=y) for QEMU to boot it
python3 - "$G/vmlinuz" "$G/vmlinux.tmp" <<'EOPY' || die "cannot decompress $G/vmlinuz"
import lzma, subprocess, sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"\xfd7zXZ\x00")
zst = data.find(b"\x28\xb5\x2f\xfd")
if at >= 0:
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[at:])
elif zst >= 0:      # trixie's kernels: ZSTD (the zstd tool, scripts/deps.sh)
    # (what follows the frame in the bzImage makes zstd complain: ignored)
    elf = subprocess.run(["zstd", "-qdc"], input=data[zst:],
                         stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout
else:
    sys.exit("no XZ or ZSTD payload in the bzImage")
if elf[:4] != b"\x7fELF":
    sys.exit("the payload is not an ELF")
open(sys.argv[2], "wb").write(elf)
EOPY
readelf -n "$G/vmlinux.tmp" | grep -q '(0x00000012)' ||
    die "$G/vmlinuz's vmlinux has no PVH entry note: QEMU cannot boot it"
mv "$G/vmlinux.tmp" "$G/vmlinux"
echo "$key" > "$G/image.key"
say "done in $(elapsed)s: $G/vmlinuz, $G/vmlinux, $G/initrd.img ($(du -k "$G/initrd.img" | cut -f1) KiB), manifest.txt"
