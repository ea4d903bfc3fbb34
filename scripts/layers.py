#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The product code's shape: call cycles between source files, file sizes,
function lengths.

    scripts/layers.py [--check[=cycles]] [--max-lines N] [--max-func N]
                      [FILE...]
    scripts/layers.py --objects DIR     e.g. build/qemu/libcommon.a.p

Default files: hw/rdma/*.c (the device's PCI/QOM glue), hw/rdma/core/*.c
(the core) and backend/*.c (the transports), and the product headers, *.h
in those folders and include/hw/rdma.  A file calls another when it
names a function that the other defines with external linkage (one not 'static'); taking a
function's address through an ops table registered at run time is such a
naming too only if the name appears, so callbacks a higher layer hands
down do not count.  Calls, cycles and layers are between the .c files
only (a header defines nothing external).  Prints:
  - the call cycles: each strongly connected set of .c files, with the
    functions each file of it takes from the others;
  - the layers of the .c files, if there is no cycle;
  - the files' lines, headers included, and the files over --max-lines
    (default 900);
  - the longest functions, the headers' static inline ones included, and
    those over --max-func lines (default 80), counted from the line with
    the name to the closing brace.
  - the calls that run back up between the folders: the glue
    (hw/rdma/*.c) over the transports (backend/) over the core
    (hw/rdma/core/); a file calls only into its own folder or one below
    (the core reaches the transports only through their ops tables);
  - the includes of the transport contract (pvrdma_transport.h,
    pvrdma_transport_calls.h) by the glue or a public header: the glue
    sees a transport only through its constructor header;
  - the file map (the Layering table of docs/devel/pvrdma.rst) against
    the tree: product files it does not name, names that are no file;
  - the uses of a transport's contract (PvrdmaTransportOps and its
    message, queue, move and migration tables) through '->ops->' outside
    hw/rdma/core/pvrdma_transport.c, the one door into the transports.
With --check the exit status is 1 if there is a cycle, a call back up
between the folders, a file map that differs from the tree, a use of the
contract outside its door, or a limit is exceeded; with --check=cycles
all but the limits count (scripts/test.sh unit runs that).  Reads the
sources as text in QEMU's coding style (a function's name at the start of
a line or after its return type, its body's braces
in column 0); no compiler needed.

--tests: the same report on the tests' files (tests/qtest, tests/unit,
tests/fuzz, tests/bench, tests/verbs-check, the guest tools), with their
limits: 1500 lines a file, 150 a function.

--objects DIR: the same cycle check at link level, from what the compiler
made: nm(1) of DIR's hw_rdma_*.o (QEMU's build of hw/rdma and backend),
an object calling another when it needs a symbol the other defines.
Prints the objects, the edges and the cycles; exit status 1 on a cycle.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

TOP = os.path.normpath(os.path.join(os.path.dirname(__file__), '..'))
ANYDEF = re.compile(r'^(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(')
IDENT = re.compile(r'[A-Za-z_]\w*')
# '#define NAME(args) body', continuation lines included
MACRO = re.compile(r'^[ \t]*#[ \t]*define[ \t]+(\w+)\(((?:[^\n\\]|\\.|\\\n)*)',
                   re.M)
KEYWORDS = {'if', 'for', 'while', 'switch', 'return', 'sizeof'}
DEFAULT_FILES = ('hw/rdma/*.[ch]', 'hw/rdma/core/*.[ch]', 'backend/*.[ch]',
                 'include/hw/rdma/*.h')
# --tests: the tests' files, held to their own limits (1500 lines, 150)
TEST_FILES = ('tests/qtest/*.[ch]', 'tests/qtest/pvrdma/*.[ch]',
              'tests/qtest/libqos/pvrdma*.[ch]', 'tests/unit/*.[ch]',
              'tests/unit/*/*.[ch]',
              'tests/fuzz/*.[ch]', 'tests/bench/*.[ch]',
              'tests/verbs-check/*.[ch]', 'tests/guest/tools/*.c')


def strip_comments(text):
    """Comments and string literals blanked (line numbers kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(lines):
    """(name, first line, last line, external) of each function body."""
    found = []
    for i, line in enumerate(lines):
        if not line.startswith('{'):
            continue
        # the name: the nearest line above at column 0 with "name("
        for k in range(i - 1, max(i - 12, -1), -1):
            m = ANYDEF.match(lines[k])
            if m and lines[k][0] not in ' \t#' and m.group(1) not in KEYWORDS:
                end = i
                while end < len(lines) and not lines[end].startswith('}'):
                    end += 1
                ext = not lines[k].startswith('static') and \
                    not (k > 0 and lines[k - 1].startswith('static'))
                found.append((m.group(1), k + 1, end + 1, ext))
                break
    return found


def sccs(nodes, edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def objects(d):
    """Cycles between the objects of directory d, from nm."""
    objs = sorted(glob.glob(os.path.join(d, 'hw_rdma_*.o')))
    if not objs:
        print('no hw_rdma_*.o in %s (build QEMU first: scripts/build.sh)' % d)
        return 2
    defs, need = {}, {}
    for o in objs:
        out = subprocess.run(['nm', o], capture_output=True, text=True,
                             check=True).stdout
        need[o] = set()
        for line in out.split('\n'):
            f = line.split()
            if len(f) == 3 and f[1] in 'TDBR':
                defs[f[2]] = o
            elif len(f) == 2 and f[0] == 'U':
                need[o].add(f[1])
    edges = {o: {defs[s] for s in need[o] if defs.get(s, o) != o}
             for o in objs}
    cycles = sccs(objs, edges)
    print('OBJECTS: %d, %d edges; CALL CYCLES between objects: %d' % (
        len(objs), sum(len(e) for e in edges.values()), len(cycles)))
    for comp in cycles:
        print('  ' + ' '.join(os.path.basename(o) for o in comp))
    return 1 if cycles else 0


DOOR = 'hw/rdma/core/pvrdma_transport.c'
RAW = {}
# the folders from the top down: a file calls only its own or lower ones
FOLDERS = (('glue', 'hw/rdma/'), ('transports', 'backend/'),
           ('core', 'hw/rdma/core/'))


def folder(rel):
    """The rank of rel's folder in FOLDERS (0 at the top), or None."""
    for i, (_, d) in enumerate(FOLDERS):
        if os.path.dirname(rel) + '/' == d:
            return i
    return None
CONTRACTS = ('PvrdmaTransportOps', 'PvrdmaMessageOps', 'PvrdmaQueueOps',
             'PvrdmaMoveOps', 'PvrdmaMigOps')
FIELD = re.compile(r'\(\*\s*(\w+)\)\s*\(|(\w+)\s*;')


def struct_fields(text, name):
    """The member names of 'typedef struct NAME { ... } NAME;' in text."""
    m = re.search(r'typedef struct %s \{(.*?)\} %s;' % (name, name), text,
                  re.S)
    if not m:
        return set()
    return {a or b for a, b in FIELD.findall(m.group(1))}


MAP_DOC = 'docs/devel/pvrdma.rst'


def first_column_files(lines, last=''):
    """The paths the first column of a list-table's rows in lines names
    (a name without a folder is in the folder of the name before it, last
    the folder before the first): (names in order, the last folder)."""
    names, first_col = [], False
    for line in lines:
        if line.startswith('   * - '):
            first_col = True
        elif line.startswith('     - '):
            first_col = False
        if not first_col:
            continue
        for n in re.findall(r'``([\w./-]+\.[ch])``', line):
            if '/' in n:
                last = os.path.dirname(n)
            else:
                n = os.path.join(last, n)
            names.append(n)
    return names, last


def file_map():
    """The paths the Layering table of MAP_DOC names in its first column."""
    with open(os.path.join(TOP, MAP_DOC), encoding='utf-8') as fh:
        text = fh.read()
    m = re.search(r'^Layering\n-+\n(.*?)\n\n(?=\S[^\n]*\n[-=]{3,}\n)', text,
                  re.M | re.S)
    return set(first_column_files((m.group(1) if m else '').split('\n'))[0])


def door(text, rel):
    """
    Uses of a transport's contract (the members of PvrdmaTransportOps,
    PvrdmaMessageOps and PvrdmaQueueOps that PvrdmaHostOps does not have)
    through '->ops->' outside pvrdma_transport.c: (file, line, member).
    """
    by_rel = {rel[f]: t for f, t in text.items()}
    tp = by_rel.get('include/hw/rdma/pvrdma_transport.h', '')
    core = by_rel.get('include/hw/rdma/pvrdma_core.h', '')
    names = set().union(*(struct_fields(tp, n) for n in CONTRACTS))
    names -= struct_fields(core, 'PvrdmaHostOps')
    out = []
    for f, t in sorted(by_rel.items()):
        if f == DOOR:
            continue
        for i, line in enumerate(t.split('\n'), 1):
            for m in re.finditer(r'->ops->(\w+)', line):
                if m.group(1) in names:
                    out.append((f, i, m.group(1)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--check', nargs='?', const='all',
                    choices=('all', 'cycles'))
    ap.add_argument('--max-lines', type=int)
    ap.add_argument('--max-func', type=int)
    ap.add_argument('--top', type=int, default=10,
                    help='longest functions listed (default 10)')
    ap.add_argument('--objects', metavar='DIR')
    ap.add_argument('--tests', action='store_true',
                    help="the tests' files instead, with --max-lines 1500 "
                         "and --max-func 150 unless given")
    ap.add_argument('files', nargs='*')
    a = ap.parse_args()
    if a.objects:
        return objects(a.objects)
    if a.max_lines is None:
        a.max_lines = 1500 if a.tests else 900
    if a.max_func is None:
        a.max_func = 150 if a.tests else 80
    pats = TEST_FILES if a.tests else DEFAULT_FILES
    files = a.files or sorted(set(f for pat in pats
                                  for f in glob.glob(os.path.join(TOP, pat))))
    # calls and cycles: between the .c files
    srcs = [f for f in files if f.endswith('.c')]
    rel = {f: os.path.relpath(f, TOP) for f in files}
    text, funcs, defs = {}, {}, {}
    for f in files:
        with open(f, encoding='utf-8') as fh:
            raw = RAW[f] = fh.read()
        text[f] = strip_comments(raw)
        funcs[f] = functions(text[f].split('\n'))
        for name, _, _, ext in funcs[f]:
            if ext and f in srcs:
                defs.setdefault(name, set()).add(f)
    # a function-like macro names what its body names (PVRDMA_GUEST_ERR
    # calls pvrdma_guest_error): a file using the macro calls those too
    macros = {}
    for f in files:
        for m in MACRO.finditer(text[f]):
            macros[m.group(1)] = set(IDENT.findall(m.group(2))) - {m.group(1)}
    # stubs define what the real file defines: a name defined in several
    # files is no edge (the build links one of them)
    edges, why = {}, {}
    for f in srcs:
        names = set(IDENT.findall(text[f]))
        todo = [n for n in names if n in macros]
        while todo:
            for n in macros[todo.pop()] - names:
                names.add(n)
                if n in macros:
                    todo.append(n)
        for name in names:
            owners = defs.get(name, set())
            if len(owners) != 1 or f in owners:
                continue
            g = next(iter(owners))
            edges.setdefault(f, set()).add(g)
            why.setdefault((f, g), set()).add(name)
    cycles = sccs(srcs, edges)
    bad = False
    print('CALL CYCLES between files: %d' % len(cycles))
    for i, comp in enumerate(cycles, 1):
        bad = True
        print('cycle %d: %d files: %s' % (i, len(comp),
                                          ' '.join(rel[f] for f in comp)))
        for f in comp:
            for g in comp:
                if (f, g) in why:
                    names = sorted(why[(f, g)])
                    print('  %s -> %s: %s%s' % (
                        rel[f], rel[g], ', '.join(names[:6]),
                        ' and %d more' % (len(names) - 6)
                        if len(names) > 6 else ''))
    if not cycles and srcs:
        # each file one floor above the highest it calls (leaves: 0)
        floor = {}

        def up(f):
            if f not in floor:
                floor[f] = 1 + max((up(g) for g in edges.get(f, ())),
                                   default=-1)
            return floor[f]
        for f in srcs:
            up(f)
        print('LAYERS (a file calls only files on lower floors):')
        for n in range(max(floor.values()), -1, -1):
            print('  %2d  %s' % (n, ' '.join(
                sorted(rel[f] for f in srcs if floor[f] == n))))
    ups = sorted((rel[f], rel[g], sorted(why[(f, g)]))
                 for f in srcs for g in edges.get(f, ())
                 if folder(rel[f]) is not None and
                 folder(rel[g]) is not None and
                 folder(rel[g]) < folder(rel[f]))
    print('CALLS BACK UP between folders (%s): %d' % (
        ' > '.join('%s %s' % (n, d) for n, d in FOLDERS), len(ups)))
    for f, g, names in ups:
        bad = True
        print('  %s -> %s: %s' % (f, g, ', '.join(names[:6])))
    contract = [(rel[f], n) for f in files
                if folder(rel[f]) == 0 or
                (rel[f].startswith('include/hw/rdma/') and
                 not rel[f].startswith('include/hw/rdma/pvrdma_transport'))
                for n in re.findall(r'^#include "hw/rdma/(pvrdma_transport'
                                    r'(?:_calls)?\.h)"', RAW[f], re.M)]
    print('INCLUDES of the transport contract by the glue or a public '
          'header: %d' % len(contract))
    for f, n in contract:
        bad = True
        print('  %s: %s' % (f, n))
    if not a.tests and not a.files:
        mapped = file_map()
        tree = {rel[f] for f in files}
        unmapped = sorted(tree - mapped)
        stale = sorted(n for n in mapped - tree
                       if not os.path.exists(os.path.join(TOP, n)))
        print('FILE MAP (%s, Layering): files not in it: %d; '
              'names that are no file: %d' % (MAP_DOC, len(unmapped),
                                               len(stale)))
        for n in unmapped + stale:
            bad = True
            print('  %s%s' % (n, '' if n in tree else ' (no such file)'))
    doors = door(text, rel)
    print('TRANSPORT HOOKS used outside %s: %d' % (DOOR, len(doors)))
    for f, i, name in doors:
        bad = True
        print('  %s:%d: ->ops->%s' % (f, i, name))
    cyclic = bad
    sizes = sorted(((text[f].count('\n'), rel[f]) for f in files),
                   reverse=True)
    over = [s for s in sizes if s[0] > a.max_lines]
    print('FILES: %d, %d lines; largest %s (%d); over %d lines: %d' % (
        len(files), sum(s[0] for s in sizes), sizes[0][1], sizes[0][0],
        a.max_lines, len(over)))
    for n, f in over:
        bad = True
        print('  %5d %s' % (n, f))
    allf = sorted(((last - first + 1, name, rel[f], first)
                   for f in files for name, first, last, _ in funcs[f]),
                  reverse=True)
    long_ = [x for x in allf if x[0] > a.max_func]
    top = allf[0] if allf else (0, '-', '-', 0)  # none: headers only
    print('FUNCTIONS: %d; longest %s (%s, %d lines); over %d lines: %d' % (
        len(allf), top[1], top[2], top[0], a.max_func, len(long_)))
    for n, name, f, first in allf[:max(a.top, len(long_))]:
        if n > a.max_func:
            bad = True
        print('  %4d %s (%s:%d)%s' % (n, name, f, first,
                                       ' OVER' if n > a.max_func else ''))
    if a.check == 'cycles':
        return 1 if cyclic else 0
    return 1 if a.check and bad else 0


if __name__ == '__main__':
    sys.exit(main())
