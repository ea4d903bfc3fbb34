#!/usr/bin/env python3
# Keep the first N RoCEv2 frames (UDP port 4791) of each BTH opcode and IP
# version of a classic pcap (Ethernet link type), and the first N other
# frames of each EtherType and IP protocol (ARP, TCP, ICMPv6...: what the
# codec must refuse):
#
#   trim-pcap.py IN.pcap OUT.pcap [N]      (N: 3)
#
# Used to cut a capture of Linux rxe down to tests/unit/data/rxe-frames.pcap.
#
# SPDX-License-Identifier: GPL-2.0-or-later
import struct
import sys


def roce_key(f):
    """(ip version, opcode) of a UDP/4791 frame, else None"""
    if len(f) < 14:
        return None
    off, etype = 14, struct.unpack('!H', f[12:14])[0]
    if etype == 0x8100 and len(f) >= 18:
        off, etype = 18, struct.unpack('!H', f[16:18])[0]
    if etype == 0x0800 and len(f) >= off + 20 + 8 + 1:
        ihl = (f[off] & 0xf) * 4
        udp = off + ihl
        if f[off + 9] != 17 or len(f) < udp + 9:
            return None
        ver = 4
    elif etype == 0x86dd and len(f) >= off + 40 + 8 + 1:
        udp = off + 40
        if f[off + 6] != 17:
            return None
        ver = 6
    else:
        return None
    if struct.unpack('!H', f[udp + 2:udp + 4])[0] != 4791:
        return None
    return ver, f[udp + 8]


def other_key(f):
    """('other', EtherType, IP protocol / IPv6 next header)"""
    etype = struct.unpack('!H', f[12:14])[0] if len(f) >= 14 else 0
    proto = None
    if etype == 0x0800 and len(f) >= 24:
        proto = f[23]
    elif etype == 0x86dd and len(f) >= 21:
        proto = f[20]
    return 'other', etype, proto


def main():
    src, dst = sys.argv[1], sys.argv[2]
    keep = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    data = open(src, 'rb').read()
    magic = data[:4]
    if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1'):
        end = '<'
    elif magic in (b'\xa1\xb2\xc3\xd4', b'\xa1\xb2\x3c\x4d'):
        end = '>'
    else:
        sys.exit('%s: not a classic pcap file' % src)
    out, seen, off = [data[:24]], {}, 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + 'I', data[off + 8:off + 12])[0]
        rec = data[off:off + 16 + incl]
        off += 16 + incl
        key = roce_key(rec[16:]) or other_key(rec[16:])
        if seen.get(key, 0) >= keep:
            continue
        seen[key] = seen.get(key, 0) + 1
        out.append(rec)
    open(dst, 'wb').write(b''.join(out))
    for key, n in sorted(seen.items(), key=str):
        if key[0] == 'other':
            print('EtherType 0x%04x protocol %s: %d' % (key[1], key[2], n))
        else:
            print('IPv%d opcode 0x%02x: %d' % (key[0], key[1], n))


main()
