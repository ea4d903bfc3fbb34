# shellcheck shell=sh
# The rig's three boot builders share this: scripts/guest/run-vm.sh (host,
# bash), scripts/nested/run-l1.sh (host, bash) and scripts/nested/l2.sh (in
# L1, busybox ash; run-l1.sh installs this file as
# /usr/lib/pvrdma/initrd-lib.sh).  Each boots a kernel with its base initrd
# followed by a second cpio segment (the kernel unpacks both) that holds
# /test.sh, /test.env and the files given with --file.  POSIX sh only.

# rig_sq VALUE: VALUE single-quoted for sh ('it'\''s')
rig_sq() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# rig_put ROOT SRC[:DST]: copy the file SRC into the tree ROOT as DST
# (default /SRC's name); 1 with a message if SRC is not a file
rig_put() {
    _rig_src=${2%%:*} _rig_dst=${2#*:}
    [ "$_rig_dst" != "$2" ] || _rig_dst=/$(basename "$_rig_src")
    if [ ! -f "$_rig_src" ]; then
        echo "--file: no such file: $_rig_src" >&2
        return 1
    fi
    mkdir -p "$1$(dirname "$_rig_dst")" && cp "$_rig_src" "$1$_rig_dst"
}

# rig_env NAME=VALUE...: the /test.env lines for --env entries: NAME='VALUE'
# and "export NAME" each; 1 with a message for an entry without '='
rig_env() {
    for _rig_e in "$@"; do
        case $_rig_e in
            [A-Za-z_]*=*) ;;
            *) echo "--env wants NAME=VALUE: $_rig_e" >&2; return 1 ;;
        esac
        echo "${_rig_e%%=*}=$(rig_sq "${_rig_e#*=}")"
        echo "export ${_rig_e%%=*}"
    done
}

# rig_initrd BASE ROOT OUTDIR: OUTDIR/extra.cpio.gz is the tree ROOT as a
# newc cpio (files owned by root, sorted, gzip -1) and OUTDIR/initrd.img is
# BASE followed by it
rig_initrd() {
    (cd "$2" && find . -mindepth 1 | LC_ALL=C sort |
        cpio -o -H newc -R 0:0 2>/dev/null) | gzip -1 > "$3/extra.cpio.gz" &&
        [ -s "$3/extra.cpio.gz" ] &&
        cat "$1" "$3/extra.cpio.gz" > "$3/initrd.img"
}
