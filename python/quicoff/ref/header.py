# SPDX-License-Identifier: Apache-2.0
"""QUIC packet headers (RFC 9000 §17, RFC 9369 §3.2): parsing, coalesced
datagram splitting and construction of plaintext headers.

Wire layouts (byte 0 bits are listed most significant first)::

    Long:  1 F TT RR PP | Version(32) | DCID Len(8) | DCID | SCID Len(8) | SCID
           | [Token Length(varint) | Token]   (Initial only)
           | Length(varint) | Packet Number(8..32) | payload
    Short: 0 F S RR K PP | DCID (length known only to the endpoint)
           | Packet Number(8..32) | payload

F = fixed bit, TT = long packet type, RR = reserved bits, PP = packet number
length - 1, S = spin bit, K = key phase. The RR, PP (and K) bits and the
packet number are covered by header protection, so on a protected packet
only the fields *before* the packet number are meaningful to the parser.
Length counts the packet number, the payload and the 16-byte AEAD tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from .errors import Malformed
from .pn import encode_pn_len, truncate_pn
from .suites import TAG_LEN
from .varint import decode_varint, encode_varint
from .versions import (
    LONG_TYPE_CODES,
    LONG_TYPE_NAMES,
    PROTECTED_LONG_TYPES,
    VERSION_1,
    VERSION_NEGOTIATION,
    check_version,
)

MAX_CID_LEN = 20  # RFC 9000 §17.2, for versions 1 and 2
RETRY_TAG_LEN = 16  # Retry Integrity Tag (RFC 9001 §5.8)

PACKET_TYPES = ("initial", "0rtt", "handshake", "retry", "1rtt", "vn", "unknown")


@dataclass(frozen=True)
class HeaderInfo:
    """What a middlebox / the offload engine can learn from a header without
    removing protection. All offsets are absolute positions in the datagram.

    form         "long" or "short"
    first_byte   byte 0 as on the wire (possibly header-protected)
    version      32-bit version (long header) or None
    packet_type  "initial", "0rtt", "handshake", "retry", "vn" (version 0),
                 "unknown" (long header of an unsupported version) or "1rtt"
    dcid, scid   connection IDs (scid None for short headers)
    token        Initial: the token (possibly b""); Retry: the retry token;
                 otherwise None
    length       the Length field (Initial/0-RTT/Handshake) else None
    pn_offset    offset of the Packet Number field, None for packets that
                 have none (Retry, VN, unknown versions)
    length_offset  offset of the Length varint (Initial/0-RTT/Handshake)
                 else None; its width is ``pn_offset - length_offset``
    packet_end   offset just past this packet (end of datagram for short
                 headers, Retry, VN and unknown versions)
    offset       offset of byte 0 of this packet
    """

    form: str
    first_byte: int
    version: int | None
    packet_type: str
    dcid: bytes
    scid: bytes | None
    token: bytes | None
    length: int | None
    pn_offset: int | None
    packet_end: int
    offset: int
    length_offset: int | None = None

    @property
    def is_long(self) -> bool:
        return self.form == "long"

    @property
    def is_protected(self) -> bool:
        """True if the packet carries packet protection (has a packet number)."""
        return self.pn_offset is not None


def _need(buf: bytes, end: int, what: str) -> None:
    if end > len(buf):
        raise Malformed(f"truncated {what}: need {end} bytes, have {len(buf)}")


def _parse(buf: bytes, offset: int, dcid_len: int | None, check_end: bool = True) -> HeaderInfo:
    """Parse one header at ``offset``. With ``check_end=False`` a Length that
    points past the end of ``buf`` is accepted (used by ``protect`` to
    validate a header supplied without its payload)."""
    buf = bytes(buf)
    if offset < 0 or offset >= len(buf):
        raise Malformed("no packet at this offset")
    first = buf[offset]

    if not first & 0x80:
        # ---- short header (RFC 9000 §17.3.1) ----
        if dcid_len is None or not 0 <= dcid_len <= MAX_CID_LEN:
            raise ValueError("short headers need dcid_len in 0..20")
        pos = offset + 1
        _need(buf, pos + dcid_len, "short header DCID")
        return HeaderInfo(
            "short",
            first,
            None,
            "1rtt",
            buf[pos : pos + dcid_len],
            None,
            None,
            None,
            pos + dcid_len,
            len(buf),
            offset,
        )

    # ---- long header (RFC 9000 §17.2) ----
    pos = offset + 1
    _need(buf, pos + 4, "version")
    version = int.from_bytes(buf[pos : pos + 4], "big")
    pos += 4
    known = version in LONG_TYPE_NAMES
    cids = []
    for name in ("DCID", "SCID"):
        _need(buf, pos + 1, f"{name} length")
        n = buf[pos]
        pos += 1
        if known and n > MAX_CID_LEN:
            raise Malformed(f"{name} length {n} > {MAX_CID_LEN}")
        _need(buf, pos + n, name)
        cids.append(buf[pos : pos + n])
        pos += n
    dcid, scid = cids

    if version == VERSION_NEGOTIATION:
        return HeaderInfo(
            "long", first, version, "vn", dcid, scid, None, None, None, len(buf), offset
        )
    if not known:
        return HeaderInfo(
            "long", first, version, "unknown", dcid, scid, None, None, None, len(buf), offset
        )

    ptype = LONG_TYPE_NAMES[version][(first >> 4) & 0x03]
    if ptype == "retry":
        # RFC 9000 §17.2.5: Retry Token fills the rest, then a 16-byte tag.
        if len(buf) - pos < RETRY_TAG_LEN:
            raise Malformed("Retry packet shorter than its integrity tag")
        return HeaderInfo(
            "long",
            first,
            version,
            "retry",
            dcid,
            scid,
            buf[pos : len(buf) - RETRY_TAG_LEN],
            None,
            None,
            len(buf),
            offset,
        )

    token = None
    if ptype == "initial":
        token_len, pos = decode_varint(buf, pos)
        _need(buf, pos + token_len, "token")
        token = buf[pos : pos + token_len]
        pos += token_len
    length_offset = pos
    length, pos = decode_varint(buf, pos)
    end = pos + length
    if check_end and end > len(buf):
        raise Malformed(f"Length {length} runs past the datagram ({len(buf) - pos} bytes left)")
    return HeaderInfo(
        "long", first, version, ptype, dcid, scid, token, length, pos, end, offset, length_offset
    )


def parse_header(
    datagram: bytes, offset: int = 0, dcid_len: int | None = None, *, check_end: bool = True
) -> HeaderInfo:
    """Parse the (possibly protected) header of the packet at ``offset``.

    ``dcid_len`` is needed only for short headers, whose DCID length is not
    on the wire. Raises :class:`Malformed`. ``check_end=False`` accepts a
    Length that runs past the end of ``datagram`` (a datagram a capture's
    snaplen cut: the header is still there to read).
    """
    return _parse(datagram, offset, dcid_len, check_end=check_end)


def split_coalesced(datagram: bytes, dcid_len: int | None = None) -> list[tuple[int, int]]:
    """Split a UDP datagram into its coalesced packets (RFC 9000 §12.2).

    Returns ``[(offset, end), ...]``. A packet without a Length field (short
    header, Retry, VN, unknown version) extends to the end of the datagram
    and is necessarily the last one. Bytes after the last span are trailing
    padding (:func:`is_padding`); ``len(datagram) - spans[-1][1]`` of them.
    """
    return [(offset, info.packet_end) for offset, info in walk_coalesced(datagram, dcid_len)]


def walk_coalesced(
    datagram: bytes, dcid_len: int | None = None
) -> Iterator[tuple[int, HeaderInfo]]:
    """The coalesced packets of a UDP datagram one by one: ``(offset,
    header)`` of each, as :func:`split_coalesced` finds them; it stops at the
    trailing padding (:func:`is_padding`) or the end. A packet whose header
    does not parse raises :class:`Malformed` when it is reached, after the
    packets before it were yielded (``quicoff decrypt`` reports those)."""
    offset = 0
    while offset < len(datagram):
        if offset and is_padding(datagram, offset):
            return
        info = parse_header(datagram, offset, dcid_len)
        yield offset, info
        offset = info.packet_end


def is_padding(datagram: bytes, offset: int) -> bool:
    """Whether ``datagram[offset:]``, after a packet, is trailing padding.

    Only an all-zero rest is padding. A first byte of 0x00 alone proves
    nothing: a short header whose fixed bit is greased (RFC 9287) and whose
    protected low bits happen to be zero starts with 0x00 about once in 32
    packets, so such bytes are parsed and tried as a packet. An all-zero
    rest cannot be one (its AEAD tag would be zero: a forgery with
    probability 2^-128), which is the rule libquicoff's
    quicoff_unprotect_datagram and quicoff-dpdk's RX path apply too.
    """
    return not bytes(datagram[offset:]).strip(b"\x00")


def _pn_len_for(pn: int, pn_len: int | None, largest_acked: int | None) -> int:
    if pn_len is None:
        pn_len = encode_pn_len(pn, largest_acked)
    if pn_len not in (1, 2, 3, 4):
        raise ValueError(f"pn_len must be 1..4, not {pn_len}")
    return pn_len


def build_long_header(
    packet_type: str,
    dcid: bytes,
    scid: bytes,
    pn: int,
    payload_len: int,
    *,
    version: int = VERSION_1,
    pn_len: int | None = None,
    largest_acked: int | None = None,
    token: bytes = b"",
    reserved_bits: int = 0,
    length_size: int | None = None,
) -> bytes:
    """Plaintext long header for an Initial, 0-RTT or Handshake packet.

    ``payload_len`` is the plaintext payload length; the Length field is set to
    ``pn_len + payload_len + 16`` (the AEAD tag). ``pn_len`` defaults to
    :func:`encode_pn_len(pn, largest_acked)`. ``length_size`` forces the
    varint size of the Length field (1, 2, 4 or 8); ``token`` is only
    allowed for Initial packets. ``reserved_bits`` (0..3) should be 0.
    """
    check_version(version)
    if packet_type not in PROTECTED_LONG_TYPES:
        raise ValueError(f"cannot build a protected {packet_type!r} header")
    if len(dcid) > MAX_CID_LEN or len(scid) > MAX_CID_LEN:
        raise ValueError("connection IDs are at most 20 bytes")
    if token and packet_type != "initial":
        raise ValueError("only Initial packets carry a token")
    if not 0 <= reserved_bits <= 3:
        raise ValueError("reserved_bits is a 2-bit field")
    if payload_len < 0:
        raise ValueError("payload_len must be >= 0")
    pn_len = _pn_len_for(pn, pn_len, largest_acked)
    first = (
        0xC0 | (LONG_TYPE_CODES[version][packet_type] << 4) | (reserved_bits << 2) | (pn_len - 1)
    )
    out = bytearray([first])
    out += version.to_bytes(4, "big")
    out += bytes([len(dcid)]) + dcid
    out += bytes([len(scid)]) + scid
    if packet_type == "initial":
        out += encode_varint(len(token)) + token
    out += encode_varint(pn_len + payload_len + TAG_LEN, length_size)
    out += truncate_pn(pn, pn_len)
    return bytes(out)


def build_short_header(
    dcid: bytes,
    pn: int,
    *,
    pn_len: int | None = None,
    largest_acked: int | None = None,
    key_phase: int = 0,
    spin: int = 0,
    reserved_bits: int = 0,
) -> bytes:
    """Plaintext 1-RTT short header: 0 1 S RR K PP | DCID | PN."""
    if len(dcid) > MAX_CID_LEN:
        raise ValueError("connection IDs are at most 20 bytes")
    if key_phase not in (0, 1) or spin not in (0, 1):
        raise ValueError("key_phase and spin are single bits")
    if not 0 <= reserved_bits <= 3:
        raise ValueError("reserved_bits is a 2-bit field")
    pn_len = _pn_len_for(pn, pn_len, largest_acked)
    first = 0x40 | (spin << 5) | (reserved_bits << 3) | (key_phase << 2) | (pn_len - 1)
    return bytes([first]) + dcid + truncate_pn(pn, pn_len)
