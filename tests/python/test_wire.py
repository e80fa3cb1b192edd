# SPDX-License-Identifier: Apache-2.0
"""The host <-> offload protocol from Python (docs/protocol.md).

Three implementations of one format are held against each other:

* ``quicoff.wire`` (plain Python) and the C library (``quicoff_wire_*``
  through cffi): for the same message, the same bytes; each decodes the
  other's bytes to the same message; on truncated, mutated and random input
  they return the same status;
* the Scapy layers (``quicoff.scapy_layers`` section 3): the compat
  format's classes (the DPU prototype's own, verbatim) build frames the C
  decoder reads field for field, and the prototype's ten crafted connections
  run through quicoff (signaling -> table entries, data_pkt -> protect -> unprotect);
  the v1 layers build and dissect the same bytes as ``quicoff.wire``.
"""

import ipaddress
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quicoff import wire

try:
    from quicoff._quicoff import ffi, lib
except ImportError as exc:  # pragma: no cover
    pytest.fail("quicoff._quicoff does not import: %s" % exc, pytrace=False)

from scapy.layers.l2 import Dot1Q, Ether

from quicoff.scapy_layers import (
    QOData,
    QOTrain,
    QOSignal,
    QOTLV,
    data_pkt,
    qo_tlv,
    quic,
    signaling_host,
    signaling_peer,
)

H = bytes.fromhex
MAC_A, MAC_B = "02:00:00:00:00:a1", "02:00:00:00:00:b2"


# ---------------------------------------------------------------------------
# C side through cffi


def c_status(code):
    return ffi.string(lib.quicoff_status_name(code)).decode()


def c_decode(payload, ethertype=wire.ETHERTYPE_SIGNAL):
    """-> (status name, struct quicoff_wire_msg *, keepalive)."""
    buf = ffi.new("uint8_t[]", bytes(payload) or b"\0")
    m = ffi.new("struct quicoff_wire_msg *")
    st_ = lib.quicoff_wire_decode_payload(ethertype, buf, len(payload), m)
    return c_status(st_), m, buf


def c_decode_frame(raw):
    buf = ffi.new("uint8_t[]", bytes(raw) or b"\0")
    m = ffi.new("struct quicoff_wire_msg *")
    st_ = lib.quicoff_wire_decode(buf, len(raw), m)
    return c_status(st_), m, buf


def c_encode(m, frame=False):
    out = ffi.new("uint8_t[]", 4096)
    n = ffi.new("size_t *")
    if frame:
        s = lib.quicoff_wire_encode(m, out, 4096, n)
    else:
        s = lib.quicoff_wire_encode_payload(m, out, 4096, n, ffi.NULL)
    assert c_status(s) == "ok"
    return ffi.buffer(out, n[0])[:]


def _b(arr, n):
    return bytes(ffi.buffer(arr, n))


def _mac(arr):
    return ":".join("%02x" % b for b in _b(arr, 6))


def _addr(a):
    if a.family == 0:
        return None
    n = 4 if a.family == 4 else 16
    return str(ipaddress.ip_address(_b(a.ip, n))), a.port


def _encap(e):
    n = 4 if e.family == 4 else 16
    return wire.Encap(
        dst_mac=_mac(e.dst_mac),
        src_mac=_mac(e.src_mac),
        src_ip=str(ipaddress.ip_address(_b(e.src_ip, n))),
        dst_ip=str(ipaddress.ip_address(_b(e.dst_ip, n))),
        src_port=e.src_port,
        dst_port=e.dst_port,
        vlan=e.vlan_tci if e.has_vlan else None,
        ttl=e.ttl,
        tos=e.tos,
    )


def _detail(m):
    return _b(m.detail, m.detail_len).decode("utf-8", "replace") if m.detail_len else None


def c_to_py(m):
    """A decoded C message as the equivalent quicoff.wire object."""
    k = wire._KIND_NAMES[m.kind]
    d = wire.DIRECTIONS[m.direction] if m.direction < 2 else "none"
    if k == "add":
        c = m.u.add.cfg
        klen = wire.suite_key_len(c.suite)
        a = wire.Add(
            request_id=m.request_id,
            index=m.index,
            direction=d,
            suite=wire.SUITES[c.suite],
            level=wire.LEVELS[c.level],
            quic_version=c.version,
            dcid=_b(c.dcid, c.dcid_len),
            local_addr=_addr(c.local_addr),
            path_id=c.path_id,
            nonce_layout=wire.NONCE_LAYOUTS[c.nonce_layout],
            fail_action=wire.FAIL_ACTIONS[c.fail_action],
            largest_pn=c.largest_pn,
            usage_threshold=c.usage_threshold,
            key_generation=c.key_generation,
            replace=bool(m.flags & 1),
        )
        if c.secret_len:
            a.secret = _b(m.u.add.secret, c.secret_len)
        else:
            a.key, a.iv, a.hp = _b(c.keys.key, klen), _b(c.keys.iv, 12), _b(c.keys.hp, klen)
        if c.has_next_keys:
            a.next_key, a.next_iv = _b(c.next_keys.key, klen), _b(c.next_keys.iv, 12)
        if m.u.add.has_encap:
            a.encap = _encap(m.u.add.encap)
        a.grease_quic_bit = bool(c.grease_quic_bit)
        return a
    if k == "update":
        w = m.u.update
        u = w.upd
        x = wire.Update(request_id=m.request_id, index=m.index, direction=d)
        if u.what & lib.QUICOFF_UPDATE_KEYS:
            x.key_generation = u.key_generation
            if u.secret_len:
                x.secret = _b(w.secret, u.secret_len)
            else:
                x.key, x.iv = _b(u.keys.key, w.key_len), _b(u.keys.iv, 12)
        if u.what & lib.QUICOFF_UPDATE_ROLL:
            x.roll_generation = w.roll_generation
        x.drop_old = bool(u.what & lib.QUICOFF_UPDATE_DROP_OLD)
        if u.what & lib.QUICOFF_UPDATE_LARGEST_PN:
            x.largest_pn = u.largest_pn
        if u.what & lib.QUICOFF_UPDATE_FAIL_ACTION:
            x.fail_action = wire.FAIL_ACTIONS[u.fail_action]
        if u.what & lib.QUICOFF_UPDATE_THRESHOLD:
            x.usage_threshold = u.usage_threshold
        if w.has_encap:
            x.encap = _encap(w.encap)
        return x
    if k == "remove":
        return wire.Remove(request_id=m.request_id, index=m.index, direction=d)
    if k == "query":
        return wire.Query(
            request_id=m.request_id,
            index=m.index,
            direction=d,
            conn=bool(m.flags & 1),
            table=bool(m.flags & 2),
        )
    if k == "ack":
        return wire.Ack(
            request_id=m.request_id,
            index=m.index,
            direction=d,
            acked=wire._KIND_NAMES.get(m.acked_kind, m.acked_kind),
            status=wire._status_name(m.status),
            detail=_detail(m),
        )
    if k == "stats":
        s = m.u.stats
        return wire.Stats(
            request_id=m.request_id,
            index=m.index,
            direction=d,
            status=wire._status_name(m.status),
            conn={f: getattr(s.conn, f) for f in wire.CONN_STATS_FIELDS} if s.has_conn else None,
            table={f: getattr(s.table, f) for f in wire.TABLE_STATS_FIELDS}
            if s.has_table
            else None,
            detail=_detail(m),
            query_conn=bool(m.flags & 1),
            query_table=bool(m.flags & 2),
        )
    if k == "event":
        e = m.u.event
        return wire.Event(
            code=wire._EVENT_NAMES.get(e.code, e.code),
            seq=m.request_id,
            index=m.index,
            direction=d,
            status=wire._status_name(m.status),
            count=e.count if e.has_count else None,
            pn=e.pn if e.has_pn else None,
            key_generation=e.key_generation if e.has_key_generation else None,
            level=wire.LEVELS[e.level] if e.has_level else None,
            dcid=_b(e.dcid, e.dcid_len) if e.has_dcid else None,
            local_addr=_addr(e.local_addr),
            remote_addr=_addr(e.remote_addr),
            detail=_detail(m),
            mtu=e.mtu if e.has_mtu else None,
        )
    if k == "data_train":
        x = m.u.data
        body = _b(x.payload, x.payload_len)
        seg = x.segment_size
        return wire.DataTrain(
            index=x.index,
            pn=x.pn,
            packets=[body[i * seg : (i + 1) * seg] for i in range(x.count)],
            segment_size=seg,
            flags=x.flags,
        )
    if k in ("data_to_offload", "data_to_host", "compat_data"):
        x = m.u.data
        pkt = _b(x.payload, x.payload_len) if x.payload_len else b""
        if k == "data_to_offload":
            return wire.DataToOffload(index=x.index, pn=x.pn, packet=pkt, flags=x.flags)
        if k == "compat_data":
            return wire.CompatData(index=x.index, full_pn=x.pn, packet=pkt)
        return wire.DataToHost(
            index=x.index,
            pn=x.pn,
            packet=pkt,
            status=wire._status_name(x.status),
            level=wire.LEVELS[x.level],
            key_phase=x.key_phase,
            flags=x.flags,
        )
    c = m.u.add.cfg
    klen = wire.suite_key_len(c.suite)
    common = dict(
        index=m.index,
        suite=wire.SUITES[c.suite],
        hp_key=_b(c.keys.hp, klen),
        quic_key=_b(c.keys.key, klen),
        iv=_b(c.keys.iv, 12),
        path_id=c.path_id,
    )
    if k == "compat_peer":
        return wire.CompatPeer(
            dcid=_b(c.dcid, 8),
            full_pn=c.largest_pn,
            right_padded=m.u.add.compat_right_padded,
            **common,
        )
    return wire.CompatHost(
        dcid_len=c.dcid_len,
        right_padded=m.u.add.compat_right_padded,
        dcid_len_bits=m.u.add.compat_dcid_len_bits,
        **common,
    )


def _fill(arr, data):
    ffi.memmove(arr, bytes(data), len(data))


def _c_addr(dst, addr):
    ip, port = addr
    fam, packed = wire._ip(ip)
    dst.family = fam
    _fill(dst.ip, packed)
    dst.port = port


def _c_encap(dst, e):
    _fill(dst.dst_mac, wire._mac(e.dst_mac))
    _fill(dst.src_mac, wire._mac(e.src_mac))
    dst.has_vlan = e.vlan is not None
    dst.vlan_tci = e.vlan or 0
    fam, s = wire._ip(e.src_ip)
    _, d = wire._ip(e.dst_ip)
    dst.family = fam
    _fill(dst.src_ip, s)
    _fill(dst.dst_ip, d)
    dst.src_port, dst.dst_port, dst.ttl, dst.tos = e.src_port, e.dst_port, e.ttl, e.tos


def py_to_c(x):
    """A quicoff.wire object as a C struct quicoff_wire_msg (+ keepalive)."""
    m = ffi.new("struct quicoff_wire_msg *")
    keep = [m]
    lib.quicoff_wire_msg_init(m, wire.KINDS[x.kind])
    if hasattr(x, "direction") and x.kind not in ("compat_peer", "compat_host"):
        m.direction = wire._direction_byte(x.kind, x.direction)
    for f in ("request_id", "index"):
        if hasattr(x, f):
            setattr(m, f, getattr(x, f))
    detail = getattr(x, "detail", None)
    if detail:
        b = ffi.new("uint8_t[]", detail.encode())
        keep.append(b)
        m.detail, m.detail_len = b, len(detail.encode())
    k = x.kind
    if k == "add":
        c = m.u.add.cfg
        c.direction = m.direction
        c.suite = wire._enum(x.suite, wire.SUITES, "suite")
        c.level = wire._enum(x.level, wire.LEVELS, "level")
        c.version = x.quic_version
        _fill(c.dcid, x.dcid)
        c.dcid_len = len(x.dcid)
        if x.local_addr:
            _c_addr(c.local_addr, x.local_addr)
        c.path_id = x.path_id
        c.nonce_layout = wire._enum(x.nonce_layout, wire.NONCE_LAYOUTS, "n")
        c.fail_action = wire._enum(x.fail_action, wire.FAIL_ACTIONS, "f")
        c.largest_pn, c.usage_threshold = x.largest_pn, x.usage_threshold
        c.key_generation = x.key_generation
        c.grease_quic_bit = x.grease_quic_bit
        if x.secret is not None:
            _fill(m.u.add.secret, x.secret)
            c.secret_len = len(x.secret)
        else:
            _fill(c.keys.key, x.key)
            _fill(c.keys.iv, x.iv)
            _fill(c.keys.hp, x.hp)
        if x.next_key is not None:
            c.has_next_keys = True
            _fill(c.next_keys.key, x.next_key)
            _fill(c.next_keys.iv, x.next_iv)
        if x.encap:
            m.u.add.has_encap = True
            _c_encap(m.u.add.encap, x.encap)
        m.flags = 1 if x.replace else 0
    elif k == "update":
        w = m.u.update
        u = w.upd
        if x.key_generation is not None:
            u.what |= lib.QUICOFF_UPDATE_KEYS
            u.key_generation = x.key_generation
            if x.secret is not None:
                _fill(w.secret, x.secret)
                u.secret_len = len(x.secret)
            else:
                _fill(u.keys.key, x.key)
                _fill(u.keys.iv, x.iv)
                w.key_len = len(x.key)
        if x.roll_generation is not None:
            u.what |= lib.QUICOFF_UPDATE_ROLL
            w.roll_generation = x.roll_generation
        if x.drop_old:
            u.what |= lib.QUICOFF_UPDATE_DROP_OLD
        if x.largest_pn is not None:
            u.what |= lib.QUICOFF_UPDATE_LARGEST_PN
            u.largest_pn = x.largest_pn
        if x.fail_action is not None:
            u.what |= lib.QUICOFF_UPDATE_FAIL_ACTION
            u.fail_action = wire._enum(x.fail_action, wire.FAIL_ACTIONS, "f")
        if x.usage_threshold is not None:
            u.what |= lib.QUICOFF_UPDATE_THRESHOLD
            u.usage_threshold = x.usage_threshold
        if x.encap:
            w.has_encap = True
            _c_encap(w.encap, x.encap)
    elif k == "remove":
        pass
    elif k == "query":
        m.flags = (1 if x.conn else 0) | (2 if x.table else 0)
    elif k == "ack":
        m.acked_kind = wire.KINDS[x.acked] if isinstance(x.acked, str) else x.acked
        m.status = wire._status_code(x.status)
    elif k == "stats":
        m.status = wire._status_code(x.status)
        m.flags = (1 if x.query_conn else 0) | (2 if x.query_table else 0)
        if x.conn is not None:
            m.u.stats.has_conn = True
            for f in wire.CONN_STATS_FIELDS:
                setattr(m.u.stats.conn, f, x.conn.get(f, 0))
        if x.table is not None:
            m.u.stats.has_table = True
            for f in wire.TABLE_STATS_FIELDS:
                setattr(m.u.stats.table, f, x.table.get(f, 0))
    elif k == "event":
        e = m.u.event
        m.request_id = x.seq
        m.status = wire._status_code(x.status)
        e.code = wire.EVENTS[x.code] if isinstance(x.code, str) else x.code
        for f in ("count", "pn", "key_generation", "mtu"):
            if getattr(x, f) is not None:
                setattr(e, "has_" + f, True)
                setattr(e, f, getattr(x, f))
        if x.level is not None:
            e.has_level, e.level = True, wire._enum(x.level, wire.LEVELS, "level")
        if x.dcid is not None:
            e.has_dcid, e.dcid_len = True, len(x.dcid)
            _fill(e.dcid, x.dcid)
        if x.local_addr:
            _c_addr(e.local_addr, x.local_addr)
        if x.remote_addr:
            _c_addr(e.remote_addr, x.remote_addr)
    elif k == "data_train":
        d = m.u.data
        d.index, d.pn, d.flags = x.index, x.pn, x.flags
        body = b"".join(bytes(p) for p in x.packets)
        pkt = ffi.new("uint8_t[]", body or b"\0")
        keep.append(pkt)
        d.payload, d.payload_len = pkt, len(body)
        d.segment_size, d.count = x.seg(), len(x.packets)
    elif k in ("data_to_offload", "data_to_host", "compat_data"):
        d = m.u.data
        d.index = x.index
        d.pn = x.full_pn if k == "compat_data" else x.pn
        pkt = ffi.new("uint8_t[]", bytes(x.packet) or b"\0")
        keep.append(pkt)
        d.payload, d.payload_len = pkt, len(x.packet)
        if k != "compat_data":
            d.flags = x.flags
        if k == "data_to_host":
            d.status = wire._status_code(x.status)
            d.level = wire._enum(x.level, wire.LEVELS, "level")
            d.key_phase = x.key_phase
    else:  # compat signaling
        c = m.u.add.cfg
        c.suite = wire._enum(x.suite, wire.SUITES, "suite")
        _fill(c.keys.hp, x.hp_key)
        _fill(c.keys.key, x.quic_key)
        _fill(c.keys.iv, x.iv)
        c.path_id = x.path_id
        if k == "compat_peer":
            _fill(c.dcid, x.dcid)
            c.largest_pn = x.full_pn
        else:
            c.dcid_len = x.dcid_len
    return m, keep


# ---------------------------------------------------------------------------
# sample messages

K16, K32 = bytes(range(16)), bytes(range(32, 64))
IV = bytes(range(100, 112))
ENC4 = wire.Encap(
    dst_mac=MAC_B,
    src_mac=MAC_A,
    src_ip="10.0.0.1",
    dst_ip="10.0.0.2",
    src_port=50000,
    dst_port=443,
    vlan=0x2064,
    ttl=61,
    tos=0x10,
)
ENC6 = wire.Encap(src_ip="2001:db8::1", dst_ip="2001:db8::2", src_port=1, dst_port=2)

SAMPLES = [
    wire.Add(
        request_id=0x01020304,
        index=7,
        direction="tx",
        suite="aes-128-gcm",
        dcid=bytes(8),
        path_id=3,
        nonce_layout="multipath",
        usage_threshold=1000,
        key=K16,
        iv=IV,
        hp=K16[::-1],
        encap=ENC4,
        replace=True,
    ),
    wire.Add(
        request_id=0xFFFFFFFE,
        index=0xABCDEF,
        direction="rx",
        suite="chacha20-poly1305",
        quic_version=0x6B3343CF,
        local_addr=("2001:db8::5", 4433),
        fail_action="pass",
        largest_pn=123456789,
        key_generation=4,
        key=K32,
        iv=IV,
        hp=K32[::-1],
        next_key=bytes(32),
        next_iv=bytes(12),
    ),
    wire.Add(
        request_id=9,
        index=0,
        direction="rx",
        suite="aes-256-gcm",
        level="handshake",
        dcid=bytes(range(20)),
        secret=bytes(range(48)),
        encap=ENC6,
    ),
    wire.Update(request_id=10, index=7, key_generation=1, key=K16, iv=IV),
    wire.Update(
        request_id=11,
        index=8,
        direction="rx",
        roll_generation=2,
        drop_old=True,
        largest_pn=wire.PN_NONE,
        fail_action="pass",
        usage_threshold=77,
        encap=ENC4,
    ),
    wire.Update(request_id=12, index=9, key_generation=5, secret=bytes(range(32))),
    wire.Remove(request_id=0x01020304, index=7),
    wire.Query(request_id=13, index=7, direction="rx", conn=True, table=True),
    wire.Ack(request_id=0x01020304, index=7, acked="remove"),
    wire.Ack(
        request_id=14,
        index=7,
        direction="rx",
        acked="add",
        status="exists",
        detail="entry 7 already present",
    ),
    wire.Stats(
        request_id=13,
        index=7,
        direction="rx",
        query_conn=True,
        query_table=True,
        conn={f: (1 << 60) + i for i, f in enumerate(wire.CONN_STATS_FIELDS)},
        table={f: (2 << 60) + 3 * i for i, f in enumerate(wire.TABLE_STATS_FIELDS)},
    ),
    wire.Stats(
        request_id=15, status="unknown_connection", query_table=True, table={"rx_packets": 5}
    ),
    wire.Event(code="auth_failed", seq=1, index=7, status="auth_failed", count=17, pn=wire.PN_MAX),
    wire.Event(
        code="unknown_connection",
        seq=2,
        status="unknown_connection",
        level="initial",
        dcid=bytes(8),
        local_addr=("192.0.2.1", 443),
        remote_addr=("2001:db8::9", 1234),
        key_generation=3,
        count=99,
        detail="x",
    ),
    wire.Event(
        code="too_big",
        seq=3,
        index=7,
        direction="tx",
        status="no_space",
        count=4,
        pn=1234,
        mtu=1500,
    ),
    wire.DataToOffload(index=7, pn=42, packet=bytes(40)),
    wire.DataTrain(
        index=3,
        pn=1000,
        packets=[bytes([i]) * 1000 for i in range(3)] + [b"last"],
        segment_size=1000,
    ),
    wire.DataToHost(
        index=0x01000002,
        pn=wire.PN_MAX,
        packet=bytes(range(256)) + bytes(44),
        status="usage_limit_reached",
        level="handshake",
        key_phase=1,
        flags=9,
    ),
    wire.CompatPeer(
        index=0x0102,
        suite="aes-128-ccm",
        hp_key=K16,
        quic_key=K16[::-1],
        iv=IV,
        path_id=0x01020304,
        dcid=bytes(range(8)),
        full_pn=1000,
    ),
    wire.CompatHost(
        index=0xFFFF,
        suite="aes-256-gcm",
        hp_key=K32,
        quic_key=K32[::-1],
        iv=IV,
        path_id=1,
        dcid_len=20,
    ),
    wire.CompatData(index=7, full_pn=42, packet=bytes(128)),
]


def _et(msg):
    return wire.ethertype_of(msg)


# ---------------------------------------------------------------------------


def test_constants_match_c():
    assert wire.ETHERTYPE_SIGNAL == lib.QUICOFF_WIRE_ETHERTYPE_SIGNAL == 0x88B5
    assert wire.ETHERTYPE_DATA == lib.QUICOFF_WIRE_ETHERTYPE_DATA == 0x88B6
    assert wire.MAGIC == lib.QUICOFF_WIRE_MAGIC and wire.VERSION == lib.QUICOFF_WIRE_VERSION
    assert wire.PN_MAX == lib.QUICOFF_WIRE_PN_MAX and wire.INDEX_NONE == lib.QUICOFF_WIRE_INDEX_NONE
    assert wire.DIRECTION_NONE == lib.QUICOFF_WIRE_DIRECTION_NONE
    assert wire.STATUSES == tuple(c_status(i) for i in range(lib.QUICOFF_STATUS_COUNT))
    for name, code in wire.KINDS.items():
        assert ffi.string(lib.quicoff_wire_kind_name(code)).decode() == name
        assert getattr(lib, "QUICOFF_WIRE_" + name.upper()) == code
    for name, code in wire.EVENTS.items():
        assert ffi.string(lib.quicoff_wire_event_name(code)).decode() == name
    for name, value in vars(wire.TLV).items():
        if name.isupper():
            assert getattr(lib, "QUICOFF_WIRE_T_" + name) == value
    assert wire.SUITES == tuple(
        ffi.string(lib.quicoff_suite_name(i)).decode() for i in range(lib.QUICOFF_SUITE_COUNT)
    )
    # the stats blocks follow the C structs' field order
    assert wire.CONN_STATS_FIELDS == tuple(
        f for f, _ in ffi.typeof("struct quicoff_conn_stats").fields
    )
    table_fields = tuple(f for f, _ in ffi.typeof("struct quicoff_table_stats").fields)
    assert wire.TABLE_STATS_FIELDS == table_fields
    for name, bit in wire.RESULT_FLAGS.items():
        assert getattr(lib, "QUICOFF_FLAG_" + name.upper()) == bit


@pytest.mark.parametrize("msg", SAMPLES, ids=[m.kind for m in SAMPLES])
def test_c_and_python_agree(msg):
    py = msg.encode()
    cm, keep = py_to_c(msg)
    assert c_encode(cm) == py, "C-encoded == Python-encoded"
    status, dm, _buf = c_decode(py, _et(msg))
    assert status == "ok"
    assert c_to_py(dm) == msg, "C decodes the Python bytes to the same message"
    assert wire.decode(py, _et(msg)) == msg, "Python decodes its own bytes"
    lib.quicoff_wire_msg_clear(dm)
    # frame level, with and without a VLAN tag
    for vlan in (None, 0x0123):
        raw = wire.frame(msg, dst=MAC_B, src=MAC_A, vlan=vlan)
        cm.has_eth = True
        _fill(cm.eth.dst, wire._mac(MAC_B))
        _fill(cm.eth.src, wire._mac(MAC_A))
        cm.eth.has_vlan, cm.eth.vlan_tci = vlan is not None, vlan or 0
        assert c_encode(cm, frame=True) == raw
        status, dm, _buf = c_decode_frame(raw)
        assert status == "ok" and c_to_py(dm) == msg
        assert dm.eth.has_vlan == (vlan is not None) and dm.eth.vlan_tci == (vlan or 0)
        eth, back = wire.decode_frame(raw)
        assert back == msg and eth.vlan == vlan and eth.src == MAC_A and eth.dst == MAC_B


def test_python_truncations_match_c():
    for msg in SAMPLES:
        b = msg.encode()
        stop = wire.COMPAT_DATA_HDR_LEN if msg.kind == "compat_data" else len(b)
        for cut in range(stop):
            cst, cm, _ = c_decode(b[:cut], _et(msg))
            with pytest.raises(wire.WireError) as ei:
                wire.decode(b[:cut], _et(msg))
            assert ei.value.status == cst != "ok", (msg.kind, cut)
            assert (ei.value.header is not None) == bool(cm.hdr_valid), (msg.kind, cut)
            if cm.hdr_valid:
                assert ei.value.header["request_id"] == cm.request_id


def _same_outcome(payload, et=wire.ETHERTYPE_SIGNAL):
    cst, cm, _ = c_decode(payload, et)
    try:
        py = wire.decode(payload, et)
        pst = "ok"
    except wire.WireError as e:
        py, pst = None, e.status
    assert pst == cst, (payload.hex(), pst, cst)
    if cst == "ok":
        assert c_to_py(cm) == py, payload.hex()
        assert wire.decode(py.encode(), et) == py
    lib.quicoff_wire_msg_clear(cm)
    return cst


def test_differential_mutations():
    rng = random.Random(4)
    outcomes = {}
    for msg in SAMPLES:
        b = bytearray(msg.encode())
        for bit in range(0, 8 * len(b), 3):
            b[bit // 8] ^= 1 << (bit % 8)
            s = _same_outcome(bytes(b), _et(msg))
            outcomes[s] = outcomes.get(s, 0) + 1
            b[bit // 8] ^= 1 << (bit % 8)
        for _ in range(150):
            c = bytearray(b)
            for _ in range(rng.randint(1, 3)):
                c[rng.randrange(len(c))] = rng.randrange(256)
            s = _same_outcome(bytes(c)[: len(c) - rng.randrange(3)], _et(msg))
            outcomes[s] = outcomes.get(s, 0) + 1
    # the mutations must reach every outcome, not just one
    assert {"ok", "malformed", "unsupported", "invalid_argument"} <= set(outcomes), outcomes


def test_differential_random_tlvs():
    rng = random.Random(5)
    seen = set()
    for i in range(6000):
        typ = rng.choice([1, 2, 3, 4, 0x81, 0x82, 0x83, 0x10, 0x90, 0x05])
        tlvs = b""
        for _ in range(rng.randint(0, 6)):
            t = rng.choice([rng.randrange(0x36), rng.randrange(0x10000)])
            n = rng.choice(
                [0, 1, 4, 7, 8, 12, 16, 19, 20, 30, 32, 48, 54, 72, 112, rng.randrange(60)]
            )
            tlvs += (
                t.to_bytes(2, "big")
                + n.to_bytes(2, "big")
                + bytes(rng.choice([0, rng.randrange(256)]) for _ in range(n))
            )
        hdr = (
            bytes([0x51, 1, typ, rng.randrange(4)])
            + rng.randbytes(8)
            + bytes([rng.randrange(3), rng.randrange(14)])
            + len(tlvs).to_bytes(2, "big")
        )
        seen.add(_same_outcome(hdr + tlvs + rng.randbytes(rng.choice([0, 0, 5]))))
    assert "ok" in seen and "malformed" in seen


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hypothesis_add_update(data):
    suite = data.draw(st.sampled_from(wire.SUITES))
    klen = wire.suite_key_len(suite)
    use_secret = data.draw(st.booleans())
    key = lambda n: st.binary(min_size=n, max_size=n)  # noqa: E731
    addr = st.one_of(
        st.none(),
        st.tuples(
            st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6)).map(str), st.integers(0, 0xFFFF)
        ),
    )
    encap = st.one_of(
        st.none(),
        st.builds(
            lambda v6, s, d, sp, dp, vlan, ttl, tos, sm, dm: wire.Encap(
                src_ip=str(ipaddress.ip_address(s[:16] if v6 else s[:4])),
                dst_ip=str(ipaddress.ip_address(d[:16] if v6 else d[:4])),
                src_port=sp,
                dst_port=dp,
                vlan=vlan,
                ttl=ttl,
                tos=tos,
                src_mac=wire._mac_str(sm),
                dst_mac=wire._mac_str(dm),
            ),
            st.booleans(),
            key(16),
            key(16),
            st.integers(0, 0xFFFF),
            st.integers(0, 0xFFFF),
            st.one_of(st.none(), st.integers(0, 0xFFFF)),
            st.integers(0, 255),
            st.integers(0, 255),
            key(6),
            key(6),
        ),
    )
    nxt = data.draw(st.booleans())
    add = wire.Add(
        request_id=data.draw(st.integers(0, 2**32 - 1)),
        index=data.draw(st.integers(0, 2**32 - 1)),
        direction=data.draw(st.sampled_from(wire.DIRECTIONS)),
        suite=suite,
        level=data.draw(st.sampled_from(wire.LEVELS)),
        quic_version=data.draw(st.integers(0, 2**32 - 1)),
        dcid=data.draw(st.binary(max_size=20)),
        local_addr=data.draw(addr),
        path_id=data.draw(st.integers(0, 2**32 - 1)),
        nonce_layout=data.draw(st.sampled_from(wire.NONCE_LAYOUTS)),
        fail_action=data.draw(st.sampled_from(wire.FAIL_ACTIONS)),
        largest_pn=data.draw(st.one_of(st.just(wire.PN_NONE), st.integers(0, wire.PN_MAX))),
        usage_threshold=data.draw(st.integers(0, 2**64 - 1)),
        key_generation=data.draw(st.integers(0, 2**32 - 1)),
        key=None if use_secret else data.draw(key(klen)),
        iv=None if use_secret else data.draw(key(12)),
        hp=None if use_secret else data.draw(key(klen)),
        secret=data.draw(key(wire.suite_secret_len(suite))) if use_secret else None,
        next_key=data.draw(key(klen)) if nxt else None,
        next_iv=data.draw(key(12)) if nxt else None,
        encap=data.draw(encap),
        replace=data.draw(st.booleans()),
        grease_quic_bit=data.draw(st.booleans()),
    )
    upd_keys = data.draw(st.sampled_from(["none", "raw", "secret"]))
    upd = wire.Update(
        request_id=data.draw(st.integers(0, 2**32 - 1)),
        index=data.draw(st.integers(0, 2**32 - 1)),
        direction=data.draw(st.sampled_from(wire.DIRECTIONS)),
        key_generation=None if upd_keys == "none" else data.draw(st.integers(0, 2**32 - 1)),
        key=data.draw(key(data.draw(st.sampled_from([16, 32])))) if upd_keys == "raw" else None,
        iv=data.draw(key(12)) if upd_keys == "raw" else None,
        secret=(
            data.draw(key(data.draw(st.sampled_from([32, 48])))) if upd_keys == "secret" else None
        ),
        roll_generation=data.draw(st.one_of(st.none(), st.integers(0, 2**32 - 1))),
        drop_old=data.draw(st.booleans()),
        largest_pn=data.draw(
            st.one_of(st.none(), st.just(wire.PN_NONE), st.integers(0, wire.PN_MAX))
        ),
        fail_action=data.draw(st.one_of(st.none(), st.sampled_from(wire.FAIL_ACTIONS))),
        usage_threshold=data.draw(st.one_of(st.none(), st.integers(0, 2**64 - 1))),
        encap=data.draw(encap),
    )
    for msg in (add, upd):
        py = msg.encode()
        cm, keep = py_to_c(msg)
        assert c_encode(cm) == py
        status, dm, _ = c_decode(py)
        assert status == "ok" and c_to_py(dm) == msg
        assert wire.decode(py) == msg


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_hypothesis_replies_and_data(data):
    u32 = st.integers(0, 2**32 - 1)
    u64 = st.integers(0, 2**64 - 1)
    status = st.sampled_from(wire.STATUSES)
    msgs = [
        wire.Ack(
            request_id=data.draw(u32),
            index=data.draw(u32),
            direction=data.draw(st.sampled_from(wire.DIRECTIONS)),
            acked=data.draw(st.sampled_from(["add", "update", "remove", "query"])),
            status=data.draw(status),
            detail=data.draw(
                st.one_of(
                    st.none(),
                    st.text(
                        alphabet=st.characters(min_codepoint=32, max_codepoint=126),
                        min_size=1,
                        max_size=255,
                    ),
                )
            ),
        ),
        wire.Stats(
            request_id=data.draw(u32),
            index=data.draw(u32),
            status=data.draw(status),
            conn=data.draw(
                st.one_of(
                    st.none(), st.fixed_dictionaries({f: u64 for f in wire.CONN_STATS_FIELDS})
                )
            ),
            table=data.draw(
                st.one_of(
                    st.none(), st.fixed_dictionaries({f: u64 for f in wire.TABLE_STATS_FIELDS})
                )
            ),
            query_conn=data.draw(st.booleans()),
            query_table=data.draw(st.booleans()),
        ),
        wire.Event(
            code=data.draw(st.sampled_from(sorted(wire.EVENTS))),
            seq=data.draw(u32),
            index=data.draw(u32),
            status=data.draw(status),
            count=data.draw(st.one_of(st.none(), u64)),
            pn=data.draw(st.one_of(st.none(), st.integers(0, wire.PN_MAX))),
            key_generation=data.draw(st.one_of(st.none(), u32)),
            level=data.draw(st.one_of(st.none(), st.sampled_from(wire.LEVELS))),
            dcid=data.draw(st.one_of(st.none(), st.binary(max_size=20))),
        ),
        wire.DataToOffload(
            index=data.draw(u32),
            pn=data.draw(st.integers(0, wire.PN_MAX)),
            packet=data.draw(st.binary(max_size=1500)),
            flags=data.draw(st.integers(0, 255)),
        ),
        wire.DataToHost(
            index=data.draw(u32),
            pn=data.draw(st.integers(0, wire.PN_MAX)),
            packet=data.draw(st.binary(max_size=1500)),
            status=data.draw(status),
            level=data.draw(st.sampled_from(wire.LEVELS)),
            key_phase=data.draw(st.integers(0, 1)),
            flags=data.draw(st.integers(0, 255)),
        ),
        wire.CompatData(
            index=data.draw(st.integers(0, 0xFFFF)),
            full_pn=data.draw(st.integers(0, wire.PN_MAX)),
            packet=data.draw(st.binary(max_size=1500)),
        ),
    ]
    for msg in msgs:
        py = msg.encode()
        cm, keep = py_to_c(msg)
        assert c_encode(cm) == py
        status_, dm, _ = c_decode(py, _et(msg))
        assert status_ == "ok" and c_to_py(dm) == msg
        assert wire.decode(py, _et(msg)) == msg
        if isinstance(msg, (wire.DataToOffload, wire.DataToHost, wire.CompatData)):
            _check_data_hdr_read(py, _et(msg), msg)


def _check_data_hdr_read(py: bytes, ethertype: int, msg):
    """The C fast-path header reader (quicoff_wire_data_hdr_read) on frames
    the Python encoder wrote: same index, PN and packet bytes."""
    buf = ffi.new("uint8_t[]", py)
    kind = ffi.new("quicoff_wire_kind_t *")
    d = ffi.new("struct quicoff_wire_data *")
    assert lib.quicoff_wire_data_hdr_read(ethertype, buf, len(py), kind, d) == lib.QUICOFF_OK
    assert d.index == msg.index
    assert d.pn == (msg.full_pn if isinstance(msg, wire.CompatData) else msg.pn)
    assert bytes(ffi.buffer(d.payload, d.payload_len)) == msg.packet
    if isinstance(msg, wire.DataToHost):
        assert d.key_phase == msg.key_phase


def test_ack_for_c_and_python():
    for req in SAMPLES[:8]:
        raw = wire.frame(req, dst=MAC_B, src=MAC_A, vlan=5)
        _, cm, _buf = c_decode_frame(raw)
        ack = ffi.new("struct quicoff_wire_msg *")
        if req.kind == "query":
            lib.quicoff_wire_stats_for(cm, lib.QUICOFF_OK, ack)
        else:
            lib.quicoff_wire_ack_for(cm, lib.QUICOFF_EXISTS, ack)
        py = wire.ack_for(req, "ok" if req.kind == "query" else "exists")
        assert c_encode(ack) == py.encode()
        # the C reply goes back to the requester
        assert _mac(ack.eth.dst) == MAC_A and ack.eth.has_vlan and ack.eth.vlan_tci == 5
    # an undecodable request still gets its ACK (header readable)
    bad = bytearray(wire.Remove(request_id=77, index=3).encode())
    bad[1] = 9
    with pytest.raises(wire.WireError) as ei:
        wire.decode(bytes(bad))
    assert ei.value.status == "unsupported"
    a = wire.ack_for(ei.value.header, "unsupported")
    assert (a.request_id, a.index, a.acked, a.status) == (77, 3, "remove", "unsupported")


def test_bad_direction_is_answered_c_and_python():
    """A request whose direction byte is neither tx nor rx is answered
    invalid_argument by an ACK with direction 0xFF ("none"), which both
    decoders accept (an ACK's direction cannot echo the bad byte)."""
    for kind, req in (("add", SAMPLES[0]), ("remove", wire.Remove(request_id=5, index=9))):
        bad = bytearray(req.encode())
        bad[12] = 2
        with pytest.raises(wire.WireError) as ei:
            wire.decode(bytes(bad))
        assert ei.value.status == "invalid_argument"
        py = wire.ack_for(ei.value.header, "invalid_argument")
        assert py.direction == "none" and py.acked == kind
        raw = py.encode()
        assert raw[12] == 0xFF
        back = wire.decode(raw)
        assert isinstance(back, wire.Ack) and back.direction == "none"
        assert back.status == "invalid_argument"
        # C: the same ACK from the same request, byte for byte, and it decodes
        cm = ffi.new("struct quicoff_wire_msg *")
        buf = ffi.from_buffer("uint8_t[]", bytes(bad))
        assert (
            lib.quicoff_wire_decode_payload(wire.ETHERTYPE_SIGNAL, buf, len(bad), cm)
            == lib.QUICOFF_INVALID_ARGUMENT
        )
        ack = ffi.new("struct quicoff_wire_msg *")
        lib.quicoff_wire_ack_for(cm, lib.QUICOFF_INVALID_ARGUMENT, ack)
        assert c_encode(ack) == raw
        assert (
            lib.quicoff_wire_decode_payload(
                wire.ETHERTYPE_SIGNAL, ffi.from_buffer(raw), len(raw), cm
            )
            == lib.QUICOFF_OK
        )
    # "none" is an ACK's only: a request cannot carry it
    with pytest.raises(wire.WireError):
        wire.Remove(request_id=1, index=1, direction="none").encode()


def test_doc_examples():
    assert wire.Remove(request_id=0x01020304, index=7).encode() == H(
        "51 01 03 00 01 02 03 04 00 00 00 07 00 00 00 00"
    )
    assert wire.Ack(request_id=0x01020304, index=7, acked="remove").encode() == H(
        "51 01 81 03 01 02 03 04 00 00 00 07 00 00 00 00"
    )
    assert wire.DataToOffload(index=7, pn=42, packet=bytes(40)).encode()[:20] == H(
        "51 01 10 00 00 00 00 07 00 00 00 00 00 00 00 2a 00 28 00 00"
    )
    assert wire.CompatData(index=7, full_pn=42).encode() == H("00 07 00 00 00 00 00 00 00 2a")


def test_python_rejections():
    ok_add = wire.Add(suite="aes-128-gcm", key=K16, iv=IV, hp=K16)
    ok_add.encode()
    for bad in (
        wire.Add(suite="aes-256-gcm", key=K16, iv=IV, hp=K16),
        wire.Add(suite="aes-128-gcm"),
        wire.Add(suite="nope", key=K16, iv=IV, hp=K16),
        wire.Add(suite="aes-128-gcm", key=K16, iv=IV, hp=K16, dcid=bytes(21)),
        wire.Add(suite="aes-128-gcm", key=K16, iv=IV, hp=K16, secret=bytes(32)),
        wire.Update(key=K16, iv=IV),
        wire.CompatPeer(dcid=bytes(4)),
        wire.CompatHost(index=0x10000),
        wire.DataToOffload(pn=wire.PN_MAX + 1),
    ):
        with pytest.raises(wire.WireError) as ei:
            bad.encode()
        assert ei.value.status == "invalid_argument"


# ---------------------------------------------------------------------------
# the compat format's Scapy classes (the DPU prototype's own)


def compat_signaling(i, algo, peer):
    """What the DPU prototype's test script sends for connection i: keys as
    256-bit *values* (left-padded), as its BitFields take them."""
    klen = 32 if algo in (1, 3) else 16
    hp = bytes((i * 7 + j) & 0xFF for j in range(klen))
    key = bytes((i * 11 + j + 1) & 0xFF for j in range(klen))
    iv = bytes((i * 13 + j + 2) & 0xFF for j in range(12))
    common = dict(
        Index=i,
        Algo=algo,
        Hp_key=int.from_bytes(hp, "big"),
        Quic_key=int.from_bytes(key, "big"),
        IV=int.from_bytes(iv, "big"),
        Path_id=0,
    )
    dcid = 0x1000000000000000 + i
    if peer:
        layer = signaling_peer(DCID=dcid, Full_pn=0, **common)
    else:
        layer = signaling_host(DCID_len=8, **common)
    return Ether(dst=MAC_B, src=MAC_A) / layer, (hp, key, iv, dcid.to_bytes(8, "big"))


def test_compat_classes_verbatim():
    # the fields, widths and defaults the DPU prototype printed
    def desc(cls):
        return [(f.name, f.default, f.size) for f in cls.fields_desc]

    assert desc(signaling_host) == [
        ("Type", 1, 8),
        ("Index", 0, 16),
        ("Algo", 0, 8),
        ("Hp_key", 0, 256),
        ("Quic_key", 0, 256),
        ("IV", 0, 96),
        ("Path_id", 0, 32),
        ("DCID_len", 0, 8),
    ]
    assert desc(signaling_peer) == [
        ("Type", 0, 8),
        ("Index", 0, 16),
        ("Algo", 0, 8),
        ("Hp_key", 0, 256),
        ("Quic_key", 0, 256),
        ("IV", 0, 96),
        ("Path_id", 0, 32),
        ("DCID", 0, 64),
        ("Full_pn", 0, 64),
    ]
    assert desc(data_pkt) == [("Index", 0, 16), ("Full_pn", 0, 64)]
    assert desc(quic) == [
        ("Header_form", 0, 1),
        ("Fixed_bit", 1, 1),
        ("Spin_bit", 0, 1),
        ("Reserved_bits", 0, 2),
        ("Key_phase", 0, 1),
        ("Pn_len", 0, 2),
        ("DCID", 0, 64),
        ("Pn", 0, 16),
    ]
    assert tuple(c().name for c in (signaling_host, signaling_peer, data_pkt, quic)) == (
        "signaling_host",
        "signaling_peer",
        "data_pkt_host",
        "quic",
    )
    # Ether()/... gets the compat format's EtherTypes
    assert bytes(Ether() / signaling_host())[12:14] == H("88b5")
    assert bytes(Ether() / signaling_peer())[12:14] == H("88b5")
    assert bytes(Ether() / data_pkt())[12:14] == H("88b6")
    assert len(signaling_peer()) == 100 and len(signaling_host()) == 85 and len(data_pkt()) == 10


@pytest.mark.parametrize("algo", [0, 1, 2, 3])
def test_compat_signaling_decodes_in_c(algo):
    suite = wire.SUITES[algo]
    klen = wire.suite_key_len(suite)
    for peer in (False, True):
        pkt, (hp, key, iv, dcid) = compat_signaling(3, algo, peer)
        raw = bytes(pkt)
        status, m, _ = c_decode_frame(raw)
        assert status == "ok"
        assert m.kind == (lib.QUICOFF_WIRE_COMPAT_PEER if peer else lib.QUICOFF_WIRE_COMPAT_HOST)
        c = m.u.add.cfg
        assert m.index == 3 and c.suite == algo and m.version == 0
        assert _b(c.keys.hp, klen) == hp and _b(c.keys.key, klen) == key
        assert _b(c.keys.iv, 12) == iv and c.path_id == 0
        assert not m.u.add.compat_right_padded
        if peer:
            assert m.direction == c.direction == lib.QUICOFF_DIR_RX
            assert _b(c.dcid, c.dcid_len) == dcid and c.largest_pn == 0
        else:
            assert m.direction == c.direction == lib.QUICOFF_DIR_TX and c.dcid_len == 8
        assert c.nonce_layout == lib.QUICOFF_NONCE_MULTIPATH_PATH_ID_LE
        # Python's decoder and Scapy's dissector agree
        eth, msg = wire.decode_frame(raw)
        assert msg.hp_key == hp and msg.quic_key == key and msg.iv == iv
        back = Ether(raw)
        assert back.haslayer(signaling_peer if peer else signaling_host)
        assert bytes(back) == raw
        # and C re-encodes the very bytes Scapy built
        m.has_eth = True
        assert c_encode(m, frame=True) == raw
        lib.quicoff_wire_msg_clear(m)


def test_compat_traffic_runs_through():
    """The DPU prototype's test run: ten connections, both directions,
    signaling from the compat classes -> C decode -> quicoff_conn_add; data_pkt/quic frames -> C decode
    -> protect with the TX entry -> unprotect with the peer's RX entry."""
    from quicoff import Engine

    rng = random.Random(7)
    with Engine(local_cid_len=8) as eng:
        tx, rx = {}, {}
        for i in range(10):
            algo = i % 4
            for peer in (False, True):
                pkt, _ = compat_signaling(i, algo, peer)
                status, m, _buf = c_decode_frame(bytes(pkt))
                assert status == "ok"
                h = ffi.new("quicoff_conn_t *")
                assert (
                    c_status(lib.quicoff_conn_add(eng._t(), lib.quicoff_wire_conn_config(m), h))
                    == "ok"
                )
                (rx if peer else tx)[i] = int(h[0])
                lib.quicoff_wire_msg_clear(m)
        for i in range(10):
            for full_pn in (0, 1, 255, 4660):
                payload = rng.randbytes(rng.choice([128, 256, 512, 1024, 1400]))
                frame = (
                    Ether(dst=MAC_B, src=MAC_A)
                    / data_pkt(Index=i, Full_pn=full_pn)
                    / quic(DCID=0x1000000000000000 + i, Pn_len=1, Pn=full_pn & 0xFFFF)
                    / payload
                )
                status, m, _buf = c_decode_frame(bytes(frame))
                assert status == "ok" and m.kind == lib.QUICOFF_WIRE_COMPAT_DATA
                d = m.u.data
                assert d.index == i and d.pn == full_pn
                plain = _b(d.payload, d.payload_len)
                assert plain == bytes(frame[quic])
                header, body = plain[:11], plain[11:]
                protected = eng.protect(tx[d.index], header, body, d.pn)
                (r,) = eng.unprotect(protected)
                assert r.status == "ok" and r.connection == rx[i] and r.pn == full_pn
                assert r.header == header and r.payload == body
                # the frame the offload hands to the host: "the same metadata"
                back = wire.CompatData(index=i, full_pn=r.pn, packet=r.header + r.payload)
                to_host = Ether(wire.frame(back, dst=MAC_A, src=MAC_B))
                assert to_host[data_pkt].Index == i and to_host[data_pkt].Full_pn == full_pn
                assert bytes(to_host[quic]) == plain


def test_compat_defaults_run_through():
    """The compat classes' all-default frames (Algo 0, zero keys, Pn_len 0, Pn 0, Full_pn 0)."""
    from quicoff import Engine

    with Engine(local_cid_len=8) as eng:
        handles = []
        for layer in (signaling_host(DCID_len=8), signaling_peer()):
            status, m, _ = c_decode_frame(bytes(Ether() / layer))
            assert status == "ok"
            h = ffi.new("quicoff_conn_t *")
            assert (
                c_status(lib.quicoff_conn_add(eng._t(), lib.quicoff_wire_conn_config(m), h)) == "ok"
            )
            handles.append(int(h[0]))
        frame = Ether() / data_pkt() / quic() / bytes(128)
        status, m, _ = c_decode_frame(bytes(frame))
        plain = _b(m.u.data.payload, m.u.data.payload_len)
        # Pn_len 0: a 1-byte PN (0x00); the Pn field's second byte starts the payload
        (r,) = eng.unprotect(eng.protect(handles[0], plain[:10], plain[10:], 0))
        assert r.status == "ok" and r.connection == handles[1]
        assert r.header + r.payload == plain


def test_scapy_v1_layers_match_wire():
    for msg in SAMPLES:
        if msg.kind.startswith("compat"):
            continue
        raw = wire.frame(msg, dst=MAC_B, src=MAC_A)
        p = Ether(raw)
        layer = (
            QOTrain
            if msg.kind == "data_train"
            else QOData
            if msg.kind.startswith("data")
            else QOSignal
        )
        assert p.haslayer(layer), msg.kind
        assert bytes(p) == raw
        if layer is QOSignal:
            q = p[QOSignal]
            assert q.type == wire.KINDS[msg.kind]
            assert q.tlv_len == len(raw) - 14 - 16
            # rebuild from the dissected TLVs
            rebuilt = QOSignal(
                type=q.type,
                flags=q.flags,
                request_id=q.request_id,
                index=q.index,
                dir=q.dir,
                status=q.status,
                tlvs=[QOTLV(type=t.type, value=t.value) for t in q.tlvs],
            )
            assert bytes(rebuilt) == raw[14:]
        elif layer is QOTrain:
            q = p[QOTrain]
            assert (q.index, q.pn, q.segment_size, q.count) == (
                msg.index,
                msg.pn,
                msg.seg(),
                len(msg.packets),
            )
        else:
            q = p[QOData]
            assert (q.index, q.pn, q.length) == (msg.index, msg.pn, len(msg.packet))
    # built from scratch with qo_tlv == quicoff.wire
    add = wire.Add(
        request_id=5, index=2, suite="aes-128-gcm", dcid=bytes(8), key=K16, iv=IV, hp=K16
    )
    s = QOSignal(
        type=1,
        request_id=5,
        index=2,
        tlvs=[
            qo_tlv("SUITE", 0),
            qo_tlv("LEVEL", 0),
            qo_tlv("QUIC_VERSION", 1),
            qo_tlv("DCID", bytes(8)),
            qo_tlv("PATH_ID", 0),
            qo_tlv("NONCE_LAYOUT", 0),
            qo_tlv("FAIL_ACTION", 0),
            qo_tlv("LARGEST_PN", wire.PN_NONE),
            qo_tlv("USAGE_THRESHOLD", 0),
            qo_tlv("KEY_GENERATION", 0),
            qo_tlv("PACKET_KEY", K16),
            qo_tlv("IV", IV),
            qo_tlv("HP_KEY", K16),
        ],
    )
    assert bytes(s) == add.encode()
    d = QOData(type=0x90, index=3, pn=9, status=5, level=3, key_phase=1, flags=1) / b"abc"
    assert (
        bytes(d)
        == wire.DataToHost(
            index=3,
            pn=9,
            packet=b"abc",
            status="usage_limit_reached",
            level="handshake",
            key_phase=1,
            flags=1,
        ).encode()
    )
    # Ethernet padding after a short v1 frame is not taken as data
    raw = wire.frame(wire.DataToOffload(index=1, pn=2, packet=b"xy")) + bytes(20)
    p = Ether(raw)
    assert p[QOData].length == 2 and bytes(p[QOData].payload)[:2] == b"xy"
    # VLAN-tagged frames dissect too
    raw = wire.frame(wire.Remove(request_id=1, index=2), vlan=7)
    assert Ether(raw)[Dot1Q].haslayer(QOSignal)


def _scapy_rebuild(raw: bytes):
    """The frame dissected by the Scapy layer and built again by it from the
    dissected field values (not from the bytes): Scapy's own reading."""
    p = Ether(raw)
    for layer in (signaling_peer, signaling_host, data_pkt, QOData, QOTrain, QOSignal):
        if p.haslayer(layer):
            q = p[layer]
            f = {n.name: q.getfieldval(n.name) for n in q.fields_desc}
            if layer is QOSignal:
                f["tlvs"] = [QOTLV(type=x.type, value=bytes(x.value)) for x in q.tlvs]
                f["tlv_len"] = None
            if layer in (QOData, QOTrain):
                f["length"] = None
                return bytes(Ether(dst=p.dst, src=p.src) / layer(**f) / bytes(q.payload))
            if layer is data_pkt:
                return bytes(Ether(dst=p.dst, src=p.src) / data_pkt(**f) / bytes(q.payload))
            return bytes(Ether(dst=p.dst, src=p.src) / layer(**f))
    raise AssertionError("no Scapy layer for %s" % raw.hex())


def test_scapy_reading_decodes_to_the_same_message_every_kind():
    """The independent cross-check, both ways, on every message kind (v1 and
    compat): what quicoff.wire encodes, the Scapy layer (built from the
    protocol's and the prototype's own definitions) dissects and rebuilds
    from its fields to the same bytes, which quicoff.wire and the C library
    decode back to the message."""
    kinds = set()
    for msg in SAMPLES:
        raw = wire.frame(msg, dst=MAC_B, src=MAC_A)
        rebuilt = _scapy_rebuild(raw)
        assert rebuilt == raw, msg.kind
        _, back = wire.decode_frame(rebuilt)
        assert back == msg, msg.kind
        status, m, _keep = c_decode_frame(rebuilt)
        assert status == "ok" and c_to_py(m) == msg, msg.kind
        lib.quicoff_wire_msg_clear(m)
        kinds.add(msg.kind)
    assert kinds == set(wire.KINDS), "kinds without a sample: %s" % (set(wire.KINDS) - kinds)


def test_cdef_covers_wire_header():
    """Every function, #define and enum constant of wire.h is in the cffi cdef."""
    import os
    import re

    path = os.path.join(os.path.dirname(__file__), "..", "..", "include", "quicoff", "wire.h")
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    funcs = set(re.findall(r"\b(quicoff_wire_\w+)\s*\(", text))
    missing = [f for f in funcs if not hasattr(lib, f)]
    assert not missing, missing
    consts = set(re.findall(r"#define\s+(QUICOFF_WIRE_\w+)\s+\S", text))
    for body in re.findall(r"enum\s+\w*\s*\{(.*?)\}", text, flags=re.S):
        # enum quicoff_wire_tlv is generated from the registry (wire_tlvs.h):
        # its names are checked by test_wire_tlv_table.py, not here
        body = re.sub(r"^\s*#.*$|QUICOFF_WIRE_TLVS\(\w+\)", "", body, flags=re.M)
        consts |= set(re.findall(r"\b(QUICOFF_WIRE_\w+)\b", body))
    consts.discard("QUICOFF_WIRE_H")
    missing = [c for c in consts if not hasattr(lib, c)]
    assert not missing, missing
    for name, body in re.findall(r"struct\s+(quicoff_wire_\w+)\s*\{(.*?)\};", text, flags=re.S):
        declared = {f for f, _ in ffi.typeof("struct " + name).fields}
        if "union" in body:
            body = re.sub(r"union\s+\w*\s*\{.*?\}\s*(\w+)", r"\1", body, flags=re.S)
        for line in body.split(";"):
            line = re.sub(r"\[.*?\]", "", line).strip()
            if not line:
                continue
            for part in line.split(","):
                field_ = re.findall(r"\w+", part)[-1]
                assert field_ in declared, (name, field_)


# ---------------------------------------------------------------------------
# GREASE_QUIC_BIT (0x0014, RFC 9287): 1 byte, absent = 1

GREASE_ADD = dict(
    request_id=3,
    index=4,
    direction="rx",
    suite="aes-128-gcm",
    dcid=H("0102030405060708"),
    key=bytes(16),
    iv=bytes(12),
    hp=bytes(16),
)


def _with_tlv(add_bytes, value):
    """add_bytes with one more TLV 0x0014 (value as given), lengths patched."""
    tlv = (0x0014).to_bytes(2, "big") + len(value).to_bytes(2, "big") + value
    hdr, body = add_bytes[: wire.SIGNAL_HDR_LEN], add_bytes[wire.SIGNAL_HDR_LEN :]
    hdr = hdr[:-2] + (len(body) + len(tlv)).to_bytes(2, "big")
    return hdr + body + tlv


def test_grease_quic_bit_tlv_c_and_python():
    on = wire.Add(**GREASE_ADD)
    off = wire.Add(**GREASE_ADD, grease_quic_bit=False)
    assert on.grease_quic_bit is True
    b_on, b_off = on.encode(), off.encode()
    assert b"\x00\x14\x00\x01\x00" in b_off and b"\x00\x14" not in b_on[wire.SIGNAL_HDR_LEN :]
    for msg, b in ((on, b_on), (off, b_off)):
        cm, keep = py_to_c(msg)
        assert c_encode(cm) == b, "C encodes the flag as Python does"
        status, dm, _buf = c_decode(b)
        assert status == "ok" and bool(dm.u.add.cfg.grease_quic_bit) == msg.grease_quic_bit
        assert c_to_py(dm) == msg and wire.decode(b) == msg
        lib.quicoff_wire_msg_clear(dm)
    # explicit 1 = absent; other values and lengths refused, the same way
    for value, want in (
        (b"\x01", "ok"),
        (b"\x00", "ok"),
        (b"\x02", "invalid_argument"),
        (b"", "malformed"),
        (b"\x01\x00", "malformed"),
    ):
        b = _with_tlv(b_on, value)
        status, dm, _buf = c_decode(b)
        assert status == want, (value, status)
        try:
            py = wire.decode(b)
            py_status = "ok"
        except wire.WireError as exc:
            py_status = exc.status
        assert py_status == want, (value, py_status)
        if want == "ok":
            assert bool(dm.u.add.cfg.grease_quic_bit) == py.grease_quic_bit == (value == b"\x01")
        lib.quicoff_wire_msg_clear(dm)


_TPIDS = (0x8100, 0x88A8, 0x9100, 0x9200, 0x9300)


@pytest.mark.parametrize(
    "stack",
    [
        (),
        (0x8100,),
        (0x9100,),
        (0x88A8, 0x8100),
        (0x9100, 0x8100),
        (0x8100, 0x9200),
        (0x9300, 0x88A8),
        (0x8100, 0x8100, 0x8100),
        (0x9100, 0x8100, 0x8100),
        (0x88A8,) * 4,
    ],
)
def test_tag_stacks_python_as_c(stack):
    """Python's decode_frame walks tag stacks as quicoff_wire_decode does (up to
    two tags of any TPID, the innermost 802.1Q is the VLAN; deeper is no frame
    of ours), so no tool decodes as a message what the offload would drop."""
    payload = wire.Remove(request_id=7, index=3, direction="rx").encode()
    tags = b"".join(struct.pack("!HH", tpid, 100 + i) for i, tpid in enumerate(stack))
    raw = b"\x02" * 6 + b"\x04" * 6 + tags + struct.pack("!H", wire.ETHERTYPE_SIGNAL) + payload
    status, m, _buf = c_decode_frame(raw)
    if len(stack) <= 2:
        assert status == "ok"
        eth, msg = wire.decode_frame(raw)
        assert msg.kind == "remove" and msg.index == 3 and msg.request_id == 7
        inner_vlan = [100 + i for i, t in enumerate(stack) if t == 0x8100]
        want = inner_vlan[-1] if inner_vlan else None
        assert eth.vlan == want
        assert (m.eth.vlan_tci if m.eth.has_vlan else None) == want
    else:
        assert status != "ok"
        with pytest.raises(wire.WireError):
            wire.decode_frame(raw)
    # a tag cut short: malformed on both sides
    if stack:
        cut = raw[: 14 + 2]
        assert c_decode_frame(cut)[0] == "malformed"
        with pytest.raises(wire.WireError):
            wire.decode_frame(cut)


def _train_by_hand(pn: int, length: int, seg: int, count: int, extra: int) -> bytes:
    """A DATA_TRAIN header as no encoder writes it, then `extra` bytes."""
    return (
        bytes([0x51, 1, 0x11, 0])
        + struct.pack("!IQHHHH", 5, pn, length, 0, seg, count)
        + bytes(extra)
    )


@pytest.mark.parametrize(
    "what,pn,length,seg,count,extra,status",
    [
        ("segment size 0", 1, 100, 0, 1, 100, "invalid_argument"),
        ("count 0", 1, 100, 100, 0, 100, "invalid_argument"),
        ("length 0", 1, 0, 100, 1, 0, "malformed"),
        ("short of count - 1 segments", 1, 250, 100, 4, 250, "malformed"),
        ("an empty last packet", 1, 300, 100, 4, 300, "malformed"),
        ("past count full segments", 1, 401, 100, 4, 401, "malformed"),
        ("length past the frame", 1, 400, 100, 4, 399, "malformed"),
        ("first PN past 2^62-1", wire.PN_MAX + 1, 100, 100, 1, 100, "invalid_argument"),
        ("last PN past 2^62-1", wire.PN_MAX - 2, 400, 100, 4, 400, "invalid_argument"),
    ],
)
def test_malformed_trains_c_and_python(what, pn, length, seg, count, extra, status):
    """Each bad train has one status, the same from quicoff.wire, the C full
    decoder and the C header reader the offload's data path uses."""
    raw = _train_by_hand(pn, length, seg, count, extra)
    with pytest.raises(wire.WireError) as e:
        wire.decode(raw)
    assert e.value.status == status, what
    st_c, _m, _keep = c_decode(raw, wire.ETHERTYPE_SIGNAL)
    assert st_c == status, what
    buf = ffi.new("uint8_t[]", raw)
    kind = ffi.new("quicoff_wire_kind_t *")
    d = ffi.new("struct quicoff_wire_data *")
    st_h = lib.quicoff_wire_data_hdr_read(wire.ETHERTYPE_SIGNAL, buf, len(raw), kind, d)
    assert wire._status_name(st_h) == status and kind[0] == lib.QUICOFF_WIRE_DATA_TRAIN, what
    # cut header
    with pytest.raises(wire.WireError) as e:
        wire.decode(raw[:23])
    assert e.value.status == "malformed"


@pytest.mark.parametrize("count", [1, 2, 10, 55])
def test_trains_roundtrip_c_and_python(count):
    """1, 2, 10 and 55 packets (54 of 1200 bytes and a shorter last: 65535
    bytes, the most one frame's Length holds): Python and C write the same
    bytes and read the same packets back."""
    last = 65535 - 54 * 1200 if count == 55 else 77
    pkts = [bytes([i % 256]) * 1200 for i in range(count - 1)] + [b"\x42" * last]
    msg = wire.DataTrain(index=9, pn=(1 << 40) + 3, packets=pkts)
    py = msg.encode()
    assert len(py) == wire.TRAIN_HDR_LEN + sum(map(len, pkts))
    assert wire.decode(py) == wire.DataTrain(
        index=9, pn=(1 << 40) + 3, packets=pkts, segment_size=1200 if count > 1 else last
    )
    status, m, _keep = c_decode(py, wire.ETHERTYPE_SIGNAL)
    assert status == "ok" and m.kind == lib.QUICOFF_WIRE_DATA_TRAIN and m.u.data.count == count
    n = ffi.new("uint32_t *")
    for i, p in enumerate(pkts):
        at = lib.quicoff_wire_train_packet(ffi.addressof(m.u.data), i, n)
        assert ffi.buffer(at, n[0])[:] == p
    assert lib.quicoff_wire_train_packet(ffi.addressof(m.u.data), count, n) == ffi.NULL
    out = ffi.new("uint8_t[]", 70000)
    n_out = ffi.new("size_t *")
    assert c_status(lib.quicoff_wire_encode_payload(m, out, 70000, n_out, ffi.NULL)) == "ok"
    assert ffi.buffer(out, n_out[0])[:] == py


def test_train_encoder_refuses_what_decoders_refuse():
    for bad, status in (
        (wire.DataTrain(packets=[]), "invalid_argument"),
        (wire.DataTrain(packets=[b"a" * 10, b"b" * 11]), "malformed"),
        (wire.DataTrain(packets=[b"a" * 10, b"b" * 9, b"c"]), "malformed"),
        (wire.DataTrain(packets=[b"a", b"b"], segment_size=0), "invalid_argument"),
        (wire.DataTrain(pn=wire.PN_MAX, packets=[b"a", b"b"]), "invalid_argument"),
    ):
        with pytest.raises(wire.WireError) as e:
            bad.encode()
        assert e.value.status == status, bad
