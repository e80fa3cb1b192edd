# SPDX-License-Identifier: Apache-2.0
"""The host <-> offload protocol in plain Python (docs/protocol.md).

Encoders and decoders for every compat and v1 frame, byte-identical
to the C library libquicoff-wire's (``include/quicoff/wire.h``;
tests/python/test_wire.py checks both against each other).  Pure Python: needs neither the compiled
extension nor Scapy, so a host-side tool (``quicoff demo``, a test harness, a
QUIC stack shim) can use it anywhere.  The Scapy layers for the same frames
are in :mod:`quicoff.scapy_layers` (section 3).

Messages are small dataclasses; ``msg.encode()`` gives the bytes after the
EtherType, :func:`frame` wraps them in Ethernet, :func:`decode` /
:func:`decode_frame` go back.  Enumerations are given and returned by the
library's stable names ("aes-128-gcm", "1rtt", "tx", "ok", ...); integers are
accepted too.  Decoding errors raise :class:`WireError` whose ``.status`` is
the quicoff status name the C decoder returns ("malformed", "unsupported",
"invalid_argument") and whose ``.header`` is the readable v1 header (to answer
with an :class:`Ack`), if any.

Keys travel in clear on the host link (docs/protocol.md §2): never log
these objects.

Example::

    from quicoff import wire
    add = wire.Add(request_id=1, index=7, direction="tx", suite="aes-128-gcm",
                   dcid=bytes(8), key=k, iv=iv, hp=hp,
                   encap=wire.Encap(src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:02",
                                    src_ip="10.0.0.1", dst_ip="10.0.0.2",
                                    src_port=50000, dst_port=443))
    raw = wire.frame(add, dst="02:00:00:00:00:aa", src="02:00:00:00:00:bb")
    eth, msg = wire.decode_frame(raw)
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field, fields
from typing import Optional, Union

__all__ = [
    "ETHERTYPE_SIGNAL",
    "ETHERTYPE_DATA",
    "MAGIC",
    "VERSION",
    "PN_MAX",
    "PN_NONE",
    "INDEX_NONE",
    "DIRECTION_NONE",
    "SUITES",
    "LEVELS",
    "DIRECTIONS",
    "NONCE_LAYOUTS",
    "FAIL_ACTIONS",
    "STATUSES",
    "KINDS",
    "EVENTS",
    "TLV",
    "CONN_STATS_FIELDS",
    "TABLE_STATS_FIELDS",
    "RESULT_FLAGS",
    "WireError",
    "Eth",
    "Encap",
    "Add",
    "Update",
    "Remove",
    "Query",
    "Ack",
    "Stats",
    "Event",
    "DataToOffload",
    "DataTrain",
    "DataToHost",
    "CompatPeer",
    "CompatHost",
    "CompatData",
    "decode",
    "decode_frame",
    "frame",
    "ack_for",
    "suite_key_len",
    "suite_secret_len",
]

ETHERTYPE_SIGNAL = 0x88B5
ETHERTYPE_DATA = 0x88B6
ETHERTYPE_VLAN = 0x8100
ETHERTYPE_QINQ = 0x88A8
# every TPID a tag may carry (802.1Q, 802.1ad, the older QinQ ones), as in C
TAG_TPIDS = (ETHERTYPE_VLAN, ETHERTYPE_QINQ, 0x9100, 0x9200, 0x9300)
MAGIC = 0x51
VERSION = 1
PN_MAX = (1 << 62) - 1
PN_NONE = (1 << 64) - 1  #: LARGEST_PN "none" (all ones), as quicoff's UINT64_MAX
INDEX_NONE = 0xFFFFFFFF
SIGNAL_HDR_LEN = 16
DATA_HDR_LEN = 20
TRAIN_HDR_LEN = 24
COMPAT_PEER_LEN = 100
COMPAT_HOST_LEN = 85
COMPAT_DATA_HDR_LEN = 10
DETAIL_MAX = 255

# The C enums' order; names are the library's (quicoff_suite_name, ...).
SUITES = ("aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305")
LEVELS = ("1rtt", "initial", "0rtt", "handshake")
DIRECTIONS = ("tx", "rx")
#: An ACK's direction when the request's was neither tx nor rx (it cannot be
#: echoed; protocol.md §4.8). Only ACKs carry it; decoded as "none".
DIRECTION_NONE = 0xFF
NONCE_LAYOUTS = ("rfc9001", "multipath", "multipath-path-id-le")
FAIL_ACTIONS = ("drop", "pass")
STATUSES = (
    "ok",
    "unknown_connection",
    "auth_failed",
    "malformed",
    "key_phase_unavailable",
    "usage_limit_reached",
    "key_exhausted",
    "unsupported",
    "no_space",
    "invalid_argument",
    "exists",
    "table_full",
    "no_memory",
    "backend_unavailable",
)
#: v1 Type byte by kind name; compat kinds are decode results (C: >= 0x100).
KINDS = {
    "add": 0x01,
    "update": 0x02,
    "remove": 0x03,
    "query": 0x04,
    "data_to_offload": 0x10,
    "data_train": 0x11,
    "ack": 0x81,
    "stats": 0x82,
    "event": 0x83,
    "data_to_host": 0x90,
    "compat_peer": 0x100,
    "compat_host": 0x101,
    "compat_data": 0x102,
}
_KIND_NAMES = {v: k for k, v in KINDS.items()}
EVENTS = {
    "auth_failed": 1,
    "usage_limit_reached": 2,
    "key_update": 3,
    "unknown_connection": 4,
    "key_exhausted": 5,
    "key_phase_unavailable": 6,
    "too_big": 7,
}
_EVENT_NAMES = {v: k for k, v in EVENTS.items()}
#: DATA_TO_HOST flag bits (enum quicoff_result_flag)
RESULT_FLAGS = {"key_updated": 1, "pass_failed": 2, "long_header": 4, "old_keys": 8}

_KEY_LEN = {0: 16, 1: 32, 2: 16, 3: 32}
_SECRET_LEN = {0: 32, 1: 48, 2: 32, 3: 32}


class TLV:
    """TLV type registry (docs/protocol.md §5.1), a copy of the one table in
    include/quicoff/wire_tlvs.h: tests/python/test_wire_tlv_table.py checks
    that this class and _ALLOWED below agree with it."""

    SUITE = 0x0001
    LEVEL = 0x0002
    QUIC_VERSION = 0x0003
    DCID = 0x0004
    LOCAL_ADDR = 0x0005
    PATH_ID = 0x0006
    NONCE_LAYOUT = 0x0007
    FAIL_ACTION = 0x0008
    LARGEST_PN = 0x0009
    USAGE_THRESHOLD = 0x000A
    KEY_GENERATION = 0x000B
    PACKET_KEY = 0x000C
    IV = 0x000D
    HP_KEY = 0x000E
    NEXT_PACKET_KEY = 0x000F
    NEXT_IV = 0x0010
    SECRET = 0x0011
    ENCAP = 0x0012
    ROLL_GENERATION = 0x0013
    GREASE_QUIC_BIT = 0x0014
    CONN_STATS = 0x0020
    TABLE_STATS = 0x0021
    COUNT = 0x0030
    PN = 0x0031
    REMOTE_ADDR = 0x0032
    DETAIL = 0x0033
    MTU = 0x0034
    CRITICAL = 0x8000


_TLV_NAMES = {v: k for k, v in vars(TLV).items() if k.isupper() and k != "CRITICAL"}

CONN_STATS_FIELDS = (
    "packets",
    "bytes",
    "auth_failures",
    "malformed",
    "key_phase_unavailable",
    "key_updates",
    "key_generation",
    "largest_pn",
    "key_packets",
)
TABLE_STATS_FIELDS = (
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "auth_failures",
    "unknown_connection",
    "malformed",
    "key_phase_unavailable",
    "usage_limit_reached",
    "key_exhausted",
    "unsupported",
    "key_updates",
    "connections",
    "retired_pending",
)

_ALLOWED = {
    "add": {
        TLV.SUITE,
        TLV.LEVEL,
        TLV.QUIC_VERSION,
        TLV.DCID,
        TLV.LOCAL_ADDR,
        TLV.PATH_ID,
        TLV.NONCE_LAYOUT,
        TLV.FAIL_ACTION,
        TLV.LARGEST_PN,
        TLV.USAGE_THRESHOLD,
        TLV.KEY_GENERATION,
        TLV.PACKET_KEY,
        TLV.IV,
        TLV.HP_KEY,
        TLV.NEXT_PACKET_KEY,
        TLV.NEXT_IV,
        TLV.SECRET,
        TLV.ENCAP,
        TLV.GREASE_QUIC_BIT,
    },
    "update": {
        TLV.FAIL_ACTION,
        TLV.LARGEST_PN,
        TLV.USAGE_THRESHOLD,
        TLV.KEY_GENERATION,
        TLV.PACKET_KEY,
        TLV.IV,
        TLV.SECRET,
        TLV.ENCAP,
        TLV.ROLL_GENERATION,
    },
    "remove": set(),
    "query": set(),
    "ack": {TLV.DETAIL},
    "stats": {TLV.CONN_STATS, TLV.TABLE_STATS, TLV.DETAIL},
    "event": {
        TLV.COUNT,
        TLV.PN,
        TLV.KEY_GENERATION,
        TLV.LEVEL,
        TLV.DCID,
        TLV.LOCAL_ADDR,
        TLV.REMOTE_ADDR,
        TLV.DETAIL,
        TLV.MTU,
    },
}


def suite_key_len(suite) -> int:
    return _KEY_LEN[_enum(suite, SUITES, "suite")]


def suite_secret_len(suite) -> int:
    return _SECRET_LEN[_enum(suite, SUITES, "suite")]


class WireError(ValueError):
    """A frame that does not decode (or a message that cannot be encoded).

    ``status``: "malformed", "unsupported" or "invalid_argument" (the C
    decoder's status for the same bytes); ``header``: a dict with kind,
    version, request_id, index, direction when the v1 signaling header was
    readable (answer with :func:`ack_for`), else None."""

    def __init__(self, status: str, message: str = "", header: Optional[dict] = None):
        self.status = status
        self.header = header
        super().__init__("%s: %s" % (status, message) if message else status)


# ---------------------------------------------------------------------------
# helpers


def _enum(value, names, what):
    if isinstance(value, str):
        v = value.lower().replace("_", "-") if what == "suite" else value.lower()
        if v in names:
            return names.index(v)
        raise WireError("invalid_argument", "unknown %s %r" % (what, value))
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return value
    raise WireError("invalid_argument", "unknown %s %r" % (what, value))


def _status_code(value) -> int:
    if isinstance(value, str):
        if value in STATUSES:
            return STATUSES.index(value)
        raise WireError("invalid_argument", "unknown status %r" % value)
    if isinstance(value, int) and 0 <= value <= 255:
        return value
    raise WireError("invalid_argument", "unknown status %r" % (value,))


def _status_name(code: int):
    return STATUSES[code] if code < len(STATUSES) else code


def _mac(value) -> bytes:
    if value is None:
        return bytes(6)
    if isinstance(value, (bytes, bytearray)):
        if len(value) != 6:
            raise WireError("invalid_argument", "MAC address must be 6 bytes")
        return bytes(value)
    parts = str(value).replace("-", ":").split(":")
    if len(parts) != 6:
        raise WireError("invalid_argument", "bad MAC address %r" % value)
    return bytes(int(p, 16) for p in parts)


def _mac_str(b: bytes) -> str:
    return ":".join("%02x" % x for x in b)


def _ip(value):
    """-> (family, packed bytes)."""
    if isinstance(value, (bytes, bytearray)):
        if len(value) == 4:
            return 4, bytes(value)
        if len(value) == 16:
            return 6, bytes(value)
        raise WireError("invalid_argument", "IP address must be 4 or 16 bytes")
    a = ipaddress.ip_address(value)
    return a.version, a.packed


def _u8(v, what="value"):
    if not isinstance(v, int) or not 0 <= v <= 0xFF:
        raise WireError("invalid_argument", "%s %r out of range" % (what, v))
    return struct.pack("!B", v)


def _u16(v, what="value"):
    if not isinstance(v, int) or not 0 <= v <= 0xFFFF:
        raise WireError("invalid_argument", "%s %r out of range" % (what, v))
    return struct.pack("!H", v)


def _u32(v, what="value"):
    if not isinstance(v, int) or not 0 <= v <= 0xFFFFFFFF:
        raise WireError("invalid_argument", "%s %r out of range" % (what, v))
    return struct.pack("!I", v)


def _u64(v, what="value"):
    if not isinstance(v, int) or not 0 <= v < 1 << 64:
        raise WireError("invalid_argument", "%s %r out of range" % (what, v))
    return struct.pack("!Q", v)


def _tlv(t: int, value: bytes) -> bytes:
    return struct.pack("!HH", t, len(value)) + value


def _addr_value(addr) -> bytes:
    """(ip, port) -> family | port | address."""
    ip, port = addr
    fam, packed = _ip(ip)
    return bytes([fam]) + _u16(port, "port") + packed


def _addr_parse(v: bytes):
    if len(v) not in (7, 19):
        raise WireError("malformed", "address TLV of %d bytes" % len(v))
    if (len(v) == 7 and v[0] != 4) or (len(v) == 19 and v[0] != 6):
        raise WireError("invalid_argument", "address family %d in %d bytes" % (v[0], len(v)))
    port = struct.unpack("!H", v[1:3])[0]
    return str(ipaddress.ip_address(bytes(v[3:]))), port


def _bytes(v, n=None, what="value"):
    b = bytes(v)
    if n is not None and len(b) != n:
        raise WireError("invalid_argument", "%s must be %d bytes, not %d" % (what, n, len(b)))
    return b


# ---------------------------------------------------------------------------
# Ethernet and encapsulation


@dataclass
class Eth:
    """An Ethernet header: MACs as "aa:bb:..." strings, optional 802.1Q TCI."""

    dst: str = "00:00:00:00:00:00"
    src: str = "00:00:00:00:00:00"
    vlan: Optional[int] = None
    ethertype: int = ETHERTYPE_SIGNAL


@dataclass
class Encap:
    """Per-entry encapsulation (ENCAP TLV, docs/protocol.md §5.2)."""

    dst_mac: str = "00:00:00:00:00:00"
    src_mac: str = "00:00:00:00:00:00"
    src_ip: str = "0.0.0.0"
    dst_ip: str = "0.0.0.0"
    src_port: int = 0
    dst_port: int = 0
    vlan: Optional[int] = None  #: 802.1Q TCI to insert, or None
    ttl: int = 0  #: 0 = the offload's default (64)
    tos: int = 0

    def value(self) -> bytes:
        fs, s = _ip(self.src_ip)
        fd, d = _ip(self.dst_ip)
        if fs != fd:
            raise WireError("invalid_argument", "encap addresses of different families")
        return (
            _mac(self.dst_mac)
            + _mac(self.src_mac)
            + _u16(self.vlan if self.vlan is not None else 0, "vlan")
            + bytes([1 if self.vlan is not None else 0, fs])
            + _u8(self.ttl, "ttl")
            + _u8(self.tos, "tos")
            + _u16(self.src_port, "port")
            + _u16(self.dst_port, "port")
            + s
            + d
        )

    @classmethod
    def parse(cls, v: bytes) -> "Encap":
        if len(v) not in (30, 54):
            raise WireError("malformed", "ENCAP of %d bytes" % len(v))
        if (len(v) == 30 and v[15] != 4) or (len(v) == 54 and v[15] != 6):
            raise WireError("invalid_argument", "ENCAP IP version %d in %d bytes" % (v[15], len(v)))
        alen = 4 if v[15] == 4 else 16
        tci = struct.unpack("!H", v[12:14])[0]
        return cls(
            dst_mac=_mac_str(v[0:6]),
            src_mac=_mac_str(v[6:12]),
            vlan=tci if v[14] & 1 else None,
            ttl=v[16],
            tos=v[17],
            src_port=struct.unpack("!H", v[18:20])[0],
            dst_port=struct.unpack("!H", v[20:22])[0],
            src_ip=str(ipaddress.ip_address(bytes(v[22 : 22 + alen]))),
            dst_ip=str(ipaddress.ip_address(bytes(v[22 + alen : 22 + 2 * alen]))),
        )


# ---------------------------------------------------------------------------
# v1 signaling


def _direction_byte(kind: str, direction) -> int:
    if kind == "ack" and direction in ("none", DIRECTION_NONE):
        return DIRECTION_NONE
    return _enum(direction, DIRECTIONS, "direction")


def _sig_hdr(
    kind: str, byte3: int, request_id: int, index: int, direction, status, tlvs: bytes
) -> bytes:
    if len(tlvs) > 0xFFFF:
        raise WireError("invalid_argument", "TLVs too long")
    return (
        bytes([MAGIC, VERSION, KINDS[kind], byte3 & 0xFF])
        + _u32(request_id, "request_id")
        + _u32(index, "index")
        + bytes([_direction_byte(kind, direction), _status_code(status)])
        + struct.pack("!H", len(tlvs))
        + tlvs
    )


def _detail_tlv(detail) -> bytes:
    if detail is None:
        return b""
    b = detail.encode() if isinstance(detail, str) else bytes(detail)
    if not b:
        return b""
    if len(b) > DETAIL_MAX:
        raise WireError("invalid_argument", "DETAIL longer than 255 bytes")
    return _tlv(TLV.DETAIL, b)


@dataclass
class Add:
    """ADD: install an entry (a whole quicoff_conn_config). Give key + iv + hp,
    or secret; next_key + next_iv optionally (generation + 1)."""

    request_id: int = 0
    index: int = 0
    direction: Union[str, int] = "tx"
    suite: Union[str, int] = "aes-128-gcm"
    level: Union[str, int] = "1rtt"
    quic_version: int = 1  #: QUIC version (0 also means v1)
    dcid: bytes = b""
    local_addr: Optional[tuple] = None  #: (ip, port): RX key for zero-length CIDs
    path_id: int = 0
    nonce_layout: Union[str, int] = "rfc9001"
    fail_action: Union[str, int] = "drop"
    largest_pn: int = PN_NONE
    usage_threshold: int = 0
    key_generation: int = 0
    key: Optional[bytes] = None
    iv: Optional[bytes] = None
    hp: Optional[bytes] = None
    next_key: Optional[bytes] = None
    next_iv: Optional[bytes] = None
    secret: Optional[bytes] = None
    encap: Optional[Encap] = None
    replace: bool = False
    #: RFC 9287: packets with the fixed bit 0 accepted / protected as
    #: written. Sent (as 0) only when False: absent means True.
    grease_quic_bit: bool = True
    kind = "add"

    def encode(self) -> bytes:
        s = _enum(self.suite, SUITES, "suite")
        klen = _KEY_LEN[s]
        if len(self.dcid) > 20:
            raise WireError("invalid_argument", "DCID longer than 20 bytes")
        if self.largest_pn > PN_MAX and self.largest_pn != PN_NONE:
            raise WireError("invalid_argument", "largest_pn out of range")
        t = [
            _tlv(TLV.SUITE, bytes([s])),
            _tlv(TLV.LEVEL, bytes([_enum(self.level, LEVELS, "level")])),
            _tlv(TLV.QUIC_VERSION, _u32(self.quic_version, "quic_version")),
            _tlv(TLV.DCID, bytes(self.dcid)),
        ]
        if self.local_addr is not None:
            t.append(_tlv(TLV.LOCAL_ADDR, _addr_value(self.local_addr)))
        t += [
            _tlv(TLV.PATH_ID, _u32(self.path_id, "path_id")),
            _tlv(
                TLV.NONCE_LAYOUT, bytes([_enum(self.nonce_layout, NONCE_LAYOUTS, "nonce layout")])
            ),
            _tlv(TLV.FAIL_ACTION, bytes([_enum(self.fail_action, FAIL_ACTIONS, "fail action")])),
            _tlv(TLV.LARGEST_PN, _u64(self.largest_pn, "largest_pn")),
            _tlv(TLV.USAGE_THRESHOLD, _u64(self.usage_threshold, "usage_threshold")),
            _tlv(TLV.KEY_GENERATION, _u32(self.key_generation, "key_generation")),
        ]
        if self.secret is None:
            if self.key is None or self.iv is None or self.hp is None:
                raise WireError("invalid_argument", "ADD needs key, iv and hp, or secret")
            t += [
                _tlv(TLV.PACKET_KEY, _bytes(self.key, klen, "key")),
                _tlv(TLV.IV, _bytes(self.iv, 12, "iv")),
                _tlv(TLV.HP_KEY, _bytes(self.hp, klen, "hp")),
            ]
        elif self.key is not None or self.iv is not None or self.hp is not None:
            raise WireError("invalid_argument", "ADD takes keys or a secret, not both")
        if (self.next_key is None) != (self.next_iv is None):
            raise WireError("invalid_argument", "next_key and next_iv go together")
        if self.next_key is not None:
            t += [
                _tlv(TLV.NEXT_PACKET_KEY, _bytes(self.next_key, klen, "next_key")),
                _tlv(TLV.NEXT_IV, _bytes(self.next_iv, 12, "next_iv")),
            ]
        if self.secret is not None:
            t.append(_tlv(TLV.SECRET, _bytes(self.secret, _SECRET_LEN[s], "secret")))
        if self.encap is not None:
            t.append(_tlv(TLV.ENCAP, self.encap.value()))
        if not self.grease_quic_bit:
            t.append(_tlv(TLV.GREASE_QUIC_BIT, b"\x00"))
        return _sig_hdr(
            "add",
            1 if self.replace else 0,
            self.request_id,
            self.index,
            self.direction,
            0,
            b"".join(t),
        )


@dataclass
class Update:
    """UPDATE: what is given changes (docs/protocol.md §4.6). key + iv (or
    secret) with key_generation: install that generation's keys;
    roll_generation: make it current (ROLL, idempotent); drop_old: forget the
    previous generation."""

    request_id: int = 0
    index: int = 0
    direction: Union[str, int] = "tx"
    key_generation: Optional[int] = None
    key: Optional[bytes] = None
    iv: Optional[bytes] = None
    secret: Optional[bytes] = None
    roll_generation: Optional[int] = None
    drop_old: bool = False
    largest_pn: Optional[int] = None  #: PN_NONE = reset to "none"
    fail_action: Optional[Union[str, int]] = None
    usage_threshold: Optional[int] = None
    encap: Optional[Encap] = None
    kind = "update"

    def encode(self) -> bytes:
        flags = (1 if self.roll_generation is not None else 0) | (2 if self.drop_old else 0)
        t = []
        if self.fail_action is not None:
            t.append(
                _tlv(TLV.FAIL_ACTION, bytes([_enum(self.fail_action, FAIL_ACTIONS, "fail action")]))
            )
        if self.largest_pn is not None:
            if self.largest_pn > PN_MAX and self.largest_pn != PN_NONE:
                raise WireError("invalid_argument", "largest_pn out of range")
            t.append(_tlv(TLV.LARGEST_PN, _u64(self.largest_pn, "largest_pn")))
        if self.usage_threshold is not None:
            t.append(_tlv(TLV.USAGE_THRESHOLD, _u64(self.usage_threshold, "usage_threshold")))
        keys = self.key is not None or self.iv is not None or self.secret is not None
        if keys != (self.key_generation is not None):
            raise WireError("invalid_argument", "keys and key_generation go together")
        if keys:
            t.append(_tlv(TLV.KEY_GENERATION, _u32(self.key_generation, "key_generation")))
            if self.secret is not None:
                if self.key is not None or self.iv is not None:
                    raise WireError("invalid_argument", "keys or a secret, not both")
                if len(self.secret) not in (32, 48):
                    raise WireError("invalid_argument", "secret must be 32 or 48 bytes")
                t.append(_tlv(TLV.SECRET, bytes(self.secret)))
            else:
                if self.key is None or self.iv is None or len(self.key) not in (16, 32):
                    raise WireError("invalid_argument", "key (16|32 bytes) and iv needed")
                t += [
                    _tlv(TLV.PACKET_KEY, bytes(self.key)),
                    _tlv(TLV.IV, _bytes(self.iv, 12, "iv")),
                ]
        if self.encap is not None:
            t.append(_tlv(TLV.ENCAP, self.encap.value()))
        if self.roll_generation is not None:
            t.append(_tlv(TLV.ROLL_GENERATION, _u32(self.roll_generation, "roll_generation")))
        return _sig_hdr(
            "update", flags, self.request_id, self.index, self.direction, 0, b"".join(t)
        )


@dataclass
class Remove:
    request_id: int = 0
    index: int = 0
    direction: Union[str, int] = "tx"
    kind = "remove"

    def encode(self) -> bytes:
        return _sig_hdr("remove", 0, self.request_id, self.index, self.direction, 0, b"")


@dataclass
class Query:
    """QUERY: counters of an entry (conn) and/or of the table (table)."""

    request_id: int = 0
    index: int = INDEX_NONE
    direction: Union[str, int] = "tx"
    conn: bool = True
    table: bool = False
    kind = "query"

    def encode(self) -> bytes:
        return _sig_hdr(
            "query",
            (1 if self.conn else 0) | (2 if self.table else 0),
            self.request_id,
            self.index,
            self.direction,
            0,
            b"",
        )


@dataclass
class Ack:
    """ACK of a request: its request_id, index, direction and kind echoed."""

    request_id: int = 0
    index: int = 0
    direction: Union[str, int] = "tx"
    acked: Union[str, int] = "add"  #: kind name of the request (or its Type byte)
    status: Union[str, int] = "ok"
    detail: Optional[str] = None
    kind = "ack"

    def encode(self) -> bytes:
        acked = KINDS[self.acked] if isinstance(self.acked, str) else self.acked
        return _sig_hdr(
            "ack",
            acked,
            self.request_id,
            self.index,
            self.direction,
            self.status,
            _detail_tlv(self.detail),
        )

    @property
    def ok(self) -> bool:
        return self.status in ("ok", 0)


@dataclass
class Stats:
    """STATS: reply to a QUERY; conn/table are dicts keyed by the C field names."""

    request_id: int = 0
    index: int = INDEX_NONE
    direction: Union[str, int] = "tx"
    status: Union[str, int] = "ok"
    conn: Optional[dict] = None
    table: Optional[dict] = None
    detail: Optional[str] = None
    query_conn: bool = False
    query_table: bool = False
    kind = "stats"

    def __post_init__(self):
        # complete dicts: every counter, missing ones 0 (as a shorter block decodes)
        for name, names in (("conn", CONN_STATS_FIELDS), ("table", TABLE_STATS_FIELDS)):
            d = getattr(self, name)
            if d is not None:
                unknown = set(d) - set(names)
                if unknown:
                    raise WireError(
                        "invalid_argument", "unknown %s counters %s" % (name, sorted(unknown))
                    )
                setattr(self, name, {f: d.get(f, 0) for f in names})

    def encode(self) -> bytes:
        t = b""
        if self.conn is not None:
            t += _tlv(
                TLV.CONN_STATS, b"".join(_u64(self.conn.get(f, 0), f) for f in CONN_STATS_FIELDS)
            )
        if self.table is not None:
            t += _tlv(
                TLV.TABLE_STATS, b"".join(_u64(self.table.get(f, 0), f) for f in TABLE_STATS_FIELDS)
            )
        flags = (1 if self.query_conn else 0) | (2 if self.query_table else 0)
        return _sig_hdr(
            "stats",
            flags,
            self.request_id,
            self.index,
            self.direction,
            self.status,
            t + _detail_tlv(self.detail),
        )


@dataclass
class Event:
    """EVENT (offload -> host); seq is the header's request-ID field."""

    code: Union[str, int] = "auth_failed"
    seq: int = 0
    index: int = INDEX_NONE
    direction: Union[str, int] = "rx"
    status: Union[str, int] = "ok"
    count: Optional[int] = None
    pn: Optional[int] = None
    key_generation: Optional[int] = None
    level: Optional[Union[str, int]] = None
    dcid: Optional[bytes] = None
    local_addr: Optional[tuple] = None
    remote_addr: Optional[tuple] = None
    detail: Optional[str] = None
    mtu: Optional[int] = None  # too_big: the network MTU (largest IP packet)
    kind = "event"

    def encode(self) -> bytes:
        code = EVENTS[self.code] if isinstance(self.code, str) else self.code
        t = b""
        if self.level is not None:
            t += _tlv(TLV.LEVEL, bytes([_enum(self.level, LEVELS, "level")]))
        if self.dcid is not None:
            if len(self.dcid) > 20:
                raise WireError("invalid_argument", "DCID longer than 20 bytes")
            t += _tlv(TLV.DCID, bytes(self.dcid))
        if self.local_addr is not None:
            t += _tlv(TLV.LOCAL_ADDR, _addr_value(self.local_addr))
        if self.key_generation is not None:
            t += _tlv(TLV.KEY_GENERATION, _u32(self.key_generation, "key_generation"))
        if self.count is not None:
            t += _tlv(TLV.COUNT, _u64(self.count, "count"))
        if self.pn is not None:
            if self.pn > PN_MAX:
                raise WireError("invalid_argument", "pn out of range")
            t += _tlv(TLV.PN, _u64(self.pn, "pn"))
        if self.remote_addr is not None:
            t += _tlv(TLV.REMOTE_ADDR, _addr_value(self.remote_addr))
        if self.mtu is not None:
            t += _tlv(TLV.MTU, _u32(self.mtu, "mtu"))
        return _sig_hdr(
            "event",
            code,
            self.seq,
            self.index,
            self.direction,
            self.status,
            t + _detail_tlv(self.detail),
        )


# ---------------------------------------------------------------------------
# v1 data


def _check_pn(pn):
    if not isinstance(pn, int) or not 0 <= pn <= PN_MAX:
        raise WireError("invalid_argument", "packet number %r out of range" % (pn,))


@dataclass
class DataToOffload:
    """A plaintext QUIC packet for TX entry `index`, full packet number `pn`."""

    index: int = 0
    pn: int = 0
    packet: bytes = b""
    flags: int = 0
    kind = "data_to_offload"

    def header(self) -> bytes:
        _check_pn(self.pn)
        return (
            bytes([MAGIC, VERSION, 0x10, self.flags & 0xFF])
            + _u32(self.index, "index")
            + struct.pack("!Q", self.pn)
            + _u16(len(self.packet), "length")
            + b"\0\0"
        )

    def encode(self) -> bytes:
        return self.header() + bytes(self.packet)


def _train_check(pn: int, length: int, seg: int, count: int) -> None:
    """The train rules of docs/protocol.md §4.2.1, in C's order and with C's
    statuses (wire/v1.h qo_wire_train_check)."""
    if seg == 0 or count == 0:
        raise WireError("invalid_argument", "train: segment size %d, count %d" % (seg, count))
    full = (count - 1) * seg
    if length <= full or length > full + seg:
        raise WireError(
            "malformed",
            "train: %d bytes are not %d packets of %d (the last 1..%d)" % (length, count, seg, seg),
        )
    if count - 1 > PN_MAX - pn:
        raise WireError("invalid_argument", "train: last packet number past 2^62-1")


@dataclass
class DataTrain:
    """A train (docs/protocol.md §4.2.1): plaintext QUIC packets of TX entry
    `index` with PNs pn, pn+1, ..., each `segment_size` bytes except the last
    (1..segment_size), as a QUIC stack writes them for UDP GSO.  A
    `segment_size` of None means the first packet's length."""

    index: int = 0
    pn: int = 0
    packets: list = field(default_factory=list)
    segment_size: Optional[int] = None
    flags: int = 0
    kind = "data_train"

    def seg(self) -> int:
        if self.segment_size is not None:
            return self.segment_size
        return len(self.packets[0]) if self.packets else 0

    def header(self) -> bytes:
        _check_pn(self.pn)
        seg, count = self.seg(), len(self.packets)
        length = sum(len(x) for x in self.packets)
        _train_check(self.pn, length, seg, count)
        if any(len(x) != seg for x in self.packets[:-1]):
            raise WireError("malformed", "train: a packet before the last is not %d bytes" % seg)
        return (
            bytes([MAGIC, VERSION, 0x11, self.flags & 0xFF])
            + _u32(self.index, "index")
            + struct.pack("!Q", self.pn)
            + _u16(length, "length")
            + b"\0\0"
            + _u16(seg, "segment size")
            + _u16(count, "count")
        )

    def encode(self) -> bytes:
        return self.header() + b"".join(bytes(x) for x in self.packets)


@dataclass
class DataToHost:
    """An unprotected QUIC packet of RX entry `index` with its metadata."""

    index: int = 0
    pn: int = 0
    packet: bytes = b""
    status: Union[str, int] = "ok"
    level: Union[str, int] = "1rtt"
    key_phase: int = 0
    flags: int = 0  #: RESULT_FLAGS bits
    kind = "data_to_host"

    def header(self) -> bytes:
        _check_pn(self.pn)
        lv = _enum(self.level, LEVELS, "level")
        return (
            bytes([MAGIC, VERSION, 0x90, self.flags & 0xFF])
            + _u32(self.index, "index")
            + struct.pack("!Q", self.pn)
            + _u16(len(self.packet), "length")
            + bytes([_status_code(self.status), lv << 4 | (self.key_phase & 1)])
        )

    def encode(self) -> bytes:
        return self.header() + bytes(self.packet)

    @property
    def flag_names(self) -> list:
        return [n for n, b in RESULT_FLAGS.items() if self.flags & b]


# ---------------------------------------------------------------------------
# compat: the first prototype's fixed-layout frames (docs/protocol.md §3)


def _compat_key(key: bytes, klen: int, what: str) -> bytes:
    """The prototype's rule: the key as a 256-bit number, i.e. left-padded."""
    key = _bytes(key, klen, what)
    return bytes(32 - klen) + key


def _compat_unkey(field_: bytes, klen: int):
    """-> (key, right_padded)."""
    if klen == 32:
        return bytes(field_), False
    if field_[:16] == bytes(16):
        return bytes(field_[16:]), False
    if field_[16:] == bytes(16):
        return bytes(field_[:16]), True
    raise WireError("invalid_argument", "a 256-bit value in a 128-bit suite's key field")


@dataclass
class CompatPeer:
    """Compat signaling_peer (Type 0, docs/protocol.md §3.1): an RX entry keyed by DCID.
    full_pn becomes the entry's largest PN (PN_NONE: none)."""

    index: int = 0
    suite: Union[str, int] = "aes-128-gcm"
    hp_key: bytes = bytes(16)
    quic_key: bytes = bytes(16)
    iv: bytes = bytes(12)
    path_id: int = 0
    dcid: bytes = bytes(8)
    full_pn: int = 0
    right_padded: bool = field(default=False, compare=False)  #: how it arrived (decode)
    kind = "compat_peer"
    direction = "rx"

    def encode(self) -> bytes:
        s = _enum(self.suite, SUITES, "suite")
        k = _KEY_LEN[s]
        if self.full_pn > PN_MAX and self.full_pn != PN_NONE:
            raise WireError("invalid_argument", "full_pn out of range")
        return (
            b"\x00"
            + _u16(self.index, "compat index")
            + bytes([s])
            + _compat_key(self.hp_key, k, "hp_key")
            + _compat_key(self.quic_key, k, "quic_key")
            + _bytes(self.iv, 12, "iv")
            + _u32(self.path_id, "path_id")
            + _bytes(self.dcid, 8, "compat dcid")
            + _u64(self.full_pn, "full_pn")
        )


@dataclass
class CompatHost:
    """Compat signaling_host (Type 1, docs/protocol.md §3.2): a TX entry keyed by index."""

    index: int = 0
    suite: Union[str, int] = "aes-128-gcm"
    hp_key: bytes = bytes(16)
    quic_key: bytes = bytes(16)
    iv: bytes = bytes(12)
    path_id: int = 0
    dcid_len: int = 8
    right_padded: bool = field(default=False, compare=False)
    dcid_len_bits: bool = field(default=False, compare=False)
    kind = "compat_host"
    direction = "tx"

    def encode(self) -> bytes:
        s = _enum(self.suite, SUITES, "suite")
        k = _KEY_LEN[s]
        if not 0 <= self.dcid_len <= 20:
            raise WireError("invalid_argument", "dcid_len out of range")
        return (
            b"\x01"
            + _u16(self.index, "compat index")
            + bytes([s])
            + _compat_key(self.hp_key, k, "hp_key")
            + _compat_key(self.quic_key, k, "quic_key")
            + _bytes(self.iv, 12, "iv")
            + _u32(self.path_id, "path_id")
            + bytes([self.dcid_len])
        )


@dataclass
class CompatData:
    """Compat data_pkt (docs/protocol.md §3.5) + QUIC packet, on EtherType 0x88B6."""

    index: int = 0
    full_pn: int = 0
    packet: bytes = b""
    kind = "compat_data"

    def header(self) -> bytes:
        _check_pn(self.full_pn)
        return _u16(self.index, "compat index") + struct.pack("!Q", self.full_pn)

    def encode(self) -> bytes:
        return self.header() + bytes(self.packet)


Message = Union[
    Add,
    Update,
    Remove,
    Query,
    Ack,
    Stats,
    Event,
    DataToOffload,
    DataTrain,
    DataToHost,
    CompatPeer,
    CompatHost,
    CompatData,
]


def ethertype_of(msg) -> int:
    return ETHERTYPE_DATA if isinstance(msg, CompatData) else ETHERTYPE_SIGNAL


def frame(
    msg, dst="ff:ff:ff:ff:ff:ff", src="00:00:00:00:00:00", vlan: Optional[int] = None
) -> bytes:
    """The whole Ethernet frame of `msg` (a message object, or payload bytes of
    a signaling EtherType)."""
    payload = msg if isinstance(msg, (bytes, bytearray)) else msg.encode()
    et = ETHERTYPE_SIGNAL if isinstance(msg, (bytes, bytearray)) else ethertype_of(msg)
    hdr = _mac(dst) + _mac(src)
    if vlan is not None:
        hdr += struct.pack("!HH", ETHERTYPE_VLAN, vlan)
    return hdr + struct.pack("!H", et) + bytes(payload)


def ack_for(req, status="ok", detail=None) -> Union[Ack, Stats]:
    """The reply to a decoded request (or to WireError.header): an Ack, or
    for a Query an (empty) Stats to fill."""
    if isinstance(req, dict):
        h = req
    else:
        h = {
            "kind": req.kind,
            "request_id": getattr(req, "request_id", 0),
            "index": getattr(req, "index", 0),
            "direction": getattr(req, "direction", "tx"),
        }
    if h["kind"] == "query" and isinstance(req, Query):
        return Stats(
            request_id=h["request_id"],
            index=h["index"],
            direction=h["direction"],
            status=status,
            detail=detail,
            query_conn=req.conn,
            query_table=req.table,
        )
    acked = h["kind"]
    if isinstance(acked, str):
        acked = KINDS.get(acked, 0)
    direction = h["direction"]
    if direction not in DIRECTIONS and direction not in (0, 1):
        direction = "none"  # a request's bad direction byte cannot be echoed
    return Ack(
        request_id=h["request_id"],
        index=h["index"],
        direction=direction,
        acked=_KIND_NAMES.get(acked, acked) if acked < 0x100 else 0,
        status=status,
        detail=detail,
    )


# ---------------------------------------------------------------------------
# decode


def _collect(p: bytes, allowed: set) -> dict:
    out = {}
    off = 0
    while off < len(p):
        if len(p) - off < 4:
            raise WireError("malformed", "TLV header cut")
        t, n = struct.unpack_from("!HH", p, off)
        off += 4
        if n > len(p) - off:
            raise WireError("malformed", "TLV %#x runs past the TLV area" % t)
        if t not in _TLV_NAMES:
            if t & TLV.CRITICAL:
                raise WireError("unsupported", "unknown critical TLV %#x" % t)
        else:
            if t not in allowed:
                raise WireError("malformed", "TLV %s not allowed here" % _TLV_NAMES[t])
            if t in out:
                raise WireError("malformed", "duplicate TLV %s" % _TLV_NAMES[t])
            out[t] = p[off : off + n]
        off += n
    return out


def _g_u8(v):
    if len(v) != 1:
        raise WireError("malformed", "1-byte TLV of %d bytes" % len(v))
    return v[0]


def _g_u32(v):
    if len(v) != 4:
        raise WireError("malformed", "4-byte TLV of %d bytes" % len(v))
    return struct.unpack("!I", v)[0]


def _g_u64(v):
    if len(v) != 8:
        raise WireError("malformed", "8-byte TLV of %d bytes" % len(v))
    return struct.unpack("!Q", v)[0]


def _g_enum(v, names, what):
    x = _g_u8(v)
    if x >= len(names):
        raise WireError("invalid_argument", "%s %d" % (what, x))
    return names[x]


def _g_pn(v, none_ok):
    x = _g_u64(v)
    if x > PN_MAX and not (none_ok and x == PN_NONE):
        raise WireError("invalid_argument", "packet number %#x" % x)
    return x


def _g_key(v, want):
    if len(v) not in (16, 32):
        raise WireError("malformed", "key of %d bytes" % len(v))
    if want and len(v) != want:
        raise WireError("invalid_argument", "key of %d bytes for a %d-byte suite" % (len(v), want))
    return bytes(v)


def _g_iv(v):
    if len(v) != 12:
        raise WireError("malformed", "IV of %d bytes" % len(v))
    return bytes(v)


def _g_secret(v, want):
    if len(v) not in (32, 48):
        raise WireError("malformed", "secret of %d bytes" % len(v))
    if want and len(v) != want:
        raise WireError("invalid_argument", "secret of %d bytes for this suite" % len(v))
    return bytes(v)


def _g_dcid(v):
    if len(v) > 20:
        raise WireError("invalid_argument", "DCID of %d bytes" % len(v))
    return bytes(v)


def _decode_add(t, h, flags):
    if TLV.SUITE not in t:
        raise WireError("malformed", "ADD without SUITE")
    suite = _g_enum(t[TLV.SUITE], SUITES, "suite")
    m = Add(
        request_id=h["request_id"],
        index=h["index"],
        direction=h["direction"],
        suite=suite,
        replace=bool(flags & 1),
    )
    if TLV.LEVEL in t:
        m.level = _g_enum(t[TLV.LEVEL], LEVELS, "level")
    if TLV.QUIC_VERSION in t:
        m.quic_version = _g_u32(t[TLV.QUIC_VERSION])
    if TLV.DCID in t:
        m.dcid = _g_dcid(t[TLV.DCID])
    if TLV.LOCAL_ADDR in t:
        m.local_addr = _addr_parse(t[TLV.LOCAL_ADDR])
    if TLV.PATH_ID in t:
        m.path_id = _g_u32(t[TLV.PATH_ID])
    if TLV.NONCE_LAYOUT in t:
        m.nonce_layout = _g_enum(t[TLV.NONCE_LAYOUT], NONCE_LAYOUTS, "nonce layout")
    if TLV.FAIL_ACTION in t:
        m.fail_action = _g_enum(t[TLV.FAIL_ACTION], FAIL_ACTIONS, "fail action")
    if TLV.LARGEST_PN in t:
        m.largest_pn = _g_pn(t[TLV.LARGEST_PN], True)
    if TLV.USAGE_THRESHOLD in t:
        m.usage_threshold = _g_u64(t[TLV.USAGE_THRESHOLD])
    if TLV.KEY_GENERATION in t:
        m.key_generation = _g_u32(t[TLV.KEY_GENERATION])
    klen = _KEY_LEN[SUITES.index(suite)]
    raw = any(x in t for x in (TLV.PACKET_KEY, TLV.IV, TLV.HP_KEY))
    if TLV.SECRET in t:
        if raw:
            raise WireError("malformed", "SECRET and raw keys")
        m.secret = _g_secret(t[TLV.SECRET], _SECRET_LEN[SUITES.index(suite)])
    else:
        if not all(x in t for x in (TLV.PACKET_KEY, TLV.IV, TLV.HP_KEY)):
            raise WireError("malformed", "ADD needs PACKET_KEY, IV and HP_KEY, or SECRET")
        m.key = _g_key(t[TLV.PACKET_KEY], klen)
        m.iv = _g_iv(t[TLV.IV])
        m.hp = _g_key(t[TLV.HP_KEY], klen)
    if (TLV.NEXT_PACKET_KEY in t) != (TLV.NEXT_IV in t):
        raise WireError("malformed", "NEXT_PACKET_KEY and NEXT_IV go together")
    if TLV.NEXT_PACKET_KEY in t:
        m.next_key = _g_key(t[TLV.NEXT_PACKET_KEY], klen)
        m.next_iv = _g_iv(t[TLV.NEXT_IV])
    if TLV.ENCAP in t:
        m.encap = Encap.parse(t[TLV.ENCAP])
    if TLV.GREASE_QUIC_BIT in t:
        m.grease_quic_bit = _g_enum(t[TLV.GREASE_QUIC_BIT], (False, True), "grease_quic_bit")
    return m


def _decode_update(t, h, flags):
    m = Update(request_id=h["request_id"], index=h["index"], direction=h["direction"])
    keys = any(x in t for x in (TLV.PACKET_KEY, TLV.IV, TLV.SECRET))
    if keys != (TLV.KEY_GENERATION in t):
        raise WireError("malformed", "keys and KEY_GENERATION go together")
    if keys:
        m.key_generation = _g_u32(t[TLV.KEY_GENERATION])
        if TLV.SECRET in t:
            if TLV.PACKET_KEY in t or TLV.IV in t:
                raise WireError("malformed", "SECRET and raw keys")
            m.secret = _g_secret(t[TLV.SECRET], 0)
        else:
            if TLV.PACKET_KEY not in t or TLV.IV not in t:
                raise WireError("malformed", "PACKET_KEY and IV go together")
            m.key = _g_key(t[TLV.PACKET_KEY], 0)
            m.iv = _g_iv(t[TLV.IV])
    if bool(flags & 1) != (TLV.ROLL_GENERATION in t):
        raise WireError("malformed", "ROLL and ROLL_GENERATION go together")
    if flags & 1:
        m.roll_generation = _g_u32(t[TLV.ROLL_GENERATION])
    m.drop_old = bool(flags & 2)
    if TLV.LARGEST_PN in t:
        m.largest_pn = _g_pn(t[TLV.LARGEST_PN], True)
    if TLV.FAIL_ACTION in t:
        m.fail_action = _g_enum(t[TLV.FAIL_ACTION], FAIL_ACTIONS, "fail action")
    if TLV.USAGE_THRESHOLD in t:
        m.usage_threshold = _g_u64(t[TLV.USAGE_THRESHOLD])
    if TLV.ENCAP in t:
        m.encap = Encap.parse(t[TLV.ENCAP])
    return m


def _stats_block(v, names):
    if len(v) % 8:
        raise WireError("malformed", "stats block of %d bytes" % len(v))
    words = struct.unpack("!%dQ" % (len(v) // 8), v)
    return {n: (words[i] if i < len(words) else 0) for i, n in enumerate(names)}


def _detail(t):
    v = t.get(TLV.DETAIL)
    if not v:
        return None
    if len(v) > DETAIL_MAX:
        raise WireError("malformed", "DETAIL longer than 255 bytes")
    return bytes(v).decode("utf-8", "replace")


def _decode_v1(p: bytes):
    if len(p) < 3:
        raise WireError("malformed", "v1 frame of %d bytes" % len(p))
    version, typ = p[1], p[2]
    kind = _KIND_NAMES.get(typ, typ)
    if version == VERSION and typ == 0x11:
        if len(p) < TRAIN_HDR_LEN:
            raise WireError("malformed", "train header cut")
        index, pn, n = struct.unpack_from("!IQH", p, 4)
        seg, count = struct.unpack_from("!HH", p, 20)
        if n > len(p) - TRAIN_HDR_LEN:
            raise WireError("malformed", "train length %d past the frame" % n)
        if pn > PN_MAX:
            raise WireError("invalid_argument", "packet number %#x" % pn)
        _train_check(pn, n, seg, count)
        body = bytes(p[TRAIN_HDR_LEN : TRAIN_HDR_LEN + n])
        pkts = [body[i * seg : (i + 1) * seg] for i in range(count)]
        return DataTrain(index=index, pn=pn, packets=pkts, segment_size=seg, flags=p[3])
    if version == VERSION and typ in (0x10, 0x90):
        if len(p) < DATA_HDR_LEN:
            raise WireError("malformed", "data header cut")
        flags = p[3]
        index, pn, n = struct.unpack_from("!IQH", p, 4)
        if n > len(p) - DATA_HDR_LEN:
            raise WireError("malformed", "data length %d past the frame" % n)
        if pn > PN_MAX:
            raise WireError("invalid_argument", "packet number %#x" % pn)
        pkt = bytes(p[DATA_HDR_LEN : DATA_HDR_LEN + n])
        if typ == 0x10:
            return DataToOffload(index=index, pn=pn, packet=pkt, flags=flags)
        if p[19] >> 4 >= len(LEVELS):
            raise WireError("invalid_argument", "level %d" % (p[19] >> 4))
        return DataToHost(
            index=index,
            pn=pn,
            packet=pkt,
            status=_status_name(p[18]),
            level=LEVELS[p[19] >> 4],
            key_phase=p[19] & 1,
            flags=flags,
        )
    if len(p) < SIGNAL_HDR_LEN:
        raise WireError(
            "malformed" if version == VERSION else "unsupported", "signaling header cut"
        )
    byte3 = p[3]
    request_id, index = struct.unpack_from("!II", p, 4)
    direction, status = p[12], p[13]
    header = {
        "kind": kind,
        "version": version,
        "request_id": request_id,
        "index": index,
        "direction": DIRECTIONS[direction]
        if direction < 2
        else "none"
        if kind == "ack" and direction == DIRECTION_NONE
        else direction,
    }
    try:
        if version != VERSION:
            raise WireError("unsupported", "version %d" % version)
        if kind not in _ALLOWED:
            raise WireError("unsupported", "type %#x" % typ)
        if direction > 1 and not (kind == "ack" and direction == DIRECTION_NONE):
            raise WireError("invalid_argument", "direction %d" % direction)
        tlv_len = struct.unpack_from("!H", p, 14)[0]
        if tlv_len > len(p) - SIGNAL_HDR_LEN:
            raise WireError("malformed", "TLV length past the frame")
        t = _collect(bytes(p[SIGNAL_HDR_LEN : SIGNAL_HDR_LEN + tlv_len]), _ALLOWED[kind])
        h = header
        st = _status_name(status)
        if kind == "add":
            return _decode_add(t, h, byte3)
        if kind == "update":
            return _decode_update(t, h, byte3)
        if kind == "remove":
            return Remove(request_id=request_id, index=index, direction=h["direction"])
        if kind == "query":
            return Query(
                request_id=request_id,
                index=index,
                direction=h["direction"],
                conn=bool(byte3 & 1),
                table=bool(byte3 & 2),
            )
        if kind == "ack":
            detail = _detail(t)
            return Ack(
                request_id=request_id,
                index=index,
                direction=h["direction"],
                acked=_KIND_NAMES.get(byte3, byte3),
                status=st,
                detail=detail,
            )
        if kind == "stats":
            conn = (
                _stats_block(t[TLV.CONN_STATS], CONN_STATS_FIELDS) if TLV.CONN_STATS in t else None
            )
            table = (
                _stats_block(t[TLV.TABLE_STATS], TABLE_STATS_FIELDS)
                if TLV.TABLE_STATS in t
                else None
            )
            return Stats(
                request_id=request_id,
                index=index,
                direction=h["direction"],
                status=st,
                conn=conn,
                table=table,
                detail=_detail(t),
                query_conn=bool(byte3 & 1),
                query_table=bool(byte3 & 2),
            )
        # event
        e = Event(
            code=_EVENT_NAMES.get(byte3, byte3),
            seq=request_id,
            index=index,
            direction=h["direction"],
            status=st,
        )
        if TLV.COUNT in t:
            e.count = _g_u64(t[TLV.COUNT])
        if TLV.PN in t:
            e.pn = _g_pn(t[TLV.PN], False)
        if TLV.KEY_GENERATION in t:
            e.key_generation = _g_u32(t[TLV.KEY_GENERATION])
        if TLV.LEVEL in t:
            e.level = _g_enum(t[TLV.LEVEL], LEVELS, "level")
        if TLV.DCID in t:
            e.dcid = _g_dcid(t[TLV.DCID])
        if TLV.LOCAL_ADDR in t:
            e.local_addr = _addr_parse(t[TLV.LOCAL_ADDR])
        if TLV.REMOTE_ADDR in t:
            e.remote_addr = _addr_parse(t[TLV.REMOTE_ADDR])
        if TLV.MTU in t:
            e.mtu = _g_u32(t[TLV.MTU])
        e.detail = _detail(t)
        return e
    except WireError as err:
        err.header = header
        raise


def _decode_compat_signal(p: bytes):
    peer = p[0] == 0
    if len(p) < (COMPAT_PEER_LEN if peer else COMPAT_HOST_LEN):
        raise WireError("malformed", "compat signaling of %d bytes" % len(p))
    index = struct.unpack_from("!H", p, 1)[0]
    algo = p[3]
    if algo >= len(SUITES):
        raise WireError("unsupported", "Algo %d" % algo)
    klen = _KEY_LEN[algo]
    hp, r1 = _compat_unkey(p[4:36], klen)
    key, r2 = _compat_unkey(p[36:68], klen)
    iv = bytes(p[68:80])
    path_id = struct.unpack_from("!I", p, 80)[0]
    if peer:
        full_pn = struct.unpack_from("!Q", p, 92)[0]
        if full_pn > PN_MAX and full_pn != PN_NONE:
            raise WireError("invalid_argument", "Full_pn %#x" % full_pn)
        return CompatPeer(
            index=index,
            suite=SUITES[algo],
            hp_key=hp,
            quic_key=key,
            iv=iv,
            path_id=path_id,
            dcid=bytes(p[84:92]),
            full_pn=full_pn,
            right_padded=r1 or r2,
        )
    n, bits = p[84], False
    if n > 20:
        if n % 8 or n < 24 or n > 160:
            raise WireError("invalid_argument", "DCID_len %d" % n)
        n, bits = n // 8, True
    return CompatHost(
        index=index,
        suite=SUITES[algo],
        hp_key=hp,
        quic_key=key,
        iv=iv,
        path_id=path_id,
        dcid_len=n,
        right_padded=r1 or r2,
        dcid_len_bits=bits,
    )


def decode(payload: bytes, ethertype: int = ETHERTYPE_SIGNAL):
    """Decodes the bytes after the EtherType; raises WireError."""
    p = bytes(payload)
    if ethertype == ETHERTYPE_DATA:
        if len(p) < COMPAT_DATA_HDR_LEN:
            raise WireError("malformed", "data_pkt of %d bytes" % len(p))
        index, pn = struct.unpack_from("!HQ", p, 0)
        if pn > PN_MAX:
            raise WireError("invalid_argument", "Full_pn %#x" % pn)
        return CompatData(index=index, full_pn=pn, packet=p[COMPAT_DATA_HDR_LEN:])
    if ethertype != ETHERTYPE_SIGNAL:
        raise WireError("unsupported", "EtherType %#06x" % ethertype)
    if not p:
        raise WireError("malformed", "empty frame")
    if p[0] in (0, 1):
        return _decode_compat_signal(p)
    if p[0] == MAGIC:
        return _decode_v1(p)
    raise WireError("unsupported", "first byte %#x" % p[0])


def decode_frame(raw: bytes):
    """Decodes a whole Ethernet frame -> (Eth, message); raises WireError.

    As quicoff_wire_decode: up to two tags of any TPID in TAG_TPIDS, in any
    order (ports rewrite outer TPIDs); the innermost 802.1Q tag is the VLAN
    an answer goes back on. A third tag leaves a TPID as the EtherType, which
    is no EtherType of ours: "unsupported", never a message."""
    raw = bytes(raw)
    if len(raw) < 14:
        raise WireError("malformed", "Ethernet header cut")
    eth = Eth(dst=_mac_str(raw[0:6]), src=_mac_str(raw[6:12]))
    off = 12
    et = struct.unpack_from("!H", raw, off)[0]
    off += 2
    for _ in range(2):
        if et not in TAG_TPIDS:
            break
        if len(raw) - off < 4:
            raise WireError("malformed", "tag %#06x cut" % et)
        tci, inner = struct.unpack_from("!HH", raw, off)
        if et == ETHERTYPE_VLAN:
            eth.vlan = tci
        et = inner
        off += 4
    eth.ethertype = et
    return eth, decode(raw[off:], et)


def message_fields(msg) -> dict:
    """The message's fields as a dict (for printing, JSON, comparisons)."""
    return {f.name: getattr(msg, f.name) for f in fields(msg)}
