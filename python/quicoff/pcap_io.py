# SPDX-License-Identifier: Apache-2.0
"""Capture files in and out, and UDP inside the frames: no dependencies.

Reads classic pcap (both byte orders, micro- and nanosecond) and pcapng
(sections in either byte order, many interfaces, EPB/SPB/obsolete packet
blocks, Decryption Secrets Blocks carrying a TLS key log).  Writes the same
format as it read, preserving timestamps, interfaces and link types, so that
an output differs from its input only in the packets that were rewritten.

Link types understood for UDP: Ethernet (with 802.1Q/802.1ad tags), raw IP
(101, 228, 229, and the 12/14 aliases), BSD loopback (NULL 0, LOOP 108),
Linux cooked (SLL 113, SLL2 276).  IPv4 with options, IPv6 with the usual
extension headers; fragments are not UDP here (``quicoff decrypt``
reassembles IPv4 fragments with :mod:`quicoff.ipfrag`).

:func:`replace_udp_payload` rebuilds a frame around a new UDP payload with
IPv4 total length + header checksum, IPv6 payload length, UDP length and UDP
checksum fixed (a zero IPv4 UDP checksum stays zero).
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from typing import BinaryIO, Iterator, List, Optional, Tuple, Union

__all__ = [
    "CaptureError",
    "Packet",
    "RawBlock",
    "Secrets",
    "CaptureReader",
    "CaptureWriter",
    "UdpInfo",
    "parse_udp",
    "replace_udp_payload",
    "LINKTYPE_ETHERNET",
    "LINKTYPE_RAW",
]

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
_RAW_ALIASES = (LINKTYPE_RAW, 12, 14)

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D
BLOCK_IDB = 0x00000001
BLOCK_OPB = 0x00000002  # obsolete packet block
BLOCK_SPB = 0x00000003
BLOCK_EPB = 0x00000006
BLOCK_DSB = 0x0000000A
SECRETS_TLS_KEYLOG = 0x544C534B  # "TLSK"


class CaptureError(ValueError):
    """The file is not a capture this module can read."""


@dataclass
class Packet:
    """One captured frame.  ``ts`` is opaque (kept for writing back);
    ``time`` is seconds since the epoch as a float, for display."""

    index: int
    data: bytes
    orig_len: int
    linktype: int
    ts: tuple
    time: float
    interface: int = 0


@dataclass
class RawBlock:
    """A pcapng block copied through unchanged (SHB, IDB, NRB, ISB, ...)."""

    block: bytes
    endian: str


@dataclass
class Secrets:
    """A pcapng Decryption Secrets Block with a TLS key log."""

    text: str


Item = Union[Packet, RawBlock, Secrets]


# --------------------------------------------------------------------------
# reading


class CaptureReader:
    """``for item in CaptureReader(f)``: Packet, RawBlock (pcapng) or Secrets.

    ``format`` is "pcap" or "pcapng"; ``truncated`` is set when the file ends
    inside a record (the records before it are returned)."""

    def __init__(self, f: BinaryIO):
        self.f = f
        self.truncated = False
        head = f.read(24)
        if len(head) < 4:
            raise CaptureError("file too short to be a capture")
        magic_le = struct.unpack("<I", head[:4])[0]
        magic_be = struct.unpack(">I", head[:4])[0]
        if magic_le == PCAPNG_SHB:
            self.format = "pcapng"
            self._head = head
        elif magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS) or magic_be in (
            PCAP_MAGIC_US,
            PCAP_MAGIC_NS,
        ):
            if len(head) < 24:
                raise CaptureError("truncated pcap file header")
            self.format = "pcap"
            self.endian = "<" if magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS) else ">"
            magic, vmaj, vmin, _tz, _sig, snaplen, network = struct.unpack(
                self.endian + "IHHiIII", head
            )
            self.nanosecond = magic == PCAP_MAGIC_NS
            self.version = (vmaj, vmin)
            self.snaplen = snaplen
            # upper bits of the link-type field may carry FCS info (pcap-linktype(7))
            self.linktype = network & 0x0FFFFFFF
            self.header = head
        else:
            raise CaptureError("not a pcap or pcapng file (magic %s)" % head[:4].hex())

    def __iter__(self) -> Iterator[Item]:
        if self.format == "pcap":
            return self._pcap()
        return self._pcapng()

    def _pcap(self) -> Iterator[Packet]:
        e = self.endian
        scale = 1e-9 if self.nanosecond else 1e-6
        index = 0
        read = self.f.read
        while True:
            rh = read(16)
            if not rh:
                return
            if len(rh) < 16:
                self.truncated = True
                return
            sec, frac, incl, orig = struct.unpack(e + "IIII", rh)
            if incl > 0x4000000:
                raise CaptureError("record %d: implausible length %d" % (index, incl))
            data = read(incl)
            if len(data) < incl:
                self.truncated = True
                return
            yield Packet(index, data, orig, self.linktype, (sec, frac), sec + frac * scale)
            index += 1

    def _pcapng(self) -> Iterator[Item]:
        buf = self._head
        read = self.f.read
        endian = "<"
        interfaces: List[Tuple[int, float]] = []  # (linktype, seconds per tick)
        index = 0
        while True:
            if len(buf) < 8:
                buf += read(8 - len(buf))
                if not buf:
                    return
                if len(buf) < 8:
                    self.truncated = True
                    return
            btype_le = struct.unpack("<I", buf[:4])[0]
            if btype_le == PCAPNG_SHB:
                if len(buf) < 12:
                    buf += read(12 - len(buf))
                if len(buf) < 12:
                    self.truncated = True
                    return
                bom = buf[8:12]
                if struct.unpack("<I", bom)[0] == PCAPNG_BOM:
                    endian = "<"
                elif struct.unpack(">I", bom)[0] == PCAPNG_BOM:
                    endian = ">"
                else:
                    raise CaptureError("pcapng section header with a bad byte-order magic")
                interfaces = []
            btype, blen = struct.unpack(endian + "II", buf[:8])
            if blen < 12 or blen % 4 or blen > 0x10000000:
                raise CaptureError("pcapng block of type %#x with bad length %d" % (btype, blen))
            if len(buf) < blen:
                buf += read(blen - len(buf))
            if len(buf) < blen:
                self.truncated = True
                return
            block, buf = buf[:blen], buf[blen:]
            body = block[8:-4]
            if btype == PCAPNG_SHB:
                yield RawBlock(block, endian)
            elif btype == BLOCK_IDB:
                linktype = struct.unpack(endian + "H", body[:2])[0]
                interfaces.append((linktype, _tsresol(body[8:], endian)))
                yield RawBlock(block, endian)
            elif btype in (BLOCK_EPB, BLOCK_OPB):
                if btype == BLOCK_EPB:
                    iface, hi, lo, incl, orig = struct.unpack(endian + "IIIII", body[:20])
                else:
                    iface, _drops, hi, lo, incl, orig = struct.unpack(endian + "HHIIII", body[:20])
                data = body[20 : 20 + incl]
                if iface >= len(interfaces):
                    raise CaptureError("packet on undeclared interface %d" % iface)
                lt, tick = interfaces[iface]
                yield Packet(
                    index, data, orig, lt, (btype, hi, lo, endian), ((hi << 32) | lo) * tick, iface
                )
                index += 1
            elif btype == BLOCK_SPB:
                if not interfaces:
                    raise CaptureError("simple packet block before any interface")
                orig = struct.unpack(endian + "I", body[:4])[0]
                data = body[4 : 4 + orig]
                yield Packet(index, data, orig, interfaces[0][0], (BLOCK_SPB, 0, 0, endian), 0.0, 0)
                index += 1
            elif btype == BLOCK_DSB:
                stype, slen = struct.unpack(endian + "II", body[:8])
                if stype == SECRETS_TLS_KEYLOG:
                    yield Secrets(body[8 : 8 + slen].decode("utf-8", errors="replace"))
                # other secret types (WireGuard, ZigBee, ...) are dropped from the output
            else:
                yield RawBlock(block, endian)


def _tsresol(options: bytes, endian: str) -> float:
    """Seconds per timestamp tick from an IDB's if_tsresol option (default 1e-6)."""
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack(endian + "HH", options[pos : pos + 4])
        if code == 0:
            break
        if code == 9 and length >= 1:
            v = options[pos + 4]
            return 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0**-v
        pos += 4 + ((length + 3) & ~3)
    return 1e-6


# --------------------------------------------------------------------------
# writing


class CaptureWriter:
    """Writes what a CaptureReader read, in the same format."""

    def __init__(self, f: BinaryIO, like: CaptureReader):
        self.f = f
        self.format = like.format
        if self.format == "pcap":
            f.write(like.header)
            self.endian = like.endian

    def write(self, item: Item, data: Optional[bytes] = None) -> None:
        """Writes ``item``; for a Packet, ``data`` replaces its frame bytes."""
        if isinstance(item, Secrets):
            return  # the output is plaintext: no secrets block
        if isinstance(item, RawBlock):
            self.f.write(item.block)
            return
        if data is None:
            data = item.data
        orig = max(item.orig_len + len(data) - len(item.data), len(data))
        if self.format == "pcap":
            sec, frac = item.ts
            self.f.write(struct.pack(self.endian + "IIII", sec, frac, len(data), orig))
            self.f.write(data)
            return
        btype, hi, lo, endian = item.ts
        pad = (-len(data)) % 4
        if btype == BLOCK_SPB:
            blen = 12 + 4 + len(data) + pad
            head = struct.pack(endian + "III", BLOCK_SPB, blen, orig)
        else:  # EPB (an obsolete packet block is written as an EPB)
            blen = 12 + 20 + len(data) + pad
            head = struct.pack(
                endian + "IIIIIII", BLOCK_EPB, blen, item.interface, hi, lo, len(data), orig
            )
        self.f.write(head + data + b"\x00" * pad + struct.pack(endian + "I", blen))


# --------------------------------------------------------------------------
# link layer / IP / UDP


@dataclass
class UdpInfo:
    """Where the UDP datagram sits in a frame."""

    src: Tuple[str, int]
    dst: Tuple[str, int]
    payload: bytes
    ip_off: int  # start of the IP header
    ip_version: int
    udp_off: int  # start of the UDP header
    ip_end: int  # end of the IP packet within the frame
    truncated: bool  # the capture holds fewer bytes than the UDP length says
    ipv6_ext: bytes = b""  # IPv6 extension headers (kept as they were)


def _ip_offset(data: bytes, linktype: int) -> Optional[int]:
    """Offset of the IP header in a frame, or None if not IP."""
    if linktype == LINKTYPE_ETHERNET:
        off, etype = 14, None
        if len(data) < 14:
            return None
        etype = struct.unpack(">H", data[12:14])[0]
        while etype in (0x8100, 0x88A8, 0x9100) and len(data) >= off + 4:
            etype = struct.unpack(">H", data[off + 2 : off + 4])[0]
            off += 4
        return off if etype in (0x0800, 0x86DD) else None
    if linktype in _RAW_ALIASES or linktype in (LINKTYPE_IPV4, LINKTYPE_IPV6):
        return 0
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if len(data) < 4:
            return None
        fam_be = struct.unpack(">I", data[:4])[0]
        fam_le = struct.unpack("<I", data[:4])[0]
        fam = fam_be if linktype == LINKTYPE_LOOP else (fam_le if fam_le < 256 else fam_be)
        return 4 if fam in (2, 24, 28, 30) else None
    if linktype == LINKTYPE_LINUX_SLL:
        if len(data) < 16:
            return None
        return 16 if struct.unpack(">H", data[14:16])[0] in (0x0800, 0x86DD) else None
    if linktype == LINKTYPE_LINUX_SLL2:
        if len(data) < 20:
            return None
        return 20 if struct.unpack(">H", data[0:2])[0] in (0x0800, 0x86DD) else None
    return None


def _ipv6_str(b: bytes) -> str:
    import ipaddress

    return str(ipaddress.IPv6Address(b))


def parse_udp(data: bytes, linktype: int) -> Optional[UdpInfo]:
    """The UDP datagram in a frame, or None (not IP/UDP, fragment, malformed)."""
    off = _ip_offset(data, linktype)
    if off is None or len(data) < off + 20:
        return None
    version = data[off] >> 4
    if version == 4:
        ihl = (data[off] & 0x0F) * 4
        if ihl < 20 or len(data) < off + ihl + 8:
            return None
        total = struct.unpack(">H", data[off + 2 : off + 4])[0]
        frag = struct.unpack(">H", data[off + 6 : off + 8])[0]
        if data[off + 9] != 17 or frag & 0x3FFF:  # not UDP, or a fragment
            return None
        src = ".".join(str(x) for x in data[off + 12 : off + 16])
        dst = ".".join(str(x) for x in data[off + 16 : off + 20])
        udp = off + ihl
        ip_end = off + total if total >= ihl + 8 else len(data)
        ext = b""
    elif version == 6:
        if len(data) < off + 40 + 8:
            return None
        plen = struct.unpack(">H", data[off + 4 : off + 6])[0]
        nxt = data[off + 6]
        pos = off + 40
        while nxt in (0, 43, 60):  # hop-by-hop, routing, destination options
            if len(data) < pos + 8:
                return None
            nxt, hlen = data[pos], (data[pos + 1] + 1) * 8
            pos += hlen
        if nxt != 17 or len(data) < pos + 8:  # not UDP (fragments: 44) or truncated
            return None
        src = _ipv6_str(data[off + 8 : off + 24])
        dst = _ipv6_str(data[off + 24 : off + 40])
        udp = pos
        ext = data[off + 40 : pos]
        ip_end = off + 40 + plen if plen else len(data)  # 0 = jumbogram: not handled
    else:
        return None
    sport, dport, ulen = struct.unpack(">HHH", data[udp : udp + 6])
    if ulen < 8:
        return None
    want_end = udp + ulen
    truncated = want_end > len(data) or want_end > ip_end
    payload = data[udp + 8 : min(want_end, len(data), ip_end)]
    return UdpInfo(
        (src, sport),
        (dst, dport),
        payload,
        off,
        version,
        udp,
        min(ip_end, len(data)),
        truncated,
        ext,
    )


def _csum_fold(data: bytes) -> int:
    """One's-complement sum of 16-bit big-endian words (not yet inverted)."""
    if len(data) % 2:
        data += b"\x00"
    s = sum(memoryview(data).cast("H"))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    if sys.byteorder == "little":
        s = ((s & 0xFF) << 8) | (s >> 8)
    return s


def _checksum(*parts: bytes) -> int:
    s = 0
    for p in parts:
        s += _csum_fold(p)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def replace_udp_payload(data: bytes, udp: UdpInfo, payload: bytes) -> bytes:
    """The frame with its UDP payload replaced and every length and checksum fixed.

    Bytes after the IP packet (Ethernet padding/trailer) are dropped."""
    off, u = udp.ip_off, udp.udp_off
    ulen = 8 + len(payload)
    old_udp = data[u : u + 8]
    old_csum = struct.unpack(">H", old_udp[6:8])[0]
    udp_hdr = old_udp[0:4] + struct.pack(">HH", ulen, 0)
    ip = bytearray(data[off:u])
    if udp.ip_version == 4:
        ip[2:4] = struct.pack(">H", len(ip) + ulen)
        ip[10:12] = b"\x00\x00"
        ip[10:12] = struct.pack(">H", _checksum(bytes(ip)))
        pseudo = bytes(ip[12:20]) + struct.pack(">BBH", 0, 17, ulen)
    else:
        ip[4:6] = struct.pack(">H", len(ip) - 40 + ulen)
        pseudo = bytes(ip[8:40]) + struct.pack(">IxxxB", ulen, 17)
    if udp.ip_version == 4 and old_csum == 0:
        csum = 0
    else:
        csum = _checksum(pseudo, udp_hdr, payload) or 0xFFFF
    udp_hdr = udp_hdr[:6] + struct.pack(">H", csum)
    return data[:off] + bytes(ip) + udp_hdr + payload
