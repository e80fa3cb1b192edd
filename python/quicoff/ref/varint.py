# SPDX-License-Identifier: Apache-2.0
"""QUIC variable-length integers (RFC 9000 §16).

The two most significant bits of the first byte give the encoded size:
00 -> 1 byte (6-bit value), 01 -> 2 bytes (14-bit), 10 -> 4 bytes (30-bit),
11 -> 8 bytes (62-bit). The remaining bits hold the value in network order.
A value may legally be encoded in more bytes than it needs; decoders must
accept that, so :func:`decode_varint` reports the size that was used.
"""

from __future__ import annotations

from .errors import Malformed

VARINT_MAX = (1 << 62) - 1

# encoded size in bytes -> the 2-bit prefix stored in the top of byte 0
_PREFIX = {1: 0b00, 2: 0b01, 4: 0b10, 8: 0b11}


def varint_size(value: int) -> int:
    """Smallest number of bytes that can encode ``value``."""
    if value < 0 or value > VARINT_MAX:
        raise ValueError(f"varint value out of range: {value}")
    if value < (1 << 6):
        return 1
    if value < (1 << 14):
        return 2
    if value < (1 << 30):
        return 4
    return 8


def encode_varint(value: int, size: int | None = None) -> bytes:
    """Encode ``value``; ``size`` (1, 2, 4 or 8) forces a longer encoding."""
    minimal = varint_size(value)
    if size is None:
        size = minimal
    if size not in _PREFIX:
        raise ValueError(f"varint size must be 1, 2, 4 or 8, not {size}")
    if size < minimal:
        raise ValueError(f"value {value} does not fit a {size}-byte varint")
    raw = bytearray(value.to_bytes(size, "big"))
    raw[0] |= _PREFIX[size] << 6
    return bytes(raw)


def decode_varint(buf: bytes, offset: int = 0) -> tuple[int, int]:
    """Decode the varint at ``buf[offset]``.

    Returns ``(value, next_offset)``; the encoded size is
    ``next_offset - offset``. Raises :class:`Malformed` if ``buf`` ends early.
    """
    if offset >= len(buf):
        raise Malformed("varint: no bytes left")
    size = 1 << (buf[offset] >> 6)
    end = offset + size
    if end > len(buf):
        raise Malformed(f"varint: needs {size} bytes, {len(buf) - offset} left")
    raw = bytearray(buf[offset:end])
    raw[0] &= 0x3F
    return int.from_bytes(raw, "big"), end
