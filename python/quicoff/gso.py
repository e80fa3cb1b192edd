# SPDX-License-Identifier: Apache-2.0
"""Segment sizes of a UDP GSO "super-datagram" (for ``quicoff decrypt``).

A sender using UDP GSO (generic segmentation offload: ``UDP_SEGMENT``, as
ngtcp2 does by default) hands the kernel one buffer of several QUIC
datagrams of the same size back to back (the last may be shorter); the
kernel cuts it into datagrams of that size as late as it can.  A capture on
the sender's host (``tcpdump -i lo`` in particular) records the buffer
before the cut: one IP/UDP header, then all the segments.  The segment size
is nowhere in the capture, and the first segment's short-header packet
seems to run to the end of the whole buffer, so it fails to authenticate.

This module only proposes sizes; the decryptor proves one by opening the
packet that ends the first segment (the AEAD tag verifies only at the right
length).  Proposals are cheap to check and ordered most likely first:

* every segment after the first starts where a packet of the same
  connection can start: a short header (top bit 0) followed by the
  connection's Destination CID, or a long header (top bit 1) carrying that
  DCID; with a CID of 8 bytes or more this leaves, in practice, one size;
* sizes the decryptor saw on the flow before (``hints``) come first; then,
  with a DCID, the sizes it allows from the smallest up (a multiple of the
  true size passes the filter too, but its first segment does not
  authenticate); with an empty DCID, where only the top bit of each
  segment's first byte can be checked, sizes from 1,200 (QUIC's smallest
  full-size datagram, RFC 9000 §14) to 1,500 (Ethernet's MTU) first, as
  the full-size datagrams a sender batches usually are, then the rest.

Work per datagram is bounded: at most :data:`MAX_SEGMENTS` segments (so
the size is at least len/128), and the scan over sizes costs about
len * ln(MAX_SEGMENTS) byte comparisons whatever the bytes are; the caller
bounds the number of AEAD trials (:data:`MAX_TRIALS`).
"""

from __future__ import annotations

import itertools
from typing import Iterable, Iterator, List

__all__ = ["MAX_SEGMENTS", "MAX_TRIALS", "MIN_SHORT_TAIL", "candidate_sizes", "segments"]

#: Linux's UDP_MAX_SEGMENTS (64 until 6.9, then 128): no GSO buffer holds more
MAX_SEGMENTS = 128
#: AEAD trials per datagram, each on one candidate first segment: at most
#: 64 x 64 KiB opened for a hostile datagram (milliseconds), while an empty
#: DCID may leave a few dozen plausible sizes before the right one
MAX_TRIALS = 64
#: where full-size datagrams usually are (tried first when the DCID is empty)
LIKELY = (1200, 1500)
#: a short header's packet number (>= 1 byte) and payload hold at least
#: 4 bytes before the 16-byte header-protection sample (RFC 9001 §5.4.2)
MIN_SHORT_TAIL = 20


def _starts_packet(data: bytes, p: int, dcid: bytes) -> bool:
    """Whether a packet of the connection whose DCID is ``dcid`` can start at p."""
    L = len(dcid)
    if data[p] & 0x80 == 0:  # short header: flags, DCID
        return data[p + 1 : p + 1 + L] == dcid
    # long header: flags, version (4), DCID length, DCID
    return p + 6 + L <= len(data) and data[p + 5] == L and data[p + 6 : p + 6 + L] == dcid


def _plausible(data: bytes, size: int, dcid: bytes) -> bool:
    return all(_starts_packet(data, p, dcid) for p in range(size, len(data), size))


def candidate_sizes(
    data: bytes, start: int, dcid: bytes, hints: Iterable[int] = ()
) -> Iterator[int]:
    """Segment sizes for ``data`` (a UDP payload whose short-header packet at
    ``start``, DCID ``dcid``, failed to authenticate as running to the end),
    most likely first, each once.  A size S puts the packet at ``start`` in
    the first segment, ending at S, and the next segments at S, 2S, ..."""
    n = len(data)
    lo = max(start + 1 + len(dcid) + MIN_SHORT_TAIL, -(-n // MAX_SEGMENTS))
    if lo >= n:
        return
    seen = set()
    for h in hints:
        if h and lo <= h < n and h not in seen:
            seen.add(h)
            if _plausible(data, h, dcid):
                yield h
    if dcid:
        # boundaries are where the DCID sits: 1 byte after a short header's
        # start, 6 after a long header's
        sizes = set()
        q = data.find(dcid, lo + 1)
        while q != -1:
            for s in (q - 1, q - 6):
                if lo <= s < n and s not in seen:
                    sizes.add(s)
            q = data.find(dcid, q + 1)
        order = sorted(sizes)
    else:
        a, b = max(lo, LIKELY[0]), min(n, LIKELY[1] + 1)
        order = itertools.chain(range(a, b), range(lo, min(n, a)), range(max(lo, b), n))
    for s in order:
        if s not in seen and _plausible(data, s, dcid):
            seen.add(s)
            yield s


def segments(data: bytes, size: int) -> List[bytes]:
    """``data`` cut as the kernel cuts a GSO buffer: ``size`` bytes each, the
    last one the rest."""
    return [data[i : i + size] for i in range(0, len(data), size)]
