# SPDX-License-Identifier: Apache-2.0
"""The quicoff-dpdk tests' shorthand for host <-> offload frames, with no
codec of its own: every frame is written and read by ``quicoff.wire`` (the
Python library), and every frame read is also dissected by the Scapy layer
(``quicoff.scapy_layers``, written from the protocol's and the prototype's
own definitions) and the two readings must agree, so the tests keep an
independent cross-check of what the application sends.  Frames a correct
host would never send (for the tests of the app's rejections) are crafted
with the Scapy layer, since quicoff.wire refuses to encode them.

Builders return the bytes after the EtherType; :func:`decode` returns a
:class:`Frame` (or None for a frame that is no host <-> offload frame).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Dict, Optional

from scapy.layers.l2 import Ether

from quicoff import wire
from quicoff.scapy_layers import QOData, QOSignal, QOTLV, data_pkt

ETH_SIGNAL = wire.ETHERTYPE_SIGNAL
ETH_DATA = wire.ETHERTYPE_DATA

ADD, UPDATE, REMOVE, QUERY = (wire.KINDS[k] for k in ("add", "update", "remove", "query"))
DATA_TO_OFFLOAD = wire.KINDS["data_to_offload"]
ACK, STATS, EVENT = (wire.KINDS[k] for k in ("ack", "stats", "event"))
DATA_TO_HOST = wire.KINDS["data_to_host"]
COMPAT_DATA = -1  #: Frame.typ of a compat data_pkt (it has no Type byte)

TX, RX = wire.DIRECTIONS.index("tx"), wire.DIRECTIONS.index("rx")
SUITES = {name: code for code, name in enumerate(wire.SUITES)}

# TLV types, for tests that craft or inspect TLVs by number
T_SUITE, T_LEVEL, T_DCID, T_SECRET = wire.TLV.SUITE, wire.TLV.LEVEL, wire.TLV.DCID, wire.TLV.SECRET
T_COUNT, T_PN, T_MTU = wire.TLV.COUNT, wire.TLV.PN, wire.TLV.MTU


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def eth(dst: str, src: str, ethertype: int) -> bytes:
    return mac_bytes(dst) + mac_bytes(src) + struct.pack("!H", ethertype)


# ---------------------------------------------------------------- requests (quicoff.wire)
# Requests a correct host never sends (a direction byte that is neither TX nor
# RX, a key of the wrong length), which the tests use to check the app's
# answers, are encoded by quicoff.wire with valid stand-ins, then the bad
# values are put in with the Scapy layer (quicoff.wire refuses to write them).


def _valid_direction(direction):
    return direction if direction in (TX, RX, "tx", "rx") else TX


def _patched(raw: bytes, direction, values: Optional[Dict[int, bytes]] = None) -> bytes:
    if direction in (TX, RX, "tx", "rx") and not values:
        return raw
    s = QOSignal(raw)
    if direction not in (TX, RX, "tx", "rx"):
        s.dir = direction
    for x in s.tlvs:
        if values and x.type in values:
            x.value, x.length = values[x.type], None
    s.tlv_len = None
    return bytes(s)


def encap_tlv(
    dst_mac: str,
    src_mac: str,
    src_ip: str,
    dst_ip: str,
    sport: int,
    dport: int,
    ttl: int = 64,
    tos: int = 0,
    vlan: Optional[int] = None,
) -> wire.Encap:
    """A TX entry's encapsulation (the ENCAP TLV's content), for add()/update()."""
    return wire.Encap(
        dst_mac=dst_mac,
        src_mac=src_mac,
        src_ip=src_ip,
        dst_ip=dst_ip,
        src_port=sport,
        dst_port=dport,
        ttl=ttl,
        tos=tos,
        vlan=vlan,
    )


def add(
    request_id: int,
    index: int,
    direction: int,
    suite: str,
    key: bytes,
    iv: bytes,
    hp: bytes,
    dcid: bytes = b"",
    path_id: int = 0,
    nonce: str = "rfc9001",
    largest_pn: Optional[int] = None,
    encap: Optional[wire.Encap] = None,
    replace: bool = False,
    fail_pass: bool = False,
    threshold: Optional[int] = None,
    key_generation: int = 0,
    next_key: Optional[bytes] = None,
    next_iv: Optional[bytes] = None,
    level: int = 0,
    local_addr: Optional[tuple] = None,
    grease_quic_bit: Optional[bool] = None,
) -> bytes:
    klen = wire.suite_key_len(suite)
    want = {wire.TLV.PACKET_KEY: (key, klen), wire.TLV.IV: (iv, 12), wire.TLV.HP_KEY: (hp, klen)}
    bad = {t: bytes(v) for t, (v, n) in want.items() if len(v) != n}
    key, iv, hp = (bytes(n) if len(v) != n else v for v, n in want.values())
    return _patched(
        wire.Add(
            request_id=request_id,
            index=index,
            direction=_valid_direction(direction),
            suite=suite,
            level=level,
            dcid=dcid,
            local_addr=local_addr,
            path_id=path_id,
            nonce_layout=nonce,
            fail_action="pass" if fail_pass else "drop",
            largest_pn=wire.PN_NONE if largest_pn is None else largest_pn,
            usage_threshold=threshold or 0,
            key_generation=key_generation,
            key=key,
            iv=iv,
            hp=hp,
            next_key=next_key,
            next_iv=next_iv,
            encap=encap,
            replace=replace,
            grease_quic_bit=True if grease_quic_bit is None else grease_quic_bit,
        ).encode(),
        direction,
        bad,
    )


def update(
    request_id: int,
    index: int,
    direction: int,
    key_generation: Optional[int] = None,
    key: Optional[bytes] = None,
    iv: Optional[bytes] = None,
    roll_to: Optional[int] = None,
    drop_old: bool = False,
    encap: Optional[wire.Encap] = None,
) -> bytes:
    return _patched(
        wire.Update(
            request_id=request_id,
            index=index,
            direction=_valid_direction(direction),
            key_generation=key_generation,
            key=key,
            iv=iv,
            roll_generation=roll_to,
            drop_old=drop_old,
            encap=encap,
        ).encode(),
        direction,
    )


def remove(request_id: int, index: int, direction: int) -> bytes:
    return _patched(
        wire.Remove(
            request_id=request_id, index=index, direction=_valid_direction(direction)
        ).encode(),
        direction,
    )


def query(
    request_id: int, index: int, direction: int, conn: bool = True, table: bool = False
) -> bytes:
    return _patched(
        wire.Query(
            request_id=request_id,
            index=index,
            direction=_valid_direction(direction),
            conn=conn,
            table=table,
        ).encode(),
        direction,
    )


def data_to_offload(index: int, pn: int, quic: bytes) -> bytes:
    return wire.DataToOffload(index=index, pn=pn, packet=quic).encode()


def compat_peer(
    index: int, algo: int, hp: bytes, key: bytes, iv: bytes, path_id: int, dcid: bytes, full_pn: int
) -> bytes:
    """signaling_peer: an RX entry keyed by DCID (Type 0)."""
    return wire.CompatPeer(
        index=index,
        suite=algo,
        hp_key=hp,
        quic_key=key,
        iv=iv,
        path_id=path_id,
        dcid=dcid,
        full_pn=full_pn,
    ).encode()


def compat_host(
    index: int, algo: int, hp: bytes, key: bytes, iv: bytes, path_id: int, dcid_len: int
) -> bytes:
    """signaling_host: a TX entry keyed by index (Type 1)."""
    return wire.CompatHost(
        index=index, suite=algo, hp_key=hp, quic_key=key, iv=iv, path_id=path_id, dcid_len=dcid_len
    ).encode()


def compat_data(index: int, full_pn: int, quic: bytes) -> bytes:
    """data_pkt + QUIC packet (on 0x88B6)."""
    return wire.CompatData(index=index, full_pn=full_pn, packet=quic).encode()


# ---------------------------------------------------------------- crafted (Scapy)


def tlv(t: int, v: bytes) -> bytes:
    """One TLV as given, valid or not."""
    return bytes(QOTLV(type=t, value=v))


def sig_header(
    typ: int,
    flags: int,
    request_id: int,
    index: int,
    direction: int,
    tlvs: bytes = b"",
    status: int = 0,
) -> bytes:
    """A v1 signaling frame with the TLV bytes as given, valid or not."""
    return (
        bytes(
            QOSignal(
                type=typ,
                flags=flags,
                request_id=request_id,
                index=index,
                dir=direction,
                status=status,
                tlv_len=len(tlvs),
            )
        )
        + tlvs
    )


def crafted_compat_data(index: int, full_pn: int, quic: bytes) -> bytes:
    """A data_pkt with the Full_pn as given, also past 2^62-1."""
    return bytes(data_pkt(Index=index, Full_pn=full_pn)) + quic


# ---------------------------------------------------------------- reading


@dataclass
class Frame:
    """What the tests look at in a frame from the offload."""

    ethertype: int
    typ: int = 0  #: v1 Type byte; COMPAT_DATA for a data_pkt
    flags: int = 0  #: byte 3: ACK: acked Type; EVENT: event code; data: result flags
    request_id: int = 0
    index: int = 0
    direction: int = 0
    status: int = 0
    status_name: str = "ok"
    tlvs: Dict[int, bytes] = field(default_factory=dict)
    pn: int = 0
    level: int = 0
    key_phase: int = 0
    quic: bytes = b""
    message: object = None  #: the quicoff.wire message

    def conn_stats(self) -> Dict[str, int]:
        return dict(getattr(self.message, "conn", None) or {})

    def u64(self, t: int) -> Optional[int]:
        v = self.tlvs.get(t)
        return int.from_bytes(v, "big") if v is not None and len(v) == 8 else None

    def u32(self, t: int) -> Optional[int]:
        v = self.tlvs.get(t)
        return int.from_bytes(v, "big") if v is not None and len(v) == 4 else None


def _code(value, names) -> int:
    return names.index(value) if isinstance(value, str) else int(value)


def decode(frame: bytes) -> Optional[Frame]:
    """A frame from the offload's host port (Ethernet header included), read
    by quicoff.wire and checked against Scapy's dissection; None when it is
    no host <-> offload frame."""
    try:
        e, msg = wire.decode_frame(frame)
    except wire.WireError as err:
        if err.status == "unsupported":
            return None  # another EtherType: not ours
        raise
    et = e.ethertype
    pkt = Ether(bytes(frame))
    if isinstance(msg, wire.CompatData):
        d = pkt[data_pkt]
        assert (d.Index, d.Full_pn) == (msg.index, msg.full_pn), "Scapy reads data_pkt otherwise"
        return Frame(
            et, COMPAT_DATA, index=msg.index, pn=msg.full_pn, quic=bytes(msg.packet), message=msg
        )
    if isinstance(msg, wire.DataToHost):
        d = pkt[QOData]
        f = Frame(
            et,
            DATA_TO_HOST,
            flags=msg.flags,
            index=msg.index,
            pn=msg.pn,
            status=_code(msg.status, wire.STATUSES),
            status_name=str(msg.status),
            level=_code(msg.level, wire.LEVELS),
            key_phase=msg.key_phase,
            quic=bytes(msg.packet),
            message=msg,
        )
        assert (d.type, d.flags, d.index, d.pn, d.status, d.level, d.key_phase) == (
            f.typ,
            f.flags,
            f.index,
            f.pn,
            f.status,
            f.level,
            f.key_phase,
        ), "Scapy reads DATA_TO_HOST otherwise"
        return f
    s = pkt[QOSignal]
    kind_code = wire.KINDS[msg.kind]
    if msg.kind == "ack":
        flags = wire.KINDS.get(msg.acked, msg.acked)
    elif msg.kind == "event":
        flags = wire.EVENTS.get(msg.code, msg.code)
    else:
        flags = s.flags
    direction = (
        msg.direction
        if isinstance(msg.direction, int)
        else wire.DIRECTIONS.index(msg.direction)
        if msg.direction in wire.DIRECTIONS
        else wire.DIRECTION_NONE
    )
    status = getattr(msg, "status", "ok")
    f = Frame(
        et,
        kind_code,
        flags=flags,
        request_id=msg.seq if msg.kind == "event" else msg.request_id,
        index=msg.index,
        direction=direction,
        status=_code(status, wire.STATUSES),
        status_name=str(status),
        tlvs={t.type: bytes(t.value) for t in s.tlvs},
        message=msg,
    )
    assert (s.type, s.flags, s.request_id, s.index, s.dir, s.status) == (
        f.typ,
        f.flags,
        f.request_id,
        f.index,
        f.direction,
        f.status,
    ), "Scapy reads the signaling header otherwise"
    return f
