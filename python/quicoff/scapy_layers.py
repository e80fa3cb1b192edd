# SPDX-License-Identifier: Apache-2.0
"""Scapy layers for the quicoff project.

Sections:

1. Field types shared by the layers (QUIC varint, packet number).
2. QUIC wire headers (RFC 9000 §17, RFC 9369 §3.2): ``QUICLong``,
   ``QUICShort`` and the ``QUIC`` dispatcher that picks one by the header
   form bit.
3. Host <-> offload-engine frames (docs/protocol.md): the compat format's
   classes verbatim as the DPU prototype defined them (``signaling_host``, ``signaling_peer``, ``data_pkt``, ``quic``)
   and the v1 layers ``QOSignal``, ``QOTLV``, ``QOData``, ``QOTrain``.
4. Binding and convenience helpers.

The layers describe *plaintext* headers: what ``quicoff.ref.protect`` takes
and ``quicoff.ref.unprotect`` returns in ``Unprotected.header``. On a
protected packet byte 0's low bits, the Packet Number and everything after it
are ciphertext; the fields before the packet number still dissect correctly.

Byte-exactness: every dissected header rebuilds to the same bytes, including
non-minimal varint encodings (the encoded size is remembered in the value,
see :class:`VarInt`).

Short-header DCID length
------------------------
A short header does not carry its DCID length; only the endpoint knows it.
The length used for dissection is, in order of precedence:

* the ``dcid_len=`` keyword: ``QUICShort(raw, dcid_len=4)`` or
  ``QUIC(raw, dcid_len=4)``;
* the class attribute ``QUICShort.default_dcid_len`` (initially
  :data:`DEFAULT_SHORT_DCID_LEN` = 8), which also applies when Scapy
  dissects through UDP (see :func:`bind_udp_port`);
* a dedicated subclass ``QUICShort.for_dcid_len(n)``.

When building, the DCID is written as given, whatever its length.
"""

from __future__ import annotations

# scapy is an optional extra: say which one, not just "No module named scapy"
try:
    import scapy  # noqa: F401
except ImportError as e:
    raise ImportError(
        "quicoff.scapy_layers needs scapy, an optional extra: pip install 'quicoff[scapy]' (%s)" % e
    ) from e

from scapy.fields import BitField, ConditionalField, Field, FieldLenField, StrLenField, XIntField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_bottom_up, bind_layers, bind_top_down

from quicoff.ref.varint import decode_varint, encode_varint
from quicoff.ref.versions import LONG_TYPE_CODES, LONG_TYPE_NAMES, VERSION_1

TAG_LEN = 16  # AEAD tag counted by the Length field
DEFAULT_SHORT_DCID_LEN = 8

__all__ = [
    "VarInt",
    "QUICVarIntField",
    "PacketNumberField",
    "QUIC",
    "QUICLong",
    "QUICShort",
    "DEFAULT_SHORT_DCID_LEN",
    "bind_udp_port",
    "dissect_datagram",
]


# =====================================================================
# 1. Fields
# =====================================================================


class VarInt(int):
    """An int that remembers how many bytes its QUIC varint encoding used.

    ``QUICVarIntField`` returns these when dissecting, and re-encodes with the
    same size. Assign ``VarInt(5, size=2)`` to force a non-minimal encoding;
    a plain int is encoded minimally.
    """

    size: int | None

    def __new__(cls, value: int, size: int | None = None):
        obj = super().__new__(cls, value)
        obj.size = size
        return obj

    def __repr__(self) -> str:
        return int.__repr__(self)


class QUICVarIntField(Field):
    """QUIC variable-length integer (RFC 9000 §16).

    If the value is None when building, it is computed by ``length_of`` (the
    byte length of another field, like ``FieldLenField``) or by ``compute``
    (a callable taking the packet).
    """

    __slots__ = ["length_of", "compute"]

    def __init__(self, name, default, length_of=None, compute=None):
        Field.__init__(self, name, default, fmt="!Q")
        self.length_of = length_of
        self.compute = compute

    def i2m(self, pkt, x):
        if x is None and pkt is not None:
            if self.length_of is not None:
                fld, fval = pkt.getfield_and_val(self.length_of)
                x = fld.i2len(pkt, fval)
            elif self.compute is not None:
                x = self.compute(pkt)
        return 0 if x is None else x

    def addfield(self, pkt, s, val):
        val = self.i2m(pkt, val)
        return s + encode_varint(int(val), getattr(val, "size", None))

    def getfield(self, pkt, s):
        value, end = decode_varint(s, 0)
        return s[end:], VarInt(value, end)

    def i2len(self, pkt, x):
        x = self.i2m(pkt, x)
        return len(encode_varint(int(x), getattr(x, "size", None)))

    def randval(self):
        from scapy.volatile import RandNum

        return RandNum(0, (1 << 62) - 1)


class PacketNumberField(Field):
    """Truncated packet number; its size is ``pkt.pn_len + 1`` bytes (the
    2-bit Packet Number Length field holds length minus one)."""

    def __init__(self, name, default):
        Field.__init__(self, name, default, fmt="!I")

    @staticmethod
    def _size(pkt) -> int:
        return (pkt.pn_len or 0) + 1

    def addfield(self, pkt, s, val):
        n = self._size(pkt)
        val = 0 if val is None else int(val)
        return s + (val & ((1 << (8 * n)) - 1)).to_bytes(n, "big")

    def getfield(self, pkt, s):
        n = self._size(pkt)
        if len(s) < n:
            raise ValueError("packet number truncated")
        return s[n:], int.from_bytes(s[:n], "big")

    def i2len(self, pkt, x):
        return self._size(pkt)

    def i2repr(self, pkt, x):
        return "None" if x is None else f"0x{int(x):0{2 * self._size(pkt)}x}"


# =====================================================================
# 2. QUIC wire headers
# =====================================================================


class _QUICHeader(Packet):
    """Common base: accepts (and stores) the ``dcid_len`` keyword."""

    def __init__(self, _pkt=b"", *args, dcid_len=None, **kwargs):
        object.__setattr__(self, "_dcid_len", dcid_len)
        Packet.__init__(self, _pkt, *args, **kwargs)

    def copy(self):
        clone = Packet.copy(self)
        object.__setattr__(clone, "_dcid_len", self._dcid_len)
        return clone


def _long_type(pkt) -> str:
    names = LONG_TYPE_NAMES.get(pkt.version)
    if names is None:
        return "vn" if pkt.version == 0 else "unknown"
    return names[pkt.long_type]


def _has_pn(pkt) -> bool:
    return _long_type(pkt) in ("initial", "0rtt", "handshake")


def _long_length(pkt) -> int:
    # Length = packet number + payload + AEAD tag, assuming the payload
    # layer holds the *plaintext* frames.
    return (pkt.pn_len + 1) + len(pkt.payload) + TAG_LEN


class QUICLong(_QUICHeader):
    """Long header (RFC 9000 §17.2).

    ``long_type`` is the 2-bit wire code; its meaning depends on ``version``
    (v1: Initial 0, 0-RTT 1, Handshake 2, Retry 3; v2: Initial 1, 0-RTT 2,
    Handshake 3, Retry 0). :meth:`packet_type` gives the name and
    :meth:`with_type` builds from a name. The four type-specific bits are
    split as ``reserved`` (2) and ``pn_len`` (2, = length - 1) as for
    Initial/0-RTT/Handshake; for Retry they are unused bits, read via
    :attr:`type_specific`.

    Token Length/Token exist only for Initial; Length and Packet Number only
    for Initial/0-RTT/Handshake. For Retry, VN and unknown versions the rest
    of the packet is left as payload. If ``length`` is None when building it
    is computed as pn length + len(payload) + 16, i.e. the payload layer is
    taken to be the plaintext. When dissecting, bytes beyond Length are split
    off as padding (the next coalesced packet).
    """

    name = "QUIC long header"
    fields_desc = [
        BitField("header_form", 1, 1),
        BitField("fixed_bit", 1, 1),
        BitField("long_type", 0, 2),
        BitField("reserved", 0, 2),
        BitField("pn_len", 0, 2),
        XIntField("version", VERSION_1),
        FieldLenField("dcid_len", None, length_of="dcid", fmt="B"),
        StrLenField("dcid", b"", length_from=lambda p: p.dcid_len),
        FieldLenField("scid_len", None, length_of="scid", fmt="B"),
        StrLenField("scid", b"", length_from=lambda p: p.scid_len),
        ConditionalField(
            QUICVarIntField("token_len", None, length_of="token"),
            lambda p: _long_type(p) == "initial",
        ),
        ConditionalField(
            StrLenField("token", b"", length_from=lambda p: p.token_len),
            lambda p: _long_type(p) == "initial",
        ),
        ConditionalField(QUICVarIntField("length", None, compute=_long_length), _has_pn),
        ConditionalField(PacketNumberField("pn", 0), _has_pn),
    ]

    def packet_type(self) -> str:
        """ "initial", "0rtt", "handshake", "retry", "vn" or "unknown"."""
        return _long_type(self)

    @property
    def type_specific(self) -> int:
        return (self.reserved << 2) | self.pn_len

    @classmethod
    def with_type(cls, packet_type: str, version: int = VERSION_1, **fields):
        """``QUICLong.with_type("handshake", version=VERSION_2, dcid=...)``"""
        return cls(long_type=LONG_TYPE_CODES[version][packet_type], version=version, **fields)

    def extract_padding(self, s):
        if not _has_pn(self) or self.length is None:
            return s, None
        body = max(0, int(self.length) - (self.pn_len + 1))
        return s[:body], s[body:]

    def mysummary(self):
        return self.sprintf(f"QUIC {self.packet_type()} v%version% dcid=%dcid% scid=%scid%")


class QUICShort(_QUICHeader):
    """1-RTT short header (RFC 9000 §17.3.1).

    ``pn_len`` is the 2-bit wire value (= length - 1). The DCID length is not
    on the wire: see the module docstring (``dcid_len=`` keyword,
    ``QUICShort.default_dcid_len``, ``QUICShort.for_dcid_len(n)``).
    """

    name = "QUIC short header"
    default_dcid_len = DEFAULT_SHORT_DCID_LEN
    fields_desc = [
        BitField("header_form", 0, 1),
        BitField("fixed_bit", 1, 1),
        BitField("spin", 0, 1),
        BitField("reserved", 0, 2),
        BitField("key_phase", 0, 1),
        BitField("pn_len", 0, 2),
        StrLenField("dcid", b"", length_from=lambda p: p.dcid_length()),
        PacketNumberField("pn", 0),
    ]

    def dcid_length(self) -> int:
        """DCID length used for dissection."""
        if self._dcid_len is not None:
            return self._dcid_len
        return type(self).default_dcid_len

    _subclasses: dict = {}

    @classmethod
    def for_dcid_len(cls, n: int):
        """A QUICShort subclass whose default DCID length is ``n`` (cached)."""
        if n not in QUICShort._subclasses:
            QUICShort._subclasses[n] = type(
                f"QUICShort_dcid{n}", (QUICShort,), {"default_dcid_len": n}
            )
        return QUICShort._subclasses[n]

    def mysummary(self):
        return self.sprintf("QUIC 1rtt dcid=%dcid% pn=%pn%")


class QUIC(Packet):
    """Dispatcher: ``QUIC(raw, dcid_len=n)`` returns a QUICLong or QUICShort
    according to the header form bit (0x80 of byte 0)."""

    name = "QUIC"

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kwargs):
        if _pkt and bytes(_pkt[:1])[0] & 0x80:
            return QUICLong
        return QUICShort


# =====================================================================
# 3. Host <-> offload-engine frames
# =====================================================================
# docs/protocol.md.  Two formats on EtherTypes 0x88B5 / 0x88B6:
#
# * compat: the DPU prototype's classes exactly as it printed them
#   (names, field names, widths and defaults; docs/glossary.md cites the
#   source), so its own Scapy scripts run unchanged: ``Ether()/signaling_host(Index=3, ...)``,
#   ``Ether()/data_pkt(Index=3, Full_pn=7)/quic(DCID=...)/payload``.
#   Note the compat format's key rule: a 128-bit key is given as the *value* of the
#   256-bit field (``Hp_key=int.from_bytes(key, "big")``), i.e. left-padded.
# * v1: QOSignal (16-byte header + QOTLV list) and QOData (20-byte header +
#   QUIC packet), both starting with 0x51 0x01 on 0x88B5.
#
# On 0x88B5 the first byte tells them apart (0 peer, 1 host, 0x51 v1):
# dissection goes through QOHostOffload, whose dispatch_hook picks the class.
# The byte encodings equal those of quicoff.wire and of the C library
# (tests/python/test_wire.py).

from scapy.config import conf as _conf  # noqa: E402

# (one line each: a marker on a wrapped import moves when it is formatted)
from scapy.fields import ByteEnumField, ByteField, IntField, LongField  # noqa: E402
from scapy.fields import PacketListField, ShortEnumField, ShortField, XByteField  # noqa: E402
from scapy.layers.l2 import Dot1Q, Ether  # noqa: E402

ETHERTYPE_SIGNAL = 0x88B5
ETHERTYPE_DATA = 0x88B6


# --- compat: the DPU prototype's classes, verbatim ------------------------


class signaling_host(Packet):  # lower case: the prototype's name (so are the three below)
    name = "signaling_host"
    fields_desc = [
        BitField("Type", 1, 8),
        BitField("Index", 0, 16),
        BitField("Algo", 0, 8),
        BitField("Hp_key", 0x0, 256),
        BitField("Quic_key", 0x0, 256),
        BitField("IV", 0x0, 96),
        BitField("Path_id", 0, 32),
        BitField("DCID_len", 0, 8),
    ]

    def extract_padding(self, s):
        return b"", s


class signaling_peer(Packet):
    name = "signaling_peer"
    fields_desc = [
        BitField("Type", 0, 8),
        BitField("Index", 0, 16),
        BitField("Algo", 0, 8),
        BitField("Hp_key", 0x0, 256),
        BitField("Quic_key", 0x0, 256),
        BitField("IV", 0x0, 96),
        BitField("Path_id", 0, 32),
        BitField("DCID", 0x0, 64),
        BitField("Full_pn", 0x0, 64),
    ]

    def extract_padding(self, s):
        return b"", s


class data_pkt(Packet):
    name = "data_pkt_host"
    fields_desc = [BitField("Index", 0, 16), BitField("Full_pn", 0x0, 64)]


class quic(Packet):
    name = "quic"
    fields_desc = [
        BitField("Header_form", 0, 1),
        BitField("Fixed_bit", 1, 1),
        BitField("Spin_bit", 0, 1),
        BitField("Reserved_bits", 0, 2),
        BitField("Key_phase", 0, 1),
        BitField("Pn_len", 0, 2),
        BitField("DCID", 0x0, 64),
        BitField("Pn", 0x0, 16),
    ]


#: The compat format's Algo codes (docs/protocol.md §3.3) = quicoff_suite_t.
COMPAT_ALGOS = {
    "AES_GCM128_AES_ECB": 0,
    "AES_GCM256_AES_ECB": 1,
    "AES_CCM128_AES_ECB": 2,
    "CHACHA20_POLY1305": 3,
}


def compat_key_field(key: bytes) -> int:
    """A 128- or 256-bit key as the compat format puts it in a 256-bit field: its value."""
    return int.from_bytes(bytes(key), "big")


# --- v1 ---------------------------------------------------------------------

_QO_TYPES = {
    0x01: "add",
    0x02: "update",
    0x03: "remove",
    0x04: "query",
    0x10: "data_to_offload",
    0x11: "data_train",
    0x81: "ack",
    0x82: "stats",
    0x83: "event",
    0x90: "data_to_host",
}
_QO_STATUS = dict(
    enumerate(
        (
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
    )
)
# the TLV registry, checked against include/quicoff/wire_tlvs.h by
# tests/python/test_wire_tlv_table.py
_QO_TLVS = {
    0x0001: "SUITE",
    0x0002: "LEVEL",
    0x0003: "QUIC_VERSION",
    0x0004: "DCID",
    0x0005: "LOCAL_ADDR",
    0x0006: "PATH_ID",
    0x0007: "NONCE_LAYOUT",
    0x0008: "FAIL_ACTION",
    0x0009: "LARGEST_PN",
    0x000A: "USAGE_THRESHOLD",
    0x000B: "KEY_GENERATION",
    0x000C: "PACKET_KEY",
    0x000D: "IV",
    0x000E: "HP_KEY",
    0x000F: "NEXT_PACKET_KEY",
    0x0010: "NEXT_IV",
    0x0011: "SECRET",
    0x0012: "ENCAP",
    0x0013: "ROLL_GENERATION",
    0x0014: "GREASE_QUIC_BIT",
    0x0020: "CONN_STATS",
    0x0021: "TABLE_STATS",
    0x0030: "COUNT",
    0x0031: "PN",
    0x0032: "REMOTE_ADDR",
    0x0033: "DETAIL",
    0x0034: "MTU",
}


class QOTLV(Packet):
    """One v1 TLV: type (16), length (16), value."""

    name = "quicoff TLV"
    fields_desc = [
        ShortEnumField("type", 0, _QO_TLVS),
        FieldLenField("length", None, length_of="value", fmt="!H"),
        StrLenField("value", b"", length_from=lambda p: p.length),
    ]

    def extract_padding(self, s):
        return b"", s


class QOSignal(Packet):
    """v1 signaling: ADD, UPDATE, REMOVE, QUERY, ACK, STATS, EVENT (docs/protocol.md §4.1)."""

    name = "quicoff signal"
    fields_desc = [
        XByteField("magic", 0x51),
        ByteField("version", 1),
        ByteEnumField("type", 0x01, _QO_TYPES),
        XByteField("flags", 0),  # ACK: acked type; EVENT: event code
        IntField("request_id", 0),
        IntField("index", 0),
        ByteEnumField("dir", 0, {0: "tx", 1: "rx"}),  # "direction" is a Scapy Packet attribute
        ByteEnumField("status", 0, _QO_STATUS),
        FieldLenField("tlv_len", None, length_of="tlvs", fmt="!H"),
        PacketListField("tlvs", [], QOTLV, length_from=lambda p: p.tlv_len),
    ]

    def extract_padding(self, s):
        return b"", s

    def tlv(self, t):
        """The value of TLV `t` (number or registry name), or None."""
        for x in self.tlvs:
            if x.type == t or _QO_TLVS.get(x.type) == t:
                return x.value
        return None

    def mysummary(self):
        return self.sprintf("quicoff %type% req=%request_id% index=%index% %dir% %status%")


class QOData(Packet):
    """v1 data: DATA_TO_OFFLOAD (0x10) / DATA_TO_HOST (0x90) + the QUIC packet (§4.2)."""

    name = "quicoff data"
    fields_desc = [
        XByteField("magic", 0x51),
        ByteField("version", 1),
        ByteEnumField("type", 0x10, _QO_TYPES),
        XByteField("flags", 0),
        IntField("index", 0),
        LongField("pn", 0),
        ShortField("length", None),  # of the QUIC packet; None = computed
        ByteEnumField("status", 0, _QO_STATUS),
        BitField("level", 0, 4),
        BitField("reserved", 0, 3),
        BitField("key_phase", 0, 1),
    ]

    def post_build(self, pkt, pay):
        if self.length is None:
            pkt = pkt[:16] + len(pay).to_bytes(2, "big") + pkt[18:]
        return pkt + pay

    def extract_padding(self, s):
        return s[: self.length], s[self.length :]

    def mysummary(self):
        return self.sprintf("quicoff %type% index=%index% pn=%pn% %status%")


class QOTrain(Packet):
    """v1 DATA_TRAIN (0x11, §4.2.1): `count` plaintext QUIC packets of one TX
    entry, PNs pn, pn+1, ..., each `segment_size` bytes except the last, as
    the payload (concatenated)."""

    name = "quicoff train"
    fields_desc = [
        XByteField("magic", 0x51),
        ByteField("version", 1),
        ByteEnumField("type", 0x11, _QO_TYPES),
        XByteField("flags", 0),
        IntField("index", 0),
        LongField("pn", 0),
        ShortField("length", None),  # of all the packets; None = computed
        ShortField("reserved", 0),
        ShortField("segment_size", 0),
        ShortField("count", 0),
    ]

    def post_build(self, pkt, pay):
        if self.length is None:
            pkt = pkt[:16] + len(pay).to_bytes(2, "big") + pkt[18:]
        return pkt + pay

    def extract_padding(self, s):
        return s[: self.length], s[self.length :]

    def mysummary(self):
        return self.sprintf("quicoff train index=%index% pn=%pn% %count%x%segment_size%")


class QOHostOffload(Packet):
    """Dissection entry for EtherType 0x88B5: picks signaling_peer (first byte
    0), signaling_host (1), QOData, QOTrain or QOSignal (0x51 + Type)."""

    name = "quicoff host<->offload"

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt:
            b0 = _pkt[0]
            if b0 == 0:
                return signaling_peer
            if b0 == 1:
                return signaling_host
            if b0 == 0x51 and len(_pkt) >= 3:
                if _pkt[2] == 0x11:
                    return QOTrain
                return QOData if _pkt[2] in (0x10, 0x90) else QOSignal
        return _conf.raw_layer


def qo_tlv(t, value) -> QOTLV:
    """A QOTLV from a registry name or number and bytes/int (ints as the TLV's width)."""
    if isinstance(t, str):
        t = {v: k for k, v in _QO_TLVS.items()}[t]
    if isinstance(value, int):
        # 1-byte: SUITE, LEVEL, NONCE_LAYOUT, FAIL_ACTION, GREASE_QUIC_BIT; 4-byte:
        # QUIC_VERSION, PATH_ID, KEY_GENERATION, ROLL_GENERATION, MTU; the rest 8
        # (tests/python/test_wire_tlv_table.py holds this to include/quicoff/wire_tlvs.h)
        width = {
            0x0001: 1,
            0x0002: 1,
            0x0007: 1,
            0x0008: 1,
            0x0014: 1,
            0x0003: 4,
            0x0006: 4,
            0x000B: 4,
            0x0013: 4,
            0x0034: 4,
        }.get(t, 8)
        value = value.to_bytes(width, "big")
    return QOTLV(type=t, value=bytes(value))


__all__ += [
    "signaling_host",
    "signaling_peer",
    "data_pkt",
    "quic",
    "COMPAT_ALGOS",
    "compat_key_field",
    "QOTLV",
    "QOSignal",
    "QOData",
    "QOTrain",
    "QOHostOffload",
    "qo_tlv",
    "ETHERTYPE_SIGNAL",
    "ETHERTYPE_DATA",
    "bind_host_offload",
]


# =====================================================================
# 4. Binding and helpers
# =====================================================================


def bind_udp_port(port: int = 443) -> None:
    """Dissect UDP traffic to or from ``port`` as QUIC. Not done at import
    time, to avoid side effects on other Scapy users (Scapy's own QUIC
    layer may be bound to 443 too; the latest binding wins)."""
    bind_layers(UDP, QUIC, dport=port)
    bind_layers(UDP, QUIC, sport=port)


def bind_host_offload() -> None:
    """Binds the host <-> offload frames to Ethernet (and 802.1Q): building
    ``Ether()/signaling_host()`` sets EtherType 0x88B5 (``/data_pkt()``: 0x88B6)
    as the DPU prototype's scripts expect; dissecting 0x88B5 dispatches on the first
    byte, 0x88B6 is ``data_pkt``/``quic``.  Done at import time: the two
    EtherTypes are IEEE local-experimental ones nothing else in Scapy uses."""
    for lower in (Ether, Dot1Q):
        for cls in (signaling_host, signaling_peer, QOSignal, QOData, QOTrain):
            bind_top_down(lower, cls, type=ETHERTYPE_SIGNAL)
        bind_bottom_up(lower, QOHostOffload, type=ETHERTYPE_SIGNAL)
        bind_layers(lower, data_pkt, type=ETHERTYPE_DATA)
    bind_layers(data_pkt, quic)
    bind_layers(QOData, QUIC)


bind_host_offload()


def dissect_datagram(datagram: bytes, dcid_len: int = DEFAULT_SHORT_DCID_LEN) -> list[Packet]:
    """Dissect every coalesced packet of a UDP payload (RFC 9000 §12.2)."""
    from quicoff.ref.header import split_coalesced

    return [
        QUIC(datagram[start:end], dcid_len=dcid_len)
        for start, end in split_coalesced(datagram, dcid_len)
    ]
