#!/usr/bin/env python3
"""Check every RoCEv2 frame of pcap files: headers and ICRC (stdlib only).

    roce-pcap-check.py [-v] FILE.pcap...

For each frame that is UDP to port 4791 over IPv4 or IPv6 (an optional
802.1Q tag), checks: the IPv4 header checksum, the IP and UDP lengths
against the frame, the BTH transport version (0), the pad count against the
payload, and the ICRC, computed as the InfiniBand specification (Annex
A17, RoCEv2) has it: CRC-32 over 8 bytes of 0xff (the masked LRH), the IP
header with TOS/traffic class, flow label, TTL/hop limit and the IPv4
checksum set to ones, the UDP header with its checksum set to ones, the BTH
with its reserved byte (resv8a) set to ones, then the rest of the packet
up to the ICRC, which follows it little-endian.  (Wireshark 4.0 shows the
ICRC, infiniband.invariant.crc, but does not verify it.)

Prints a line per source address ("10.0.0.1: 812 frames, ICRC ok 812,
opcodes ...") and a line per bad frame; exit status 1 if any frame is bad
or no RoCEv2 frame was found, 2 for an unreadable file.
"""
import collections
import struct
import sys
import zlib

LINKTYPE_ETHERNET = 1


def pcap_frames(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < 24:
        raise ValueError("%s: no pcap header" % path)
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise ValueError("%s: not a pcap file (magic %s)" % (path, magic.hex()))
    linktype = struct.unpack_from(end + "I", data, 20)[0]
    if linktype != LINKTYPE_ETHERNET:
        raise ValueError("%s: link type %d, not Ethernet" % (path, linktype))
    off, n = 24, 0
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack_from(end + "IIII", data, off)
        off += 16
        n += 1
        yield n, data[off:off + incl], orig
        off += incl


def ipv4_checksum(h):
    s = 0
    for i in range(0, len(h), 2):
        s += (h[i] << 8) + h[i + 1]
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s ^ 0xffff


def check_frame(f):
    """None if f is not RoCEv2; else (src, opcode, problem or None)."""
    if len(f) < 14:
        return None
    off, et = 14, struct.unpack_from("!H", f, 12)[0]
    if et == 0x8100:
        if len(f) < 18:
            return None
        off, et = 18, struct.unpack_from("!H", f, 16)[0]
    l3 = off
    if et == 0x0800:
        if len(f) < off + 20 or f[off] >> 4 != 4 or f[off + 9] != 17:
            return None
        ihl = (f[off] & 0xf) * 4
        if struct.unpack_from("!H", f, off + 6)[0] & 0x3fff:
            return None                          # a fragment
        src = ".".join(str(b) for b in f[off + 12:off + 16])
        ip_total = struct.unpack_from("!H", f, off + 2)[0]
        udp = off + ihl
        if len(f) < udp + 8 or struct.unpack_from("!H", f, udp + 2)[0] != 4791:
            return None
        if ipv4_checksum(f[off:off + ihl]) != 0:
            return src, None, "bad IPv4 header checksum"
        l3_end = off + ip_total
        masked = bytearray(f[off:udp + 8])
        masked[1] = 0xff                          # TOS
        masked[8] = 0xff                          # TTL
        masked[10:12] = b"\xff\xff"               # header checksum
    elif et == 0x86dd:
        if len(f) < off + 40 or f[off + 6] != 17:
            return None
        src = ":".join("%x" % struct.unpack_from("!H", f, off + 8 + 2 * i)[0] for i in range(8))
        udp = off + 40
        if len(f) < udp + 8 or struct.unpack_from("!H", f, udp + 2)[0] != 4791:
            return None
        l3_end = udp + struct.unpack_from("!H", f, off + 4)[0]
        masked = bytearray(f[off:udp + 8])
        masked[0] |= 0x0f                         # traffic class (low half)
        masked[1:4] = b"\xff\xff\xff"             # traffic class, flow label
        masked[7] = 0xff                          # hop limit
    else:
        return None
    if l3_end > len(f):
        return src, None, "IP length %d runs past the frame (%d bytes)" % (l3_end - l3, len(f) - l3)
    udp_len = struct.unpack_from("!H", f, udp + 4)[0]
    if udp + udp_len != l3_end:
        return src, None, "UDP length %d, IP payload %d" % (udp_len, l3_end - udp)
    masked[-2:] = b"\xff\xff"                     # UDP checksum
    bth = udp + 8
    if l3_end - bth < 12 + 4:
        return src, None, "too short for BTH + ICRC"
    opcode = f[bth]
    pad = (f[bth + 1] >> 4) & 3
    tver = f[bth + 1] & 0xf
    if tver != 0:
        return src, opcode, "BTH transport version %d" % tver
    bth_masked = bytearray(f[bth:bth + 12])
    bth_masked[4] = 0xff                          # resv8a
    crc = zlib.crc32(b"\xff" * 8)
    crc = zlib.crc32(bytes(masked), crc)
    crc = zlib.crc32(bytes(bth_masked), crc)
    crc = zlib.crc32(f[bth + 12:l3_end - 4], crc)
    icrc = struct.unpack_from("<I", f, l3_end - 4)[0]
    if crc != icrc:
        return src, opcode, "ICRC 0x%08x, computed 0x%08x" % (icrc, crc)
    if pad and (l3_end - 4 - bth) % 4:
        return src, opcode, "pad %d but the packet is not 4-byte aligned" % pad
    return src, opcode, None


def main(argv):
    verbose = "-v" in argv
    files = [a for a in argv[1:] if a != "-v"]
    if not files:
        sys.stderr.write(__doc__)
        return 2
    stats = collections.OrderedDict()
    bad = 0
    for path in files:
        try:
            frames = list(pcap_frames(path))
        except (OSError, ValueError) as e:
            print("roce-pcap-check: %s" % e)
            return 2
        for n, f, orig in frames:
            if len(f) != orig:
                print("%s #%d: truncated in the capture (%d of %d bytes)" % (path, n, len(f), orig))
                bad += 1
                continue
            r = check_frame(f)
            if r is None:
                continue
            src, op, problem = r
            s = stats.setdefault(src, {"frames": 0, "ok": 0, "ops": collections.Counter()})
            s["frames"] += 1
            if op is not None:
                s["ops"][op] += 1
            if problem:
                bad += 1
                print("%s #%d from %s: opcode %s: %s" % (path, n, src,
                      "-" if op is None else "0x%02x" % op, problem))
            else:
                s["ok"] += 1
                if verbose:
                    print("%s #%d from %s: opcode 0x%02x ok" % (path, n, src, op))
    total = sum(s["frames"] for s in stats.values())
    for src, s in stats.items():
        print("%s: %d RoCEv2 frames, ICRC and headers ok %d; opcodes %s" % (
            src, s["frames"], s["ok"],
            " ".join("0x%02x:%d" % kv for kv in sorted(s["ops"].items()))))
    if not total:
        print("no RoCEv2 frame (UDP 4791) in %s" % " ".join(files))
        return 1
    print("%d RoCEv2 frames, %d bad" % (total, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
