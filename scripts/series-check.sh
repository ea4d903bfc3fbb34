#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The patch series for QEMU (scripts/patch-series.py), checked as a
# maintainer would: applied with `git am` to a pristine QEMU tree, each
# patch through QEMU's scripts/checkpatch.pl, and every commit built
# (bisectable), the pvrdma qtests run from the commit that adds them on.
# The series as sent, build/series/patches/A, B, C, D (each with its cover
# letter): A on the pristine tree, each of B, C, D on top of A alone; the
# docs are built after each.  Then the whole device, the four one after
# the other (build/series/patches/*.patch, its last commit this
# repository).  Built: every commit of A and of each later series on A,
# then the whole's last (--final-only: only the whole's last).
#
#   scripts/series-check.sh [--final-only] [--newest]
#
# The pristine tree (build/series/base, a git repository made once) is
# Debian's orig tarball of the QEMU we build (upstream v10.0.x without the
# firmware and edk2 blobs) plus Debian's one-line meson change that skips
# unpacking the edk2 blobs the tarball lacks (its skip-*.patch), as its own
# commit: nothing of ours.  The series is applied to a clone of it
# (build/series/src/...), configured with QEMU's own configure and built
# with meson/ninja in build/series/qemu: the options are build.sh's lean
# x86_64 ones, and nothing is overlaid.  ccache (base_dir build/) shares
# objects with build/qemu, whose tree sits at the same relative place.
#   --final-only  build and test only the last commit
#   --no-build    apply and checkpatch only (make check: the build of the
#                 series is make series', about 6 minutes cold on 2 cores,
#                 ccache cannot share build/qemu's objects: Debian's
#                 gnu-hurd.patch changes include/qemu/osdep.h)
#   --newest      also the newest QEMU source Debian has (sid's newest
#                 that the mirror serves): the 10.0 series tried as it
#                 is, then the series made on that tree applied, and
#                 each commit built and its qtests run, as on 10.0
#                 (only the last with --final-only; build/series/newest)
# Prints "ok"/"FAIL" lines and ends with "N passed, N failed".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
s=$b/series
final_only=0 newest=0 build=1
for a in "$@"; do
    case $a in
        --final-only) final_only=1 ;;
        --no-build) build=0 ;;
        --newest) newest=1 ;;
        -h|--help) sed -n '2,/^set/{/^#/p}' "$0"; exit 0 ;;
        *) echo "series-check: unknown option $a" >&2; exit 2 ;;
    esac
done
pass=0 fail=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
export PATH=/usr/lib/ccache:$PATH CCACHE_BASEDIR=$b CCACHE_NOHASHDIR=1
# no automatic gc: a detached one packs the base's objects while the clone
# below copies them ("fatal: failed to copy file to .../objects/...")
git_q() { git -c user.name=series -c user.email=series@localhost -c gc.auto=0 "$@"; }

# --- 1. the pristine tree, once -------------------------------------------------
[ -d "$b/src" ] && ls "$b"/src/qemu_10.0.*.orig.tar.xz >/dev/null 2>&1 ||
    "$top/scripts/build.sh" >/dev/null    # fetches Debian's source package
orig=$(ls "$b"/src/qemu_10.0.*.orig.tar.xz | head -n1)
debsrc=$(ls -d "$b"/src/qemu-10.0.*/ | head -n1)
# base_tree DIR ORIG-TARBALL DEBIAN-SRC-DIR: DIR a git repository of the
# tarball, plus each of Debian's skip-*.patch (what the +ds tarball's
# missing blobs need: skip-unpack-edk2-blobs, from 10.2 skip-install-dtb)
# as a commit of its own
base_tree() {
    [ "$(cat "$1/.series-base" 2>/dev/null)" = "$(basename "$2")" ] && return 0
    rm -rf "$1"; mkdir -p "$1"
    tar -C "$1" --strip-components=1 -xJf "$2"
    (cd "$1" && git init -q && git_q add -A -f . && git_q commit -q -m \
        "QEMU $(basename "$2" .orig.tar.xz | sed 's/^qemu_//') (Debian's orig tarball)" &&
        for sp in $(grep '^skip-' "$3/debian/patches/series"); do
            patch -s -p1 < "$3/debian/patches/$sp" &&
                git_q commit -q -a -m "Debian's $sp (the +ds tarball has no blobs)" || return 1
        done)
    basename "$2" > "$1/.series-base"
}
base_tree "$s/base" "$orig" "$debsrc"

# --- 2. the series ------------------------------------------------------------------
python3 "$top/scripts/patch-series.py" --base "$s/base" --work "$s/work" \
    --out "$s/patches"
mapfile -t patches < <(ls "$s"/patches/*.patch | grep -v 0000-cover-letter)

# --- 3. git am on a clone of the pristine tree -------------------------------------
# build/series/src/<same name as build/src's tree>: see ccache above
t=$s/src/$(basename "$debsrc")
rm -rf "$s/src"; mkdir -p "$s/src"
git_q clone -q "$s/base" "$t"
# docs_check TREE LABEL: the device's documents in TREE (the design docs,
# the user doc, the interop spec) built by Sphinx (Debian's python3-sphinx)
# with warnings as errors,
# on their own (QEMU's docs build needs its theme and extensions; ours use
# neither): no broken markup, no reference to a document or section the
# tree does not have yet
docs_check() {
    _d=$(mktemp -d) _idx=""
    for _f in $(cd "$1/docs" && ls devel/pvrdma*.rst system/devices/pvrdma.rst \
                interop/pvrdma*.rst 2>/dev/null); do
        mkdir -p "$_d/src/$(dirname "$_f")"; cp "$1/docs/$_f" "$_d/src/$_f"
    done
    for _f in devel/pvrdma system/devices/pvrdma interop/pvrdma-coresident; do
        [ -f "$_d/src/$_f.rst" ] && _idx="$_idx   $_f\n"
    done
    printf "project = 'pvrdma'\nmaster_doc = 'index'\n" > "$_d/src/conf.py"
    printf "pvrdma\n======\n\n.. toctree::\n\n$_idx" > "$_d/src/index.rst"
    if _out=$(/usr/bin/python3 -m sphinx -q -W --keep-going -b html "$_d/src" "$_d/out" 2>&1); then
        ok "docs: $2: $(cd "$_d/src" && ls devel/*.rst | wc -l) design documents build (sphinx -W)"
    else
        bad "docs: $2: sphinx -W"; echo "$_out" | head -20
    fi
    rm -rf "$_d"
}

# QEMU 10.2's QAPI generator refuses documentation lines over 70
# characters (10.0's does not): a schema that builds here could fail on
# the newest QEMU (--newest, not in make check)
long=$(awk 'length > 70 && /^#/ {print FILENAME ":" FNR}' "$top/qapi/pvrdma.json")
if [ -z "$long" ]; then
    ok "qapi/pvrdma.json: documentation lines of at most 70 characters"
else
    bad "qapi/pvrdma.json: documentation lines over 70 characters: $long"
fi

# sent_series TREE PATCHES-DIR NAME: in TREE (a clone of a pristine tree)
# the series as they are sent (PATCHES-DIR/A, B, ...: each with its own
# cover letter and numbering): A applied to the pristine tree, each later
# one on top of A alone (a branch of its own), the docs built after each;
# then the whole device (PATCHES-DIR/*.patch: the series one after the
# other, its last commit this repository) on a branch of its own, 'whole'.
# Appends "COMMIT SERIES K/N" to to_build for each commit of the series as
# sent, then the whole device's last commit.
sent_series() {
    local tr=$1 pd=$2 name=$3 x sp n0 a_end="" c k
    n0=$(git -C "$tr" rev-parse HEAD)
    for x in $(cd "$pd" && ls -d -- */ | tr -d /); do
        mapfile -t sp < <(ls "$pd/$x"/*.patch | grep -v 0000-cover-letter)
        [ "$x" = A ] || git -C "$tr" checkout -q -B "on-a-$x" "$a_end"
        if ! (cd "$tr" && git_q am -q "${sp[@]}") > /dev/null 2>&1; then
            (cd "$tr" && git am --abort) > /dev/null 2>&1 || true
            bad "$name: git am: series $x does not apply${a_end:+ on top of A}"
            [ "$x" = A ] && return 1
            continue
        fi
        if [ "$x" = A ]; then
            ok "$name: git am: series A, ${#sp[@]} patches, applies to the pristine tree"
            docs_check "$tr" "$name: series A"
            a_end=$(git -C "$tr" rev-parse HEAD)
        else
            ok "$name: git am: series $x, ${#sp[@]} patches, applies on top of series A alone"
            docs_check "$tr" "$name: series A + $x"
        fi
        k=0
        for c in $(git -C "$tr" rev-list --reverse "HEAD~${#sp[@]}..HEAD"); do
            k=$((k + 1)); to_build+=("$c $x $k/${#sp[@]}")
        done
    done
    mapfile -t sp < <(ls "$pd"/*.patch | grep -v 0000-cover-letter)
    git -C "$tr" checkout -q -B whole "$n0"
    if (cd "$tr" && git_q am -q "${sp[@]}") > /dev/null 2>&1; then
        ok "$name: git am: the whole device, ${#sp[@]} patches (the series one after the other)"
        to_build+=("$(git -C "$tr" rev-parse HEAD) whole ${#sp[@]}/${#sp[@]}")
    else
        (cd "$tr" && git am --abort) > /dev/null 2>&1 || true
        bad "$name: git am: the whole device does not apply"
    fi
}
to_build=()
sent_series "$t" "$s/patches" "$(basename "$orig" .orig.tar.xz)" ||
    { echo "${pass} passed, ${fail} failed"; exit 1; }

# --- 4. checkpatch -----------------------------------------------------------------------
for p in $(ls "$s"/patches/*/*.patch | grep -v 0000-cover-letter); do
    out=$(cd "$t" && perl scripts/checkpatch.pl "$p" 2>&1 || true)
    tot=$(echo "$out" | grep -o 'total: [0-9]* errors, [0-9]* warnings' || echo "total: ? errors")
    e=$(echo "$tot" | awk '{print $2}')
    if [ "$e" = 0 ]; then
        ok "checkpatch $(basename "$(dirname "$p")")/$(basename "$p"): $tot"
        echo "$out" | grep '^WARNING' | sort | uniq -c | sed 's/^/    /' || true
    else
        bad "checkpatch $(basename "$(dirname "$p")")/$(basename "$p"): $tot"; echo "$out" | grep -A4 '^ERROR' | head -40
    fi
done

# --- 5. build every commit; qtests once they exist ---------------------------------------
# shellcheck source=scripts/qemu-lib.sh
. "$top/scripts/qemu-lib.sh"
opts=$QEMU_LEAN_OPTS
q=$s/qemu
# build_tree TREE BUILD-DIR NAME: configure (once per tree) and build,
# then run the pvrdma qtests if the tree has them
build_tree() {
    local tr=$1 bd=$2 name=$3 log
    log=$bd.log
    if [ ! -f "$bd/build.ninja" ]; then
        rm -rf "$bd"; mkdir -p "$bd"
        # shellcheck disable=SC2086
        (cd "$bd" && "$tr/configure" $opts) > "$log" 2>&1 ||
            { bad "$name: configure (tail of $log)"; tail -20 "$log"; return 1; }
    fi
    if ! ninja -C "$bd" qemu-system-x86_64 > "$log" 2>&1; then
        # kept: the next commit's build writes $log again
        local kept
        kept=$log.fail-$(echo "${name%% (*}" | tr ' /' '--')
        cp "$log" "$kept" 2>/dev/null || true
        bad "$name: build ($kept)"; grep -m5 -A5 'error' "$log" || tail -20 "$log"
        return 1
    fi
    # the +ds tarball has no firmware (as scripts/build.sh for build/qemu)
    qemu_firmware "$bd"
    if [ ! -f "$tr/tests/qtest/pvrdma-test.c" ]; then
        ok "$name: builds"; return 0
    fi
    if ! ninja -C "$bd" tests/qtest/pvrdma-test tests/qtest/pvrdma-hostile-test > "$log" 2>&1; then
        bad "$name: qtests build (tail of $log)"; tail -20 "$log"; return 1
    fi
    # QEMU's own test runner: meson test, the qtest-x86_64 suite's two
    # pvrdma tests
    if (cd "$bd" && meson test --no-rebuild --print-errorlogs \
            qtest-x86_64/pvrdma-test qtest-x86_64/pvrdma-hostile-test) > "$log" 2>&1; then
        ok "$name: builds, qtests: $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$log" | tr -s ' ' | tr '\n' ' ')"
    else
        bad "$name: qtests (tail of $log)"; grep -E 'not ok|FAIL|ERROR' "$log" | head -20; tail -15 "$log"
        return 1
    fi
}
# build_list TREE BUILD-DIR NAME: each commit of to_build (only the last
# with --final-only), then TREE back at the last
build_list() {
    local tr=$1 bd=$2 name=$3 e c subj
    [ "$final_only" = 0 ] || to_build=("${to_build[-1]}")
    [ "$build" = 1 ] || to_build=()
    for e in "${to_build[@]}"; do
        c=${e%% *}
        git -C "$tr" checkout -q "$c"
        subj=$(git -C "$tr" log -1 --format=%s)
        build_tree "$tr" "$bd" "$name ${e#* } ($subj)" || true
    done
    [ ${#to_build[@]} = 0 ] || git -C "$tr" checkout -q "${to_build[-1]%% *}"
}
build_list "$t" "$q" "$(basename "$orig" .orig.tar.xz)"

# --- 6. the newest QEMU Debian has --------------------------------------------------------
if [ "$newest" = 1 ]; then
    m=http://deb.debian.org/debian
    nd=$s/newest-src
    mkdir -p "$nd"
    if ! ls "$nd"/qemu_*.orig.tar.xz >/dev/null 2>&1; then
        # sid's qemu versions, newest first; the first whose files the
        # mirror has (its index has listed versions whose pool files 404)
        curl -fsS "$m/dists/sid/main/source/Sources.xz" | xz -d |
            awk '$1 == "Package:" {p = $2} p == "qemu" && $1 == "Version:" {print $2}' |
            sort -Vr > "$nd/versions"
        while read -r v; do
            v=${v#*:}
            up=${v%-*}
            if (cd "$nd" && curl -fsSO "$m/pool/main/q/qemu/qemu_${up}.orig.tar.xz" &&
                curl -fsSO "$m/pool/main/q/qemu/qemu_${v}.debian.tar.xz"); then
                echo "$v" > "$nd/version"
                (cd "$nd" && mkdir -p deb && tar -C deb -xJf "qemu_${v}.debian.tar.xz")
                break
            fi
            echo "newest: qemu $v is in sid's index but not on the mirror"
            rm -f "$nd"/qemu_*
        done < "$nd/versions"
    fi
    norig=$(ls "$nd"/qemu_*.orig.tar.xz 2>/dev/null | head -n1 || true)
fi
if [ "$newest" = 1 ] && [ -z "$norig" ]; then
    bad "newest: no QEMU source of sid could be fetched"
elif [ "$newest" = 1 ]; then
    echo "newest Debian QEMU: $(cat "$nd/version") ($(basename "$norig"))"
    base_tree "$s/newest-base" "$norig" "$nd/deb"
    nt=$s/newest/$(basename "$norig" .orig.tar.xz | tr _ -)
    rm -rf "$s/newest"; mkdir -p "$s/newest"
    git clone -q "$s/newest-base" "$nt"
    # the 10.0 series as it is, for the record; then the series made again
    # on that tree (the hook hunks applied with patch's offsets and fuzz),
    # which is what would be sent against it
    if (cd "$nt" && git_q am -q -3 "${patches[@]}") > "$s/newest.am.log" 2>&1; then
        echo "newest: the 10.0 series applies as it is with git am -3"
    else
        echo "newest: the 10.0 series does not apply as it is: $(grep -m1 '^Patch failed' "$s/newest.am.log")" \
            "($(grep -m1 '^error' "$s/newest.am.log"))"
    fi
    rm -rf "$nt"; git clone -q "$s/newest-base" "$nt"
    if python3 "$top/scripts/patch-series.py" --base "$s/newest-base" \
            --work "$s/newest-work" --out "$s/newest-patches" > "$s/newest.gen.log" 2>&1; then
        # as on 10.0: the series as sent, the whole device, every commit
        # built (only the whole's last with --final-only)
        to_build=()
        nname="newest $(basename "$norig" .orig.tar.xz)"
        if sent_series "$nt" "$s/newest-patches" "$nname"; then
            build_list "$nt" "$s/newest-qemu" "$nname"
        fi
    else
        bad "newest: the series cannot be made on $(basename "$norig")"
        tail -5 "$s/newest.gen.log"
    fi
fi
echo "${pass} passed, ${fail} failed"
[ "$fail" = 0 ]
