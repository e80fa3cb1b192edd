# SPDX-License-Identifier: Apache-2.0
"""Behavioural and property tests of quicoff.ref beyond the RFC vectors:
varints, packet numbers, nonce layouts, protect/unprotect round trips,
tamper detection, malformed input and coalesced datagrams."""

import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from quicoff import ref

SUITES = ["aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305"]
VERSIONS = [ref.VERSION_1, ref.VERSION_2]
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def keys_for(suite, version=1, seed=b"x"):
    secret = (seed * 48)[: ref.secret_len(suite)]
    return ref.derive_packet_keys(suite, secret, version)


# ---------------------------------------------------------------- suites/keys
def test_secret_and_key_lengths():
    assert [ref.secret_len(s) for s in SUITES] == [32, 48, 32, 32]
    for s, klen in zip(SUITES, [16, 32, 16, 32]):
        k = keys_for(s)
        assert (len(k.key), len(k.iv), len(k.hp)) == (klen, 12, klen)


def test_aes256_uses_sha384():
    # Computed independently: HKDF-Expand-Label with SHA-384 on 48 bytes.
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

    secret = bytes(range(48))
    info = b"\x00\x20\x0etls13 quic key\x00"
    want = HKDFExpand(hashes.SHA384(), 32, info).derive(secret)
    assert ref.derive_packet_keys("aes-256-gcm", secret).key == want


def test_bad_arguments_rejected():
    with pytest.raises(ValueError):
        ref.derive_packet_keys("aes-256-gcm", bytes(32))  # needs 48
    with pytest.raises(ValueError):
        ref.derive_packet_keys("aes-128-ccm-8", bytes(32))  # unknown suite
    with pytest.raises(ValueError):
        ref.initial_keys(b"\x01" * 8, version=2)  # not a QUIC version


def test_key_update_keeps_hp_and_changes_key():
    secret = bytes(range(32))
    k0 = ref.derive_packet_keys("aes-128-gcm", secret)
    s1, k1 = ref.next_packet_keys("aes-128-gcm", secret, k0)
    assert s1 == ref.next_secret("aes-128-gcm", secret)
    assert k1.hp == k0.hp and k1.key != k0.key and k1.iv != k0.iv
    assert ref.next_secret("aes-128-gcm", secret, ref.VERSION_2) != s1


# ---------------------------------------------------------------- varints
@pytest.mark.parametrize(
    "hexval,value",
    [  # RFC 9000 Appendix A.1
        ("c2197c5eff14e88c", 151288809941952652),
        ("9d7f3e7d", 494878333),
        ("7bbd", 15293),
        ("25", 37),
        ("4025", 37),
    ],
)
def test_varint_rfc_examples(hexval, value):
    raw = bytes.fromhex(hexval)
    assert ref.decode_varint(raw) == (value, len(raw))
    assert ref.encode_varint(value, len(raw)) == raw


@given(st.integers(0, ref.VARINT_MAX), st.sampled_from([1, 2, 4, 8]))
def test_varint_roundtrip(value, size):
    if size < ref.varint_size(value):
        with pytest.raises(ValueError):
            ref.encode_varint(value, size)
        return
    enc = ref.encode_varint(value, size)
    assert len(enc) == size
    assert ref.decode_varint(b"\xaa" + enc + b"\xbb", 1) == (value, size + 1)


def test_varint_truncated():
    with pytest.raises(ref.Malformed):
        ref.decode_varint(b"\x80\x00\x00")
    with pytest.raises(ValueError):
        ref.encode_varint(1 << 62)


# ---------------------------------------------------------------- packet numbers
@pytest.mark.parametrize(
    "pn,la,n",
    [
        (0, None, 1),
        (127, None, 1),
        (128, None, 2),
        (1000 + 128, 1000, 1),
        (1000 + 129, 1000, 2),
        (10 + (1 << 15), 10, 2),
        (11 + (1 << 15), 10, 3),
        (10 + (1 << 23), 10, 3),
        (11 + (1 << 23), 10, 4),
        (10 + (1 << 31), 10, 4),
    ],
)
def test_encode_pn_len_boundaries(pn, la, n):
    assert ref.encode_pn_len(pn, la) == n


def test_encode_pn_len_errors():
    with pytest.raises(ValueError):
        ref.encode_pn_len(11 + (1 << 31), 10)
    with pytest.raises(ValueError):
        ref.encode_pn_len(5, 5)


@pytest.mark.parametrize(
    "largest,trunc,nbits,want",
    [
        (None, 0, 8, 0),
        (1, 0xFF, 8, 0xFF),  # no negative packet numbers
        (0x1F0, 0x05, 8, 0x205),  # wraps forward
        (0x205, 0xF0, 8, 0x1F0),  # late packet from before the wrap
        ((1 << 62) - 2, 0x00, 8, (1 << 62) - 256),  # never past 2^62-1
        (0xA82F30EA, 0x9B32, 16, 0xA82F9B32),
    ],
)
def test_decode_pn_edges(largest, trunc, nbits, want):
    assert ref.decode_pn(largest, trunc, nbits) == want


@st.composite
def pn_cases(draw):
    pn = draw(st.integers(0, ref.PN_MAX))
    if pn == 0 or draw(st.booleans()):
        la = None
        assume(pn < (1 << 31))
        lo = None
    else:
        la = draw(st.integers(max(0, pn - (1 << 31)), pn - 1))
        lo = la
    # The receiver has seen at least largest_acked, and at most pn - 1.
    if lo is None:
        largest = draw(st.one_of(st.none(), st.integers(0, max(0, pn - 1))))
        if pn == 0:
            largest = None
    else:
        largest = draw(st.integers(lo, pn - 1))
    return pn, la, largest


@settings(max_examples=500, deadline=None)
@given(pn_cases())
def test_pn_encode_decode_roundtrip(case):
    pn, la, largest = case
    n = ref.encode_pn_len(pn, la)
    trunc = int.from_bytes(ref.truncate_pn(pn, n), "big")
    assert ref.decode_pn(largest, trunc, 8 * n) == pn


# ---------------------------------------------------------------- nonces
IV = bytes.fromhex("fa044b2f42a3fd3b46fb255c")
PN = 0x0102030405
PATH = 0x0A0B0C0D


@pytest.mark.parametrize(
    "iv,layout,path,want",
    [
        (bytes(12), "rfc9001", PATH, "000000000000000102030405"),
        (bytes(12), "multipath", PATH, "0a0b0c0d0000000102030405"),
        (bytes(12), "multipath-path-id-le", PATH, "0d0c0b0a0000000102030405"),
        (IV, "rfc9001", None, "fa044b2f42a3fd3a44f82159"),
        (IV, "rfc9001", PATH, "fa044b2f42a3fd3a44f82159"),  # path ignored
        (IV, "multipath", PATH, "f00f472242a3fd3a44f82159"),
        (IV, "multipath-path-id-le", PATH, "f708402542a3fd3a44f82159"),
        (IV, "multipath", 0, "fa044b2f42a3fd3a44f82159"),  # path 0 == RFC 9001
        (IV, "multipath-path-id-le", None, "fa044b2f42a3fd3a44f82159"),
    ],
)
def test_nonce_layouts(iv, layout, path, want):
    assert ref.nonce(iv, PN, path, layout).hex() == want


def test_nonce_errors():
    with pytest.raises(ValueError):
        ref.nonce(IV, PN, 1 << 32, "multipath")
    with pytest.raises(ValueError):
        ref.nonce(IV, 1 << 62)
    with pytest.raises(ValueError):
        ref.nonce(IV, PN, 1, "bogus")
    with pytest.raises(ValueError):
        ref.nonce(IV[:8], PN)


# ---------------------------------------------------------------- round trips
@st.composite
def packets(draw):
    suite = draw(st.sampled_from(SUITES))
    version = draw(st.sampled_from(VERSIONS))
    long_hdr = draw(st.booleans())
    pn = draw(st.integers(0, ref.PN_MAX))
    pn_len = draw(st.integers(1, 4))
    size = draw(st.integers(0, 1500))
    payload = draw(st.binary(min_size=size, max_size=size)) if size < 64 else os.urandom(size)
    dcid = draw(st.binary(min_size=0, max_size=20))
    layout = draw(st.sampled_from(ref.NONCE_LAYOUTS))
    path_id = draw(st.one_of(st.none(), st.integers(0, (1 << 32) - 1)))
    key_phase = draw(st.integers(0, 1))
    if long_hdr:
        ptype = draw(st.sampled_from(["initial", "0rtt", "handshake"]))
        token = draw(st.binary(max_size=40)) if ptype == "initial" else b""
        scid = draw(st.binary(max_size=20))
        header = ref.build_long_header(
            ptype, dcid, scid, pn, len(payload), version=version, pn_len=pn_len, token=token
        )
    else:
        header = ref.build_short_header(
            dcid, pn, pn_len=pn_len, key_phase=key_phase, spin=draw(st.integers(0, 1))
        )
    keys = keys_for(suite, version, seed=draw(st.binary(min_size=1, max_size=4)))
    return dict(
        suite=suite,
        keys=keys,
        header=header,
        payload=payload,
        pn=pn,
        pn_len=pn_len,
        dcid_len=len(dcid),
        long=long_hdr,
        key_phase=0 if long_hdr else key_phase,
        path_id=path_id,
        layout=layout,
    )


def _protect(p):
    return ref.protect(
        p["suite"],
        p["keys"],
        p["header"],
        p["payload"],
        p["pn"],
        path_id=p["path_id"],
        nonce_layout=p["layout"],
    )


def _unprotect(p, pkt, **kw):
    args = dict(
        dcid_len=p["dcid_len"],
        largest_pn=p["pn"] - 1 if p["pn"] else None,
        path_id=p["path_id"],
        nonce_layout=p["layout"],
    )
    args.update(kw)
    return ref.unprotect(p["suite"], p["keys"], pkt, **args)


@FAST
@given(packets())
def test_protect_unprotect_roundtrip(p):
    if p["pn_len"] + len(p["payload"]) < ref.MIN_PN_PLUS_PAYLOAD:
        with pytest.raises(ValueError):
            _protect(p)
        return
    pkt = _protect(p)
    assert len(pkt) == len(p["header"]) + len(p["payload"]) + 16
    # Header protection never touches the bits it must not touch.
    keep = 0xF0 if p["long"] else 0xE0
    assert pkt[0] & keep == p["header"][0] & keep
    assert pkt[1 : len(p["header"]) - p["pn_len"]] == p["header"][1 : -p["pn_len"]]
    u = _unprotect(p, pkt + b"\x00trailing" if p["long"] else pkt)
    assert u.header == p["header"]
    assert u.payload == p["payload"]
    assert (u.pn, u.pn_len, u.key_phase, u.packet_len) == (
        p["pn"],
        p["pn_len"],
        p["key_phase"],
        len(pkt),
    )


@FAST
@given(packets(), st.data())
def test_tamper_is_detected(p, data):
    assume(p["pn_len"] + len(p["payload"]) >= ref.MIN_PN_PLUS_PAYLOAD)
    pkt = bytearray(_protect(p))
    i = data.draw(st.integers(0, len(pkt) - 1))
    pkt[i] ^= data.draw(st.integers(1, 255))
    with pytest.raises(ref.RefError):
        _unprotect(p, bytes(pkt))


@FAST
@given(packets())
def test_wrong_nonce_context_fails(p):
    assume(p["pn_len"] + len(p["payload"]) >= ref.MIN_PN_PLUS_PAYLOAD)
    pkt = _protect(p)
    if p["layout"] != "rfc9001" and (p["path_id"] or 0) != 0:
        with pytest.raises(ref.AuthFailed):
            _unprotect(p, pkt, path_id=(p["path_id"] or 0) ^ 1)
    # Decoding against a far-off largest_pn recovers a different pn -> fails
    # (unless the encoding is wide enough to absorb the offset).
    far = p["pn"] + (1 << (8 * p["pn_len"]))
    if far < ref.PN_MAX - (1 << 33):
        with pytest.raises(ref.AuthFailed):
            _unprotect(p, pkt, largest_pn=far)


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("version", VERSIONS)
def test_key_phase_and_key_update(suite, version):
    secret = bytes(range(ref.secret_len(suite)))
    k0 = ref.derive_packet_keys(suite, secret, version)
    _, k1 = ref.next_packet_keys(suite, secret, k0, version)
    dcid = b"\x11" * 8
    for phase, keys, other in ((0, k0, k1), (1, k1, k0)):
        hdr = ref.build_short_header(dcid, 1000 + phase, pn_len=2, key_phase=phase)
        pkt = ref.protect(suite, keys, hdr, b"frames!", 1000 + phase)
        u = ref.unprotect(suite, keys, pkt, dcid_len=8, largest_pn=999)
        assert u.key_phase == phase and u.payload == b"frames!"
        with pytest.raises(ref.AuthFailed):
            ref.unprotect(suite, other, pkt, dcid_len=8, largest_pn=999)


# ---------------------------------------------------------------- malformed input
def test_sample_boundary():
    keys = keys_for("aes-128-gcm")
    hdr = ref.build_short_header(b"\x01\x02", 7, pn_len=1)
    with pytest.raises(ValueError):
        ref.protect("aes-128-gcm", keys, hdr, b"\x01\x00", 7)  # 1 + 2 < 4
    pkt = ref.protect("aes-128-gcm", keys, hdr, b"\x01\x00\x00", 7)
    assert len(pkt) == 1 + 2 + 1 + 3 + 16  # minimal
    assert ref.unprotect("aes-128-gcm", keys, pkt, 2).payload == b"\x01\x00\x00"
    with pytest.raises(ref.Malformed):
        ref.unprotect("aes-128-gcm", keys, pkt[:-1], 2)


@pytest.mark.parametrize("long_hdr", [True, False])
def test_every_truncation_rejected(long_hdr):
    keys = keys_for("aes-128-gcm")
    if long_hdr:
        hdr = ref.build_long_header("handshake", b"\xaa" * 4, b"\xbb" * 4, 5, 30)
    else:
        hdr = ref.build_short_header(b"\xaa" * 4, 5)
    pkt = ref.protect("aes-128-gcm", keys, hdr, bytes(30), 5)
    for n in range(len(pkt)):
        with pytest.raises(ref.RefError):
            ref.unprotect("aes-128-gcm", keys, pkt[:n], 4)


def test_unprotect_rejects_unprotected_types():
    vn = b"\x80" + bytes(4) + b"\x00\x00" + bytes.fromhex("000000016b3343cf")
    with pytest.raises(ref.Malformed):
        ref.unprotect("aes-128-gcm", keys_for("aes-128-gcm"), vn, 0)
    unknown = b"\xc0" + bytes.fromhex("1a2a3a4a") + b"\x00\x00" + bytes(40)
    with pytest.raises(ref.Malformed):
        ref.unprotect("aes-128-gcm", keys_for("aes-128-gcm"), unknown, 0)


def test_protect_validates_header():
    keys = keys_for("aes-128-gcm")
    hdr = ref.build_long_header("initial", b"\x01" * 8, b"", 3, 100)
    ref.protect("aes-128-gcm", keys, hdr, bytes(100), 3)
    with pytest.raises(ValueError):  # Length mismatch
        ref.protect("aes-128-gcm", keys, hdr, bytes(99), 3)
    with pytest.raises(ValueError):  # PN bytes mismatch
        ref.protect("aes-128-gcm", keys, hdr, bytes(100), 4)
    with pytest.raises(ValueError):  # header w/o full PN
        ref.protect("aes-128-gcm", keys, hdr[:-1], bytes(100), 3)
    with pytest.raises(ValueError):
        ref.build_long_header("retry", b"", b"", 0, 0)
    with pytest.raises(ValueError):
        ref.build_long_header("handshake", b"", b"", 0, 0, token=b"t")


def test_long_header_cid_limit():
    pkt = b"\xc0" + (1).to_bytes(4, "big") + b"\x15" + bytes(21) + b"\x00" + bytes(40)
    with pytest.raises(ref.Malformed):
        ref.parse_header(pkt, 0)


def test_v2_type_bits():
    for version, codes in (
        (ref.VERSION_1, {"initial": 0, "0rtt": 1, "handshake": 2}),
        (ref.VERSION_2, {"initial": 1, "0rtt": 2, "handshake": 3}),
    ):
        for ptype, code in codes.items():
            hdr = ref.build_long_header(ptype, b"", b"", 0, 10, version=version)
            assert (hdr[0] >> 4) & 3 == code
            info = ref.parse_header(hdr + bytes(26), 0)
            assert info.packet_type == ptype and info.version == version


# ---------------------------------------------------------------- coalescing
def test_coalesced_initial_handshake_1rtt():
    dcid, scid = bytes.fromhex("0102030405060708"), bytes.fromhex("a1a2a3a4")
    ik, _ = ref.initial_keys(dcid)
    hk = keys_for("aes-256-gcm", seed=b"h")
    ak = keys_for("chacha20-poly1305", seed=b"a")
    parts = [
        (
            "aes-128-gcm",
            ik,
            ref.build_long_header("initial", dcid, scid, 0, 50, token=b"tok"),
            b"\x06" + bytes(49),
            0,
        ),
        (
            "aes-256-gcm",
            hk,
            ref.build_long_header("handshake", dcid, scid, 1, 60, length_size=4),
            b"\x06" + bytes(59),
            1,
        ),
        ("chacha20-poly1305", ak, ref.build_short_header(dcid, 2, key_phase=1), b"\x01" * 40, 2),
    ]
    protected = [ref.protect(s, k, hd, pl, pn) for s, k, hd, pl, pn in parts]
    datagram = b"".join(protected)
    spans = ref.split_coalesced(datagram, dcid_len=len(dcid))
    ends = [sum(len(p) for p in protected[: i + 1]) for i in range(3)]
    assert spans == [(0, ends[0]), (ends[0], ends[1]), (ends[1], ends[2])]
    types = [ref.parse_header(datagram, o, len(dcid)).packet_type for o, _ in spans]
    assert types == ["initial", "handshake", "1rtt"]
    assert ref.parse_header(datagram, 0, None).token == b"tok"
    offset = 0
    for (suite, keys, hdr, pl, pn), (start, end) in zip(parts, spans):
        assert start == offset
        u = ref.unprotect(suite, keys, datagram[offset:], dcid_len=len(dcid))
        assert (u.header, u.payload, u.pn) == (hdr, pl, pn)
        offset += u.packet_len
        assert offset == end
    assert offset == len(datagram)


def test_coalesced_length_overrun_is_malformed():
    hdr = ref.build_long_header("handshake", b"\x01", b"\x02", 0, 100)
    with pytest.raises(ref.Malformed):
        ref.split_coalesced(hdr + bytes(50))


def test_walk_coalesced_yields_the_good_packets_before_a_bad_one():
    """walk_coalesced (what split_coalesced and quicoff decrypt are made of):
    each packet's header as it is reached, the trailing padding left out,
    and Malformed only at the packet that does not parse."""
    hdr = ref.build_long_header("handshake", b"\x01", b"\x02", 0, 30)
    good = hdr + bytes(ref.parse_header(hdr, check_end=False).packet_end - len(hdr))
    walked = list(ref.walk_coalesced(good + good + bytes(9)))
    assert [(o, h.packet_type, h.packet_end) for o, h in walked] == [
        (0, "handshake", len(good)),
        (len(good), "handshake", 2 * len(good)),
    ]
    bad = ref.build_long_header("handshake", b"\x01", b"\x02", 0, 100) + bytes(5)
    seen = []
    with pytest.raises(ref.Malformed):
        for off, _ in ref.walk_coalesced(good + bad):
            seen.append(off)
    assert seen == [0]
