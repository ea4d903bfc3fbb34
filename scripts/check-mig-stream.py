#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""QEMU's own scripts/analyze-migration.py reads a pvrdma device's state.

Usage: check-mig-stream.py ANALYZE_MIGRATION_PY FILE

FILE is a migration to a file of a device with an RC QP pair connected
(the qtest /pvrdma/migration/blob-mismatch with PVRDMA_MIG_KEEP=FILE).
Checks that the tool parses the whole stream and that the device's section
holds the core's state as named VMState fields: the image's magic, every
object count equal to its array's length, the connected QPs in RTS with
their ring pages inside the page pool, and the DSR subsection of an
active device.  Exit 1 and
a line saying what is missing otherwise.
"""
import json
import subprocess
import sys

RTS = 3


def records(mig, name):
    """An array field; the tool prints an array of one as the record."""
    v = mig.get(name, [])
    return v if isinstance(v, list) else [v]


def fail(why):
    print("not ok: " + why)
    sys.exit(1)


def main():
    tool, path = sys.argv[1], sys.argv[2]
    out = subprocess.run([sys.executable, tool, "-f", path],
                         capture_output=True, text=True)
    if out.returncode:
        fail("analyze-migration.py failed: " + out.stderr.strip()[-300:])
    state = json.loads(out.stdout)
    dev = [v for k, v in state.items() if k.split(" ")[0].endswith("/pvrdma")]
    if len(dev) != 1:
        fail("no single pvrdma section in %s" % sorted(state))
    mig = dev[0].get("mig")
    if not mig:
        fail("the pvrdma section has no 'mig' (the core's state) field")
    if int(mig["magic"], 16) != 0x5056494D:
        fail("magic %s" % mig["magic"])
    for n, arr in (("ngid", "gid"), ("npd", "pd"), ("ncq", "cq"),
                   ("nqp", "qp")):
        count = int(mig[n + "[0]"], 16)
        if count != len(records(mig, arr)):
            fail("%s is %d, %s has %d records" %
                 (n, count, arr, len(records(mig, arr))))
    rts = [q for q in records(mig, "qp") if int(q["state"], 16) == RTS]
    if len(rts) < 2:
        fail("%d QPs in RTS, 2 expected" % len(rts))
    pool = records(mig, "pages")
    if int(mig["npages[0]"], 16) != len(pool):
        fail("npages is %s, the pool has %d pages" % (mig["npages[0]"],
                                                      len(pool)))
    for q in rts:
        first, n = int(q["page0"], 16), int(q["npages"], 16)
        if not n or first + n > len(pool):
            fail("QP %s: pages %d+%d, the pool has %d" %
                 (q["handle"], first, n, len(pool)))
    dsr = mig.get("pvrdma/state/dsr")
    if not dsr or not int(dsr["async_npages"], 16):
        fail("an active device without its DSR subsection")
    print("ok: analyze-migration.py reads the pvrdma state: %d QPs (%d in "
          "RTS), %d CQs, %d GID entries, DSR subsection" %
          (len(records(mig, "qp")), len(rts), len(records(mig, "cq")),
           len(records(mig, "gid"))))


if __name__ == "__main__":
    main()
