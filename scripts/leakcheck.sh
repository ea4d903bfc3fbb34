#!/bin/bash
# Leak check: QEMU with the pvrdma device under valgrind, driven by the
# qtests through 1000 create/destroy cycles of every object type (PD, MR
# user/DMA/FRMR, CQ, QP RC/UD, SRQ, UC, BIND), 100 activate/reset cycles
# and 50 rounds of every realize error path.  Prints what valgrind found
# lost, in total and in stacks through the pvrdma code, for a one-cycle
# baseline and for the full run; fails on any pvrdma loss or any growth.
#   scripts/leakcheck.sh [CYCLES [RESETS]]      (default 1000 100)
# The core has its own: make -C tests/unit valgrind.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
cycles=${1:-1000}
resets=${2:-100}
out=build/leak
rm -rf "$out"
mkdir -p "$out/bin"
scripts/build.sh > "$out/build.log" 2>&1 || {
    tail -20 "$out/build.log"; echo "leakcheck: build failed"; exit 1; }
command -v valgrind > /dev/null || { echo "leakcheck: valgrind missing"; exit 1; }

# libqtest wants a binary named *-system-<arch>: a wrapper
cat > "$out/bin/qemu-system-x86_64" <<EOW
#!/bin/sh
exec env G_SLICE=always-malloc G_DEBUG=gc-friendly valgrind -q \\
    --leak-check=full --show-leak-kinds=definite,indirect \\
    --num-callers=40 --log-file=$top/$out/vg.\$\$.log \\
    $top/build/qemu/qemu-system-x86_64 "\$@"
EOW
chmod +x "$out/bin/qemu-system-x86_64"
export QTEST_QEMU_BINARY=$out/bin/qemu-system-x86_64
bin=build/qemu/tests/qtest/pvrdma-hostile-test

# bytes definitely lost (direct + indirect), all and through pvrdma frames
lost() { # log -> "total pvrdma"
    awk '
        /are definitely lost in loss record/ {
            gsub(",", "", $2); b = $2; total += b; inrec = 1; mine = 0; next
        }
        inrec && /pvrdma|hw\/rdma/ { mine = 1 }
        inrec && /^==[0-9]+== *$/ { if (mine) pv += b; inrec = 0 }
        END { if (inrec && mine) pv += b; printf "%d %d\n", total, pv }
    ' "$1"
}

run() { # name case cycles resets
    local t0=$(date +%s) st log
    rm -f "$out"/vg.*.log
    PVRDMA_LEAK_CYCLES=$3 PVRDMA_LEAK_RESETS=$4 PVRDMA_REALIZE_ROUNDS=50 \
        timeout 3600 \
        "$bin" --tap -p "$2" > "$out/$1.tap" 2>&1
    st=$?
    log=$(ls "$out"/vg.*.log | head -1)
    mv "$log" "$out/$1.valgrind.log"
    set -- "$1" $(lost "$out/$1.valgrind.log") "$st" "$(( $(date +%s) - t0 ))"
    printf "%-10s exit %s  %4s s  lost %6s bytes, through pvrdma %s bytes\n" \
        "$1" "$4" "$5" "$2" "$3"
    echo "$2 $3 $4" > "$out/$1.fig"
}

echo "# leakcheck: $cycles create/destroy cycles per object type," \
     "$resets activate/reset cycles, under valgrind"
run baseline /x86_64/pvrdma/hostile/leak-cycles 1 1
run cycles /x86_64/pvrdma/hostile/leak-cycles "$cycles" "$resets"
run realize /x86_64/pvrdma/hostile/cve-2018-20123/realize-errors 0 0
read -r bt bp bs < "$out/baseline.fig"
read -r ct cp cs < "$out/cycles.fig"
read -r rt rp rs < "$out/realize.fig"
echo "growth from 1 to $cycles cycles: $((ct - bt)) bytes"
if [ "$bs$cs$rs" = 000 ] && [ "$bp$cp$rp" = 000 ] && [ "$ct" -le "$bt" ]; then
    echo "leakcheck: 0 bytes leaked by pvrdma"
    exit 0
fi
echo "leakcheck: FAILED (logs in $out)"
exit 1
