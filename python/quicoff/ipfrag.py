# SPDX-License-Identifier: Apache-2.0
"""IPv4 fragment reassembly for ``quicoff decrypt`` (RFC 791).

A QUIC datagram larger than a link's MTU that was sent without DF (or
through a tunnel) reaches the capture as IPv4 fragments; only the first
carries the UDP header, and no fragment alone holds a whole QUIC packet.
:class:`Reassembler` collects the fragments of one datagram (keyed by
source, destination, protocol and identification) and, when the last hole
is filled, returns one unfragmented frame: the first fragment's link layer
and IP header (flags and offset cleared, total length and checksum fixed)
around the whole payload.  That frame then goes through the ordinary UDP
path.

Hostile input loses nothing: fragments that overlap with different bytes,
run past 65,535 bytes or never complete are not reassembled; the caller
writes them through as captured.  IPv6 fragments are only recognised
(:func:`is_ipv6_fragment`), not reassembled.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .pcap_io import _checksum, _ip_offset

__all__ = ["Fragment", "Reassembler", "parse_ipv4_fragment", "is_ipv6_fragment"]

MAX_DATAGRAM = 65535
#: fragment sets held at once; the oldest is given up beyond this
MAX_SETS = 256
#: fragments in one set (64 KiB over a 576-byte MTU is ~120); more is an
#: attack on the overlap check, which is quadratic: the set is given up
MAX_FRAGMENTS = 256
#: seconds (capture time) a set may wait for its missing fragments: Linux's
#: ipfrag_time default.  The caller holds the frames after a held fragment
#: back (output order), so a lost fragment must not hold them to the end.
TIMEOUT = 30.0


@dataclass
class Fragment:
    key: tuple  # (src, dst, protocol, identification)
    offset: int  # payload offset in bytes
    more: bool  # More Fragments flag
    payload: bytes  # the IP payload of this fragment
    link: bytes  # bytes before the IP header
    header: bytes  # the IP header (with options)


def parse_ipv4_fragment(data: bytes, linktype: int) -> Optional[Fragment]:
    """The IPv4 fragment in a frame, or None (not IPv4, not a fragment)."""
    off = _ip_offset(data, linktype)
    if off is None or len(data) < off + 20 or data[off] >> 4 != 4:
        return None
    ihl = (data[off] & 0x0F) * 4
    total, ident, frag = struct.unpack(">HHH", data[off + 2 : off + 8])
    if not frag & 0x3FFF or ihl < 20 or total < ihl or len(data) < off + ihl:
        return None
    key = (bytes(data[off + 12 : off + 16]), bytes(data[off + 16 : off + 20]), data[off + 9], ident)
    payload = bytes(data[off + ihl : min(off + total, len(data))])
    return Fragment(
        key,
        (frag & 0x1FFF) * 8,
        bool(frag & 0x2000),
        payload,
        bytes(data[:off]),
        bytes(data[off : off + ihl]),
    )


def is_ipv6_fragment(data: bytes, linktype: int) -> bool:
    """Whether the frame is IPv6 with a Fragment header (44) in its chain."""
    off = _ip_offset(data, linktype)
    if off is None or len(data) < off + 40 or data[off] >> 4 != 6:
        return False
    nxt, pos = data[off + 6], off + 40
    while nxt in (0, 43, 60) and len(data) >= pos + 2:
        nxt, pos = data[pos], pos + (data[pos + 1] + 1) * 8
    return nxt == 44


@dataclass
class _Set:
    owners: List[object] = field(default_factory=list)  # the caller's tokens, in order
    pieces: Dict[int, bytes] = field(default_factory=dict)
    end: Optional[int] = None  # payload length, once the last fragment is seen
    first: Optional[Fragment] = None
    bad: bool = False
    since: float = 0.0  # capture time of its first fragment


class Reassembler:
    """``add(fragment, owner)``: None while a datagram is incomplete, else
    (owners, frame bytes).  ``owner`` is any token of the caller's (its
    frame); owners of sets given up come back from :meth:`expired` and
    :meth:`flush`."""

    def __init__(self, max_sets: int = MAX_SETS):
        self.sets: "OrderedDict[tuple, _Set]" = OrderedDict()
        self.max_sets = max_sets
        self._given_up: List[object] = []

    def add(self, frag: Fragment, owner, now: float = 0.0) -> Optional[Tuple[List[object], bytes]]:
        s = self.sets.get(frag.key)
        if s is None:
            s = self.sets[frag.key] = _Set(since=now)
            while len(self.sets) > self.max_sets:
                _, old = self.sets.popitem(last=False)
                self._given_up += old.owners
        s.owners.append(owner)
        self._put(s, frag)
        if s.bad or s.end is None or s.first is None:
            return None
        covered = 0
        for start in sorted(s.pieces):
            if start > covered:
                return None  # a hole
            covered = max(covered, start + len(s.pieces[start]))
        if covered < s.end:
            return None
        del self.sets[frag.key]
        return s.owners, self._frame(s)

    @staticmethod
    def _put(s: _Set, frag: Fragment) -> None:
        if (
            s.bad
            or len(s.pieces) >= MAX_FRAGMENTS
            or frag.offset + len(frag.payload) > MAX_DATAGRAM - len(frag.header)
        ):
            s.bad = True
            return
        if not frag.more:
            end = frag.offset + len(frag.payload)
            if s.end is not None and s.end != end:
                s.bad = True
            s.end = end
        if frag.offset == 0:
            s.first = frag
        # overlaps must agree byte for byte (a rewrite is an attack, RFC 5722's spirit)
        for start, piece in s.pieces.items():
            lo = max(start, frag.offset)
            hi = min(start + len(piece), frag.offset + len(frag.payload))
            if (
                lo < hi
                and piece[lo - start : hi - start]
                != frag.payload[lo - frag.offset : hi - frag.offset]
            ):
                s.bad = True
        if s.end is not None and any(st + len(p) > s.end for st, p in s.pieces.items()):
            s.bad = True
        s.pieces[frag.offset] = frag.payload

    @staticmethod
    def _frame(s: _Set) -> bytes:
        payload = bytearray(s.end)
        for start, piece in s.pieces.items():
            payload[start : start + len(piece)] = piece
        hdr = bytearray(s.first.header)
        hdr[2:4] = struct.pack(">H", len(hdr) + len(payload))
        hdr[6:8] = b"\x00\x00"  # no flags, offset 0
        hdr[10:12] = b"\x00\x00"
        hdr[10:12] = struct.pack(">H", _checksum(bytes(hdr)))
        return s.first.link + bytes(hdr) + bytes(payload)

    def expired(self, now: Optional[float] = None) -> List[object]:
        """Owners of sets given up since the last call: too many sets held,
        or (given the capture time ``now``) waiting longer than TIMEOUT."""
        if now is not None:
            while self.sets:
                key, s = next(iter(self.sets.items()))
                if now - s.since <= TIMEOUT:
                    break
                del self.sets[key]
                self._given_up += s.owners
        out, self._given_up = self._given_up, []
        return out

    def flush(self) -> List[object]:
        """Owners of every incomplete set (the capture ended)."""
        out = self.expired()
        for s in self.sets.values():
            out += s.owners
        self.sets.clear()
        return out
