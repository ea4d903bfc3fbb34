# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Which guest image a release has, for build-image.sh, run-vm.sh,
# tests/guest/run.sh and kernel-matrix.sh (sourced; needs $top).

# guest_dir RELEASE: the image folder of RELEASE (PVRDMA_GUEST_DIR wins);
# status 2 and a message for a release the rig does not build.
guest_dir() {
    case $1 in
        bookworm) echo "${PVRDMA_GUEST_DIR:-$top/build/guest}" ;;
        trixie|sid|unstable) echo "${PVRDMA_GUEST_DIR:-$top/build/guest-$1}" ;;
        *) echo "PVRDMA_GUEST_RELEASE=$1: bookworm, trixie or sid" >&2; return 2 ;;
    esac
}

# image_kernel DIR: the kernel release the image in DIR was built for
# (its manifest.txt), empty if it names none.
image_kernel() {
    sed -n 's/^kernel \([^ ]*\) .*/\1/p' "$1/manifest.txt" 2>/dev/null
}
