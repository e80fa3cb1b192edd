# SPDX-License-Identifier: Apache-2.0
"""QUIC variable-length integers and frames (RFC 9000 §16, §19), minimally.

Enough to read decrypted payloads: ``parse_frames(payload)`` returns a list of
frame objects; unknown frame types raise :class:`FrameError` (a frame's length
cannot be known without knowing its type, so parsing stops there).  Each frame
class has ``encode()`` so tests, demos and benchmarks can build payloads.

Also :class:`Reassembler`, which puts CRYPTO or STREAM data received at
arbitrary offsets (split, reordered, retransmitted) back together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

from .ref import varint as _ref_varint
from .ref.errors import Malformed

__all__ = [
    "FrameError",
    "encode_varint",
    "decode_varint",
    "varint_len",
    "Padding",
    "Ping",
    "Ack",
    "ResetStream",
    "StopSending",
    "Crypto",
    "NewToken",
    "Stream",
    "MaxData",
    "MaxStreamData",
    "MaxStreams",
    "DataBlocked",
    "StreamDataBlocked",
    "StreamsBlocked",
    "NewConnectionId",
    "RetireConnectionId",
    "PathChallenge",
    "PathResponse",
    "ConnectionClose",
    "HandshakeDone",
    "Datagram",
    "AckFrequency",
    "ImmediateAck",
    "parse_frames",
    "iter_frames",
    "encode_frames",
    "Reassembler",
    "stream_data",
]

VARINT_MAX = _ref_varint.VARINT_MAX


class FrameError(ValueError):
    """A payload that is not a valid sequence of (known) QUIC frames."""


# --------------------------------------------------------------------------
# Variable-length integers, RFC 9000 §16: the reference model's (quicoff.ref.varint),
# with this module's error for a payload that ends inside one

#: bytes the shortest encoding of a value takes (ValueError out of range)
varint_len = _ref_varint.varint_size


def encode_varint(value: int, width: Optional[int] = None) -> bytes:
    """Encodes ``value``; ``width`` (1, 2, 4 or 8) forces a longer encoding."""
    return _ref_varint.encode_varint(value, width)


def decode_varint(buf, pos: int = 0) -> Tuple[int, int]:
    """Returns (value, position after it).  Raises FrameError when truncated."""
    try:
        return _ref_varint.decode_varint(buf, pos)
    except Malformed as e:
        raise FrameError("truncated varint (%s)" % e) from None


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf, pos: int = 0):
        self.buf = buf
        self.pos = pos

    def varint(self) -> int:
        value, self.pos = decode_varint(self.buf, self.pos)
        return value

    def bytes(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise FrameError("truncated frame")
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def u8(self) -> int:
        if self.pos >= len(self.buf):
            raise FrameError("truncated frame")
        self.pos += 1
        return self.buf[self.pos - 1]


def _v(*values: int) -> bytes:
    return b"".join(encode_varint(x) for x in values)


# --------------------------------------------------------------------------
# Frames, RFC 9000 §19 (+ RFC 9221 DATAGRAM, draft ACK_FREQUENCY)


@dataclass
class Padding:
    """A run of PADDING (0x00) bytes, collapsed into one object."""

    length: int = 1
    type = 0x00

    def encode(self) -> bytes:
        return b"\x00" * self.length


@dataclass
class Ping:
    type = 0x01

    def encode(self) -> bytes:
        return b"\x01"


@dataclass
class Ack:
    """ACK: ``ranges`` are (smallest, largest) packet numbers, largest first."""

    largest: int
    delay: int
    ranges: List[Tuple[int, int]]
    ecn: Optional[Tuple[int, int, int]] = None  # ECT0, ECT1, CE counts (type 0x03)

    @property
    def type(self) -> int:
        return 0x03 if self.ecn is not None else 0x02

    def encode(self) -> bytes:
        first_smallest, first_largest = self.ranges[0]
        out = [
            _v(
                self.type,
                first_largest,
                self.delay,
                len(self.ranges) - 1,
                first_largest - first_smallest,
            )
        ]
        prev_smallest = first_smallest
        for smallest, largest in self.ranges[1:]:
            out.append(_v(prev_smallest - largest - 2, largest - smallest))
            prev_smallest = smallest
        if self.ecn is not None:
            out.append(_v(*self.ecn))
        return b"".join(out)


@dataclass
class ResetStream:
    stream_id: int
    error_code: int
    final_size: int
    type = 0x04

    def encode(self) -> bytes:
        return _v(0x04, self.stream_id, self.error_code, self.final_size)


@dataclass
class StopSending:
    stream_id: int
    error_code: int
    type = 0x05

    def encode(self) -> bytes:
        return _v(0x05, self.stream_id, self.error_code)


@dataclass
class Crypto:
    offset: int
    data: bytes
    type = 0x06

    def encode(self) -> bytes:
        return _v(0x06, self.offset, len(self.data)) + self.data


@dataclass
class NewToken:
    token: bytes
    type = 0x07

    def encode(self) -> bytes:
        return _v(0x07, len(self.token)) + self.token


@dataclass
class Stream:
    """STREAM (0x08..0x0f).  ``explicit_length`` False = the frame runs to the
    end of the packet (LEN bit clear), as senders do for the last frame."""

    stream_id: int
    offset: int
    data: bytes
    fin: bool = False
    explicit_length: bool = True

    @property
    def type(self) -> int:
        return (
            0x08
            | (0x04 if self.offset else 0)
            | (0x02 if self.explicit_length else 0)
            | (0x01 if self.fin else 0)
        )

    def encode(self) -> bytes:
        out = _v(self.type, self.stream_id)
        if self.offset:
            out += encode_varint(self.offset)
        if self.explicit_length:
            out += encode_varint(len(self.data))
        return out + self.data


@dataclass
class MaxData:
    maximum: int
    type = 0x10

    def encode(self) -> bytes:
        return _v(0x10, self.maximum)


@dataclass
class MaxStreamData:
    stream_id: int
    maximum: int
    type = 0x11

    def encode(self) -> bytes:
        return _v(0x11, self.stream_id, self.maximum)


@dataclass
class MaxStreams:
    maximum: int
    bidi: bool = True

    @property
    def type(self) -> int:
        return 0x12 if self.bidi else 0x13

    def encode(self) -> bytes:
        return _v(self.type, self.maximum)


@dataclass
class DataBlocked:
    limit: int
    type = 0x14

    def encode(self) -> bytes:
        return _v(0x14, self.limit)


@dataclass
class StreamDataBlocked:
    stream_id: int
    limit: int
    type = 0x15

    def encode(self) -> bytes:
        return _v(0x15, self.stream_id, self.limit)


@dataclass
class StreamsBlocked:
    limit: int
    bidi: bool = True

    @property
    def type(self) -> int:
        return 0x16 if self.bidi else 0x17

    def encode(self) -> bytes:
        return _v(self.type, self.limit)


@dataclass
class NewConnectionId:
    sequence: int
    retire_prior_to: int
    cid: bytes
    reset_token: bytes
    type = 0x18

    def encode(self) -> bytes:
        return (
            _v(0x18, self.sequence, self.retire_prior_to)
            + bytes([len(self.cid)])
            + self.cid
            + self.reset_token
        )


@dataclass
class RetireConnectionId:
    sequence: int
    type = 0x19

    def encode(self) -> bytes:
        return _v(0x19, self.sequence)


@dataclass
class PathChallenge:
    data: bytes
    type = 0x1A

    def encode(self) -> bytes:
        return b"\x1a" + self.data


@dataclass
class PathResponse:
    data: bytes
    type = 0x1B

    def encode(self) -> bytes:
        return b"\x1b" + self.data


@dataclass
class ConnectionClose:
    """0x1c (transport, with ``frame_type``) or 0x1d (application, frame_type None)."""

    error_code: int
    frame_type: Optional[int]
    reason: bytes = b""

    @property
    def type(self) -> int:
        return 0x1C if self.frame_type is not None else 0x1D

    def encode(self) -> bytes:
        out = _v(self.type, self.error_code)
        if self.frame_type is not None:
            out += encode_varint(self.frame_type)
        return out + encode_varint(len(self.reason)) + self.reason


@dataclass
class HandshakeDone:
    type = 0x1E

    def encode(self) -> bytes:
        return b"\x1e"


@dataclass
class Datagram:
    """RFC 9221 DATAGRAM (0x30 without length, 0x31 with)."""

    data: bytes
    explicit_length: bool = True

    @property
    def type(self) -> int:
        return 0x31 if self.explicit_length else 0x30

    def encode(self) -> bytes:
        if self.explicit_length:
            return _v(0x31, len(self.data)) + self.data
        return b"\x30" + self.data


@dataclass
class ImmediateAck:
    """draft-ietf-quic-ack-frequency IMMEDIATE_ACK (0x1f)."""

    type = 0x1F

    def encode(self) -> bytes:
        return b"\x1f"


@dataclass
class AckFrequency:
    """draft-ietf-quic-ack-frequency ACK_FREQUENCY (0xaf)."""

    sequence: int
    ack_eliciting_threshold: int
    request_max_ack_delay: int
    reordering_threshold: int
    type = 0xAF

    def encode(self) -> bytes:
        return _v(
            0xAF,
            self.sequence,
            self.ack_eliciting_threshold,
            self.request_max_ack_delay,
            self.reordering_threshold,
        )


# --------------------------------------------------------------------------
# Parsing


def _parse_one(r: _Reader, ftype: int, start: int):
    buf = r.buf
    if ftype == 0x00:
        end = r.pos
        while end < len(buf) and buf[end] == 0:
            end += 1
        r.pos = end
        return Padding(end - start)
    if ftype == 0x01:
        return Ping()
    if ftype in (0x02, 0x03):
        largest = r.varint()
        delay = r.varint()
        count = r.varint()
        first = r.varint()
        smallest = largest - first
        if smallest < 0:
            raise FrameError("ACK range below zero")
        ranges = [(smallest, largest)]
        for _ in range(count):
            gap = r.varint()
            length = r.varint()
            hi = smallest - gap - 2
            lo = hi - length
            if lo < 0:
                raise FrameError("ACK range below zero")
            ranges.append((lo, hi))
            smallest = lo
        ecn = (r.varint(), r.varint(), r.varint()) if ftype == 0x03 else None
        return Ack(largest, delay, ranges, ecn)
    if ftype == 0x04:
        return ResetStream(r.varint(), r.varint(), r.varint())
    if ftype == 0x05:
        return StopSending(r.varint(), r.varint())
    if ftype == 0x06:
        offset = r.varint()
        return Crypto(offset, r.bytes(r.varint()))
    if ftype == 0x07:
        return NewToken(r.bytes(r.varint()))
    if 0x08 <= ftype <= 0x0F:
        stream_id = r.varint()
        offset = r.varint() if ftype & 0x04 else 0
        if ftype & 0x02:
            data = r.bytes(r.varint())
        else:
            data = r.bytes(len(buf) - r.pos)
        if offset + len(data) > VARINT_MAX:
            raise FrameError("STREAM beyond 2^62")
        return Stream(stream_id, offset, data, bool(ftype & 0x01), bool(ftype & 0x02))
    if ftype == 0x10:
        return MaxData(r.varint())
    if ftype == 0x11:
        return MaxStreamData(r.varint(), r.varint())
    if ftype in (0x12, 0x13):
        return MaxStreams(r.varint(), ftype == 0x12)
    if ftype == 0x14:
        return DataBlocked(r.varint())
    if ftype == 0x15:
        return StreamDataBlocked(r.varint(), r.varint())
    if ftype in (0x16, 0x17):
        return StreamsBlocked(r.varint(), ftype == 0x16)
    if ftype == 0x18:
        seq = r.varint()
        retire = r.varint()
        n = r.u8()
        if not 1 <= n <= 20:
            raise FrameError("NEW_CONNECTION_ID length out of range")
        return NewConnectionId(seq, retire, r.bytes(n), r.bytes(16))
    if ftype == 0x19:
        return RetireConnectionId(r.varint())
    if ftype == 0x1A:
        return PathChallenge(r.bytes(8))
    if ftype == 0x1B:
        return PathResponse(r.bytes(8))
    if ftype in (0x1C, 0x1D):
        code = r.varint()
        frame_type = r.varint() if ftype == 0x1C else None
        return ConnectionClose(code, frame_type, r.bytes(r.varint()))
    if ftype == 0x1E:
        return HandshakeDone()
    if ftype == 0x1F:
        return ImmediateAck()
    if ftype in (0x30, 0x31):
        if ftype == 0x31:
            return Datagram(r.bytes(r.varint()), True)
        return Datagram(r.bytes(len(buf) - r.pos), False)
    if ftype == 0xAF:
        return AckFrequency(r.varint(), r.varint(), r.varint(), r.varint())
    raise FrameError(f"unknown frame type 0x{ftype:x} at offset {start}")


def iter_frames(payload) -> Iterator[object]:
    """Yields the frames of a decrypted packet payload in order."""
    r = _Reader(payload)
    while r.pos < len(payload):
        start = r.pos
        ftype = r.varint()
        yield _parse_one(r, ftype, start)


def parse_frames(payload) -> List[object]:
    """All frames of a decrypted payload; FrameError if any is malformed/unknown."""
    return list(iter_frames(payload))


def encode_frames(frames) -> bytes:
    return b"".join(f.encode() for f in frames)


# --------------------------------------------------------------------------
# Reassembly of CRYPTO / STREAM data


@dataclass
class Reassembler:
    """Byte stream from (offset, data) pieces in any order, with overlaps.

    ``contiguous()`` is the prefix [0, n) received so far; ``fin_offset`` is set
    by a FIN (STREAM) and ``complete`` tells whether everything up to it is here.
    Overlapping data must agree (QUIC requires it); otherwise ``conflict`` is set
    and the first copy wins.
    """

    _data: bytearray = field(default_factory=bytearray)
    _have: List[Tuple[int, int]] = field(default_factory=list)  # merged [start, end)
    fin_offset: Optional[int] = None
    conflict: bool = False

    def add(self, offset: int, data: bytes, fin: bool = False) -> None:
        end = offset + len(data)
        if fin:
            self.fin_offset = end
        if not data:
            return
        if end > len(self._data):
            self._data.extend(b"\x00" * (end - len(self._data)))
        # write only the holes, so the first copy wins; flag disagreements
        pos = offset
        for s, e in self._have:
            if e <= pos or s >= end:
                continue
            if s > pos:
                self._data[pos:s] = data[pos - offset : s - offset]
            ov_s, ov_e = max(s, pos), min(e, end)
            if self._data[ov_s:ov_e] != data[ov_s - offset : ov_e - offset]:
                self.conflict = True
            pos = max(pos, e)
            if pos >= end:
                break
        if pos < end:
            self._data[pos:end] = data[pos - offset :]
        self._merge(offset, end)

    def _merge(self, start: int, end: int) -> None:
        merged = []
        placed = False
        for s, e in self._have:
            if e < start:
                merged.append((s, e))
            elif s > end:
                if not placed:
                    merged.append((start, end))
                    placed = True
                merged.append((s, e))
            else:
                start, end = min(s, start), max(e, end)
        if not placed:
            merged.append((start, end))
        merged.sort()
        self._have = merged

    def contiguous_len(self) -> int:
        if self._have and self._have[0][0] == 0:
            return self._have[0][1]
        return 0

    def contiguous(self) -> bytes:
        return bytes(self._data[: self.contiguous_len()])

    @property
    def ranges(self) -> List[Tuple[int, int]]:
        return list(self._have)

    @property
    def complete(self) -> bool:
        return self.fin_offset is not None and self.contiguous_len() >= self.fin_offset


def stream_data(payloads, stream_filter=None) -> Dict[int, Reassembler]:
    """Reassembles STREAM frames of many decrypted payloads: {stream_id: Reassembler}."""
    streams: Dict[int, Reassembler] = {}
    for payload in payloads:
        for f in iter_frames(payload):
            if isinstance(f, Stream) and (stream_filter is None or stream_filter(f.stream_id)):
                streams.setdefault(f.stream_id, Reassembler()).add(f.offset, f.data, f.fin)
    return streams
