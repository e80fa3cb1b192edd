# SPDX-License-Identifier: Apache-2.0
"""Host <-> offload frames for the quicoff-dpdk tests, written from
docs/protocol.md (independently of src/wire.c, so the tests cross-check it).

Only what the tests need: v1 ADD / UPDATE / REMOVE / QUERY / DATA_TO_OFFLOAD
encoders, ACK / STATS / EVENT / DATA_TO_HOST decoders, and seed 000's compat
signaling_peer / signaling_host / data_pkt.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from typing import Dict, Optional

ETH_SIGNAL = 0x88B5
ETH_DATA = 0x88B6
MAGIC, VERSION = 0x51, 0x01

ADD, UPDATE, REMOVE, QUERY, DATA_TO_OFFLOAD = 0x01, 0x02, 0x03, 0x04, 0x10
ACK, STATS, EVENT, DATA_TO_HOST = 0x81, 0x82, 0x83, 0x90

TX, RX = 0, 1
SUITES = {"aes-128-gcm": 0, "aes-256-gcm": 1, "aes-128-ccm": 2, "chacha20-poly1305": 3}
NONCE = {"rfc9001": 0, "multipath": 1, "seed000": 2}
STATUS = ["ok", "unknown_connection", "auth_failed", "malformed", "key_phase_unavailable",
          "usage_limit_reached", "key_exhausted", "unsupported", "no_space", "invalid_argument",
          "exists", "table_full", "no_memory", "backend_unavailable"]
EVENTS = {1: "auth_failed", 2: "usage_limit_reached", 3: "key_update",
          4: "unknown_connection", 5: "key_exhausted", 6: "key_phase_unavailable", 7: "too_big"}

T_SUITE, T_LEVEL, T_QUIC_VERSION, T_DCID, T_LOCAL_ADDR = 1, 2, 3, 4, 5
T_PATH_ID, T_NONCE_LAYOUT, T_FAIL_ACTION, T_LARGEST_PN, T_USAGE_THRESHOLD = 6, 7, 8, 9, 10
T_KEY_GENERATION, T_PACKET_KEY, T_IV, T_HP_KEY, T_NEXT_PACKET_KEY = 11, 12, 13, 14, 15
T_NEXT_IV, T_SECRET, T_ENCAP, T_ROLL_GENERATION = 16, 17, 18, 19
T_GREASE_QUIC_BIT = 0x14
T_CONN_STATS, T_TABLE_STATS, T_COUNT, T_PN, T_REMOTE_ADDR, T_DETAIL = 0x20, 0x21, 0x30, 0x31, 0x32, 0x33
T_MTU = 0x34

CONN_STATS = ["packets", "bytes", "auth_failures", "malformed", "key_phase_unavailable",
              "key_updates", "key_generation", "largest_pn", "key_packets"]


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def eth(dst: str, src: str, ethertype: int) -> bytes:
    return mac_bytes(dst) + mac_bytes(src) + struct.pack("!H", ethertype)


def tlv(t: int, v: bytes) -> bytes:
    return struct.pack("!HH", t, len(v)) + v


def sig_header(typ: int, flags: int, request_id: int, index: int, direction: int,
               tlvs: bytes = b"", status: int = 0) -> bytes:
    return struct.pack("!BBBBIIBBH", MAGIC, VERSION, typ, flags, request_id, index, direction,
                       status, len(tlvs)) + tlvs


def encap_tlv(dst_mac: str, src_mac: str, src_ip: str, dst_ip: str, sport: int, dport: int,
              ttl: int = 64, tos: int = 0, vlan: Optional[int] = None) -> bytes:
    s, d = ipaddress.ip_address(src_ip), ipaddress.ip_address(dst_ip)
    v = (mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack("!HBBBBHH", vlan or 0,
         1 if vlan is not None else 0, s.version, ttl, tos, sport, dport) + s.packed + d.packed)
    return tlv(T_ENCAP, v)


def add(request_id: int, index: int, direction: int, suite: str, key: bytes, iv: bytes,
        hp: bytes, dcid: bytes = b"", path_id: int = 0, nonce: str = "rfc9001",
        largest_pn: Optional[int] = None, encap: bytes = b"", replace: bool = False,
        fail_pass: bool = False, threshold: Optional[int] = None,
        key_generation: int = 0, next_key: Optional[bytes] = None,
        next_iv: Optional[bytes] = None, level: int = 0,
        local_addr: Optional[tuple] = None,
        grease_quic_bit: Optional[bool] = None) -> bytes:
    t = tlv(T_SUITE, bytes([SUITES[suite]]))
    if level:
        t += tlv(T_LEVEL, bytes([level]))
    if dcid:
        t += tlv(T_DCID, dcid)
    if local_addr is not None:  # (ip, port): zero-length CIDs are matched by address
        a = ipaddress.ip_address(local_addr[0])
        t += tlv(T_LOCAL_ADDR, struct.pack("!BH", a.version, local_addr[1]) + a.packed)
    if path_id:
        t += tlv(T_PATH_ID, struct.pack("!I", path_id))
    if nonce != "rfc9001":
        t += tlv(T_NONCE_LAYOUT, bytes([NONCE[nonce]]))
    if fail_pass:
        t += tlv(T_FAIL_ACTION, b"\x01")
    if largest_pn is not None:
        t += tlv(T_LARGEST_PN, struct.pack("!Q", largest_pn))
    if threshold is not None:
        t += tlv(T_USAGE_THRESHOLD, struct.pack("!Q", threshold))
    if key_generation:
        t += tlv(T_KEY_GENERATION, struct.pack("!I", key_generation))
    t += tlv(T_PACKET_KEY, key) + tlv(T_IV, iv) + tlv(T_HP_KEY, hp)
    if next_key is not None:
        t += tlv(T_NEXT_PACKET_KEY, next_key) + tlv(T_NEXT_IV, next_iv)
    t += encap
    if grease_quic_bit is not None:  # None: absent (= accepted)
        t += tlv(T_GREASE_QUIC_BIT, bytes([1 if grease_quic_bit else 0]))
    return sig_header(ADD, 1 if replace else 0, request_id, index, direction, t)


def update(request_id: int, index: int, direction: int, key_generation: Optional[int] = None,
           key: Optional[bytes] = None, iv: Optional[bytes] = None,
           roll_to: Optional[int] = None, drop_old: bool = False, encap: bytes = b"") -> bytes:
    t = b""
    flags = 0
    if key_generation is not None:
        t += tlv(T_KEY_GENERATION, struct.pack("!I", key_generation))
        t += tlv(T_PACKET_KEY, key) + tlv(T_IV, iv)
    if roll_to is not None:
        flags |= 1
        t += tlv(T_ROLL_GENERATION, struct.pack("!I", roll_to))
    if drop_old:
        flags |= 2
    t += encap
    return sig_header(UPDATE, flags, request_id, index, direction, t)


def remove(request_id: int, index: int, direction: int) -> bytes:
    return sig_header(REMOVE, 0, request_id, index, direction)


def query(request_id: int, index: int, direction: int, conn: bool = True,
          table: bool = False) -> bytes:
    return sig_header(QUERY, (1 if conn else 0) | (2 if table else 0), request_id, index, direction)


def data_to_offload(index: int, pn: int, quic: bytes) -> bytes:
    return struct.pack("!BBBBIQHBB", MAGIC, VERSION, DATA_TO_OFFLOAD, 0, index, pn, len(quic),
                       0, 0) + quic


# ---------------------------------------------------------------- compat (seed 000)

def _key256(k: bytes) -> bytes:
    return k.rjust(32, b"\0")  # a 256-bit number: 128-bit keys left-padded (§3.4)


def compat_peer(index: int, algo: int, hp: bytes, key: bytes, iv: bytes, path_id: int,
                dcid: bytes, full_pn: int) -> bytes:
    """listing 4.10: RX entry keyed by DCID (Type 0)."""
    return (struct.pack("!BHB", 0, index, algo) + _key256(hp) + _key256(key) + iv +
            struct.pack("!I", path_id) + dcid + struct.pack("!Q", full_pn))


def compat_host(index: int, algo: int, hp: bytes, key: bytes, iv: bytes, path_id: int,
                dcid_len: int) -> bytes:
    """listing 4.9: TX entry keyed by index (Type 1)."""
    return (struct.pack("!BHB", 1, index, algo) + _key256(hp) + _key256(key) + iv +
            struct.pack("!IB", path_id, dcid_len))


def compat_data(index: int, full_pn: int, quic: bytes) -> bytes:
    """listing 4.11: data_pkt + QUIC packet (on 0x88B6)."""
    return struct.pack("!HQ", index, full_pn) + quic


# ---------------------------------------------------------------- decoding

@dataclass
class Frame:
    ethertype: int
    typ: int = 0
    flags: int = 0
    request_id: int = 0
    index: int = 0
    direction: int = 0
    status: int = 0
    tlvs: Dict[int, bytes] = field(default_factory=dict)
    pn: int = 0
    level: int = 0
    key_phase: int = 0
    quic: bytes = b""

    @property
    def status_name(self) -> str:
        return STATUS[self.status] if self.status < len(STATUS) else str(self.status)

    def conn_stats(self) -> Dict[str, int]:
        v = self.tlvs.get(T_CONN_STATS, b"")
        return {n: struct.unpack_from("!Q", v, 8 * i)[0] for i, n in enumerate(CONN_STATS)
                if 8 * i + 8 <= len(v)}

    def u64(self, t: int) -> Optional[int]:
        v = self.tlvs.get(t)
        return struct.unpack("!Q", v)[0] if v is not None else None

    def u32(self, t: int) -> Optional[int]:
        v = self.tlvs.get(t)
        return struct.unpack("!I", v)[0] if v is not None else None


def decode(frame: bytes) -> Optional[Frame]:
    """A frame from the offload's host port (Ethernet header included), or None
    when it is no host <-> offload frame."""
    et = struct.unpack_from("!H", frame, 12)[0]
    off = 14
    if et == 0x8100:
        et = struct.unpack_from("!H", frame, 16)[0]
        off = 18
    p = frame[off:]
    if et == ETH_DATA:
        index, pn = struct.unpack_from("!HQ", p, 0)
        return Frame(et, typ=-1, index=index, pn=pn, quic=p[10:])
    if et != ETH_SIGNAL or len(p) < 16 or p[0] != MAGIC:
        return None
    typ = p[2]
    if typ == DATA_TO_HOST:
        _, _, _, flags, index, pn, length, status, lk = struct.unpack_from("!BBBBIQHBB", p, 0)
        return Frame(et, typ, flags=flags, index=index, pn=pn, status=status, level=lk >> 4,
                     key_phase=lk & 1, quic=p[20:20 + length])
    _, _, typ, flags, rid, index, direction, status, tl = struct.unpack_from("!BBBBIIBBH", p, 0)
    tlvs, pos = {}, 16
    while pos + 4 <= 16 + tl:
        t, ln = struct.unpack_from("!HH", p, pos)
        tlvs[t] = p[pos + 4:pos + 4 + ln]
        pos += 4 + ln
    return Frame(et, typ, flags=flags, request_id=rid, index=index, direction=direction,
                 status=status, tlvs=tlvs)
