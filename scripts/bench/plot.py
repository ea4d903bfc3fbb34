#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Plot a benchmark run: latency and bandwidth against message size.

    scripts/bench/plot.py OUT BASE TITLE NAME=LABEL... [--ref FILE=LABEL]

Reads OUT/NAME.txt of each run (the guests' "BENCH" lines without the
prefix: "lat SIZE TYPICAL_USEC AVG_USEC", "bw SIZE MBPS") and writes
OUT/BASE.png and OUT/BASE.svg with gnuplot: on the left ib_send_lat's
typical (median) latency against size, on the right ib_write_bw's
average bandwidth against size, one line per run, log-log.  --ref adds a
dashed bandwidth line from FILE ("memcpy SIZE MBPS" lines, e.g. the
host's memcpy).  The data gnuplot drew is kept in OUT/BASE-NAME-lat.dat
and OUT/BASE-NAME-bw.dat.
Exit status 1 if gnuplot is missing or fails (the figures are in the
text report either way).
"""
import os
import shutil
import subprocess
import sys


def load(path):
    lat, bw = {}, {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 4 and w[0] == 'lat':
                lat[int(w[1])] = float(w[2])
            elif len(w) >= 3 and w[0] in ('bw', 'memcpy'):
                bw[int(w[1])] = float(w[2])
    return lat, bw


def esc(s):
    return s.replace('_', '\\\\_').replace('"', "'")


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    out, base, title = argv[0], argv[1], argv[2]
    runs, refs = [], []
    args = argv[3:]
    i = 0
    while i < len(args):
        if args[i] == '--ref':
            refs.append(args[i + 1].split('=', 1))
            i += 2
            continue
        runs.append(args[i].split('=', 1))
        i += 1
    if not shutil.which('gnuplot'):
        print('plot: no gnuplot (Debian package gnuplot-nox)', file=sys.stderr)
        return 1
    lat_plots, bw_plots = [], []
    for name, label in runs:
        lat, bw = load(os.path.join(out, name + '.txt'))
        # one file per panel: a size missing from one (NaN) would break
        # the other's line
        for kind, fig, plots in (('lat', lat, lat_plots),
                                 ('bw', bw, bw_plots)):
            if not fig:
                continue
            dat = os.path.join(out, '%s-%s-%s.dat' % (base, name, kind))
            with open(dat, 'w') as f:
                for sz in sorted(fig):
                    print(sz, fig[sz], file=f)
            plots.append('"%s" using 1:2 with linespoints title "%s"'
                         % (dat, esc(label)))
    for path, label in refs:
        _, bw = load(path)
        dat = os.path.join(out, '%s-ref-%s.dat' % (base,
                                                    os.path.basename(path)))
        with open(dat, 'w') as f:
            for sz in sorted(bw):
                print(sz, bw[sz], file=f)
        if bw:
            bw_plots.append('"%s" using 1:2 with linespoints dt 2 title "%s"'
                            % (dat, esc(label)))
    if not lat_plots and not bw_plots:
        print('plot: no figures to plot', file=sys.stderr)
        return 1
    body = """
set bmargin 5
set multiplot layout 1,2 title "%s"
set logscale xy
set format x "%%.0s%%cB"
set format y "%%g"
set xlabel "message size (bytes)"
set grid
set key top left
set ylabel "ib\\\\_send\\\\_lat, typical (usec)"
%s
set key bottom right
set ylabel "ib\\\\_write\\\\_bw (MB/s)"
%s
unset multiplot
""" % (esc(title),
       ('plot ' + ', '.join(lat_plots)) if lat_plots else '',
       ('plot ' + ', '.join(bw_plots)) if bw_plots else '')
    for term, ext in (('pngcairo size 1200,520 font ",10"', 'png'),
                      ('svg size 1200,520 font ",11" background "white"',
                       'svg')):
        script = 'set terminal %s\nset output "%s"\n%s' % (
            term, os.path.join(out, '%s.%s' % (base, ext)), body)
        r = subprocess.run(['gnuplot'], input=script, text=True,
                           capture_output=True)
        if r.returncode:
            print('plot: gnuplot failed: %s' % r.stderr.strip(),
                  file=sys.stderr)
            return 1
    # gnuplot indents its SVG with tabs and leaves trailing blanks: plain
    # text a patch (or checkpatch) takes as it is
    svg = os.path.join(out, base + '.svg')
    with open(svg) as f:
        lines = [ln.replace('\t', '  ').rstrip() for ln in f]
    with open(svg, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('plot: %s.png, %s.svg' % (os.path.join(out, base),
                                    os.path.join(out, base)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
