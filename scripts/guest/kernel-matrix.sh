#!/bin/bash
# The guest suite's core tests on several guest kernels: Debian 12's 6.1
# (bookworm), Debian 13's 6.12 (trixie) and the newest Debian ships
# (unstable, "sid"), each with that release's own rdma-core and the
# unmodified vmw_pvrdma built from its own kernel's linux-source
# (scripts/guest/build-image.sh with PVRDMA_GUEST_RELEASE; another release
# than the host's comes through a private apt root and a debootstrapped
# chroot, build/guest-RELEASE).  Prints "ok RELEASE/TEST" or "FAIL
# RELEASE/TEST: why" per cell, the table kernel x test, then "N passed,
# N failed".  Not in make check (make check-kernels);
# make check runs test 12 on trixie and sid (PVRDMA_CHECK_KERNELS=0: not).
#
#   scripts/guest/kernel-matrix.sh [-o DIR] [--optional RELEASE]
#                                  [RELEASE...] [-- TEST...]
#
# --optional RELEASE: if that release's image cannot be built (unstable's
# archive changes every day: a package renamed or gone), its cells are
# skipped ("skip"), not failed; a test that fails on a built image still
# fails.  scripts/test.sh passes --optional sid.
#
# Default releases: bookworm trixie sid.  Default tests: 12 (loopback),
# 20 (co-resident), 30 (RoCEv2 against soft-RoCE), 15 (NVMe over RDMA, a
# kernel protocol) and 18 (live migration).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/guest/release-lib.sh
. "$here/release-lib.sh"
out=$top/build/kernel-matrix/$(date +%Y%m%d-%H%M%S)
releases=() tests=() optional=
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=$2; shift 2 ;;
        --optional) optional="$optional $2"; shift 2 ;;
        --) shift; tests=("$@"); break ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) releases+=("$1"); shift ;;
    esac
done
[ ${#releases[@]} -gt 0 ] || releases=(bookworm trixie sid)
[ ${#tests[@]} -gt 0 ] || tests=(12 20 30 15 18)
mkdir -p "$out"
pass=0 fail=0 skip=0
declare -A res kern
for r in "${releases[@]}"; do
    g=$(guest_dir "$r" 2>/dev/null)  # unknown: build-image.sh says so below
    if ! PVRDMA_GUEST_RELEASE=$r "$top/scripts/guest/build-image.sh" --quiet \
            > "$out/$r-image.log" 2>&1; then
        kern[$r]="$r: image failed ($out/$r-image.log)"
        for t in "${tests[@]}"; do
            res[$r,$t]="no image ($out/$r-image.log)"
            case " $optional " in
                *" $r "*) skip=$((skip + 1)); echo "skip $r/$t: ${res[$r,$t]}"
                          res[$r,$t]="skip: ${res[$r,$t]}" ;;
                *) fail=$((fail + 1)); echo "FAIL $r/$t: ${res[$r,$t]}" ;;
            esac
        done
        continue
    fi
    kern[$r]=$(image_kernel "$g")
    PVRDMA_GUEST_RELEASE=$r "$top/tests/guest/run.sh" -j 2 --require-pvrdma \
        -o "$out/$r" "${tests[@]}" > "$out/$r.log" 2>&1
    for t in "${tests[@]}"; do
        line=$(grep -E "^(ok|FAIL|skip) $t-" "$out/$r.log" | head -n1)
        case $line in
            ok\ *) res[$r,$t]=ok; pass=$((pass + 1)); echo "ok $r/${line#ok }" ;;
            *) res[$r,$t]=${line:-"did not run"}; fail=$((fail + 1))
               echo "FAIL $r/$t: ${res[$r,$t]}" ;;
        esac
    done
done
{
    printf '%-28s' kernel
    for t in "${tests[@]}"; do printf ' %-6s' "$t"; done
    echo
    for r in "${releases[@]}"; do
        printf '%-28s' "$r ${kern[$r]}"
        for t in "${tests[@]}"; do
            case ${res[$r,$t]} in
                ok) printf ' %-6s' ok ;;
                skip:*) printf ' %-6s' skip ;;
                *) printf ' %-6s' FAIL ;;
            esac
        done
        echo
    done
    for r in "${releases[@]}"; do
        for t in "${tests[@]}"; do
            [ "${res[$r,$t]}" = ok ] || echo "# $r $t: ${res[$r,$t]}"
        done
    done
} | tee "$out/table.txt"
if [ $skip -gt 0 ]; then
    echo "$pass passed, $fail failed, $skip skipped"
else
    echo "$pass passed, $fail failed"
fi
[ $fail -eq 0 ]
