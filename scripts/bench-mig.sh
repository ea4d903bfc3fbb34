#!/bin/bash
# The device's share of a migration's downtime: the core's save (source,
# VM stopped) and load (destination: every object re-created, every ring
# and MR mapped again) for 1 connected QP and for QPS connected QPs with as
# many MRs (tests/bench/bench-mig.c, built -O2 against the QEMU-free core
# on the unit tests' fake host).  Prints figures and the ratio to the
# target (save + load <= 10 ms at 1000 QPs); not a test.
#
#   scripts/bench-mig.sh [-q QPS] [-r RUNS]     (default 1000 QPs, 11 runs)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
make -s -C "$top/tests/bench" "$top/build/bench-core/bench-mig" >/dev/null
echo "# host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$top/build/bench-core/bench-mig" "$@"
