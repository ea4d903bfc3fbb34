#!/bin/sh
# Migration with an older build of the device, both ways (make check-compat).
#   scripts/check-compat.sh [COMMIT]
# Builds COMMIT (default 21c4b2b, the last build whose device state was one
# opaque field) in a worktree under build/compat, from this tree's QEMU
# source and ccache, then runs the qtests /pvrdma/migration/other-build
# (this build, x-state-blob=on, migrates a connected pair with traffic to
# that build's QEMU and back) and /pvrdma/coresident/other-build (a QEMU
# of each build, connected by management, negotiate and move RC data both
# ways), with PVRDMA_QEMU_OTHER naming that build's QEMU.  Prints "N
# passed, N failed" like the other suites.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-21c4b2b}
wt=$top/build/compat/$rev
"$top/scripts/build.sh" > "$top/build/build.log" 2>&1 ||
    { tail -20 "$top/build/build.log"; exit 1; }
src=$(ls -d "$top"/build/src/qemu-10.0.*/ | head -n1)
if [ ! -d "$wt" ]; then
    mkdir -p "$top/build/compat"
    git -C "$top" worktree add -f --detach "$wt" "$rev" > /dev/null
fi
if [ ! -x "$wt/build/qemu/qemu-system-x86_64" ]; then
    mkdir -p "$wt/build/src"
    # the same Debian source; its overlay list drops this tree's new files
    [ -d "$wt/build/src/$(basename "$src")" ] || cp -a "$src" "$wt/build/src/"
    "$wt/scripts/build.sh" > "$top/build/compat-build.log" 2>&1 ||
        { tail -20 "$top/build/compat-build.log"; exit 1; }
fi
pass=0 fail=0
for t in /x86_64/pvrdma/migration/other-build /x86_64/pvrdma/coresident/other-build; do
    log=$top/build/compat-$(basename "$t").log
    case $t in */migration/*) what="migration to the build of $rev and back" ;;
               *) what="co-resident peers: this build and the build of $rev" ;;
    esac
    if PVRDMA_QEMU_OTHER=$wt/build/qemu/qemu-system-x86_64 \
           QTEST_QEMU_BINARY=$top/build/qemu/qemu-system-x86_64 \
           "$top/build/qemu/tests/qtest/pvrdma-test" --tap -p "$t" > "$log" 2>&1 &&
       grep -q '^ok ' "$log" && ! grep -q '# SKIP' "$log"; then
        echo "ok compat: $what"
        pass=$((pass + 1))
    else
        grep -m3 'ERROR\|not ok\|Bail\|SKIP\|pvrdma:' "$log" || tail -5 "$log"
        echo "not ok compat: $what ($log)"
        fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
