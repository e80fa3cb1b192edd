# SPDX-License-Identifier: Apache-2.0
"""API behaviour of the cffi bindings (quicoff.Engine and the key-schedule helpers).

Vectors: RFC 9001 Appendix A (A.1 keys, A.2 client Initial, A.3 server
Initial, A.5 ChaCha20-Poly1305 short header), RFC 9000 A.2/A.3 (packet
numbers).  The differential property tests live elsewhere.
"""

import os
import re
import threading

import pytest

import quicoff

try:
    from quicoff._quicoff import ffi, lib
except ImportError as exc:  # pragma: no cover - the build is broken
    pytest.fail("quicoff._quicoff does not import: %s" % exc, pytrace=False)

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "quicoff", "quicoff.h")

H = bytes.fromhex
DCID = H("8394c8f03e515708")

CLIENT_SECRET = H("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea")
SERVER_SECRET = H("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b")
CLIENT_KEYS = (
    H("1f369613dd76d5467730efcbe3b1a22d"),
    H("fa044b2f42a3fd3b46fb255c"),
    H("9f50449e04a0e810283a1e9933adedd2"),
)
SERVER_KEYS = (
    H("cf3a5331653c364c88f0f379b6067e37"),
    H("0ac1493ca1905853b0bba03e"),
    H("c206b8d9b9f0f37644430b490eeaa314"),
)

# RFC 9001 A.2: client Initial, PN 2 in 4 bytes, CRYPTO frame + PADDING to 1162 bytes.
A2_HEADER = H("c300000001088394c8f03e5157080000449e00000002")
A2_PAYLOAD = H(
    "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868"
    "04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578"
    "616d706c652e636f6dff01000100000a00080006001d00170018001000070005"
    "04616c706e000500050100000000003300260024001d00209370b2c9caa47fba"
    "baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400"
    "0d0010000e0403050306030203080408050806002d00020101001c0002400100"
    "3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000"
    "75300901100f088394c8f03e51570806048000ffff"
) + bytes(917)
A2_PACKET = H(
    "c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11"
    "d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f399"
    "1c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c"
    "8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df6212"
    "30c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5"
    "457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c208"
    "4dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec"
    "4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3"
    "485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db"
    "059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c"
    "7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f8"
    "9937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556"
    "be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c74"
    "68449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663a"
    "c69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00"
    "f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632"
    "291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe58964"
    "25c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd"
    "14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ff"
    "ef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198"
    "e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009dd"
    "c324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73"
    "203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77f"
    "cb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450e"
    "fc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade"
    "a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e724047"
    "90a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2"
    "162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f4"
    "40591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca0"
    "6948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e"
    "8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0"
    "be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f09400"
    "54da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab"
    "760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9"
    "f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4"
    "056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd4684064"
    "7e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241"
    "e221af44860018ab0856972e194cd934"
)

# RFC 9001 A.3: server Initial (zero-length DCID, SCID f067a5502a4262b5), PN 1.
A3_HEADER = H("c1000000010008f067a5502a4262b50040750001")
A3_PAYLOAD = H(
    "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
    "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
    "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00"
    "020304"
)
A3_PACKET = H(
    "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a"
    "5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3"
    "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84"
    "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4"
    "2158407dd074ee"
)

# RFC 9001 A.5: ChaCha20-Poly1305 short header, zero-length DCID, PN 654360564 in 3 bytes.
A5_SECRET = H("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b")
A5_KEY = H("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8")
A5_IV = H("e0459b3474bdd0e44a41c144")
A5_HP = H("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4")
A5_KU = H("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9")
A5_PN = 654360564
A5_HEADER = H("4200bff4")
A5_PAYLOAD = H("01")
A5_PACKET = H("4cfe4189655e5cd55c41f69080575d7999c25a5bfb")

ADDR = ("192.0.2.1", 443)


def short_header(dcid, pn, pn_len=2, key_phase=0):
    first = 0x40 | (key_phase << 2) | (pn_len - 1)
    return bytes([first]) + dcid + (pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")


def varint2(v):
    assert v < 0x4000
    return bytes([0x40 | (v >> 8), v & 0xFF])


def long_header(ptype, dcid, scid, pn, payload_len, pn_len=2):
    """Initial (ptype 0, empty token) or Handshake (ptype 2) header, QUIC v1."""
    first = 0xC0 | (ptype << 4) | (pn_len - 1)
    h = bytes([first]) + (1).to_bytes(4, "big") + bytes([len(dcid)]) + dcid
    h += bytes([len(scid)]) + scid
    if ptype == 0:
        h += b"\x00"
    h += varint2(pn_len + payload_len + 16)
    return h + (pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")


def keys_for(suite, seed):
    n = quicoff.suite_key_len(suite)
    return quicoff.PacketKeys(
        bytes((seed + i) & 0xFF for i in range(n)),
        bytes((seed * 3 + i) & 0xFF for i in range(12)),
        bytes((seed * 7 + i) & 0xFF for i in range(n)),
    )


@pytest.fixture
def engine():
    with quicoff.Engine(local_cid_len=8) as e:
        yield e


# ---------------------------------------------------------------------------
# module level


def test_constants():
    assert quicoff.SUITES == ("aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305")
    assert quicoff.LEVELS == ("1rtt", "initial", "0rtt", "handshake")
    assert quicoff.STATUS_NAMES[0] == "ok"
    assert quicoff.STATUS_NAMES[lib.QUICOFF_AUTH_FAILED] == "auth_failed"
    assert quicoff.STATUS_NAMES[lib.QUICOFF_UNKNOWN_CONNECTION] == "unknown_connection"
    assert quicoff.status_name(lib.QUICOFF_USAGE_LIMIT_REACHED) == "usage_limit_reached"
    assert quicoff.PN_NONE == 2**64 - 1
    assert [quicoff.suite_key_len(s) for s in quicoff.SUITES] == [16, 32, 16, 32]
    assert [quicoff.suite_secret_len(s) for s in quicoff.SUITES] == [32, 48, 32, 32]


def _header_text():
    with open(HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def test_cdef_covers_header():
    """Every function, struct field and constant of quicoff.h is in the cdef."""
    text = _header_text()
    inline = set(re.findall(r"static\s+inline\s+[\w\s\*]*?\b(quicoff_\w+)\s*\(", text))
    # a type before "(" is a function-pointer typedef's return type, not a function
    funcs = {f for f in re.findall(r"\b(quicoff_\w+)\s*\(", text) if not f.endswith("_t")} - inline
    assert "quicoff_protect_burst" in funcs and "quicoff_conn_add" in funcs
    missing = sorted(f for f in funcs if not hasattr(lib, f))
    assert not missing, "functions missing from the cdef: %s" % missing

    consts = set(re.findall(r"#define\s+(QUICOFF_\w+)\s+\S", text))
    for body in re.findall(r"enum\s+\w*\s*\{(.*?)\}", text, flags=re.S):
        consts |= set(re.findall(r"\b(QUICOFF_\w+)\b", body))
    consts.discard("QUICOFF_QUICOFF_H")
    assert "QUICOFF_UPDATE_ROLL" in consts and "QUICOFF_MAX_CID_LEN" in consts
    missing = sorted(c for c in consts if not hasattr(lib, c))
    assert not missing, "constants missing from the cdef: %s" % missing

    for name, body in re.findall(r"struct\s+(quicoff_\w+)\s*\{(.*?)\};", text, flags=re.S):
        fields = set()
        for decl in body.split(";"):
            decl = re.sub(r"\[[^\]]*\]", "", decl).strip()
            if not decl:
                continue
            head, *rest = decl.split(",")
            fields.add(re.findall(r"\w+", head)[-1])
            fields.update(r.strip().lstrip("*").strip() for r in rest)
        have = {f for f, _ in ffi.typeof("struct " + name).fields}
        assert fields == have, "struct %s: header %s, cdef %s" % (
            name,
            sorted(fields),
            sorted(have),
        )


def test_derive_packet_keys_rfc9001_a1():
    c = quicoff.derive_packet_keys("aes-128-gcm", CLIENT_SECRET)
    s = quicoff.derive_packet_keys("aes-128-gcm", SERVER_SECRET)
    assert (c.key, c.iv, c.hp) == CLIENT_KEYS
    assert (s.key, s.iv, s.hp) == SERVER_KEYS
    assert isinstance(c.key, bytes)


def test_initial_secrets_and_keys_rfc9001_a1():
    assert quicoff.initial_secrets(DCID) == (CLIENT_SECRET, SERVER_SECRET)
    c, s = quicoff.initial_keys(DCID)
    assert tuple(c) == CLIENT_KEYS
    assert tuple(s) == SERVER_KEYS
    # QUIC v2 uses another salt and other labels (RFC 9369): different keys.
    c2, _ = quicoff.initial_keys(DCID, version=2)
    assert c2.key != c.key and len(c2.key) == 16


def test_derive_chacha20_rfc9001_a5():
    k = quicoff.derive_packet_keys("chacha20-poly1305", A5_SECRET)
    assert (k.key, k.iv, k.hp) == (A5_KEY, A5_IV, A5_HP)
    assert quicoff.derive_next_secret("chacha20-poly1305", A5_SECRET) == A5_KU


def test_derive_key_lengths():
    secret48 = bytes(range(48))
    k = quicoff.derive_packet_keys("aes-256-gcm", secret48)
    assert (len(k.key), len(k.iv), len(k.hp)) == (32, 12, 32)
    assert len(quicoff.derive_next_secret("aes-256-gcm", secret48)) == 48
    k = quicoff.derive_packet_keys("aes-128-ccm", CLIENT_SECRET)
    assert (len(k.key), len(k.iv), len(k.hp)) == (16, 12, 16)


def test_unknown_suite_is_value_error():
    with pytest.raises(ValueError):
        quicoff.derive_packet_keys("aes-512-gcm", CLIENT_SECRET)
    with pytest.raises(ValueError):
        quicoff.suite_key_len("rot13")
    with quicoff.Engine() as e:
        with pytest.raises(ValueError):
            e.add_connection("rx", "nope", DCID, secret=CLIENT_SECRET)


def test_pn_helpers_rfc9000():
    assert quicoff.pn_decode(0xA82F30EA, 0x9B32, 16) == 0xA82F9B32  # RFC 9000 A.3
    assert quicoff.pn_decode(None, 0x01, 8) == 1
    assert quicoff.pn_decode(A5_PN - 1, 0x00BFF4, 24) == A5_PN
    assert quicoff.pn_encode_len(0xAC5C02, 0xABE8B3) == 2  # RFC 9000 A.2
    assert quicoff.pn_encode_len(0xACE8FE, 0xABE8B3) == 3
    assert quicoff.pn_encode_len(0) == 1


# ---------------------------------------------------------------------------
# Engine with the RFC vectors


def test_engine_backend_and_repr(engine):
    assert isinstance(engine.backend, str) and engine.backend
    assert engine.backend in repr(engine)


def test_unknown_backend_raises():
    with pytest.raises(quicoff.QuicoffError) as ei:
        quicoff.Engine(backend="no-such-backend")
    assert ei.value.status in ("backend_unavailable", "invalid_argument")


def test_rfc9001_a2_client_initial_rx(engine):
    h = engine.add_connection("rx", "aes-128-gcm", DCID, secret=CLIENT_SECRET, level="initial")
    assert engine.find_connection("initial", DCID) == h
    assert engine.find_connection("handshake", DCID) is None
    res = engine.unprotect(A2_PACKET)
    assert len(res) == 1
    r = res[0]
    assert r.status == "ok" and r.ok
    assert r.pn == 2 and r.pn_len == 4
    assert r.level == "initial" and r.long_header
    assert r.header == A2_HEADER
    assert r.payload == A2_PAYLOAD
    assert r.packet == A2_HEADER + A2_PAYLOAD
    assert r.connection == h
    assert (r.offset, r.end) == (0, len(A2_PACKET))
    assert engine.last_result is r


def test_rfc9001_a2_client_initial_rx_raw_keys(engine):
    engine.add_connection("rx", "aes-128-gcm", DCID, keys=CLIENT_KEYS, level="initial")
    (r,) = engine.unprotect(A2_PACKET)
    assert r.ok and r.payload == A2_PAYLOAD


def test_rfc9001_a2_client_initial_tx(engine):
    h = engine.add_connection("tx", "aes-128-gcm", DCID, secret=CLIENT_SECRET, level="initial")
    out = engine.protect(h, A2_HEADER, A2_PAYLOAD, 2)
    assert out == A2_PACKET
    assert engine.last_result.status == "ok"


def test_rfc9001_a3_server_initial_both_ways():
    # The client receives the server's Initial: DCID is the client's (empty) SCID.
    with quicoff.Engine(local_cid_len=0) as e:
        tx = e.add_connection("tx", "aes-128-gcm", b"", keys=SERVER_KEYS, level="initial")
        assert e.protect(tx, A3_HEADER, A3_PAYLOAD, 1) == A3_PACKET
        e.add_connection(
            "rx", "aes-128-gcm", b"", keys=SERVER_KEYS, level="initial", local_addr=ADDR
        )
        (r,) = e.unprotect(A3_PACKET, local_addr=ADDR)
        assert r.ok and r.pn == 1 and r.pn_len == 2
        assert (r.header, r.payload) == (A3_HEADER, A3_PAYLOAD)


def test_rfc9001_a5_chacha20_short_header():
    with quicoff.Engine(local_cid_len=0) as e:
        tx = e.add_connection("tx", "chacha20-poly1305", b"", secret=A5_SECRET)
        assert e.protect(tx, A5_HEADER, A5_PAYLOAD, A5_PN) == A5_PACKET
        rx = e.add_connection(
            "rx", "chacha20-poly1305", b"", secret=A5_SECRET, local_addr=ADDR, largest_pn=A5_PN - 1
        )
        assert e.find_connection("1rtt", b"", local_addr=ADDR) == rx
        assert e.find_connection("1rtt", b"", local_addr=("192.0.2.2", 443)) is None
        (r,) = e.unprotect(A5_PACKET, local_addr=ADDR)
        assert r.status == "ok"
        assert (r.pn, r.pn_len, r.key_phase, r.level) == (A5_PN, 3, 0, "1rtt")
        assert (r.header, r.payload) == (A5_HEADER, A5_PAYLOAD)
        assert not r.long_header and r.connection == rx


def test_ipv6_local_addr():
    addr = ("2001:db8::1", 4433)
    with quicoff.Engine(local_cid_len=0) as e:
        k = keys_for("aes-128-gcm", 5)
        tx = e.add_connection("tx", "aes-128-gcm", b"", keys=k)
        rx = e.add_connection("rx", "aes-128-gcm", b"", keys=k, local_addr=addr)
        assert e.find_connection("1rtt", b"", local_addr=addr) == rx
        assert e.find_connection("1rtt", b"", local_addr=("2001:db8::1", 4434)) is None
        pkt = e.protect(tx, short_header(b"", 7), bytes(30), 7)
        (r,) = e.unprotect(pkt, local_addr=addr)
        assert r.ok and r.payload == bytes(30)


def test_caller_bytes_not_modified(engine):
    engine.add_connection("rx", "aes-128-gcm", DCID, secret=CLIENT_SECRET, level="initial")
    data = bytearray(A2_PACKET)
    (r,) = engine.unprotect(data)
    assert r.ok
    assert bytes(data) == A2_PACKET
    header, payload = bytearray(A2_HEADER), bytearray(A2_PAYLOAD)
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, secret=CLIENT_SECRET, level="initial")
    engine.protect(tx, header, payload, 2)
    assert bytes(header) == A2_HEADER and bytes(payload) == A2_PAYLOAD


# ---------------------------------------------------------------------------
# round trips and the reference model


@pytest.mark.parametrize("suite", quicoff.SUITES)
def test_roundtrip_all_suites(engine, suite):
    k = keys_for(suite, 11)
    dcid = bytes(range(1, 9))
    tx = engine.add_connection("tx", suite, dcid, keys=k)
    rx = engine.add_connection("rx", suite, dcid, keys=k)
    for pn in (0, 1, 2, 300):
        hdr = short_header(dcid, pn)
        payload = bytes([pn & 0xFF]) * 40
        pkt = engine.protect(tx, hdr, payload, pn)
        assert len(pkt) == len(hdr) + len(payload) + 16
        assert pkt[len(hdr) : -16] != payload  # encrypted
        (r,) = engine.unprotect(pkt)
        assert r.ok, r
        assert (r.pn, r.header, r.payload, r.connection) == (pn, hdr, payload, rx)


@pytest.mark.parametrize("suite", quicoff.SUITES)
@pytest.mark.parametrize(
    "layout,path_id", [("rfc9001", None), ("multipath", 3), ("multipath-path-id-le", 3)]
)
def test_matches_reference_model(suite, layout, path_id):
    ref = pytest.importorskip("quicoff.ref")
    secret = bytes(range(quicoff.suite_secret_len(suite)))
    keys = ref.derive_packet_keys(suite, secret)
    k2 = quicoff.derive_packet_keys(suite, secret)
    assert (k2.key, k2.iv, k2.hp) == (keys.key, keys.iv, keys.hp)
    dcid = H("0011223344556677")
    with quicoff.Engine(local_cid_len=8) as e:
        tx = e.add_connection(
            "tx", suite, dcid, secret=secret, path_id=path_id, nonce_layout=layout
        )
        e.add_connection("rx", suite, dcid, keys=k2, path_id=path_id, nonce_layout=layout)
        for pn in (0, 5, 70000):
            hdr = ref.build_short_header(dcid, pn)
            payload = os.urandom(33)
            want = ref.protect(suite, keys, hdr, payload, pn, path_id=path_id, nonce_layout=layout)
            assert e.protect(tx, hdr, payload, pn) == want
            (r,) = e.unprotect(want)
            assert r.ok and r.payload == payload and r.pn == pn


def test_multipath_path_id_le_layout():
    """The byte-reversed path ID layout is "multipath-path-id-le"; the three
    layouts are named after what they are and nothing else is accepted (its
    earlier name, after the document it came from, has no alias in 0.x)."""
    k = keys_for("aes-128-gcm", 3)
    hdr, payload = short_header(DCID, 9), bytes(20)
    assert quicoff.NONCE_LAYOUTS == ("rfc9001", "multipath", "multipath-path-id-le")
    with quicoff.Engine() as e:
        out = {
            name: e.protect(
                e.add_connection(
                    "tx", "aes-128-gcm", DCID, keys=k, path_id=0x01020304, nonce_layout=name
                ),
                hdr,
                payload,
                9,
            )
            for name in ("multipath-path-id-le", "multipath")
        }
        with pytest.raises(ValueError):
            e.add_connection(
                "tx", "aes-128-gcm", DCID, keys=k, path_id=1, nonce_layout="no-such-layout"
            )
    assert out["multipath-path-id-le"] != out["multipath"]


def test_multipath_default_layout_differs_from_rfc9001():
    k = keys_for("aes-128-gcm", 3)
    hdr, payload = short_header(DCID, 9), bytes(20)
    with quicoff.Engine() as e:
        a = e.protect(e.add_connection("tx", "aes-128-gcm", DCID, keys=k), hdr, payload, 9)
        b = e.protect(
            e.add_connection("tx", "aes-128-gcm", DCID, keys=k, path_id=1), hdr, payload, 9
        )
        c = e.protect(
            e.add_connection("tx", "aes-128-gcm", DCID, keys=k, path_id=0), hdr, payload, 9
        )
    assert a != b  # path 1: a different nonce
    assert a == c  # multipath path 0 equals RFC 9001


# ---------------------------------------------------------------------------
# coalescing and bursts


def test_coalesced_initial_and_handshake(engine):
    scid = H("aabbccdd")
    ki, kh = keys_for("aes-128-gcm", 1), keys_for("aes-128-gcm", 2)
    ti = engine.add_connection("tx", "aes-128-gcm", DCID, keys=ki, level="initial")
    th = engine.add_connection("tx", "aes-128-gcm", DCID, keys=kh, level="handshake")
    ri = engine.add_connection("rx", "aes-128-gcm", DCID, keys=ki, level="initial")
    rh = engine.add_connection("rx", "aes-128-gcm", DCID, keys=kh, level="handshake")
    p1 = engine.protect(ti, long_header(0, DCID, scid, 0, 50), b"\x01" * 50, 0)
    p2 = engine.protect(th, long_header(2, DCID, scid, 0, 60), b"\x02" * 60, 0)
    res = engine.unprotect(p1 + p2 + bytes(30))  # trailing padding is skipped
    assert [r.status for r in res] == ["ok", "ok"]
    assert [r.level for r in res] == ["initial", "handshake"]
    assert [r.connection for r in res] == [ri, rh]
    assert [(r.offset, r.end) for r in res] == [(0, len(p1)), (len(p1), len(p1) + len(p2))]
    assert res[0].payload == b"\x01" * 50 and res[1].payload == b"\x02" * 60


def test_protect_and_unprotect_bursts_mixing_connections(engine):
    d1, d2 = H("0101010101010101"), H("0202020202020202")
    k1, k2 = keys_for("aes-128-gcm", 21), keys_for("chacha20-poly1305", 22)
    t1 = engine.add_connection("tx", "aes-128-gcm", d1, keys=k1)
    t2 = engine.add_connection("tx", "chacha20-poly1305", d2, keys=k2)
    r1 = engine.add_connection("rx", "aes-128-gcm", d1, keys=k1)
    r2 = engine.add_connection("rx", "chacha20-poly1305", d2, keys=k2)
    items = [
        (
            t1 if i % 2 == 0 else t2,
            short_header(d1 if i % 2 == 0 else d2, i),
            bytes([i]) * (20 + i),
            i,
        )
        for i in range(100)
    ]  # > one preallocated burst
    prot = engine.protect_burst(items)
    assert len(prot) == 100 and all(r.ok for r in prot)
    assert prot[3].packet == engine.protect_burst([items[3]])[0].packet
    res = engine.unprotect_burst([r.packet for r in prot])
    assert [r.connection for r in res] == [r1 if i % 2 == 0 else r2 for i in range(100)]
    assert [r.payload for r in res] == [it[2] for it in items]
    assert [r.pn for r in res] == list(range(100))
    # a burst with one bad packet: the others still go through
    bad = bytearray(prot[1].packet)
    bad[-1] ^= 1
    res = engine.unprotect_burst([prot[0].packet, bytes(bad), prot[2].packet])
    assert [r.status for r in res] == ["ok", "auth_failed", "ok"]


# ---------------------------------------------------------------------------
# failures, fail actions, errors


def test_auth_failure_drop_and_pass(engine):
    k = keys_for("aes-128-gcm", 9)
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k)
    rx = engine.add_connection("rx", "aes-128-gcm", DCID, keys=k)
    pkt = engine.protect(tx, short_header(DCID, 1), bytes(32), 1)
    bad = bytearray(pkt)
    bad[-3] ^= 0x40  # in the tag: header protection (sample) stays intact
    bad = bytes(bad)
    (r,) = engine.unprotect(bad)
    assert r.status == "auth_failed" and not r.ok
    assert r.header is None and r.payload is None and r.packet is None
    assert not r.pass_failed
    assert engine.connection_stats(rx)["auth_failures"] == 1

    engine.update_connection(rx, fail_action="pass")
    (r,) = engine.unprotect(bad)
    assert r.status == "auth_failed" and r.pass_failed
    assert r.packet == bad  # as received
    assert engine.connection_stats(rx)["auth_failures"] == 2
    (r,) = engine.unprotect(pkt)  # the good one still decrypts
    assert r.ok and r.payload == bytes(32)


def test_unknown_connection_and_malformed(engine):
    (r,) = engine.unprotect(short_header(DCID, 1) + bytes(40))
    assert r.status == "unknown_connection" and r.connection is None and r.header is None
    res = engine.unprotect(b"\x40\x01")
    assert len(res) == 1 and res[0].status in ("malformed", "unknown_connection")
    res = engine.unprotect(b"")
    assert res == [] or res[0].status == "malformed"
    st = engine.stats()
    assert st["unknown_connection"] >= 1


def test_remove_twice_and_stale_handle(engine):
    k = keys_for("aes-128-gcm", 4)
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k)
    engine.remove_connection(tx)
    with pytest.raises(quicoff.QuicoffError) as ei:
        engine.remove_connection(tx)
    assert ei.value.status == "unknown_connection"
    assert ei.value.code == lib.QUICOFF_UNKNOWN_CONNECTION
    with pytest.raises(quicoff.QuicoffError) as ei:
        engine.protect(tx, short_header(DCID, 1), bytes(20), 1)
    assert ei.value.status == "unknown_connection"
    assert ei.value.result is engine.last_result
    with pytest.raises(quicoff.QuicoffError) as ei:
        engine.connection_stats(tx)
    assert ei.value.status == "unknown_connection"
    # The slot's next tenant is not reachable through the old handle.
    tx2 = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k)
    assert tx2 != tx
    with pytest.raises(quicoff.QuicoffError):
        engine.update_connection(tx, fail_action="pass")


def test_duplicate_rx_entry(engine):
    k = keys_for("aes-128-gcm", 4)
    engine.add_connection("rx", "aes-128-gcm", DCID, keys=k)
    with pytest.raises(quicoff.QuicoffError) as ei:
        engine.add_connection("rx", "aes-128-gcm", DCID, keys=k)
    assert ei.value.status == "exists"


def test_argument_errors(engine):
    k = keys_for("aes-128-gcm", 4)
    with pytest.raises(ValueError):
        engine.add_connection("sideways", "aes-128-gcm", DCID, keys=k)
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-128-gcm", DCID)  # neither keys nor secret
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-128-gcm", DCID, keys=k, secret=CLIENT_SECRET)
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-256-gcm", DCID, keys=k)  # 16-byte key
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-128-gcm", DCID, keys=(k.key, k.iv[:8], k.hp))
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-128-gcm", bytes(21), keys=k)
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-128-gcm", DCID, keys=k, level="2rtt")
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-128-gcm", DCID, keys=k, nonce_layout="weird")
    with pytest.raises(ValueError):
        engine.add_connection("rx", "aes-128-gcm", DCID, keys=k, fail_action="explode")
    h = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k)
    with pytest.raises(ValueError):
        engine.update_connection(h, keys=k)  # key_generation missing
    with pytest.raises(ValueError):
        quicoff.Engine(local_cid_len=21)
    assert engine.stats()["connections"] == 1  # nothing half-added


# ---------------------------------------------------------------------------
# key updates and limits


def test_key_update_rx_follows_tx(engine):
    secret = bytes(range(32))
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, secret=secret)
    rx = engine.add_connection("rx", "aes-128-gcm", DCID, secret=secret)
    p0 = engine.protect(tx, short_header(DCID, 0, key_phase=0), bytes(24), 0)
    (r,) = engine.unprotect(p0)
    assert r.ok and r.key_phase == 0 and not r.key_updated

    # next generation for TX, from the "quic ku" secret, then roll to it
    nxt = quicoff.derive_next_secret("aes-128-gcm", secret)
    engine.update_connection(tx, secret=nxt, key_generation=1)
    engine.update_connection(tx, roll=True)
    p1 = engine.protect(tx, short_header(DCID, 1, key_phase=1), bytes(24), 1)
    # the receiver derived generation 1 itself (secret given at add)
    (r,) = engine.unprotect(p1)
    assert r.status == "ok" and r.key_phase == 1 and r.key_updated
    assert engine.connection_stats(rx)["key_generation"] == 1
    assert engine.connection_stats(rx)["key_updates"] == 1
    # same as keys derived in Python from the next secret; the header
    # protection key is not updated (RFC 9001 §6)
    k0 = quicoff.derive_packet_keys("aes-128-gcm", secret)
    k1 = quicoff.derive_packet_keys("aes-128-gcm", nxt)
    with quicoff.Engine() as e2:
        t2 = e2.add_connection(
            "tx", "aes-128-gcm", DCID, keys=(k1.key, k1.iv, k0.hp), key_generation=1
        )
        assert e2.protect(t2, short_header(DCID, 1, key_phase=1), bytes(24), 1) == p1


def test_no_next_keys_without_derive_next(engine):
    secret = bytes(range(32))
    k1 = quicoff.derive_packet_keys(
        "aes-128-gcm", quicoff.derive_next_secret("aes-128-gcm", secret)
    )
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k1, key_generation=1)
    engine.add_connection("rx", "aes-128-gcm", DCID, secret=secret, derive_next=False)
    pkt = engine.protect(tx, short_header(DCID, 5, key_phase=1), bytes(24), 5)
    (r,) = engine.unprotect(pkt)
    assert r.status == "key_phase_unavailable"


def test_usage_threshold(engine):
    k = keys_for("aes-128-gcm", 8)
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k, usage_threshold=3)
    statuses = []
    for pn in range(6):
        engine.protect(tx, short_header(DCID, pn), bytes(20), pn)  # never raises
        statuses.append(engine.last_result.status)
    assert statuses[0] == "ok"
    assert "usage_limit_reached" in statuses
    assert engine.stats()["usage_limit_reached"] >= 1


# ---------------------------------------------------------------------------
# stats, lifetime, threads


def test_stats_dicts(engine):
    want = {f for f, _ in ffi.typeof("struct quicoff_table_stats").fields}
    st = engine.stats()
    assert set(st) == want
    assert {"rx_packets", "tx_packets", "auth_failures", "connections"} <= set(st)
    assert st["connections"] == 0

    k = keys_for("aes-128-gcm", 6)
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k)
    rx = engine.add_connection("rx", "aes-128-gcm", DCID, keys=k)
    for pn in range(3):
        engine.unprotect(engine.protect(tx, short_header(DCID, pn), bytes(25), pn))
    st = engine.stats()
    assert st["connections"] == 2
    assert (st["tx_packets"], st["rx_packets"]) == (3, 3)
    assert (st["tx_bytes"], st["rx_bytes"]) == (75, 75)

    cs = engine.connection_stats(rx)
    assert set(cs) == {f for f, _ in ffi.typeof("struct quicoff_conn_stats").fields}
    assert (cs["packets"], cs["bytes"], cs["largest_pn"]) == (3, 75, 2)
    assert engine.connection_stats(tx)["packets"] == 3

    engine.remove_connection(rx)
    assert engine.stats()["connections"] == 1
    assert engine.reclaim() >= 0


def test_largest_pn_reset(engine):
    k = keys_for("aes-128-gcm", 12)
    tx = engine.add_connection("tx", "aes-128-gcm", DCID, keys=k)
    rx = engine.add_connection("rx", "aes-128-gcm", DCID, keys=k, largest_pn=0x1FFF0)
    # 1-byte PN 0x05 decodes next to the largest: 0x20005
    pkt = engine.protect(tx, short_header(DCID, 0x20005, pn_len=1), bytes(24), 0x20005)
    (r,) = engine.unprotect(pkt)
    assert r.ok and r.pn == 0x20005
    engine.update_connection(rx, largest_pn=quicoff.PN_NONE)
    assert engine.connection_stats(rx)["largest_pn"] == quicoff.PN_NONE


def test_close_and_context_manager():
    e = quicoff.Engine()
    e.add_connection("tx", "aes-128-gcm", DCID, keys=keys_for("aes-128-gcm", 1))
    e.close()
    e.close()  # idempotent
    assert e.closed
    with pytest.raises(ValueError):
        e.stats()
    with pytest.raises(ValueError):
        e.unprotect(A2_PACKET)
    with quicoff.Engine() as e2:
        assert not e2.closed
    assert e2.closed
    e3 = quicoff.Engine()
    del e3  # __del__ frees it


def test_threads_share_an_engine(engine):
    k = keys_for("aes-256-gcm", 13)
    tx = engine.add_connection("tx", "aes-256-gcm", DCID, keys=k)
    engine.add_connection("rx", "aes-256-gcm", DCID, keys=k)
    errors = []

    def work(base):
        try:
            for i in range(200):
                pn = base + i
                pkt = engine.protect(tx, short_header(DCID, pn, pn_len=4), bytes(30), pn)
                (r,) = engine.unprotect(pkt)
                if not r.ok or r.payload != bytes(30):
                    errors.append((pn, r.status))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(1000 * t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert engine.stats()["rx_packets"] == 800
