# Shared by the benchmarks that pair two guests (scripts/bench-*.sh):
# source it after setting $out (the run's directory) and the envs array
# (run-vm.sh -e options for the guests).
#
# SPDX-License-Identifier: GPL-2.0-or-later

# The 3 busiest processes other than QEMU (CPU % over their life): TCG
# figures depend on what else the host runs, so the reports record it.
bench_busiest() {
    ps -eo pcpu=,comm= --sort=-pcpu | grep -v qemu-system | head -n 3 | awk '{printf "%s %s%%; ", $2, $1}'
}

# bench_run TOOL NAME run-vm-args...: two VMs running
# scripts/guest/bench-2vm.sh; VM 1's "BENCH ..." lines go to $out/NAME.txt,
# the load after the run to $out/host.txt.  Exits 1 (as TOOL) if it fails.
bench_run() {
    local tool=$1 name=$2; shift 2
    echo "# $name: two VMs ..." >&2
    local t0=$SECONDS
    if ! scripts/guest/run-vm.sh --no-build -n 2 -t 900 -o "$out/$name" \
            -f tests/guest/common.sh:/usr/lib/pvrdma/tests-common.sh "${envs[@]}" "$@" \
            scripts/guest/bench-2vm.sh 2> "$out/$name.log"; then
        tail -n 5 "$out/$name.log" >&2
        echo "$tool: the $name run failed (logs in $out/$name)" >&2
        exit 1
    fi
    tr -d '\r' < "$out/$name/vm1/console.log" | grep '^BENCH ' | cut -d' ' -f2- > "$out/$name.txt"
    # other load during the run skews TCG figures (2 vCPU threads spin)
    echo "after the $name run: load average $(cut -d' ' -f1-3 /proc/loadavg); busiest other processes: $(bench_busiest)" >> "$out/host.txt"
    echo "# $name: $((SECONDS - t0)) s" >&2
}
