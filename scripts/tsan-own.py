#!/usr/bin/env python3
"""Sort ThreadSanitizer reports of a QEMU run (scripts/test.sh tsan).

    scripts/tsan-own.py LOG...

A report whose racing memory the pvrdma device allocated (its state, its
core's tables and objects: the allocation stack names one of the device's
functions or QOM's device creation) is the device's; the others are
QEMU's own (its TSan build reports its lock-free lists and glib, which
is not instrumented) or guest RAM (no allocation stack: mapped memory,
which the qtest reads and writes as a guest would).  Prints the counts;
exits 1 if any report is the device's, printing the first.
"""
import re
import sys

OURS = re.compile(r'#\d+ (pvrdma_\w+|cr_\w+|roce_\w+|hv_\w+|'
                  r'qdev_device_add\w*)\b')


def main(paths):
    own, other, ram, first = 0, 0, 0, None
    for path in paths:
        with open(path, errors='replace') as f:
            text = f.read()
        for rep in text.split('==================')[1:]:
            if 'WARNING: ThreadSanitizer' not in rep:
                continue
            i = rep.find('Location is')
            if i < 0:
                ram += 1
                continue
            alloc = rep[i:].split('\n\n')[0]
            if OURS.search(alloc):
                own += 1
                first = first or rep.strip()
            else:
                other += 1
    print('%d on the device\'s memory, %d QEMU\'s own, %d guest RAM'
          % (own, other, ram))
    if first:
        print(first)
    return 1 if own else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
