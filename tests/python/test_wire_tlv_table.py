# SPDX-License-Identifier: Apache-2.0
"""The TLV registry is written once, in include/quicoff/wire_tlvs.h (the C
library is built from it); every other copy is held against it here, so that
none can drift: the Python codec (``quicoff.wire``: ``TLV`` and the TLVs each
message accepts), the Scapy layer (``quicoff.scapy_layers``: the TLV names and
the widths ``qo_tlv`` gives integers), the cffi cdef (the enum's names), and
the registry table of docs/protocol.md §5.1 (type, name, length, messages).
The widths are also checked on the bytes: every TLV that quicoff.wire and the
C library encode has a length its kind allows.
"""

import importlib.util
import os
import re

import pytest

from quicoff import wire

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TABLE = os.path.join(ROOT, "include", "quicoff", "wire_tlvs.h")
PROTOCOL_MD = os.path.join(ROOT, "docs", "protocol.md")
#: the cffi build script: a build-time file, not installed with the package
FFI_BUILD = os.path.join(ROOT, "python", "quicoff", "_ffi_build.py")

#: lengths a value of each kind may have (None: any multiple of 8)
KIND_LENGTHS = {
    "U8": {1},
    "U32": {4},
    "U64": {8},
    "CID": set(range(21)),
    "ADDR": {7, 19},
    "KEY": {16, 32},
    "IV": {12},
    "SECRET": {32, 48},
    "ENCAP": {30, 54},
    "STATS": None,
    "TEXT": set(range(256)),
}
#: how docs/protocol.md writes each kind's length
KIND_DOC = {
    "U8": "1",
    "U32": "4",
    "U64": "8",
    "CID": "0..20",
    "ADDR": "7 or 19",
    "KEY": "16 or 32",
    "IV": "12",
    "SECRET": "32 or 48",
    "ENCAP": "30 or 54",
    "STATS": "8·n",
    "TEXT": "0..255",
}


def registry():
    """{name: (type, critical, kind, {messages})} from the C table."""
    rows = {}
    with open(TABLE) as f:
        for line in f:
            m = re.match(r"\s*X\((\w+),\s*(0x[0-9A-Fa-f]+),\s*(\w+),\s*(\w+),\s*([^)]*)\)", line)
            if m:
                name, typ, crit, kind, msgs = m.groups()
                assert name not in rows, "%s twice in the registry" % name
                rows[name] = (
                    int(typ, 16),
                    crit == "CRITICAL",
                    kind,
                    {x.strip().replace("QUICOFF_WIRE_IN_", "").lower() for x in msgs.split("|")},
                )
    return rows


REG = registry()


def test_registry_parses_and_is_sane():
    assert len(REG) >= 27 and "SUITE" in REG and "MTU" in REG
    types = [t for t, _, _, _ in REG.values()]
    assert len(set(types)) == len(types), "a type number is used twice"
    for name, (typ, crit, kind, msgs) in REG.items():
        assert kind in KIND_LENGTHS, (name, kind)
        assert crit == bool(typ & 0x8000), name
        assert msgs <= {"add", "update", "ack", "stats", "event"}, (name, msgs)


def test_python_codec_matches_registry():
    have = {k: v for k, v in vars(wire.TLV).items() if k.isupper() and k != "CRITICAL"}
    assert have == {n: r[0] for n, r in REG.items()}
    assert wire.TLV.CRITICAL == 0x8000
    for message in ("add", "update", "remove", "query", "ack", "stats", "event"):
        want = {r[0] for r in REG.values() if message in r[3]}
        assert wire._ALLOWED[message] == want, message


def test_scapy_layer_matches_registry():
    scapy_layers = pytest.importorskip("quicoff.scapy_layers")
    assert scapy_layers._QO_TLVS == {r[0]: n for n, r in REG.items()}
    widths = {"U8": 1, "U32": 4, "U64": 8}
    for name, (typ, _, kind, _) in REG.items():
        if kind in widths:
            assert len(scapy_layers.qo_tlv(name, 1).value) == widths[kind], name


def _cdef():
    spec = importlib.util.spec_from_file_location("quicoff_ffi_build", FFI_BUILD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CDEF


def test_cdef_names_every_registered_tlv():
    body = re.search(r"enum quicoff_wire_tlv \{(.*?)\};", _cdef(), flags=re.S).group(1)
    names = set(re.findall(r"QUICOFF_WIRE_T_(\w+)", body)) - {"CRITICAL"}
    assert names == set(REG)
    lib = pytest.importorskip("quicoff._quicoff").lib
    for name, (typ, _, _, _) in REG.items():
        assert getattr(lib, "QUICOFF_WIRE_T_" + name) == typ, name


def test_protocol_md_registry_matches():
    text = open(PROTOCOL_MD, encoding="utf-8").read()
    section = text[text.index("### 5.1 Registry") : text.index("### 5.2")]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (0x[0-9A-F]{4}) \| (\w+) \| ([^|]+) \|[^|]*\| ([^|]+) \|", line)
        if m:
            typ, name, length, used = m.groups()
            used = {u.split("(")[0].strip().lower() for u in used.split(",")}
            rows[name] = (int(typ, 16), length.strip(), used)
    assert rows == {n: (r[0], KIND_DOC[r[2]], r[3]) for n, r in REG.items()}


def _tlvs(payload):
    """(type, length) of every TLV after a v1 signaling header."""
    n = int.from_bytes(payload[14:16], "big")
    p, out = payload[16 : 16 + n], []
    while p:
        t, ln = int.from_bytes(p[:2], "big"), int.from_bytes(p[2:4], "big")
        out.append((t, ln))
        p = p[4 + ln :]
    return out


def _every_tlv_messages():
    enc4 = wire.Encap(src_ip="10.0.0.1", dst_ip="10.0.0.2", src_port=1, dst_port=2)
    enc6 = wire.Encap(src_ip="::1", dst_ip="::2", src_port=1, dst_port=2, vlan=5)
    return [
        wire.Add(
            suite="aes-256-gcm",
            dcid=bytes(20),
            local_addr=("10.0.0.1", 443),
            key=bytes(32),
            iv=bytes(12),
            hp=bytes(32),
            next_key=bytes(32),
            next_iv=bytes(12),
            encap=enc6,
            grease_quic_bit=False,
        ),
        wire.Add(suite="aes-128-gcm", local_addr=("::1", 443), secret=bytes(32), encap=enc4),
        wire.Add(suite="aes-256-gcm", secret=bytes(48)),
        wire.Update(
            key_generation=1,
            key=bytes(16),
            iv=bytes(12),
            roll_generation=1,
            largest_pn=5,
            fail_action="pass",
            usage_threshold=9,
            encap=enc4,
        ),
        wire.Update(key_generation=1, secret=bytes(48)),
        wire.Ack(detail="x" * 255),
        wire.Stats(conn={}, table={}, detail=""),
        wire.Event(
            code="too_big",
            count=1,
            pn=2,
            key_generation=3,
            level="handshake",
            dcid=bytes(8),
            local_addr=("10.0.0.1", 1),
            remote_addr=("::2", 2),
            detail="d",
            mtu=1500,
        ),
    ]


def test_encoded_tlvs_have_the_registered_widths():
    by_type = {r[0]: (n, r[2], r[3]) for n, r in REG.items()}
    q = pytest.importorskip("quicoff._quicoff")
    ffi, lib = q.ffi, q.lib
    seen = set()
    for msg in _every_tlv_messages():
        raw = msg.encode()
        for t, ln in _tlvs(raw):
            name, kind, msgs = by_type[t]
            assert msg.kind in msgs, (msg.kind, name)
            ok = KIND_LENGTHS[kind]
            assert (ln % 8 == 0) if ok is None else (ln in ok), (msg.kind, name, ln)
            seen.add(name)
        # both decoders accept it (test_wire.py holds their results against each other)
        wire.decode(raw)
        m = ffi.new("struct quicoff_wire_msg *")
        assert lib.quicoff_wire_decode_payload(wire.ETHERTYPE_SIGNAL, raw, len(raw), m) == 0, (
            msg.kind
        )
        lib.quicoff_wire_msg_clear(m)
    assert seen == set(REG), "not exercised: %s" % sorted(set(REG) - seen)
