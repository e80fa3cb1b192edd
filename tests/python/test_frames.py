# SPDX-License-Identifier: Apache-2.0
"""quicoff.frames: varints (RFC 9000 §16 / A.1), frames (§19), reassembly.

aioquic's encoder, where used, is an independent implementation to check
against."""

import random

import pytest

from quicoff import frames as F

H = bytes.fromhex


# --------------------------------------------------------------------------
# varints


@pytest.mark.parametrize(
    "encoded,value",
    [
        # RFC 9000 A.1
        (H("c2197c5eff14e88c"), 151288809941952652),
        (H("9d7f3e7d"), 494878333),
        (H("7bbd"), 15293),
        (H("25"), 37),
        (H("4025"), 37),
    ],
)
def test_varint_rfc_examples(encoded, value):
    assert F.decode_varint(encoded) == (value, len(encoded))
    if encoded != H("4025"):
        assert F.encode_varint(value) == encoded
    assert F.encode_varint(value, len(encoded)) == encoded


def test_varint_boundaries():
    for value, n in [
        (0, 1),
        (63, 1),
        (64, 2),
        (16383, 2),
        (16384, 4),
        (2**30 - 1, 4),
        (2**30, 8),
        (2**62 - 1, 8),
    ]:
        b = F.encode_varint(value)
        assert len(b) == n == F.varint_len(value)
        assert F.decode_varint(b + b"xyz") == (value, n)
    with pytest.raises(ValueError):
        F.encode_varint(2**62)
    with pytest.raises(ValueError):
        F.encode_varint(-1)
    with pytest.raises(ValueError):
        F.encode_varint(64, 1)
    with pytest.raises(F.FrameError):
        F.decode_varint(H("9d7f3e"))
    with pytest.raises(F.FrameError):
        F.decode_varint(b"", 0)


def test_varint_against_aioquic():
    buffer = pytest.importorskip("aioquic.buffer")
    rng = random.Random(9000)
    for _ in range(2000):
        value = rng.choice(
            [rng.randrange(64), rng.randrange(16384), rng.randrange(2**30), rng.randrange(2**62)]
        )
        buf = buffer.Buffer(capacity=8)
        buf.push_uint_var(value)
        assert F.encode_varint(value) == buf.data
        assert F.decode_varint(buf.data) == (value, len(buf.data))


# --------------------------------------------------------------------------
# frames

ALL_FRAMES = [
    F.Padding(5),
    F.Ping(),
    F.Ack(100, 3, [(90, 100)]),
    F.Ack(1000, 25, [(990, 1000), (900, 950), (0, 10)], ecn=(1, 2, 3)),
    F.ResetStream(4, 0x10, 1234),
    F.StopSending(8, 7),
    F.Crypto(0, b"client hello"),
    F.Crypto(1200, b"x" * 300),
    F.NewToken(b"token-bytes"),
    F.Stream(0, 0, b"hello", fin=False),
    F.Stream(4, 70000, b"world", fin=True),
    F.Stream(1, 0, b"", fin=True),
    F.MaxData(1 << 20),
    F.MaxStreamData(4, 65536),
    F.MaxStreams(100, bidi=True),
    F.MaxStreams(3, bidi=False),
    F.DataBlocked(4096),
    F.StreamDataBlocked(8, 4096),
    F.StreamsBlocked(10, bidi=True),
    F.StreamsBlocked(11, bidi=False),
    F.NewConnectionId(3, 1, H("0102030405060708"), bytes(range(16))),
    F.RetireConnectionId(2),
    F.PathChallenge(b"abcdefgh"),
    F.PathResponse(b"abcdefgh"),
    F.ConnectionClose(0x0A, 0x08, b"bad stream"),
    F.ConnectionClose(0x100, None, b"app says bye"),
    F.HandshakeDone(),
    F.Datagram(b"unreliable"),
    F.ImmediateAck(),
    F.AckFrequency(1, 2, 25000, 1),
]


@pytest.mark.parametrize("frame", ALL_FRAMES, ids=lambda f: type(f).__name__)
def test_frame_round_trip(frame):
    encoded = frame.encode()
    assert F.parse_frames(encoded) == [frame]
    assert F.parse_frames(encoded)[0].type == frame.type


def test_payload_of_many_frames_and_padding_runs():
    payload = F.encode_frames(ALL_FRAMES) + bytes(40)
    parsed = F.parse_frames(payload)
    assert parsed[:-1] == ALL_FRAMES
    assert parsed[-1] == F.Padding(40)
    # consecutive PADDING bytes collapse into one object
    assert F.parse_frames(bytes(7) + b"\x01" + bytes(3)) == [F.Padding(7), F.Ping(), F.Padding(3)]


def test_stream_frame_variants():
    # OFF=0 LEN=0 FIN=0: data runs to the end of the payload
    assert F.parse_frames(b"\x08\x04abc") == [F.Stream(4, 0, b"abc", False, False)]
    # OFF=1 LEN=1 FIN=1
    assert F.parse_frames(b"\x0f\x00\x40\x80\x03xyz") == [F.Stream(0, 128, b"xyz", True, True)]
    # OFF=1 LEN=0: to the end
    assert F.parse_frames(b"\x0c\x01\x05tail") == [F.Stream(1, 5, b"tail", False, False)]
    s = F.Stream(8, 3, b"last", explicit_length=False)
    assert s.encode() == b"\x0c\x08\x03last"
    assert F.parse_frames(s.encode()) == [s]


def test_ack_ranges_decode():
    # largest 10, first range 2 -> [8, 10]; gap 1 -> next largest 8-1-2 = 5, length 1 -> [4, 5]
    assert F.parse_frames(b"\x02\x0a\x00\x01\x02\x01\x01") == [F.Ack(10, 0, [(8, 10), (4, 5)])]
    with pytest.raises(F.FrameError):
        F.parse_frames(b"\x02\x05\x00\x00\x06")  # first range below zero


@pytest.mark.parametrize(
    "bad",
    [
        b"\x21",  # unknown frame type 0x21
        b"\x40\xb0",  # unknown two-byte frame type
        b"\x06\x00\x05abc",  # CRYPTO shorter than its length
        b"\x0a\x00\x10short",  # STREAM shorter than its length
        b"\x18\x01\x00\x00" + bytes(16),  # NEW_CONNECTION_ID with a zero-length CID
        b"\x18\x01\x00\x08\x01\x02",  # truncated NEW_CONNECTION_ID
        b"\x1a\x01\x02",  # PATH_CHALLENGE of 2 bytes
        b"\x02\x05",  # truncated ACK
    ],
)
def test_bad_payloads(bad):
    with pytest.raises(F.FrameError):
        F.parse_frames(bad)


def test_iter_frames_yields_until_the_error():
    it = F.iter_frames(b"\x01\x01\x21")
    assert next(it) == F.Ping()
    assert next(it) == F.Ping()
    with pytest.raises(F.FrameError):
        next(it)


def test_frames_built_by_aioquic():
    """An aioquic client's first Initial payload: CRYPTO(ClientHello) + PADDING."""
    pytest.importorskip("aioquic")
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection
    from quicoff import ref

    client = QuicConnection(
        configuration=QuicConfiguration(is_client=True, server_name="example.com")
    )
    client.connect(("192.0.2.1", 443), now=0.0)
    ((datagram, _),) = client.datagrams_to_send(now=0.0)
    odcid = datagram[6 : 6 + datagram[5]]
    ck, _ = ref.initial_keys(odcid)
    u = ref.unprotect("aes-128-gcm", ck, datagram)
    parsed = F.parse_frames(u.payload)
    crypto = [f for f in parsed if isinstance(f, F.Crypto)]
    assert crypto and all(isinstance(f, (F.Crypto, F.Padding, F.Ping)) for f in parsed)
    r = F.Reassembler()
    for f in crypto:
        r.add(f.offset, f.data)
    hello = r.contiguous()
    assert hello[0] == 1 and int.from_bytes(hello[1:4], "big") + 4 == len(hello)


# --------------------------------------------------------------------------
# reassembly


def test_reassembler_out_of_order_and_overlaps():
    data = bytes(range(256)) * 40
    rng = random.Random(1)
    pieces = []
    for _ in range(300):
        a = rng.randrange(len(data))
        b = min(len(data), a + rng.randrange(1, 200))
        pieces.append((a, data[a:b]))
    pieces.append((0, data[:10]))
    pieces.append((len(data) - 1, data[-1:]))
    rng.shuffle(pieces)
    r = F.Reassembler()
    for off, piece in pieces:
        r.add(off, piece)
    covered = set()
    for off, piece in pieces:
        covered.update(range(off, off + len(piece)))
    n = 0
    while n in covered:
        n += 1
    assert r.contiguous() == data[:n]
    assert not r.conflict
    # fill every hole: the whole stream
    for off in range(0, len(data), 97):
        r.add(off, data[off : off + 97])
    r.add(len(data), b"", fin=True)
    assert r.contiguous() == data and r.complete and r.ranges == [(0, len(data))]


def test_reassembler_fin_holes_and_conflicts():
    r = F.Reassembler()
    r.add(5, b"world", fin=True)
    assert r.contiguous() == b"" and not r.complete and r.fin_offset == 10
    r.add(0, b"hello")
    assert r.contiguous() == b"helloworld" and r.complete
    r.add(3, b"LOw")  # disagrees with what is there: first copy wins
    assert r.conflict and r.contiguous() == b"helloworld"


def test_stream_data_helper():
    payloads = [
        F.Stream(0, 5, b"56789", fin=True).encode(),
        F.encode_frames(
            [F.Ack(1, 0, [(0, 1)]), F.Stream(0, 0, b"01234"), F.Stream(4, 0, b"other")]
        ),
    ]
    streams = F.stream_data(payloads)
    assert streams[0].contiguous() == b"0123456789" and streams[0].complete
    assert streams[4].contiguous() == b"other" and not streams[4].complete
