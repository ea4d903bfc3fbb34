#!/bin/sh
# Install everything the build and the tests need, from Debian's mirror only.
# Idempotent: a stamp file skips the work when nothing changed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
stamp=$top/build/.deps-stamp
mkdir -p "$top/build"
if [ -f "$stamp" ] && [ "$stamp" -nt "$0" ]; then
    exit 0
fi

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# bookworm-backports: meson >= 1.5, pycotap; source entries: QEMU 10.0 (trixie)
# and linux-source (bookworm).  Written once, in our own file.
list=/etc/apt/sources.list.d/pvrdma-build.sources
if [ ! -f "$list" ]; then
    $SUDO tee "$list" >/dev/null <<'EOS'
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
fi
export DEBIAN_FRONTEND=noninteractive
# tshark (guest test 34 decodes the captured RoCEv2 frames): answer its
# question whether non-root users may capture (no) instead of asking
echo 'wireshark-common wireshark-common/install-setuid boolean false' | $SUDO debconf-set-selections
# llvm-14: llvm-symbolizer-14, which ASan needs to name functions in its
# reports (scripts/lsan.supp suppresses by function name)
# libvirt-daemon-driver-qemu, libvirt-clients: tests/libvirt (make
# check-libvirt) runs private libvirtd instances in session mode; not
# libvirt-daemon-system (the system instance and its services: unused)
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
    build-essential pkg-config ccache ninja-build git ca-certificates \
    python3 python3-venv python3-setuptools dpkg-dev xz-utils \
    libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev \
    libibverbs-dev libibumad-dev librdmacm-dev \
    seabios ipxe-qemu cpio busybox-static kmod gcc-multilib zstd debootstrap \
    clang-14 libclang-rt-14-dev llvm-14 valgrind tshark \
    libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients python3-sphinx
$SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports \
    meson python3-pycotap
touch "$stamp"
