# SPDX-License-Identifier: Apache-2.0
"""Packet protection and its removal (RFC 9001 §5.3, §5.4).

Sending (``protect``)::

    nonce      = iv XOR packet number            (layout: see nonce.py)
    ciphertext = AEAD(key, nonce, aad=plaintext header, payload) || tag
    sample     = ciphertext[4 - pn_len : 4 - pn_len + 16]
                 (i.e. the 16 bytes starting pn_offset + 4 in the packet)
    mask       = hp_mask(hp, sample)
    byte 0    ^= mask[0] & (0x0f long | 0x1f short)
    PN bytes  ^= mask[1 : 1 + pn_len]

Receiving (``unprotect``) reverses the order: the sample is available before
the header is known, so header protection is removed first, the packet
number is decoded against the largest one received, then the AEAD is opened.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import aead
from .errors import Malformed
from .header import _parse
from .hp import SAMPLE_OFFSET, first_byte_mask, hp_mask
from .keys import PacketKeys
from .nonce import nonce as make_nonce
from .pn import decode_pn
from .suites import SAMPLE_LEN, TAG_LEN, get_suite
from .versions import PROTECTED_LONG_TYPES

# pn_len + payload must be at least this long for the sample to exist.
MIN_PN_PLUS_PAYLOAD = SAMPLE_OFFSET + SAMPLE_LEN - TAG_LEN  # == 4


@dataclass(frozen=True)
class Unprotected:
    """Result of :func:`unprotect`.

    header      plaintext header, including the packet number bytes as sent
                (truncated, header protection removed)
    payload     decrypted payload (frames)
    pn          full, decoded packet number
    pn_len      encoded packet number length, 1..4
    key_phase   Key Phase bit of a short header; 0 for long headers
    packet_len  bytes of the input this packet occupied (for coalescing)
    """

    header: bytes
    payload: bytes
    pn: int
    pn_len: int
    key_phase: int
    packet_len: int


def protect(
    suite: str,
    keys: PacketKeys,
    header: bytes,
    payload: bytes,
    pn: int,
    path_id: int | None = None,
    nonce_layout: str = "rfc9001",
    grease_quic_bit: bool = True,
) -> bytes:
    """Apply packet and header protection; returns the protected packet.

    ``header`` is the complete plaintext header ending with the encoded
    packet number (length from ``header[0] & 3``). For long headers the
    Length field must already equal ``pn_len + len(payload) + 16``.

    Raises ValueError if the header is inconsistent (PN bytes not the low
    bytes of ``pn``, wrong Length, unprotected packet type) or if
    ``pn_len + len(payload) < 4``: the header-protection sample would run
    past the end of the packet, so the caller must add PADDING frames
    (RFC 9001 §5.4.2). A header with the fixed bit (0x40) 0 is protected as
    written (RFC 9287 greasing; header protection never touches the bit)
    unless ``grease_quic_bit`` is False: then ValueError, as libquicoff's
    MALFORMED for an entry without the flag.
    """
    get_suite(suite)
    header = bytes(header)
    payload = bytes(payload)
    if not header:
        raise ValueError("empty header")
    first = header[0]
    if not first & 0x40 and not grease_quic_bit:
        raise ValueError("fixed bit 0 and grease_quic_bit not allowed")
    pn_len = (first & 0x03) + 1
    pn_offset = len(header) - pn_len

    if first & 0x80:
        try:
            info = _parse(header, 0, None, check_end=False)
        except Malformed as exc:
            raise ValueError(f"bad long header: {exc}") from None
        if info.packet_type not in PROTECTED_LONG_TYPES:
            raise ValueError(f"{info.packet_type} packets are not protected")
        if info.pn_offset != pn_offset:
            raise ValueError("header does not end with a pn_len-byte packet number")
        want = pn_len + len(payload) + TAG_LEN
        if info.length != want:
            raise ValueError(f"Length field is {info.length}, expected {want}")
    elif pn_offset < 1:
        raise ValueError("short header too short for its packet number")

    if pn_len + len(payload) < MIN_PN_PLUS_PAYLOAD:
        raise ValueError(
            f"pn_len + payload = {pn_len + len(payload)} bytes < "
            f"{MIN_PN_PLUS_PAYLOAD}: too short for the header protection "
            "sample, pad the payload"
        )
    truncated = int.from_bytes(header[pn_offset:], "big")
    if truncated != pn & ((1 << (8 * pn_len)) - 1):
        raise ValueError("packet number bytes in the header do not match pn")

    n = make_nonce(keys.iv, pn, path_id, nonce_layout)
    ciphertext = aead.seal(suite, keys.key, n, header, payload)

    sample_start = SAMPLE_OFFSET - pn_len  # relative to the ciphertext
    sample = ciphertext[sample_start : sample_start + SAMPLE_LEN]
    mask = hp_mask(suite, keys.hp, sample)

    out = bytearray(header)
    out[0] ^= mask[0] & first_byte_mask(first)
    for i in range(pn_len):
        out[pn_offset + i] ^= mask[1 + i]
    return bytes(out) + ciphertext


def unprotect(
    suite: str,
    keys: PacketKeys,
    packet: bytes,
    dcid_len: int | None = None,
    largest_pn: int | None = None,
    path_id: int | None = None,
    nonce_layout: str = "rfc9001",
    grease_quic_bit: bool = True,
) -> Unprotected:
    """Remove header and packet protection from the packet at ``packet[0]``.

    ``dcid_len`` is used for short headers only. ``largest_pn`` is the
    largest packet number received so far in this space (None: none yet).
    A long-header packet ends where its Length says (``packet_len``);
    trailing bytes are left for the caller (coalesced packets).

    A fixed bit (0x40) of 0 is accepted (RFC 9287 greasing) unless
    ``grease_quic_bit`` is False: then Malformed (RFC 9000 §17), as
    libquicoff judges it once the packet's entry is known.

    Raises :class:`Malformed` or :class:`AuthFailed`.
    """
    get_suite(suite)
    packet = bytes(packet)
    info = _parse(packet, 0, dcid_len, check_end=True)
    if info.pn_offset is None:
        raise Malformed(f"{info.packet_type} packets carry no packet protection")
    if not packet[0] & 0x40 and not grease_quic_bit:
        raise Malformed("fixed bit 0 and grease_quic_bit not allowed")
    pn_offset = info.pn_offset
    end = info.packet_end

    sample_start = pn_offset + SAMPLE_OFFSET
    if sample_start + SAMPLE_LEN > end:
        raise Malformed(
            f"packet too short for the header protection sample "
            f"({end - pn_offset} bytes from the packet number)"
        )
    mask = hp_mask(suite, keys.hp, packet[sample_start : sample_start + SAMPLE_LEN])

    first = packet[0] ^ (mask[0] & first_byte_mask(packet[0]))
    pn_len = (first & 0x03) + 1
    pn_bytes = bytes(packet[pn_offset + i] ^ mask[1 + i] for i in range(pn_len))
    pn = decode_pn(largest_pn, int.from_bytes(pn_bytes, "big"), 8 * pn_len)

    header = bytes([first]) + packet[1:pn_offset] + pn_bytes
    ciphertext = packet[pn_offset + pn_len : end]
    n = make_nonce(keys.iv, pn, path_id, nonce_layout)
    payload = aead.open_(suite, keys.key, n, header, ciphertext)

    key_phase = 0 if info.is_long else (first >> 2) & 1
    return Unprotected(header, payload, pn, pn_len, key_phase, end)
