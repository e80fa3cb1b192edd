"""Scapy layers for the quicoff project.

Sections:

1. Field types shared by the layers (QUIC varint, packet number).
2. QUIC wire headers (RFC 9000 §17, RFC 9369 §3.2): ``QUICLong``,
   ``QUICShort`` and the ``QUIC`` dispatcher that picks one by the header
   form bit.
3. Host <-> offload-engine frames (reserved; to be added).
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

from scapy.fields import (BitField, ConditionalField, Field, FieldLenField,
                          StrLenField, XIntField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from quicoff.ref.varint import decode_varint, encode_varint
from quicoff.ref.versions import LONG_TYPE_CODES, LONG_TYPE_NAMES, VERSION_1

TAG_LEN = 16                 # AEAD tag counted by the Length field
DEFAULT_SHORT_DCID_LEN = 8

__all__ = [
    "VarInt", "QUICVarIntField", "PacketNumberField",
    "QUIC", "QUICLong", "QUICShort", "DEFAULT_SHORT_DCID_LEN",
    "bind_udp_port", "dissect_datagram",
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
        ConditionalField(QUICVarIntField("token_len", None, length_of="token"),
                         lambda p: _long_type(p) == "initial"),
        ConditionalField(StrLenField("token", b"",
                                     length_from=lambda p: p.token_len),
                         lambda p: _long_type(p) == "initial"),
        ConditionalField(QUICVarIntField("length", None, compute=_long_length),
                         _has_pn),
        ConditionalField(PacketNumberField("pn", 0), _has_pn),
    ]

    def packet_type(self) -> str:
        """"initial", "0rtt", "handshake", "retry", "vn" or "unknown"."""
        return _long_type(self)

    @property
    def type_specific(self) -> int:
        return (self.reserved << 2) | self.pn_len

    @classmethod
    def with_type(cls, packet_type: str, version: int = VERSION_1, **fields):
        """``QUICLong.with_type("handshake", version=VERSION_2, dcid=...)``"""
        return cls(long_type=LONG_TYPE_CODES[version][packet_type],
                   version=version, **fields)

    def extract_padding(self, s):
        if not _has_pn(self) or self.length is None:
            return s, None
        body = max(0, int(self.length) - (self.pn_len + 1))
        return s[:body], s[body:]

    def mysummary(self):
        return self.sprintf(f"QUIC {self.packet_type()} v%version% "
                            "dcid=%dcid% scid=%scid%")


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
            QUICShort._subclasses[n] = type(f"QUICShort_dcid{n}", (QUICShort,),
                                            {"default_dcid_len": n})
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
# (Reserved: the descriptors exchanged between the host and the offload
# engine go here, each as its own Packet subclass, with their bind_layers
# calls in section 4.)


# =====================================================================
# 4. Binding and helpers
# =====================================================================

def bind_udp_port(port: int = 443) -> None:
    """Dissect UDP traffic to or from ``port`` as QUIC. Not done at import
    time, to avoid side effects on other Scapy users (Scapy's own QUIC
    layer may be bound to 443 too; the latest binding wins)."""
    bind_layers(UDP, QUIC, dport=port)
    bind_layers(UDP, QUIC, sport=port)


def dissect_datagram(datagram: bytes, dcid_len: int = DEFAULT_SHORT_DCID_LEN
                     ) -> list[Packet]:
    """Dissect every coalesced packet of a UDP payload (RFC 9000 §12.2)."""
    from quicoff.ref.header import split_coalesced
    return [QUIC(datagram[start:end], dcid_len=dcid_len)
            for start, end in split_coalesced(datagram, dcid_len)]
