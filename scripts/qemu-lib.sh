# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by scripts/build.sh (the overlaid tree) and scripts/series-check.sh
# (the patch series in a pristine tree): how we configure a lean x86_64
# QEMU, and the firmware a build of Debian's +ds source lacks.  POSIX sh.

# configure's options (build.sh adds PVRDMA_CONFIGURE_EXTRA and the
# sanitizers; its stamp is this string, so a change reconfigures)
QEMU_LEAN_OPTS="--target-list=x86_64-softmmu --disable-download --disable-install-blobs \
 --python=/usr/bin/python3 --without-default-features --disable-docs \
 --disable-werror --enable-fdt=system --enable-trace-backends=log --enable-rdma \
 --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu"

# qemu_firmware BUILD-DIR: the x86 option ROMs (linuxboot_dma.bin,
# kvmvapic.bin, ...; built by make) and Debian's seabios and ipxe, linked
# where the built binary looks
qemu_firmware() {
    if [ -f "$1/pc-bios/optionrom/config.mak" ]; then
        make -s -C "$1/pc-bios/optionrom" >/dev/null
    fi
    _qfw=$1/qemu-bundle/usr/local/share/qemu
    mkdir -p "$_qfw"
    for _qf in /usr/share/seabios/* /usr/lib/ipxe/qemu/* "$1"/pc-bios/optionrom/*.bin; do
        [ -e "$_qf" ] || continue     # a pattern that matched nothing
        [ -e "$_qfw/$(basename "$_qf")" ] || ln -s "$_qf" "$_qfw/$(basename "$_qf")"
    done
}
