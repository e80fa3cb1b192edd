# SPDX-License-Identifier: Apache-2.0
"""``quicoff decrypt``: decrypt every QUIC packet of a capture with the engine.

Keys
  * Initial: from the client's first Destination Connection ID (QUIC v1 and
    v2 salts; after a Retry, from the DCID the client then uses).
  * Handshake, 0-RTT, 1-RTT: from a TLS key log (NSS SSLKEYLOGFILE format,
    the file and/or Decryption Secrets Blocks in a pcapng input), found by the
    client random of the ClientHello, which is read from the CRYPTO frames of
    the decrypted client Initials.  The cipher suite comes from the ServerHello
    in the server Initials (for 0-RTT before it: tried, by secret length).
  * Key updates: each 1-RTT entry holds the current and the next key
    generation; when the engine reports that a packet moved a connection to
    the next phase, the generation after it is installed.  A 1-RTT packet
    that still fails is tried (in a scratch engine) with generation g-1 (a
    late packet of the old phase, reordered in the capture) and g+2 (a sender
    that updated twice without sending in between: same phase bit, new keys);
    only then does it count as failed.  Each direction is followed on its
    own.  The header-protection key is generation 0's throughout (RFC 9001
    §6), so entries are installed with raw keys, never a later secret.

Every protected packet goes through the C data plane (:class:`quicoff.Engine`,
``unprotect``): one engine per Destination-CID length, since a table parses
short headers with one local CID length, and the two directions of a
connection usually differ.  CIDs are learned from long headers (SCID), Retry
and NEW_CONNECTION_ID frames; zero-length CIDs are looked up by address.

Output format (pcap in, pcap out; pcapng in, pcapng out)
  Every frame is written, in order, with its original timestamp and link
  layer.  In UDP datagrams that carry QUIC, each packet that decrypted is
  replaced by its plaintext: the header with header protection removed (the
  true first byte -- reserved bits, key phase, packet-number length -- and
  the packet number bytes as encoded on the wire, 1 to 4), then the plaintext
  frames; the 16-byte AEAD tag is dropped.  A long header's Length
  field is rewritten to count packet number + plaintext (same varint width, so
  the header keeps its size and coalesced packets stay parseable).  Packets
  that did not decrypt (auth failed, no keys, Retry, Version Negotiation) are
  kept byte for byte.  IP and UDP lengths and checksums are recomputed.
  IPv4 fragments are reassembled (ipfrag.py): the frame that completes a
  datagram carries all of it, the other fragments are left out; fragments
  of a datagram that never completes are written as captured.  A UDP GSO
  buffer (several datagrams behind one UDP header, as captured on the
  sending host; gso.py) whose segment size is found is written as one
  frame per segment, each with the buffer's timestamp and headers.
  Wireshark/tshark see valid UDP; their QUIC dissector, expecting protection,
  will not make sense of the plaintext (read it with ``quicoff.frames``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, List, Optional, Tuple

from . import frames as qframes
from . import gso
from .ipfrag import Reassembler, is_ipv6_fragment, parse_ipv4_fragment
from .keylog import (
    CLIENT_1RTT,
    CLIENT_EARLY,
    CLIENT_HANDSHAKE,
    SERVER_1RTT,
    SERVER_HANDSHAKE,
    KeyLog,
)
from .pcap_io import (
    CaptureError,
    CaptureReader,
    CaptureWriter,
    Packet,
    Secrets,
    parse_udp,
    replace_udp_payload,
)
from .ref.errors import Malformed
from .ref.header import parse_header, walk_coalesced
from .tls_peek import TlsPeekError, peek_client_hello, peek_server_hello

__all__ = [
    "decrypt_capture",
    "Decryptor",
    "Report",
    "ConnectionReport",
    "PacketRecord",
    "split_datagram",
    "QuicPacket",
    "SameFileError",
    "VERSION_1",
    "VERSION_2",
]

VERSION_1 = 0x00000001
VERSION_2 = 0x6B3343CF
C2S, S2C = "c2s", "s2c"
_OTHER = {C2S: S2C, S2C: C2S}
_SUITES_BY_SECRET_LEN = {
    32: ("aes-128-gcm", "chacha20-poly1305", "aes-128-ccm"),
    48: ("aes-256-gcm",),
}
_OK = ("ok", "usage_limit_reached")
_NO_KEYS = ("unknown_connection", "key_phase_unavailable", "no_keys")
#: packets of one connection held back while waiting for keys, at most
MAX_PENDING = 4096


def _api():
    """The quicoff package (Engine and key schedule), imported late."""
    import quicoff

    return quicoff


def version_name(version: Optional[int]) -> str:
    if version == VERSION_1:
        return "v1"
    if version == VERSION_2:
        return "v2"
    return "-" if version is None else "0x%08x" % version


# --------------------------------------------------------------------------
# QUIC packets in a datagram (no keys needed)


@dataclass
class QuicPacket:
    """One QUIC packet of a datagram, before and after decryption."""

    offset: int
    end: int
    form: str  # "long" / "short"
    ptype: str  # initial 0rtt handshake retry vn unknown 1rtt malformed
    version: Optional[int] = None
    dcid: Optional[bytes] = None  # short header: None until matched
    scid: Optional[bytes] = None
    length_off: int = 0  # long header: where the Length varint is, its width
    length_width: int = 0
    pn_off: int = 0
    cut: bool = False  # its end is past a snaplen cut (not decryptable)
    # outcome
    status: Optional[str] = None  # engine status, "no_keys", "pending", "unprotected"
    plaintext: Optional[bytes] = None
    pn: Optional[int] = None
    key_phase: Optional[int] = None
    key_updated: bool = False
    header_len: int = 0  # plaintext[:header_len] is the header
    conn: Optional["Connection"] = None
    direction: Optional[str] = None

    @property
    def category(self) -> str:
        s = self.status
        if s in _OK:
            return "ok"
        if s in _NO_KEYS or s == "pending" or s is None:
            return "no_keys"
        if s == "unprotected":
            return "other"
        return "failed"


def split_datagram(data: bytes, cut: bool = False) -> Tuple[List[QuicPacket], int]:
    """Splits a UDP payload into QUIC packets (RFC 9000 §12.2).

    Returns (packets, end): bytes from ``end`` on are trailing padding.  The
    packets are walked by the reference model (:func:`quicoff.ref.walk_coalesced`,
    which ``split_coalesced`` is made of): only an all-zero
    rest after a packet is padding (:func:`quicoff.ref.is_padding`); any
    other rest is a packet, and is tried -- a greased short header can
    start with 0x00.  Short headers, Retry, Version Negotiation and unknown
    versions run to the end of the datagram.

    ``cut``: ``data`` is the start of a datagram the capture's snaplen cut;
    a long header whose Length runs past the cut is returned as its packet
    type with ``cut`` set (it cannot decrypt, but says whose it is)."""
    out: List[QuicPacket] = []
    n = len(data)
    off = 0  # where the packet being parsed starts
    try:
        # short headers: the DCID length is found later, by CID lookup
        for off, h in walk_coalesced(data, 0):
            if h.form == "short":
                out.append(QuicPacket(off, n, "short", "1rtt"))
                return out, n
            if h.pn_offset is None:  # vn, retry, unknown: no Length, run to the end
                out.append(QuicPacket(off, n, "long", h.packet_type, h.version, h.dcid, h.scid))
                return out, n
            if h.length < 20:  # packet number + 16-byte tag + HP sample cannot fit
                out.append(QuicPacket(off, n, "long", "malformed"))
                return out, n
            out.append(
                QuicPacket(
                    off,
                    h.packet_end,
                    "long",
                    h.packet_type,
                    h.version,
                    h.dcid,
                    h.scid,
                    h.length_offset,
                    h.pn_offset - h.length_offset,
                    h.pn_offset,
                )
            )
            off = h.packet_end
    except Malformed:
        h = None
        if cut:
            try:
                h = parse_header(data, off, 0, check_end=False)
            except Malformed:
                pass
        if h is None or h.pn_offset is None or h.length < 20:
            form = "long" if data[off] & 0x80 else "short"
            out.append(QuicPacket(off, n, form, "malformed", cut=cut))
            return out, n
        out.append(
            QuicPacket(
                off,
                n,
                "long",
                h.packet_type,
                h.version,
                h.dcid,
                h.scid,
                h.length_offset,
                h.pn_offset - h.length_offset,
                h.pn_offset,
                cut=True,
            )
        )
        return out, n
    return out, off


# --------------------------------------------------------------------------
# per-connection state


@dataclass
class _Direction:
    """Keys and packet-number state of one direction of a connection."""

    secrets: List[bytes] = field(default_factory=list)  # 1-RTT secret per generation
    keys: List[object] = field(default_factory=list)  # 1-RTT keys per generation
    generation: int = 0
    largest: Dict[str, int] = field(default_factory=dict)  # pn space -> largest pn
    key_updates: int = 0
    crypto: Dict[str, qframes.Reassembler] = field(default_factory=dict)


@dataclass
class Connection:
    id: int
    client: Tuple[str, int]
    server: Tuple[str, int]
    odcid: bytes
    version: int
    initial_dcid: bytes  # Initial keys come from this (changes after Retry)
    client_cid_len: Optional[int] = None  # length of the CIDs the client issued (its SCIDs)
    server_cid_len: Optional[int] = None
    retry_scids: set = field(default_factory=set)
    vn_seen: bool = False  # the server answered with Version Negotiation
    client_initial_version: Optional[int] = None  # version of the client's last Initial
    client_random: Optional[bytes] = None
    suite: Optional[str] = None  # from the ServerHello
    early_suite: Optional[str] = None  # 0-RTT, found by trial before the ServerHello
    sni: Optional[str] = None
    alpn: List[bytes] = field(default_factory=list)
    dirs: Dict[str, _Direction] = field(
        default_factory=lambda: {C2S: _Direction(), S2C: _Direction()}
    )
    counts: Counter = field(default_factory=Counter)  # ok failed no_keys other
    by_level: Dict[str, Counter] = field(default_factory=dict)  # level -> Counter(status)
    pending: List[Tuple["_Frame", QuicPacket, bytes, Tuple[str, int]]] = field(default_factory=list)

    def secret(self, label: str, keylog: KeyLog) -> Optional[bytes]:
        if self.client_random is None:
            return None
        return keylog.get(self.client_random, label)

    def peer_cid_len(self, d: str) -> Optional[int]:
        """Length of the DCIDs in short headers sent in direction d."""
        return self.server_cid_len if d == C2S else self.client_cid_len


@dataclass
class _Entry:
    engine_len: int
    handle: int
    conn: Connection
    direction: str
    level: str
    version: int
    basis: object  # what the keys came from (initial DCID, suite, generation)


@dataclass
class _Frame:
    item: Packet
    udp: object = None
    packets: List[QuicPacket] = field(default_factory=list)
    trailer: int = 0
    waiting: int = 0  # packets still pending keys (or the frame's other IP fragments)
    data: Optional[bytes] = None  # the frame's bytes if not the captured ones (reassembled)
    drop: bool = False  # an IP fragment whose bytes went into another frame
    cut: bool = False  # the capture holds only the start of the datagram (snaplen)
    # UDP GSO (gso.py): a captured buffer of several datagrams.  This frame
    # keeps the first segment (udp.payload cut to gso_size bytes); the
    # others are frames of their own in ``segments``, written after it.
    gso_size: int = 0
    gso_payload: Optional[bytes] = None  # the whole captured UDP payload
    segments: List["_Frame"] = field(default_factory=list)
    segment: bool = False  # one of another frame's segments (not searched again)


# --------------------------------------------------------------------------
# reports


@dataclass
class PacketRecord:
    """One QUIC packet's outcome (``Decryptor(on_packet=...)``)."""

    frame: int
    connection: Optional[int]
    direction: Optional[str]
    level: str
    status: str
    category: str
    pn: Optional[int]
    key_phase: Optional[int]
    key_updated: bool
    plaintext: Optional[bytes]  # header + plaintext payload (Length adjusted), if ok
    header_len: int  # plaintext[header_len:] is the payload


@dataclass
class ConnectionReport:
    id: int
    client: str
    server: str
    odcid: str
    version: str
    suite: Optional[str]
    sni: Optional[str]
    ok: int
    failed: int
    no_keys: int
    other: int
    key_updates: Dict[str, int]
    levels: Dict[str, Dict[str, int]]

    def line(self) -> str:
        return "%4d  %-45s %-20s %-3s %-17s %7d %6d %7d %5d   %d/%d" % (
            self.id,
            "%s -> %s" % (self.client, self.server),
            self.odcid[:20] or "(empty)",
            self.version,
            self.suite or "-",
            self.ok,
            self.failed,
            self.no_keys,
            self.other,
            self.key_updates.get(C2S, 0),
            self.key_updates.get(S2C, 0),
        )


@dataclass
class Report:
    frames: int = 0
    udp_datagrams: int = 0
    quic_datagrams: int = 0
    other_frames: int = 0  # not UDP, or UDP that is not (recognisably) QUIC
    unattributed: int = 0  # QUIC packets of no connection in the capture
    truncated_input: bool = False
    truncated_datagrams: int = 0  # UDP datagrams cut short by the capture's snaplen
    truncated_packets: int = 0  # QUIC packets in them that lost bytes (not decrypted)
    padding_datagrams: int = 0  # QUIC datagrams ending in all-zero padding
    padding_bytes: int = 0
    unsupported_versions: Dict[int, int] = field(default_factory=dict)  # version -> packets
    ip_fragments: int = 0  # IPv4 fragment frames
    reassembled: int = 0  # datagrams rebuilt from them
    fragments_incomplete: int = 0  # fragment frames of datagrams never completed
    ipv6_fragments: int = 0  # IPv6 fragment frames (not reassembled)
    gso_datagrams: int = 0  # UDP GSO buffers split into their datagrams
    gso_segments: int = 0  # the datagrams (segments) they held
    keylog_entries: int = 0
    engines: Dict[int, dict] = field(default_factory=dict)  # cid length -> Engine.stats()
    connections: List[ConnectionReport] = field(default_factory=list)

    @property
    def totals(self) -> Dict[str, int]:
        t = Counter()
        for c in self.connections:
            t.update(ok=c.ok, failed=c.failed, no_keys=c.no_keys, other=c.other)
        t["no_keys"] += self.unattributed
        return dict(ok=t["ok"], failed=t["failed"], no_keys=t["no_keys"], other=t["other"])

    def format(self) -> str:
        lines = [
            "%4s  %-45s %-20s %-3s %-17s %7s %6s %7s %5s   %s"
            % (
                "conn",
                "client -> server",
                "original dcid",
                "ver",
                "suite",
                "ok",
                "failed",
                "no-keys",
                "other",
                "key updates c>s/s>c",
            )
        ]
        lines += [c.line() for c in self.connections]
        t = self.totals
        lines.append(
            "%d frames, %d UDP datagrams (%d QUIC), %d connections: %d packets ok, "
            "%d failed, %d without keys, %d not protected (Retry/VN)%s"
            % (
                self.frames,
                self.udp_datagrams,
                self.quic_datagrams,
                len(self.connections),
                t["ok"],
                t["failed"],
                t["no_keys"],
                t["other"],
                ", %d QUIC packets of unknown connections" % self.unattributed
                if self.unattributed
                else "",
            )
        )
        for version, n in sorted(self.unsupported_versions.items()):
            lines.append("unsupported version 0x%08x: %d packets" % (version, n))
        if self.padding_datagrams:
            lines.append(
                "padding: %d bytes of zeros after the last packet in %d datagrams"
                % (self.padding_bytes, self.padding_datagrams)
            )
        if self.truncated_datagrams:
            lines.append(
                "warning: %d UDP datagrams cut short by the capture's snaplen: "
                "%d QUIC packets in them truncated, not decrypted (the frames are "
                "written as captured)" % (self.truncated_datagrams, self.truncated_packets)
            )
        if self.ip_fragments:
            lines.append(
                "IPv4 fragments: %d frames, reassembled into %d datagrams%s"
                % (
                    self.ip_fragments,
                    self.reassembled,
                    "; %d frames of incomplete datagrams written as captured"
                    % self.fragments_incomplete
                    if self.fragments_incomplete
                    else "",
                )
            )
        if self.gso_datagrams:
            lines.append(
                "GSO: %d datagrams split into %d packets (each written as a frame "
                "of its own)" % (self.gso_datagrams, self.gso_segments)
            )
        if self.ipv6_fragments:
            lines.append(
                "warning: %d IPv6 fragment frames: not reassembled, not decrypted"
                % self.ipv6_fragments
            )
        if self.truncated_input:
            lines.append("warning: the capture ends inside a record (truncated file)")
        return "\n".join(lines)

    def to_json(self) -> str:
        d = {k: v for k, v in self.__dict__.items() if k != "connections"}
        d["engines"] = {str(k): v for k, v in self.engines.items()}
        d["unsupported_versions"] = {"0x%08x" % k: v for k, v in self.unsupported_versions.items()}
        d["totals"] = self.totals
        d["connections"] = [c.__dict__ for c in self.connections]
        return json.dumps(d, indent=2, default=str)


def _addr(a: Tuple[str, int]) -> str:
    return ("[%s]:%d" if ":" in a[0] else "%s:%d") % a


# --------------------------------------------------------------------------
# the decryptor


class Decryptor:
    """Feeds a capture's packets through the engine, one frame at a time.

    ``feed(item)`` takes the items of a :class:`CaptureReader` and returns the
    (item, new frame bytes or None) pairs that are ready to be written, in
    order; ``finish()`` returns the rest.  A frame whose packets wait for keys
    (e.g. 0-RTT before the ServerHello) holds back the frames after it."""

    def __init__(
        self,
        keylog: Optional[KeyLog] = None,
        *,
        api=None,
        on_packet: Optional[Callable[[PacketRecord], None]] = None,
        backend: str = "auto",
    ):
        self.api = api if api is not None else _api()
        self.keylog = keylog if keylog is not None else KeyLog()
        self.on_packet = on_packet
        self.backend = backend
        self.engines: Dict[int, object] = {}
        self._scratch: Dict[int, object] = {}
        self.conns: List[Connection] = []
        self.cids: Dict[bytes, Tuple[Connection, str]] = {}
        self.cid_lens: set = set()
        self.flows: Dict[tuple, Tuple[Connection, str]] = {}
        self.unknown_flows: Dict[tuple, int] = {}  # (src, dst) -> an unsupported version
        self.fragments = Reassembler()
        self.entries: Dict[tuple, _Entry] = {}
        # per (src, dst): the last GSO segment size and the largest datagram
        # seen whole, tried first when a buffer must be split (gso.py)
        self.gso_hints: Dict[tuple, int] = {}
        self.flow_max: Dict[tuple, int] = {}
        self.report = Report()
        self._queue: Deque[_Frame] = deque()
        self._next_secret = getattr(self.api, "derive_next_secret", None)
        if self._next_secret is None:  # older bindings: the reference key schedule
            from .ref import next_secret as ref_next

            self._next_secret = ref_next

    # -- engines ------------------------------------------------------------
    def _engine(self, cid_len: int, scratch: bool = False):
        pool = self._scratch if scratch else self.engines
        e = pool.get(cid_len)
        if e is None:
            e = pool[cid_len] = self.api.Engine(local_cid_len=cid_len, backend=self.backend)
        return e

    def close(self) -> None:
        for pool in (self.engines, self._scratch):
            for e in pool.values():
                close = getattr(e, "close", None)
                if close:
                    close()
            pool.clear()

    # -- input ----------------------------------------------------------------
    def feed(self, item) -> List[Tuple[object, Optional[bytes]]]:
        if isinstance(item, Secrets):
            before = len(self.keylog)
            self.keylog.add_text(item.text)
            if len(self.keylog) != before:
                for conn in self.conns:
                    if conn.pending:
                        self._retry_pending(conn)
            self._queue.append(_Frame(item))  # written through (dropped by the writer)
            return self._ready()
        if not isinstance(item, Packet):
            self._queue.append(_Frame(item))
            return self._ready()
        self.report.frames += 1
        frame = _Frame(item)
        self._queue.append(frame)
        data = item.data
        if self.fragments.sets:
            self._release_fragments(self.fragments.expired(item.time))
        frag = parse_ipv4_fragment(data, item.linktype)
        if frag is not None:
            # held back until its datagram is whole; then the frame that
            # completed it carries the reassembled datagram, the others are
            # left out of the output (their bytes are in it)
            self.report.ip_fragments += 1
            frame.waiting += 1
            done = self.fragments.add(frag, frame, item.time)
            self._release_fragments(self.fragments.expired())
            if done is None:
                return self._ready()
            owners, data = done
            self.report.reassembled += 1
            for f in owners:
                f.waiting -= 1
                f.drop = f is not frame
            frame.data = data
        udp = parse_udp(data, item.linktype)
        if udp is None:
            if frag is None and is_ipv6_fragment(data, item.linktype):
                self.report.ipv6_fragments += 1
            self.report.other_frames += 1
            return self._ready()
        self.report.udp_datagrams += 1
        frame.udp = udp
        if udp.truncated:
            if frame.data is None and item.orig_len > len(item.data) and udp.payload:
                # cut by the capture's snaplen: the packets that are whole
                # still decrypt (and may carry a ClientHello/ServerHello);
                # the one that lost its end is counted
                self.report.truncated_datagrams += 1
                frame.cut = True
                self._datagram(frame, udp)
            else:
                self.report.other_frames += 1  # a UDP length the IP packet does not hold
            return self._ready()
        if not udp.payload:
            self.report.other_frames += 1
            return self._ready()
        self._datagram(frame, udp)
        return self._ready()

    def _release_fragments(self, frames: List["_Frame"]) -> None:
        """Fragments whose datagram never completed: written as captured."""
        for f in frames:
            f.waiting -= 1
            self.report.fragments_incomplete += 1
            self.report.other_frames += 1

    def finish(self) -> List[Tuple[object, Optional[bytes]]]:
        self._release_fragments(self.fragments.flush())
        for conn in self.conns:
            for frame, pkt, _data, _dst in conn.pending:
                pkt.status = "no_keys"
                frame.waiting -= 1
                self._account(frame, pkt)
            conn.pending.clear()
        out = self._ready()
        assert not self._queue
        self.report.connections = [self._conn_report(c) for c in self.conns]
        self.report.keylog_entries = len(self.keylog)
        for n, e in sorted(self.engines.items()):
            try:
                self.report.engines[n] = e.stats()
            except Exception:  # a report must not fail on stats
                pass
        return out

    def _ready(self):
        out = []
        q = self._queue
        while q and q[0].waiting == 0 and all(s.waiting == 0 for s in q[0].segments):
            f = q.popleft()
            if not f.drop:
                out.append((f.item, self._rebuild(f)))
                out.extend((s.item, self._rebuild(s)) for s in f.segments)
        return out

    def _rebuild(self, f: _Frame) -> Optional[bytes]:
        if (f.cut or not f.packets or not any(p.plaintext is not None for p in f.packets)) and not (
            f.gso_size or f.segment
        ):
            # as captured (a cut frame: its IP/UDP lengths count bytes it lacks)
            return f.data
        data = f.udp.payload
        parts = []
        for p in f.packets:
            parts.append(p.plaintext if p.plaintext is not None else data[p.offset : p.end])
        parts.append(data[f.trailer :])
        return replace_udp_payload(
            f.data if f.data is not None else f.item.data, f.udp, b"".join(parts)
        )

    # -- datagrams ------------------------------------------------------------
    def _datagram(self, frame: _Frame, udp) -> None:
        data = udp.payload
        packets, trailer = split_datagram(data, frame.cut)
        frame.trailer = trailer
        if not self._packets(frame, data, packets, udp.src, udp.dst):
            return
        self.report.quic_datagrams += 1
        if trailer < len(data):
            self.report.padding_datagrams += 1
            self.report.padding_bytes += len(data) - trailer

    def _packets(self, frame: _Frame, data: bytes, packets: List[QuicPacket], src, dst) -> bool:
        """Attributes and decrypts the packets of one datagram; False if the
        datagram does not look like QUIC (then it is left alone)."""
        for i, pkt in enumerate(packets):
            owner = self._attribute(pkt, data, src, dst)
            version = self._unsupported_version(pkt, owner, len(data), src, dst)
            if version is not None:
                # QUIC of a version we have no keys for: named in the summary
                v = self.report.unsupported_versions
                v[version] = v.get(version, 0) + 1
                if owner is None:
                    frame.packets.append(pkt)
                    pkt.status = "unsupported"
                    self._record(frame, pkt)
                    continue
            if (
                owner is None
                and i == 0
                and not frame.segment
                and (pkt.form == "short" or pkt.ptype in ("unknown", "malformed", "vn"))
            ):
                # nothing says this is QUIC (DNS, RTP, ...): leave the datagram alone
                # (a GSO segment is QUIC: its buffer's first packet decrypted)
                self.report.other_frames += 1
                return False
            frame.packets.append(pkt)
            if owner is None:
                # QUIC, of a connection whose start is not in the capture
                self.report.unattributed += 1
                pkt.status = "unknown_connection"
                self._record(frame, pkt)
                continue
            pkt.conn, pkt.direction = owner
            if (
                frame.cut
                and i == len(packets) - 1
                and (pkt.cut or pkt.form == "short" or not pkt.pn_off)
            ):
                # runs to the end of the datagram, which the capture lacks (a
                # long header that fits ends before the cut, so it is whole)
                pkt.status = "truncated"
                self.report.truncated_packets += 1
                self._record(frame, pkt)
                continue
            self._packet(frame, pkt, data, dst)
        return True

    def _gso_segments(self, frame: _Frame) -> None:
        """The segments after the first of a GSO buffer whose size was found
        (``_gso_split``): each is decrypted as the datagram it was on the
        wire, in its own frame."""
        data, size, udp = frame.gso_payload, frame.gso_size, frame.udp
        rest = gso.segments(data, size)[1:]
        self.report.gso_datagrams += 1
        self.report.gso_segments += 1 + len(rest)
        for seg in rest:
            sf = _Frame(
                frame.item, udp=dataclasses.replace(udp, payload=seg), data=frame.data, segment=True
            )
            frame.segments.append(sf)
            packets, trailer = split_datagram(seg)
            sf.trailer = trailer
            self._packets(sf, seg, packets, udp.src, udp.dst)
            if trailer < len(seg):
                self.report.padding_datagrams += 1
                self.report.padding_bytes += len(seg) - trailer

    def _unsupported_version(self, pkt: QuicPacket, owner, size: int, src, dst) -> Optional[int]:
        """The version of a packet that is QUIC of a version without keys, else None.

        Any UDP payload with its top bit set parses as a long header of some
        "version" (RFC 8999), so, to keep DNS and the like out of the
        summary, a flow counts as QUIC of an unknown version from a client's
        first datagram: at least 1,200 bytes (RFC 9000 §14.1, which is also
        what a server needs before it answers with Version Negotiation).
        Then every packet of the flow, both ways, short headers included,
        counts under that version."""
        if pkt.ptype == "unknown" and (owner is not None or size >= 1200):
            if owner is None:
                self.unknown_flows[(src, dst)] = self.unknown_flows[(dst, src)] = pkt.version
            return pkt.version
        if owner is None and pkt.ptype != "vn":
            return self.unknown_flows.get((src, dst))
        return None

    def _register_cid(self, cid: bytes, conn: Connection, d: str) -> None:
        if cid:
            self.cids[bytes(cid)] = (conn, d)
            self.cid_lens.add(len(cid))

    def _attribute(self, pkt: QuicPacket, data: bytes, src, dst):
        """(connection, direction) of a packet; learns connections and CIDs."""
        if pkt.form == "short":
            return self._attribute_short(pkt, data, src, dst)
        if pkt.ptype in ("malformed",):
            return self.flows.get((src, dst))
        dcid = bytes(pkt.dcid)
        owner = self.cids.get(dcid) if dcid else self.flows.get((src, dst))
        if owner is None and pkt.ptype in ("initial", "0rtt"):
            # a client's first flight (its DCID: at least 8 bytes, RFC 9000
            # §7.2, but some stacks send none), or its Initial after a Retry
            fl = self.flows.get((src, dst))
            if fl and fl[1] == C2S and dcid in fl[0].retry_scids:
                owner = fl
            elif pkt.ptype == "initial":
                owner = (self._new_connection(pkt, src, dst), C2S)
        if owner is None:
            owner = self.flows.get((src, dst)) if pkt.ptype in ("vn", "unknown") else None
            if owner is None:
                return None
        conn, d = owner
        if pkt.ptype == "vn" and d == S2C:
            conn.vn_seen = True
        if pkt.ptype in ("unknown", "vn"):
            return owner
        # learn the sender's CID from the SCID
        if pkt.scid is not None and pkt.ptype in ("initial", "handshake", "0rtt", "retry"):
            scid = bytes(pkt.scid)
            if pkt.ptype == "retry":
                conn.retry_scids.add(scid)
                self._register_cid(scid, conn, C2S)
                conn.server_cid_len = len(scid)
            elif d == S2C:
                if conn.server_cid_len is None or scid not in self.cids:
                    conn.server_cid_len = len(scid)
                    self._register_cid(scid, conn, C2S)
            else:
                if conn.client_cid_len is None:
                    conn.client_cid_len = len(scid)
                    self._register_cid(scid, conn, S2C)
        if (
            pkt.ptype == "initial"
            and d == C2S
            and dcid in conn.retry_scids
            and conn.initial_dcid != dcid
        ):
            # after a Retry: new Initial keys, and the client starts its CRYPTO
            # stream again (with a new ClientHello, for some stacks)
            conn.initial_dcid = dcid
            conn.dirs[C2S].crypto.pop("initial", None)
            conn.client_random = None
            conn.sni = None
        if pkt.ptype == "initial" and d == C2S:
            if conn.vn_seen and pkt.version != conn.client_initial_version:
                self._restart_after_vn(conn)
            conn.client_initial_version = pkt.version
        if pkt.ptype in ("initial", "handshake") and pkt.version:
            conn.version = pkt.version
        pkt.dcid = dcid
        return owner

    @staticmethod
    def _restart_after_vn(conn: Connection) -> None:
        """The client's Initial in the version it took from a Version
        Negotiation packet: a new connection attempt (RFC 9000 §6.2) on the
        same addresses, and (aioquic, RFC 9368 §2.2 allows it) the same CIDs,
        with a new ClientHello -- a new client random, so new secrets -- and
        a new CRYPTO stream.  (Packet numbers: aioquic goes on counting; a
        stack that starts from 0 again decodes the same from the old largest.)"""
        conn.vn_seen = False
        conn.client_random = None
        conn.sni = None
        conn.suite = None
        conn.early_suite = None
        for ds in conn.dirs.values():
            ds.crypto.clear()

    def _attribute_short(self, pkt: QuicPacket, data: bytes, src, dst):
        flow = self.flows.get((src, dst))
        if flow is not None and flow[0].peer_cid_len(flow[1]) == 0:
            pkt.dcid = b""
            return flow
        best = None
        at = pkt.offset + 1
        for n in sorted(self.cid_lens, reverse=True):
            owner = self.cids.get(bytes(data[at : at + n]))
            if owner is not None:
                if flow is not None and owner[0] is flow[0]:
                    best = (owner, n)
                    break
                if best is None:
                    best = (owner, n)
        if best is not None:
            (conn, d), n = best
            pkt.dcid = bytes(data[at : at + n])
            # a migrated path: remember it (for zero-length lookups and reports)
            self.flows.setdefault((src, dst), (conn, d))
            return conn, d
        if flow is not None:
            return flow  # a known connection, but a CID we never saw: no keys
        return None

    def _new_connection(self, pkt: QuicPacket, src, dst) -> Connection:
        dcid = bytes(pkt.dcid)
        conn = Connection(len(self.conns) + 1, src, dst, dcid, pkt.version, dcid)
        self.conns.append(conn)
        self._register_cid(dcid, conn, C2S)
        self.flows[(src, dst)] = (conn, C2S)
        self.flows[(dst, src)] = (conn, S2C)
        return conn

    # -- packets --------------------------------------------------------------
    def _packet(self, frame: _Frame, pkt: QuicPacket, data: bytes, dst) -> None:
        conn = pkt.conn
        if pkt.ptype in ("retry", "vn"):
            pkt.status = "unprotected"
        elif pkt.ptype in ("unknown", "malformed") or pkt.dcid is None:
            pkt.status = (
                "unsupported"
                if pkt.ptype == "unknown"
                else "malformed"
                if pkt.ptype == "malformed"
                else "no_keys"
            )
        elif any(p[1].direction == pkt.direction and p[1].ptype == pkt.ptype for p in conn.pending):
            self._pend(conn, frame, pkt, data, dst)  # keep the order of a waiting stream
            return
        else:
            self._decrypt(frame, pkt, data, dst)
            if pkt.status == "pending":
                self._pend(conn, frame, pkt, data, dst)
                return
        self._account(frame, pkt)

    def _pend(self, conn, frame, pkt, data, dst) -> None:
        pkt.status = "pending"
        frame.waiting += 1
        conn.pending.append((frame, pkt, data, dst))
        if len(conn.pending) > MAX_PENDING:
            # a handshake that never shows up: stop holding the capture back
            oframe, opkt, _, _ = conn.pending.pop(0)
            opkt.status = "no_keys"
            oframe.waiting -= 1
            self._account(oframe, opkt)

    def _account(self, frame: _Frame, pkt: QuicPacket) -> None:
        conn = pkt.conn
        if conn is not None:
            conn.counts[pkt.category] += 1
            conn.by_level.setdefault(pkt.ptype, Counter())[pkt.status] += 1
        self._record(frame, pkt)
        if frame.gso_size and not frame.segments:
            self._gso_segments(frame)  # after the first segment's packet, in order
        elif (
            pkt.form == "short"
            and pkt.category == "ok"
            and not frame.segment
            and frame.udp is not None
        ):
            # a datagram the sender did not batch: its size is a likely GSO size
            flow = (frame.udp.src, frame.udp.dst)
            self.flow_max[flow] = max(self.flow_max.get(flow, 0), len(frame.udp.payload))

    def _record(self, frame: _Frame, pkt: QuicPacket) -> None:
        if self.on_packet is None:
            return
        self.on_packet(
            PacketRecord(
                frame.item.index,
                pkt.conn.id if pkt.conn else None,
                pkt.direction,
                pkt.ptype,
                pkt.status,
                pkt.category,
                pkt.pn,
                pkt.key_phase,
                pkt.key_updated,
                pkt.plaintext,
                pkt.header_len,
            )
        )

    def _retry_pending(self, conn: Connection) -> None:
        waiting, conn.pending = conn.pending, []
        for frame, pkt, data, dst in waiting:
            if any(
                p[1].direction == pkt.direction and p[1].ptype == pkt.ptype for p in conn.pending
            ):
                conn.pending.append((frame, pkt, data, dst))
                continue
            self._decrypt(frame, pkt, data, dst)
            if pkt.status == "pending":
                conn.pending.append((frame, pkt, data, dst))
                continue
            frame.waiting -= 1
            self._account(frame, pkt)

    # -- keys -------------------------------------------------------------------
    def _material(self, conn: Connection, d: str, level: str, version: int):
        """(suite, basis, build) with build() -> (keys, add_connection kwargs), or a
        status: "pending" (the client random or the suite may still come),
        "no_keys" (the key log lacks the secret), "trial" (0-RTT, suite unknown)."""
        api = self.api
        if level == "initial":

            def build():
                ck, sk = api.initial_keys(conn.initial_dcid, version)
                return (ck if d == C2S else sk), {}

            return "aes-128-gcm", ("initial", conn.initial_dcid), build
        if conn.client_random is None:
            return "pending"
        if level == "0rtt":
            secret = conn.secret(CLIENT_EARLY, self.keylog)
            if secret is None or d != C2S:
                return "no_keys"
            suite = conn.early_suite or conn.suite
            if suite is None:
                return "trial"
            return (
                suite,
                ("0rtt", suite),
                lambda: (api.derive_packet_keys(suite, secret, version), {}),
            )
        if conn.suite is None:
            return "pending"
        suite = conn.suite
        if level == "handshake":
            secret = conn.secret(CLIENT_HANDSHAKE if d == C2S else SERVER_HANDSHAKE, self.keylog)
            if secret is None:
                return "no_keys"
            return (
                suite,
                ("handshake", suite),
                lambda: (api.derive_packet_keys(suite, secret, version), {}),
            )
        # 1-RTT
        ds = conn.dirs[d]
        if not ds.secrets:
            secret = conn.secret(CLIENT_1RTT if d == C2S else SERVER_1RTT, self.keylog)
            if secret is None:
                return "no_keys"
            ds.secrets.append(secret)
            ds.keys.append(api.derive_packet_keys(suite, secret, conn.version))
        g = ds.generation

        def build():
            self._ensure_generation(conn, ds, g + 1)
            return ds.keys[g], dict(key_generation=g, next_keys=ds.keys[g + 1])

        return suite, ("1rtt", g), build

    def _ensure_generation(self, conn: Connection, ds: _Direction, g: int) -> None:
        """Secrets and keys up to generation g (the HP key never changes, RFC 9001 §6)."""
        while len(ds.secrets) <= g:
            nxt = self._next_secret(conn.suite, ds.secrets[-1], conn.version)
            ds.secrets.append(nxt)
            k = self.api.derive_packet_keys(conn.suite, nxt, conn.version)
            ds.keys.append(_with_hp(k, ds.keys[0].hp))

    def _entry(self, conn: Connection, d: str, pkt: QuicPacket, dst):
        """The engine entry for this packet's (DCID, level), added or replaced as needed."""
        level = pkt.ptype
        L = len(pkt.dcid)
        key = (L, level, pkt.dcid if L else ("addr", dst))
        version = pkt.version or conn.version
        mat = self._material(conn, d, level, version)
        if isinstance(mat, str):
            return mat
        suite, basis, build = mat
        ent = self.entries.get(key)
        if ent is not None:
            if (
                ent.conn is conn
                and ent.direction == d
                and ent.version == version
                and ent.basis == basis
            ):
                return ent
            self.engines[L].remove_connection(ent.handle)
            del self.entries[key]
        keys, kw = build()
        space = "app" if level in ("0rtt", "1rtt") else level
        kw["largest_pn"] = conn.dirs[d].largest.get(space)
        handle = self._engine(L).add_connection(
            "rx",
            suite,
            pkt.dcid,
            keys=keys,
            level=level,
            version=version,
            local_addr=None if L else dst,
            **kw,
        )
        ent = self.entries[key] = _Entry(L, handle, conn, d, level, version, basis)
        return ent

    def _decrypt(self, frame: _Frame, pkt: QuicPacket, data: bytes, dst) -> None:
        conn, d = pkt.conn, pkt.direction
        raw = data[pkt.offset : pkt.end]
        ent = self._entry(conn, d, pkt, dst)
        if ent == "trial":
            res = self._trial_0rtt(conn, pkt, raw, dst)
            if res is None:
                pkt.status = "auth_failed"
                return
            ent = self._entry(conn, d, pkt, dst)
        if isinstance(ent, str):
            # "pending": keys may still come (ServerHello, ClientHello, secrets block)
            pkt.status = ent
            return
        L = ent.engine_len
        results = self.engines[L].unprotect(raw, local_addr=None if L else dst)
        res = results[0] if results else None
        status = res.status if res is not None else "malformed"
        if status in ("auth_failed", "key_phase_unavailable") and pkt.ptype == "1rtt":
            found = self._gso_split(frame, pkt, data, dst, ent)
            if found is not None:
                res, status = found, found.status
            else:
                res, status, ent = self._other_generations(conn, d, pkt, raw, dst, res, status, ent)
        pkt.status = status
        if status not in _OK:
            return
        self._accept(conn, d, pkt, ent, res)

    def _gso_split(self, frame: _Frame, pkt: QuicPacket, data: bytes, dst, ent):
        """A short-header packet that runs to the end of its datagram and
        failed to authenticate: is the datagram a UDP GSO buffer (gso.py)?

        Tried on every such failure, whatever the datagram's size: loopback
        carries buffers up to 64 KiB, but also a jumbo path's, and segments
        need not be full-size; the cost of a true failure is bounded (at
        most gso.MAX_TRIALS openings of one segment's bytes).  Sizes come
        from gso.candidate_sizes, this flow's earlier sizes first.  The
        packet opens with the live entry (current and next generation), so
        a key update in the first segment is taken as usual.  On success
        the packet ends at the segment size, the frame keeps the first
        segment, and the rest are decrypted once this packet is counted
        (_account).  Returns the engine's result, or None."""
        if (
            frame.cut
            or frame.segment
            or frame.gso_size
            or pkt.form != "short"
            or pkt.end != len(data)
            or frame.udp is None
        ):
            return None
        flow = (frame.udp.src, dst)
        L = ent.engine_len
        eng = self.engines[L]
        hints = (self.gso_hints.get(flow, 0), self.flow_max.get(flow, 0))
        for tries, size in enumerate(gso.candidate_sizes(data, pkt.offset, pkt.dcid, hints)):
            if tries == gso.MAX_TRIALS:
                break
            results = eng.unprotect(data[pkt.offset : size], local_addr=None if L else dst)
            if results and results[0].status in _OK:
                pkt.end = size
                frame.gso_size = size
                frame.gso_payload = data
                frame.udp = dataclasses.replace(frame.udp, payload=data[:size])
                frame.trailer = size
                self.gso_hints[flow] = size
                return results[0]
        return None

    def _other_generations(self, conn, d, pkt, raw, dst, res, status, ent):
        """A 1-RTT packet that the current/next keys did not open.

        * Generation g-1: a late packet of the previous phase (reordered in the
          capture; the entry's old keys were replaced by generation g+1).
        * Generation g+2: the sender moved twice without sending in between
          (it took its peer's update and at once made its own, which RFC 9001
          §6.1 forbids before an ACK, but stacks do it): the phase bit is the
          same as now.  Then this direction jumps two generations."""
        ds = conn.dirs[d]
        g = ds.generation
        if g > 0:
            old = self._try_generation(conn, d, pkt, raw, dst, g - 1)
            if old is not None:
                return old, old.status, ent
        if self._try_generation(conn, d, pkt, raw, dst, g + 2) is not None:
            ds.generation += 2
            ds.key_updates += 2
            ent = self._entry(conn, d, pkt, dst)  # re-installed at g+2, next g+3
            results = self.engines[ent.engine_len].unprotect(
                raw, local_addr=None if ent.engine_len else dst
            )
            if results and results[0].status in _OK:
                pkt.key_updated = True
                return results[0], results[0].status, ent
        return res, status, ent

    def _accept(self, conn: Connection, d: str, pkt: QuicPacket, ent, res) -> None:
        ds = conn.dirs[d]
        header, payload = bytes(res.header), bytes(res.payload)
        pkt.pn = res.pn
        pkt.key_phase = res.key_phase if pkt.ptype == "1rtt" else None
        space = "app" if pkt.ptype in ("0rtt", "1rtt") else pkt.ptype
        if ds.largest.get(space, -1) < res.pn:
            ds.largest[space] = res.pn
        if pkt.form == "long":
            length = len(header) - (pkt.pn_off - pkt.offset) + len(payload)
            lo = pkt.length_off - pkt.offset
            header = (
                header[:lo]
                + qframes.encode_varint(length, pkt.length_width)
                + header[lo + pkt.length_width :]
            )
        pkt.plaintext = header + payload
        pkt.header_len = len(header)
        if res.key_updated and ent is not None:
            ds.generation += 1
            ds.key_updates += 1
            pkt.key_updated = True
            g = ds.generation
            self._ensure_generation(conn, ds, g + 1)
            self.engines[ent.engine_len].update_connection(
                ent.handle, keys=ds.keys[g + 1], key_generation=g + 1
            )
            ent.basis = ("1rtt", g)
        self._frames(conn, d, pkt, payload)

    def _try_generation(self, conn, d, pkt, raw, dst, g):
        """Result of opening a 1-RTT packet with generation g's keys (a scratch
        engine entry), or None."""
        ds = conn.dirs[d]
        self._ensure_generation(conn, ds, g)
        L = len(pkt.dcid)
        eng = self._engine(L, scratch=True)
        h = eng.add_connection(
            "rx",
            conn.suite,
            pkt.dcid,
            keys=ds.keys[g],
            level="1rtt",
            version=conn.version,
            local_addr=None if L else dst,
            key_generation=g,
            largest_pn=ds.largest.get("app"),
        )
        try:
            res = eng.unprotect(raw, local_addr=None if L else dst)
        finally:
            eng.remove_connection(h)
        if res and res[0].status in _OK and not res[0].key_updated:
            return res[0]
        return None

    def _trial_0rtt(self, conn, pkt, raw, dst):
        """0-RTT before the ServerHello: which suite? Try those of the secret's hash."""
        secret = conn.secret(CLIENT_EARLY, self.keylog)
        L = len(pkt.dcid)
        eng = self._engine(L, scratch=True)
        for suite in _SUITES_BY_SECRET_LEN.get(len(secret), ()):
            keys = self.api.derive_packet_keys(suite, secret, pkt.version)
            h = eng.add_connection(
                "rx",
                suite,
                pkt.dcid,
                keys=keys,
                level="0rtt",
                version=pkt.version,
                local_addr=None if L else dst,
            )
            try:
                res = eng.unprotect(raw, local_addr=None if L else dst)
            finally:
                eng.remove_connection(h)
            if res and res[0].status in _OK:
                conn.early_suite = suite
                return res[0]
        return None

    # -- what the plaintext tells us ------------------------------------------------
    def _frames(self, conn: Connection, d: str, pkt: QuicPacket, payload: bytes) -> None:
        level = pkt.ptype
        try:
            for f in qframes.iter_frames(payload):
                if isinstance(f, qframes.Crypto) and level == "initial":
                    ds = conn.dirs[d]
                    ds.crypto.setdefault(level, qframes.Reassembler()).add(f.offset, f.data)
                elif isinstance(f, qframes.NewConnectionId):
                    # CIDs the sender will receive on: the other direction's DCIDs
                    self._register_cid(f.cid, conn, _OTHER[d])
        except qframes.FrameError:
            pass
        if level == "initial":
            self._peek_tls(conn, d)

    def _peek_tls(self, conn: Connection, d: str) -> None:
        stream = conn.dirs[d].crypto.get("initial")
        if stream is None:
            return
        try:
            if d == C2S and (conn.client_random is None or conn.sni is None):
                info = peek_client_hello(stream.contiguous())
                if info is not None:
                    if conn.client_random is None:
                        conn.client_random = info.random
                        if conn.pending:
                            self._retry_pending(conn)
                    if info.complete:
                        conn.sni = info.server_name or ""
                        conn.alpn = info.alpn
            elif d == S2C and conn.suite is None:
                info = peek_server_hello(stream.contiguous())
                if info is not None and info.suite is not None:
                    conn.suite = info.suite
                    if conn.pending:
                        self._retry_pending(conn)
        except TlsPeekError:
            pass

    def _conn_report(self, c: Connection) -> ConnectionReport:
        return ConnectionReport(
            c.id,
            _addr(c.client),
            _addr(c.server),
            c.odcid.hex(),
            version_name(c.version),
            c.suite,
            c.sni or None,
            c.counts["ok"],
            c.counts["failed"],
            c.counts["no_keys"],
            c.counts["other"],
            {C2S: c.dirs[C2S].key_updates, S2C: c.dirs[S2C].key_updates},
            {lvl: dict(cnt) for lvl, cnt in c.by_level.items()},
        )


def _with_hp(keys, hp: bytes):
    """keys with another header-protection key."""
    if hasattr(keys, "_replace"):
        return keys._replace(hp=hp)
    try:
        import dataclasses

        return dataclasses.replace(keys, hp=hp)
    except TypeError:
        return (keys.key, keys.iv, hp)


# --------------------------------------------------------------------------
# files


class SameFileError(ValueError):
    """The output would overwrite the input."""


def _refuse_output_over_input(in_f, input_path, output_path) -> None:
    """Opening the output for writing truncates it: if it is the input (the
    same path, a hard link or a symlink to it: the same inode), the capture
    would be destroyed while being read.  Checked on the open input file, so
    a path that changes in between cannot slip through as a different one."""
    try:
        out = os.stat(output_path)
    except OSError:
        return  # not there (or not reachable: then opening it says why)
    st = os.fstat(in_f.fileno())
    if (out.st_dev, out.st_ino) == (st.st_dev, st.st_ino):
        raise SameFileError(
            "output %s is the input file %s: refusing to overwrite it" % (output_path, input_path)
        )


def decrypt_capture(
    input_path,
    output_path=None,
    keylog=None,
    *,
    on_packet: Optional[Callable[[PacketRecord], None]] = None,
    api=None,
    backend: str = "auto",
) -> Report:
    """Decrypts a capture file; writes the result to ``output_path`` if given.

    ``keylog``: a KeyLog, a path, or None (Initial packets only, plus any
    secrets a pcapng carries).  Raises OSError / CaptureError when the input
    cannot be read."""
    if keylog is not None and not isinstance(keylog, KeyLog):
        keylog = KeyLog.from_file(keylog)
    dec = Decryptor(
        keylog if keylog is not None else KeyLog(), api=api, on_packet=on_packet, backend=backend
    )
    out_f = None
    try:
        with open(input_path, "rb") as in_f:
            if output_path is not None:
                _refuse_output_over_input(in_f, input_path, output_path)
            reader = CaptureReader(in_f)
            writer = None
            if output_path is not None:
                out_f = open(output_path, "wb")
                writer = CaptureWriter(out_f, reader)
            for item in reader:
                for it, data in dec.feed(item):
                    if writer is not None:
                        writer.write(it, data)
            for it, data in dec.finish():
                if writer is not None:
                    writer.write(it, data)
            dec.report.truncated_input = reader.truncated
    finally:
        if out_f is not None:
            out_f.close()
        dec.close()
    return dec.report


def run(args) -> int:
    """The ``quicoff decrypt`` command (args from cli.py)."""
    err = sys.stderr
    keylog = KeyLog()
    if args.keylog:
        try:
            keylog = KeyLog.from_file(args.keylog)
        except OSError as e:
            print(
                "quicoff decrypt: cannot read key log %s: %s" % (args.keylog, e.strerror or e),
                file=err,
            )
            return 2
        if keylog.bad_lines:
            print(
                "quicoff decrypt: %s: skipped %d malformed line(s) (first: line %d)"
                % (args.keylog, len(keylog.bad_lines), keylog.bad_lines[0]),
                file=err,
            )
    on_packet = None
    if args.packets:

        def on_packet(r: PacketRecord) -> None:
            print(
                "frame %-6d conn %-4s %-3s %-9s pn=%-8s kp=%-2s %s%s"
                % (
                    r.frame + 1,
                    r.connection or "-",
                    {C2S: "c>s", S2C: "s>c"}.get(r.direction, "-"),
                    r.level,
                    "-" if r.pn is None else r.pn,
                    "-" if r.key_phase is None else r.key_phase,
                    r.status,
                    " (key update)" if r.key_updated else "",
                )
            )

    try:
        report = decrypt_capture(
            args.input, args.output, keylog, on_packet=on_packet, backend=args.backend
        )
    except BrokenPipeError:
        raise  # stdout went away (| head): not an input problem
    except FileNotFoundError as e:
        print("quicoff decrypt: %s: %s" % (e.filename, e.strerror), file=err)
        return 2
    except SameFileError as e:
        print("quicoff decrypt: %s" % e, file=err)
        return 2
    except (OSError, CaptureError) as e:
        if isinstance(e, OSError) and args.output is not None and e.filename == args.output:
            print("quicoff decrypt: cannot write %s: %s" % (args.output, e.strerror or e), file=err)
        else:
            print("quicoff decrypt: cannot read %s: %s" % (args.input, e), file=err)
        return 2
    if args.json:
        print(report.to_json())
    else:
        print(report.format())
    t = report.totals
    if args.strict and (t["failed"] or t["no_keys"]):
        return 1
    return 0


def add_arguments(p) -> None:
    p.add_argument("input", help="capture to decrypt (pcap or pcapng)")
    p.add_argument(
        "-o",
        "--output",
        help="write the decrypted capture here "
        "(same format as the input); without it only the summary is printed",
    )
    p.add_argument(
        "-k",
        "--keylog",
        help="TLS key log (SSLKEYLOGFILE format); without it "
        "only Initial packets decrypt (unless a pcapng input carries secrets)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument(
        "--packets", action="store_true", help="print one line per QUIC packet before the summary"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 if any packet failed or had no keys",
    )
    p.add_argument("--backend", default="auto", help="engine crypto backend (default auto)")
    p.set_defaults(func=run)
