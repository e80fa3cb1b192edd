# SPDX-License-Identifier: Apache-2.0
"""quicoff.scapy_layers: QUIC header layers must dissect and rebuild the
headers produced by quicoff.ref byte-for-byte."""

import pytest
from scapy.packet import Padding, Raw
from hypothesis import given, settings
from hypothesis import strategies as st

from quicoff import ref
from quicoff.scapy_layers import QUIC, QUICLong, QUICShort, VarInt, bind_udp_port, dissect_datagram

V1, V2 = ref.VERSION_1, ref.VERSION_2
DCID = bytes.fromhex("8394c8f03e515708")
SCID = bytes.fromhex("f067a5502a4262b5")


# ---------------------------------------------------------------- RFC headers
@pytest.mark.parametrize(
    "hexhdr,version,ltype,dcid,scid,length,pn_len,pn",
    [
        ("c300000001088394c8f03e5157080000449e00000002", V1, 0, DCID, b"", 1182, 3, 2),
        ("c1000000010008f067a5502a4262b50040750001", V1, 0, b"", SCID, 117, 1, 1),
        ("d36b3343cf088394c8f03e5157080000449e00000002", V2, 1, DCID, b"", 1182, 3, 2),
        ("d16b3343cf0008f067a5502a4262b50040750001", V2, 1, b"", SCID, 117, 1, 1),
    ],
)
def test_rfc_initial_headers(hexhdr, version, ltype, dcid, scid, length, pn_len, pn):
    raw = bytes.fromhex(hexhdr)
    p = QUIC(raw)
    assert isinstance(p, QUICLong)
    assert (p.header_form, p.fixed_bit, p.long_type, p.reserved, p.pn_len) == (
        1,
        1,
        ltype,
        0,
        pn_len,
    )
    assert (p.version, p.dcid, p.scid, p.token, p.length, p.pn) == (
        version,
        dcid,
        scid,
        b"",
        length,
        pn,
    )
    assert p.packet_type() == "initial"
    assert bytes(p) == raw
    # ... and the same bytes from the fields, with lengths auto-computed.
    payload_len = length - (pn_len + 1) - 16
    built = QUICLong.with_type("initial", version, dcid=dcid, scid=scid, pn_len=pn_len, pn=pn) / (
        b"\x00" * payload_len
    )
    assert bytes(built)[: len(raw)] == raw


def test_rfc_short_header():
    raw = bytes.fromhex("4200bff4")  # RFC 9001 A.5, empty DCID
    p = QUIC(raw, dcid_len=0)
    assert isinstance(p, QUICShort)
    assert (
        p.header_form,
        p.fixed_bit,
        p.spin,
        p.reserved,
        p.key_phase,
        p.pn_len,
        p.dcid,
        p.pn,
    ) == (0, 1, 0, 0, 0, 2, b"", 0x00BFF4)
    assert bytes(p) == raw
    assert bytes(QUICShort(pn_len=2, pn=654360564)) == raw


# ---------------------------------------------------------------- property
@st.composite
def plain_headers(draw):
    pn = draw(st.integers(0, ref.PN_MAX))
    pn_len = draw(st.integers(1, 4))
    dcid = draw(st.binary(max_size=20))
    if draw(st.booleans()):
        version = draw(st.sampled_from([V1, V2]))
        ptype = draw(st.sampled_from(["initial", "0rtt", "handshake"]))
        token = draw(st.binary(max_size=80)) if ptype == "initial" else b""
        scid = draw(st.binary(max_size=20))
        payload_len = draw(st.integers(0, 20000))
        length_size = draw(st.sampled_from([None, 2, 4, 8]))
        if length_size == 2 and pn_len + payload_len + 16 >= 1 << 14:
            length_size = None
        hdr = ref.build_long_header(
            ptype,
            dcid,
            scid,
            pn,
            payload_len,
            version=version,
            pn_len=pn_len,
            token=token,
            reserved_bits=draw(st.integers(0, 3)),
            length_size=length_size,
        )
        want = dict(
            version=version,
            dcid=dcid,
            scid=scid,
            length=pn_len + payload_len + 16,
            ptype=ptype,
            token=token,
        )
    else:
        hdr = ref.build_short_header(
            dcid,
            pn,
            pn_len=pn_len,
            key_phase=draw(st.integers(0, 1)),
            spin=draw(st.integers(0, 1)),
            reserved_bits=draw(st.integers(0, 3)),
        )
        want = dict(dcid=dcid)
    want.update(pn=pn & ((1 << (8 * pn_len)) - 1), pn_len=pn_len - 1)
    return hdr, len(dcid), want


@settings(max_examples=300, deadline=None)
@given(plain_headers())
def test_ref_headers_roundtrip(case):
    hdr, dcid_len, want = case
    p = QUIC(hdr, dcid_len=dcid_len)
    assert bytes(p) == hdr
    assert bytes(p.copy()) == hdr
    assert p.dcid == want["dcid"] and p.pn == want["pn"] and p.pn_len == want["pn_len"]
    pad = want["length"] if p.header_form else 0
    info = ref.parse_header(hdr + bytes(pad), 0, dcid_len)
    if p.header_form:
        assert isinstance(p, QUICLong)
        assert (p.version, p.scid, p.length, p.packet_type()) == (
            want["version"],
            want["scid"],
            want["length"],
            want["ptype"],
        )
        assert info.packet_type == p.packet_type()
        if want["ptype"] == "initial":
            assert p.token == want["token"]
        # A header rebuilt from scratch (fields only, minimal varints unless
        # dissection saw otherwise) still matches.
        fields = {
            k: v for k, v in p.fields.items() if k not in ("dcid_len", "scid_len", "token_len")
        }
        assert bytes(QUICLong(**fields)) == hdr
    else:
        assert isinstance(p, QUICShort)
        assert bytes(QUICShort(**p.fields)) == hdr
    assert info.dcid == p.dcid


def test_nonminimal_varint_preserved():
    hdr = ref.build_long_header("handshake", b"\x01", b"\x02", 9, 10, length_size=8)
    p = QUICLong(hdr)
    assert p.length == 1 + 10 + 16 and p.length.size == 8
    assert bytes(p) == hdr
    q = QUICLong(
        version=V1, long_type=2, dcid=b"\x01", scid=b"\x02", length=VarInt(27, size=8), pn=9
    )
    assert bytes(q) == hdr
    q.length = 27
    assert bytes(q) != hdr and len(bytes(q)) == len(hdr) - 7


# ---------------------------------------------------------------- protected
def _coalesced():
    dcid, scid = b"\xd0" * 5, b"\x5c" * 3
    ik, _ = ref.initial_keys(dcid)
    hk = ref.derive_packet_keys("aes-128-gcm", b"h" * 32)
    ak = ref.derive_packet_keys("aes-128-gcm", b"a" * 32)
    hdrs = [
        ref.build_long_header("initial", dcid, scid, 0, 30, token=b"T"),
        ref.build_long_header("handshake", dcid, scid, 0, 25),
        ref.build_short_header(dcid, 0, key_phase=1),
    ]
    pkts = [
        ref.protect("aes-128-gcm", k, h_, bytes(pl), 0)
        for k, h_, pl in zip((ik, hk, ak), hdrs, (30, 25, 20))
    ]
    return dcid, hdrs, pkts


def test_dissect_protected_coalesced_datagram():
    dcid, hdrs, pkts = _coalesced()
    datagram = b"".join(pkts)
    layers = dissect_datagram(datagram, dcid_len=len(dcid))
    assert [type(x) for x in layers] == [QUICLong, QUICLong, QUICShort]
    assert [x.packet_type() for x in layers[:2]] == ["initial", "handshake"]
    assert layers[0].token == b"T"
    assert all(bytes(x) == p for x, p in zip(layers, pkts))
    # Unprotected headers dissect to the original plaintext headers.
    for key_set, pkt, hdr in zip(
        (
            ref.initial_keys(dcid)[0],
            ref.derive_packet_keys("aes-128-gcm", b"h" * 32),
            ref.derive_packet_keys("aes-128-gcm", b"a" * 32),
        ),
        pkts,
        hdrs,
    ):
        u = ref.unprotect("aes-128-gcm", key_set, pkt, dcid_len=len(dcid))
        x = QUIC(u.header, dcid_len=len(dcid))
        assert bytes(x) == hdr == u.header
    assert QUIC(u.header, dcid_len=len(dcid)).key_phase == 1


def test_long_header_splits_off_next_packet():
    _, _, pkts = _coalesced()
    p = QUICLong(pkts[0] + pkts[1])
    # pn_len is header-protected here, so the PN/payload split inside the
    # packet is meaningless, but Length still bounds the packet.
    body = p[Raw].load
    assert len(body) == p.length - (p.pn_len + 1)
    assert bytes(p[Padding]) == pkts[1]
    # What follows the first packet is kept, unparsed, as padding.
    assert bytes(p) == pkts[0] + pkts[1]
    assert len(bytes(p)) - len(bytes(p.payload.payload)) == len(pkts[0])


# ---------------------------------------------------------------- other types
@pytest.mark.parametrize(
    "version,hexpkt",
    [
        (V1, "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba"),
        (V2, "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6"),
    ],
)
def test_retry_roundtrip(version, hexpkt):
    raw = bytes.fromhex(hexpkt)
    p = QUIC(raw)
    assert p.packet_type() == "retry" and p.version == version
    assert p.scid == SCID and p.type_specific == raw[0] & 0x0F
    assert bytes(p.payload) == b"token" + raw[-16:]
    assert bytes(p) == raw


def test_version_negotiation_roundtrip():
    raw = b"\xaa" + bytes(4) + b"\x02\x01\x02\x01\x03" + bytes.fromhex("000000016b3343cf")
    p = QUIC(raw)
    assert p.packet_type() == "vn" and p.dcid == b"\x01\x02" and p.scid == b"\x03"
    assert bytes(p) == raw


# ---------------------------------------------------------------- DCID length
def test_short_dcid_len_sources():
    raw = ref.build_short_header(b"\x01\x02\x03\x04", 0x55, pn_len=1) + b"zz"
    assert QUICShort(raw, dcid_len=4).dcid == b"\x01\x02\x03\x04"
    assert QUICShort(raw, dcid_len=4).pn == 0x55
    cls4 = QUICShort.for_dcid_len(4)
    assert cls4 is QUICShort.for_dcid_len(4)
    assert cls4(raw).dcid == b"\x01\x02\x03\x04"
    assert QUICShort().dcid_length() == QUICShort.default_dcid_len == 8
    with pytest.raises(ValueError):  # 8-byte DCID leaves no PN byte
        QUICShort(raw)
    old = QUICShort.default_dcid_len
    try:
        QUICShort.default_dcid_len = 4
        assert QUICShort(raw).dcid == b"\x01\x02\x03\x04"
    finally:
        QUICShort.default_dcid_len = old


def test_udp_binding():
    from scapy.layers.inet import IP, UDP

    bind_udp_port(443)
    hdr = ref.build_long_header("handshake", b"\x01", b"", 3, 5)
    wire = bytes(IP() / UDP(sport=5000, dport=443) / hdr / bytes(21))
    pkt = IP(wire)
    assert QUICLong in pkt
    assert pkt[QUICLong].packet_type() == "handshake" and pkt[QUICLong].pn == 3
