#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The device's VMState against its baseline, with QEMU's own checker.

Usage: vmstate-baseline.py QEMU QEMU_SRC BASELINE [--update]

Dumps the VMState descriptions of QEMU (-dump-vmstate), keeps the pvrdma
device's, and runs QEMU's scripts/vmstate-static-checker.py with the
baseline as the source and this build as the destination: a change that
an older build's stream could not be loaded with (a field removed, a
size changed, a version raised without a minimum) fails.  --update
writes the baseline from this build instead (after a compatible change:
a new subsection, a new version with its minimum kept).
"""
import json
import os
import subprocess
import sys
import tempfile


def dump(qemu):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "vmstate.json")
        subprocess.run([qemu, "-M", "pc", "-nodefaults", "-dump-vmstate",
                        path], check=True, capture_output=True)
        with open(path) as f:
            full = json.load(f)
    if "pvrdma" not in full:
        sys.exit("not ok: no pvrdma device in %s" % qemu)
    return {"pvrdma": full["pvrdma"]}


def main():
    qemu, src, baseline = sys.argv[1:4]
    cur = dump(qemu)
    if sys.argv[4:] == ["--update"]:
        with open(baseline, "w") as f:
            json.dump(cur, f, indent=1, sort_keys=True)
            f.write("\n")
        print("ok: baseline written to %s" % baseline)
        return
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(cur, f)
        f.flush()
        out = subprocess.run(
            [sys.executable,
             os.path.join(src, "scripts", "vmstate-static-checker.py"),
             "-s", baseline, "-d", f.name],
            capture_output=True, text=True)
    if out.returncode:
        print((out.stdout + out.stderr).strip())
        print("not ok: the pvrdma VMState is not compatible with %s"
              % baseline)
        sys.exit(1)
    print("ok: the pvrdma VMState loads a stream of its baseline "
          "(vmstate-static-checker.py)")


if __name__ == "__main__":
    main()
