# SPDX-License-Identifier: Apache-2.0
"""Expected behaviour of quicoff_rx, frame by frame, built on the project's
golden models: the QUIC part is quicoff.ref (header protection, RFC 9000 A.3
PN decoding, AES-GCM open), the key-phase rules are libquicoff's
(docs/design.md), the frame rewrite (lengths, IPv4 header checksum, UDP
checksum) is done by scapy. Nothing here is taken from the RTL."""

from __future__ import annotations

import struct

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from quicoff import ref

OK, AUTH, UNKNOWN, MALFORMED, PASS, KPU = range(6)
NAMES = (
    "ok",
    "auth_failed",
    "unknown_connection",
    "malformed",
    "passthrough",
    "key_phase_unavailable",
)
OT_NONE, OT_NEXT, OT_PREV = 0, 1, 2


class MConn:
    """The receiver state of one entry, as the hardware should hold it."""

    def __init__(self, suite, key20, keys, next_keys, gen, fail_pass, largest=None):
        self.suite = suite
        self.key20 = key20
        self.hp = keys.hp
        self.slot = [None, None]
        self.slot[gen & 1] = keys
        self.cur_phase = gen & 1
        self.other = OT_NONE
        if next_keys is not None:
            self.slot[(gen + 1) & 1] = next_keys
            self.other = OT_NEXT
        self.first_pn = 0
        self.largest = largest
        self.fail_pass = fail_pass
        self.ok = self.failed = self.key_updates = 0


def lookup_key(frame_info, dcid_len, data):
    if dcid_len:
        return bytes(data[frame_info["q"] + 1 : frame_info["q"] + 1 + dcid_len]).ljust(20, b"\0")
    return (frame_info["dst"] + frame_info["dport"].to_bytes(2, "big")).ljust(20, b"\0")


def parse_frame(f: bytes):
    """The frame classification the hardware documents (quicoff_rx.v):
    returns (status or None for 'QUIC candidate', info)."""
    n = len(f)
    if n < 14:
        return PASS, None
    et = struct.unpack_from("!H", f, 12)[0]
    l3 = 14
    if et == 0x8100:
        if n < 18:
            return PASS, None
        et = struct.unpack_from("!H", f, 16)[0]
        l3 = 18
    info = {"l3": l3}
    if et == 0x0800:
        if n < l3 + 20:
            # the header window is zero past the frame: fields read as 0
            f = f + bytes(l3 + 20 - n)
        ver, ihl = f[l3] >> 4, f[l3] & 15
        tot = struct.unpack_from("!H", f, l3 + 2)[0]
        frag = struct.unpack_from("!H", f, l3 + 6)[0] & 0x3FFF
        if ver != 4 or ihl < 5 or f[l3 + 9] != 17 or frag:
            return PASS, None
        if tot < ihl * 4 + 8 or l3 + tot > n:
            return MALFORMED, None
        l4, ip_end = l3 + 4 * ihl, l3 + tot
        info.update(v=4, dst=f[l3 + 16 : l3 + 20])
    elif et == 0x86DD:
        if n < l3 + 40:
            f = f + bytes(l3 + 40 - n)
        if f[l3] >> 4 != 6 or f[l3 + 6] != 17:
            return PASS, None
        plen = struct.unpack_from("!H", f, l3 + 4)[0]
        if l3 + 40 + plen > n:
            return MALFORMED, None
        l4, ip_end = l3 + 40, l3 + 40 + plen
        info.update(v=6, dst=f[l3 + 24 : l3 + 40])
    else:
        return PASS, None
    ulen = struct.unpack_from("!H", f, l4 + 4)[0]
    if ulen < 8 or l4 + ulen > ip_end:
        return MALFORMED, None
    if ulen == 8 or f[l4 + 8] & 0x80 or not f[l4 + 8] & 0x40:
        return PASS, None
    info.update(l4=l4, q=l4 + 8, udp_end=l4 + ulen, dport=struct.unpack_from("!H", f, l4 + 2)[0])
    return None, info


def rewrite(frame: bytes, new_quic: bytes) -> bytes:
    """The frame with its UDP payload replaced, lengths and checksums
    recomputed by scapy, padding after the datagram gone."""
    p = Ether(frame)
    ipl = p[IP] if IP in p else p[IPv6]
    udp = p[UDP]
    zero_csum = IP in p and udp.chksum == 0
    udp.remove_payload()
    udp.add_payload(Raw(new_quic))
    del udp.len
    if zero_csum:
        udp.chksum = 0
    else:
        del udp.chksum
    if IP in p:
        del ipl.len
        del ipl.chksum
    else:
        del ipl.plen
    out = bytes(p)
    return out


def expect(frame: bytes, dcid_len: int, conns: dict[bytes, MConn]):
    """(status, output frame or None when dropped, flags) and the receiver
    state updated as the hardware should update it."""
    st, info = parse_frame(frame)
    if st is not None:
        return st, frame, 0
    q, end = info["q"], info["udp_end"]
    if end < q + 1 + dcid_len:
        return MALFORMED, frame, 0
    c = conns.get(lookup_key(info, dcid_len, frame))
    if c is None:
        return UNKNOWN, frame, 0
    pn_off = q + 1 + dcid_len
    if pn_off + 20 > end:
        return MALFORMED, frame, 0
    pkt = frame[q:end]
    mask = ref.hp_mask(c.suite, c.hp, pkt[1 + dcid_len + 4 : 1 + dcid_len + 20])
    first = pkt[0] ^ (mask[0] & 0x1F)
    pn_len = (first & 3) + 1
    kp = first >> 2 & 1
    trunc = int.from_bytes(bytes(pkt[1 + dcid_len + i] ^ mask[1 + i] for i in range(pn_len)), "big")
    pn = ref.decode_pn(c.largest, trunc, 8 * pn_len)
    mode = 0
    if kp != c.cur_phase:
        if c.other == OT_NEXT and pn >= c.first_pn:
            mode = 1
        elif c.other == OT_PREV and pn < c.first_pn:
            mode = 2
        else:
            c.failed += 1
            return KPU, (frame if c.fail_pass else None), 0
    keys = c.slot[kp]
    try:
        u = ref.unprotect(c.suite, keys, pkt, dcid_len=dcid_len, largest_pn=c.largest)
    except ref.AuthFailed:
        c.failed += 1
        return AUTH, (frame if c.fail_pass else None), 0
    assert u.pn == pn
    c.largest = pn if c.largest is None else max(c.largest, pn)
    c.ok += 1
    flags = 0
    if mode == 1:
        c.cur_phase, c.first_pn, c.other = kp, pn, OT_PREV
        c.key_updates += 1
        flags |= 1
    elif mode == 2:
        flags |= 2
    return OK, rewrite(frame, u.header + u.payload), flags
