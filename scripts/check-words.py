#!/usr/bin/env python3
"""README figures that the tree can count, checked against it.

    scripts/check-words.py

Each check prints "ok WHAT" or "FAIL WHAT: README says X, the tree Y";
exit status 1 if any failed.  Checked: how many QEMU files the hook
patch touches, which guest tests run the verbs checker, which nested
tests make check runs.
"""
import glob
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path):
    with open(os.path.join(TOP, path), encoding="utf-8") as f:
        return f.read()


def readme_says(readme, pattern, what):
    m = re.search(pattern, readme)
    if not m:
        return None, "FAIL %s: README does not say it (/%s/)" % (what, pattern)
    return m.group(1), None


def hook_files():
    return str(len(re.findall(r"^\+\+\+ b/", read("patches/qemu-hooks.patch"),
                              re.M)))


def checker_tests():
    runs = re.compile(r"^[^#\n]*\b(vc_2vm|vc_2vm_all|vc_loopback|vc_across|"
                      r"device_version_test|pvrdma-verbs-check)\b", re.M)
    found = []
    for t in sorted(glob.glob(os.path.join(TOP, "tests/guest/[0-9][0-9]-*.sh"))):
        with open(t, encoding="utf-8") as f:
            if runs.search(f.read()):
                found.append(os.path.basename(t)[:2])
    return " ".join(found)


def nested_default():
    m = re.search(r"PVRDMA_NESTED_TESTS:-([0-9 ]+)\}", read("scripts/test.sh"))
    return m.group(1).strip() if m else "?"


def main():
    readme = " ".join(read("README.md").split())
    checks = [
        ("files the hook patch touches",
         r"qemu-hooks\.patch` \((\d+) files of QEMU's", hook_files()),
        ("guest tests that run the verbs checker",
         r"Guest tests ((?:\d\d )+)run it", checker_tests()),
        ("nested tests make check runs",
         r"\(`tests/nested/(\d+`, `\d+)`;", nested_default()),
    ]
    bad = 0
    for what, pattern, tree in checks:
        said, err = readme_says(readme, pattern, what)
        if err:
            print(err)
            bad += 1
            continue
        said = re.sub(r"[`, ]+", " ", said).strip()
        if said == tree:
            print("ok %s (%s)" % (what, tree))
        else:
            print("FAIL %s: README says %s, the tree %s" % (what, said, tree))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
