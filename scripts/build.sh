#!/bin/sh
# Build QEMU 10.0 (Debian's source package) with the pvrdma device overlaid.
#   scripts/build.sh [ninja targets...]
#   PVRDMA_SANITIZE=1 scripts/build.sh   clang, ASan + UBSan, in build/qemu-asan
#   PVRDMA_SANITIZE=thread scripts/build.sh  clang, TSan, in build/qemu-tsan
#                                        (iothread=: scripts/test.sh tsan)
#   PVRDMA_NO_RDMA=1 scripts/build.sh    --disable-rdma, in build/qemu-nordma
# Incremental: the source is fetched once, the hook patch applied once, our
# files copied only when they changed, configure run only when its options
# changed.  Everything lives under build/ (git-ignored).
set -eu
# ccache through Debian's compiler symlinks (keeps configure's probes happy)
export PATH=/usr/lib/ccache:$PATH
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
# one build of this tree at a time: scripts that build (soak, benches,
# the guest tests) may start while another build overlays and compiles
mkdir -p "$b"
exec 9> "$b/.build.lock"
flock 9
# paths relative to build/ in ccache's keys: scripts/series-check.sh builds
# the patch series in build/series/{src,qemu}, where the tree is at the
# same relative place, and shares the objects of the files we did not change
export CCACHE_BASEDIR=$b CCACHE_NOHASHDIR=1
"$top/scripts/deps.sh"
# shellcheck source=scripts/qemu-lib.sh
. "$top/scripts/qemu-lib.sh"

# --- 1. Debian's QEMU 10.0.x source, fetched once -------------------------
src=$(ls -d "$b"/src/qemu-10.0.*/ 2>/dev/null | head -n1 || true)
if [ -z "$src" ]; then
    mkdir -p "$b/src"
    (cd "$b/src" && apt-get source -q qemu/trixie)
    src=$(ls -d "$b"/src/qemu-10.0.*/ 2>/dev/null | head -n1 || true)
    [ -n "$src" ] || { echo "build.sh: no QEMU 10.0.x source in trixie" >&2; exit 1; }
fi
src=${src%/}

# --- 2. hook patch, re-applied only if the patch changed --------------------
hooked="meson.build Kconfig.host hw/Kconfig hw/meson.build tests/qtest/meson.build \
 qapi/meson.build qapi/qapi-schema.json hmp-commands-info.hx hmp-commands.hx \
 include/monitor/hmp.h monitor/monitor.c tests/qtest/libqos/meson.build"
sum=$(sha256sum "$top/patches/qemu-hooks.patch" | cut -d' ' -f1)
if [ "$(cat "$src/.pvrdma-hooks" 2>/dev/null)" != "$sum" ]; then
    for f in $hooked; do
        [ -f "$src/$f.pvrdma-orig" ] || cp "$src/$f" "$src/$f.pvrdma-orig"
        cp "$src/$f.pvrdma-orig" "$src/$f"
    done
    (cd "$src" && patch -s -p1 < "$top/patches/qemu-hooks.patch")
    echo "$sum" > "$src/.pvrdma-hooks"
fi

# --- 3. overlay our directories (copy only what changed) -------------------
# The files copied are listed in $src/.pvrdma-overlay; one listed by the
# last build that this tree no longer has (moved or deleted here) is
# removed, so a stale copy cannot be built or included.
overlay() { # repo-dir tree-dir
    [ -d "$top/$1" ] || return 0
    (cd "$top/$1" && find . -type f ! -name '*.o' ! -name '*~') | while read -r f; do
        d="$src/$2/$f"
        echo "$2/${f#./}" >> "$src/.pvrdma-overlay.new"
        if ! cmp -s "$top/$1/$f" "$d"; then
            mkdir -p "$(dirname "$d")"
            cp "$top/$1/$f" "$d"
        fi
    done
}
: > "$src/.pvrdma-overlay.new"
overlay hw/rdma hw/rdma
overlay backend hw/rdma/backend
overlay include include
overlay tests/qtest tests/qtest
overlay qapi qapi
sort -o "$src/.pvrdma-overlay.new" "$src/.pvrdma-overlay.new"
if [ -f "$src/.pvrdma-overlay" ]; then
    sort "$src/.pvrdma-overlay" | comm -23 - "$src/.pvrdma-overlay.new" |
        while read -r f; do rm -f "$src/$f"; done
fi
mv "$src/.pvrdma-overlay.new" "$src/.pvrdma-overlay"

# --- 4. configure a lean x86_64 system emulator ----------------------------
opts="$QEMU_LEAN_OPTS \
 ${PVRDMA_CONFIGURE_EXTRA:-}"
q=$b/qemu
if [ "${PVRDMA_NO_RDMA:-0}" = 1 ]; then
    # QEMU's rdma feature off (scripts/check-no-rdma.sh): another build
    # directory, the host HCA transport's stubs
    opts=$(echo "$opts" | sed 's/--enable-rdma/--disable-rdma/')
    q=$b/qemu-nordma
fi
if [ "${PVRDMA_SANITIZE:-0}" = thread ]; then
    opts="$opts --cc=clang-14 --cxx=clang++-14 --host-cc=clang-14 \
 --enable-tsan"
    q=$b/qemu-tsan
elif [ "${PVRDMA_SANITIZE:-0}" = 1 ]; then
    # same source tree and overlay, another build directory
    opts="$opts --cc=clang-14 --cxx=clang++-14 --host-cc=clang-14 \
 --enable-asan --enable-ubsan"
    q=$b/qemu-asan
fi
stamp="cfg3 $opts"     # bump cfgN when the way we configure changes
if [ ! -f "$q/build.ninja" ] || [ "$(cat "$q/.pvrdma-opts" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$q"; mkdir -p "$q"
    # shellcheck disable=SC2086
    (cd "$q" && "$src/configure" $opts)
    echo "$stamp" > "$q/.pvrdma-opts"
fi

# --- 5. build -----------------------------------------------------------------
if [ $# -eq 0 ]; then
    set -- qemu-system-x86_64 tests/qtest/pvrdma-test \
        tests/qtest/pvrdma-hostile-test
    # QEMU's qos-test, for the qos graph's pvrdma node (not sanitized:
    # its other eighty test files would double the sanitizer build)
    [ "${PVRDMA_SANITIZE:-0}" != 0 ] || set -- "$@" tests/qtest/qos-test
fi
# QEMU is configured --disable-werror (its own code warns with Debian's
# compilers), but the device's may not warn: a QEMU maintainer builds with
# -Werror, and an implicit declaration once crashed the monitor here.
{ rc=0; ninja -C "$q" "$@" 2>&1 || rc=$?; echo "$rc" > "$q/.pvrdma-ninja.rc"; } |
    tee "$q/.pvrdma-ninja.log"
rc=$(cat "$q/.pvrdma-ninja.rc")
[ "$rc" = 0 ] || exit "$rc"
if grep -E "(hw/rdma/|tests/qtest/(libqos/)?pvrdma)[^ :]*:[0-9]+:[0-9]+: warning:" \
        "$q/.pvrdma-ninja.log"; then
    echo "build.sh: the device's code compiled with warnings (above)" >&2
    exit 1
fi

# --- 6. the option ROMs, Debian firmware (seabios, ipxe) where the binary looks
qemu_firmware "$q"
