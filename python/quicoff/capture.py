# SPDX-License-Identifier: Apache-2.0
"""Real QUIC traffic for tests, demos and benchmarks: aioquic, recorded.

:func:`record` runs aioquic clients and an aioquic server (the real QUIC +
TLS 1.3 stack from PyPI) in one process, exchanging datagrams in memory on a
simulated clock (deterministic timing, no sockets, fast), and writes

* every datagram either side sent, byte for byte, to a pcap (Ethernet /
  IPv4 or IPv6 / UDP framing built with scapy), and
* the TLS secrets to a key log (``QuicConfiguration.secrets_log_file``),

so the capture can be decrypted like one taken on a wire.  Each connection
is described by a :class:`ConnectionSpec`: cipher suite, QUIC version, how
much stream data goes each way (a known pattern, in timed chunks), when to
request key updates (``QuicConnection.request_key_update``, alternating
client / server), Retry, 0-RTT (resumption with a ticket from an earlier
connection, which is recorded too), a CID change, a ClientHello spanning
several Initial packets, CID lengths.  Connections run concurrently, so
their datagrams interleave in the capture.

The returned :class:`CaptureResult` says what the applications sent and
received (``sent[(direction, stream_id)]``), to check a decryption against.
Needs ``aioquic`` and ``cryptography``, and ``scapy`` (the ``quicoff[scapy]``
extra) for the pcap; all imported when called, so ``import quicoff.capture``
needs none of them.
"""

from __future__ import annotations

import datetime
import hashlib
import heapq
import os
import ssl
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

__all__ = [
    "ConnectionSpec",
    "ConnectionRecord",
    "CaptureResult",
    "record",
    "pattern",
    "SUITES",
    "make_certificate",
]

#: quicoff suite name -> aioquic CipherSuite member name
SUITES = {
    "aes-128-gcm": "AES_128_GCM_SHA256",
    "aes-256-gcm": "AES_256_GCM_SHA384",
    "chacha20-poly1305": "CHACHA20_POLY1305_SHA256",
}
VERSION_1 = 0x00000001
VERSION_2 = 0x6B3343CF

Addr = Tuple[str, int]


def pattern(label: str, n: int) -> bytes:
    """n deterministic, label-specific bytes (SHA-256 in counter mode)."""
    out = bytearray()
    i = 0
    seed = label.encode()
    while len(out) < n:
        out += hashlib.sha256(seed + i.to_bytes(8, "big")).digest()
        i += 1
    return bytes(out[:n])


@dataclass
class ConnectionSpec:
    suite: str = "aes-128-gcm"
    version: int = VERSION_1
    upload: int = 32768  # client -> server bytes on stream 0
    download: int = 32768  # server -> client bytes on stream 0
    chunks: int = 8  # each direction's data goes out in this many writes
    interval: float = 0.010  # seconds between writes
    key_updates: int = 1  # requested mid-stream, alternating client, server, ...
    retry: bool = False  # server answers the first Initial with a Retry
    # (with zero_rtt, aioquic 1.x loses the early data:
    # the server never gets it, the connection stalls)
    zero_rtt: int = 0  # > 0: resume (ticket from a first, recorded connection)
    #      and send this many bytes as 0-RTT on stream 0
    change_cid: bool = False  # client moves to a new server CID mid-stream
    eager_server_update: bool = False  # the server answers each client key update with
    # one of its own before sending anything: its packets
    # skip a generation (RFC 9001 §6.1 says wait for an
    # ACK; aioquic does not enforce it)
    big_client_hello: bool = False  # ClientHello spread over several Initial packets
    client_cid_len: int = 8
    server_cid_len: int = 8
    client_port: Optional[int] = None
    label: Optional[str] = None  # names the data patterns (default: conn<index>)


@dataclass
class ConnectionRecord:
    """What happened on one recorded connection."""

    spec: ConnectionSpec
    client: Addr
    server: Addr
    label: str
    sent: Dict[Tuple[str, int], bytes] = field(default_factory=dict)  # ("c2s"|"s2c", sid)
    received: Dict[Tuple[str, int], bytes] = field(default_factory=dict)  # what the peer got
    key_updates_requested: Dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    handshake_completed: bool = False
    early_data_accepted: Optional[bool] = None
    resumption_of: Optional[int] = None  # index of the connection whose ticket was used
    closed: bool = False
    datagrams: Dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})


@dataclass
class CaptureResult:
    pcap: str
    keylog: str
    connections: List[ConnectionRecord]
    datagrams: List[Tuple[float, Addr, Addr, bytes]]  # (time, src, dst, UDP payload)
    server: Addr


def make_certificate(name: str = "localhost"):
    """A self-signed ECDSA P-256 certificate and its key, for the test server."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


# --------------------------------------------------------------------------
# the simulation


class _Link:
    """Datagrams in flight and the record of everything sent."""

    def __init__(self, latency: float):
        self.latency = latency
        self.heap: list = []
        self.seq = 0
        self.log: List[Tuple[float, Addr, Addr, bytes]] = []

    def send(self, now: float, src: Addr, dst: Addr, data: bytes) -> None:
        self.log.append((now, src, dst, bytes(data)))
        self.seq += 1
        heapq.heappush(self.heap, (now + self.latency, self.seq, src, dst, bytes(data)))


class _Session:
    """One client connection and its server-side peer, with their applications."""

    def __init__(
        self, index: int, spec: ConnectionSpec, rec: ConnectionRecord, sim: "_Sim", ticket=None
    ):
        from aioquic.quic.configuration import QuicConfiguration
        from aioquic.quic.connection import QuicConnection
        from aioquic.tls import CipherSuite

        self.index, self.spec, self.rec, self.sim = index, spec, rec, sim
        self.tickets: list = []
        cfg = QuicConfiguration(
            is_client=True,
            alpn_protocols=["quicoff"],
            server_name="localhost",
            cipher_suites=[getattr(CipherSuite, SUITES[spec.suite])],
            verify_mode=ssl.CERT_NONE,
            secrets_log_file=sim.keylog_file,
            supported_versions=[spec.version],
            connection_id_length=spec.client_cid_len,
            quantum_readiness_test=spec.big_client_hello,
            idle_timeout=30.0,
        )
        if ticket is not None:
            cfg.session_ticket = ticket
        self.client = QuicConnection(configuration=cfg, session_ticket_handler=self.tickets.append)
        self.server = None
        self.up = pattern(rec.label + "/c2s/0", spec.upload)
        self.down = pattern(rec.label + "/s2c/0", spec.download)
        rec.sent[("c2s", 0)] = self.up
        rec.sent[("s2c", 0)] = self.down
        self.up_sent = 0
        self.down_started = False
        self.done = False
        self.close_requested = False
        self.started = False
        self.skip_after_seq: Optional[int] = None
        self._fin_seen: set = set()

    # -- application actions, on the simulated clock -----------------------
    def start(self, now: float) -> None:
        self.started = True
        self.client.connect(self.sim.server_addr, now=now)
        if self.spec.zero_rtt:
            early = self.up[: self.spec.zero_rtt]
            self.client.send_stream_data(0, early, end_stream=False)
            self.up_sent = len(early)
        self.sim.flush(self, "client", now)

    def _chunks(self, data: bytes, already: int):
        rest = len(data) - already
        n = max(1, self.spec.chunks)
        size = max(1, -(-rest // n))
        return [(already + i, data[already + i : already + i + size]) for i in range(0, rest, size)]

    def _key_update_slots(self):
        """Which chunk index each key update goes before: [(chunk, "client"|"server")]."""
        k = self.spec.key_updates
        n = max(1, self.spec.chunks)
        out = []
        for i in range(k):
            who = "client" if i % 2 == 0 else "server"
            out.append((max(1, (i + 1) * n // (k + 1)), who))
        return out

    def on_client_handshake(self, now: float) -> None:
        spec = self.spec
        chunks = self._chunks(self.up, self.up_sent)
        updates = [c for c, who in self._key_update_slots() if who == "client"]
        for i, (off, piece) in enumerate(chunks):
            t = now + (i + 1) * spec.interval
            fin = off + len(piece) == len(self.up)
            self.sim.at(
                t,
                self._client_write,
                piece,
                fin,
                i in updates,
                spec.change_cid and i == len(chunks) // 2,
            )
        if not chunks:
            self.sim.at(now + spec.interval, self._client_write, b"", True, False, False)

    def _client_write(
        self, now: float, piece: bytes, fin: bool, key_update: bool, change_cid: bool
    ) -> None:
        if key_update:
            self.client.request_key_update()
            self.rec.key_updates_requested["c2s"] += 1
            if self.spec.eager_server_update:
                # datagrams sent from now on carry the new phase
                self.skip_after_seq = self.sim.link.seq
        if change_cid:
            self.client.change_connection_id()
        self.client.send_stream_data(0, piece, end_stream=fin)
        self.sim.flush(self, "client", now)

    def on_server_stream(self, now: float) -> None:
        if self.down_started:
            return
        self.down_started = True
        spec = self.spec
        chunks = self._chunks(self.down, 0)
        updates = [c for c, who in self._key_update_slots() if who == "server"]
        for i, (off, piece) in enumerate(chunks):
            fin = off + len(piece) == len(self.down)
            self.sim.at(now + (i + 1) * spec.interval, self._server_write, piece, fin, i in updates)
        if not chunks:
            self.sim.at(now + spec.interval, self._server_write, b"", True, False)

    def _server_write(self, now: float, piece: bytes, fin: bool, key_update: bool) -> None:
        if key_update:
            self.server.request_key_update()
            self.rec.key_updates_requested["s2c"] += 1
        self.server.send_stream_data(0, piece, end_stream=fin)
        self.sim.flush(self, "server", now)

    def check_done(self, now: float) -> None:
        rec = self.rec
        if self.close_requested:
            return
        if (
            len(rec.received.get(("c2s", 0), b"")) == len(self.up)
            and len(rec.received.get(("s2c", 0), b"")) == len(self.down)
            and self._fin_seen == {"c2s", "s2c"}
        ):
            self.close_requested = True
            # let the last ACKs go out, then close
            self.sim.at(now + 4 * self.sim.link.latency, self._close)

    def _close(self, now: float) -> None:
        self.client.close()
        self.sim.flush(self, "client", now)


class _Sim:
    def __init__(self, server_addr: Addr, keylog_file, latency: float):
        from aioquic.quic.retry import QuicRetryTokenHandler

        self.server_addr = server_addr
        self.keylog_file = keylog_file
        self.link = _Link(latency)
        self.now = 0.0
        self.actions: list = []
        self.aseq = 0
        self.sessions: Dict[Addr, _Session] = {}
        self.retry = QuicRetryTokenHandler()
        self.cert, self.key = make_certificate()
        self.server_tickets: dict = {}

    def at(self, t: float, fn, *args) -> None:
        self.aseq += 1
        heapq.heappush(self.actions, (t, self.aseq, fn, args))

    # -- datagram flow ----------------------------------------------------
    def flush(self, s: _Session, side: str, now: float) -> None:
        conn = s.client if side == "client" else s.server
        src = s.rec.client if side == "client" else self.server_addr
        for data, addr in conn.datagrams_to_send(now=now):
            self.link.send(now, src, addr, data)
            s.rec.datagrams["c2s" if side == "client" else "s2c"] += 1
        self.events(s, side, now)

    def events(self, s: _Session, side: str, now: float) -> None:
        from aioquic.quic import events

        conn = s.client if side == "client" else s.server
        again = False
        while True:
            ev = conn.next_event()
            if ev is None:
                break
            if isinstance(ev, events.HandshakeCompleted):
                if side == "client":
                    s.rec.handshake_completed = True
                    s.rec.early_data_accepted = ev.early_data_accepted if s.spec.zero_rtt else None
                    s.on_client_handshake(now)
            elif isinstance(ev, events.StreamDataReceived):
                d = "c2s" if side == "server" else "s2c"
                key = (d, ev.stream_id)
                s.rec.received[key] = s.rec.received.get(key, b"") + ev.data
                if ev.end_stream:
                    s._fin_seen.add(d)
                if side == "server":
                    s.on_server_stream(now)
                s.check_done(now)
            elif isinstance(ev, events.ConnectionTerminated):
                if side == "client":
                    s.rec.closed = True
                    s.done = True
            again = True
        if again:
            # the application's reaction may have queued packets
            for data, addr in conn.datagrams_to_send(now=now):
                src = s.rec.client if side == "client" else self.server_addr
                self.link.send(now, src, addr, data)
                s.rec.datagrams["c2s" if side == "client" else "s2c"] += 1

    def deliver(self, now: float, src: Addr, dst: Addr, data: bytes, seq: int = 0) -> None:
        if dst == self.server_addr:
            self.server_receive(now, src, data, seq)
            return
        s = self.sessions.get(dst)
        if s is not None:
            s.client.receive_datagram(data, src, now=now)
            self.flush(s, "client", now)

    def server_receive(self, now: float, src: Addr, data: bytes, seq: int = 0) -> None:
        from aioquic.buffer import Buffer
        from aioquic.quic.configuration import QuicConfiguration
        from aioquic.quic.connection import QuicConnection
        from aioquic.quic.packet import QuicPacketType, encode_quic_retry, pull_quic_header

        s = self.sessions.get(src)
        if s is None:
            return
        if s.server is None:
            try:
                header = pull_quic_header(Buffer(data=data), host_cid_length=s.spec.server_cid_len)
            except ValueError:
                return
            if header.packet_type != QuicPacketType.INITIAL:
                return
            odcid = header.destination_cid
            retry_scid = None
            if s.spec.retry:
                if not header.token:
                    scid = os.urandom(s.spec.server_cid_len)
                    token = self.retry.create_token(
                        address=src,
                        original_destination_connection_id=header.destination_cid,
                        retry_source_connection_id=scid,
                        now=now,
                    )
                    self.link.send(
                        now,
                        self.server_addr,
                        src,
                        encode_quic_retry(
                            version=header.version,
                            source_cid=scid,
                            destination_cid=header.source_cid,
                            original_destination_cid=header.destination_cid,
                            retry_token=token,
                        ),
                    )
                    s.rec.datagrams["s2c"] += 1
                    return
                odcid = self.retry.validate_token(
                    address=src, destination_cid=header.destination_cid, token=header.token, now=now
                )
                retry_scid = header.destination_cid
            cfg = QuicConfiguration(
                is_client=False,
                alpn_protocols=["quicoff"],
                supported_versions=[VERSION_1, VERSION_2],
                connection_id_length=s.spec.server_cid_len,
                idle_timeout=30.0,
            )
            cfg.certificate, cfg.private_key = self.cert, self.key
            s.server = QuicConnection(
                configuration=cfg,
                original_destination_connection_id=odcid,
                retry_source_connection_id=retry_scid,
                session_ticket_fetcher=self.server_tickets.pop,
                session_ticket_handler=lambda t: self.server_tickets.__setitem__(t.ticket, t),
            )
        s.server.receive_datagram(data, src, now=now)
        if s.skip_after_seq is not None and seq > s.skip_after_seq:
            # the client's update has just arrived: update again at once
            s.skip_after_seq = None
            s.server.request_key_update()
            s.rec.key_updates_requested["s2c"] += 1
        self.flush(s, "server", now)

    def run(self, limit: float) -> None:
        link = self.link
        spins = 0
        while True:
            times = []
            if link.heap:
                times.append(link.heap[0][0])
            if self.actions:
                times.append(self.actions[0][0])
            for s in self.sessions.values():
                if not s.started or s.done:
                    continue
                for conn in (s.client, s.server):
                    if conn is not None:
                        t = conn.get_timer()
                        if t is not None:
                            times.append(t)
            if not times:
                return
            t = min(times)
            if t > limit:
                return
            if t <= self.now:
                spins += 1
                if spins > 10000:
                    raise RuntimeError("simulation does not advance")
                t = self.now
            else:
                spins = 0
            self.now = t
            if link.heap and link.heap[0][0] <= t:
                _, seq, src, dst, data = heapq.heappop(link.heap)
                self.deliver(t, src, dst, data, seq)
                continue
            if self.actions and self.actions[0][0] <= t:
                _, _, fn, args = heapq.heappop(self.actions)
                fn(t, *args)
                continue
            for s in list(self.sessions.values()):
                if not s.started or s.done:
                    continue
                for side, conn in (("client", s.client), ("server", s.server)):
                    if conn is None:
                        continue
                    ct = conn.get_timer()
                    if ct is not None and ct <= t:
                        conn.handle_timer(now=t)
                        self.flush(s, side, t)
            if all(s.done for s in self.sessions.values()) and not link.heap and not self.actions:
                return


def record(
    pcap_path,
    keylog_path,
    specs: List[ConnectionSpec],
    *,
    server: Addr = ("10.0.0.1", 4433),
    client_ip: str = "10.0.0.2",
    first_port: int = 50000,
    latency: float = 0.001,
    start_time: float = 1.7e9,
    stagger: float = 0.0005,
    time_limit: float = 60.0,
) -> CaptureResult:
    """Runs the connections of ``specs`` concurrently; writes pcap + key log.

    A spec with ``zero_rtt`` first gets a plain connection of its own (same
    suite and version, recorded too) to obtain the session ticket, then the
    resumed one.  Returns what was sent/received per connection."""
    from aioquic.quic.connection import QuicConnection  # noqa: F401 (fail early if missing)

    with open(keylog_path, "w") as keylog_file:
        sim = _Sim(server, keylog_file, latency)
        records: List[ConnectionRecord] = []
        port = first_port
        plan = []  # (spec, resumption_of)
        for spec in specs:
            if spec.zero_rtt:
                first = ConnectionSpec(
                    suite=spec.suite,
                    version=spec.version,
                    upload=1000,
                    download=1000,
                    chunks=1,
                    key_updates=0,
                    client_cid_len=spec.client_cid_len,
                    server_cid_len=spec.server_cid_len,
                )
                plan.append((first, None))
                plan.append((spec, len(plan) - 1))
            else:
                plan.append((spec, None))

        # phase 1: connections that need nothing; phase 2: resumptions (need tickets)
        sessions: List[Optional[_Session]] = [None] * len(plan)
        for phase in (1, 2):
            start = sim.now + 0.001
            k = 0
            for i, (spec, base) in enumerate(plan):
                if (base is None) != (phase == 1):
                    continue
                ticket = None
                if base is not None:
                    tickets = sessions[base].tickets
                    if not tickets:
                        raise RuntimeError("connection %d got no session ticket" % base)
                    ticket = tickets[-1]
                p = spec.client_port or port
                port = max(port, p) + 1
                label = spec.label or "conn%d" % i
                addr = (client_ip if ":" not in server[0] else "fd00::2", p)
                rec = ConnectionRecord(spec, addr, server, label, resumption_of=base)
                s = _Session(i, spec, rec, sim, ticket)
                sessions[i] = s
                sim.sessions[addr] = s
                sim.at(start + k * stagger, lambda now, s=s: s.start(now))
                k += 1
            sim.run(sim.now + time_limit)
        for s in sessions:
            records.append(s.rec)
    _write_pcap(pcap_path, sim.link.log, start_time)
    return CaptureResult(str(pcap_path), str(keylog_path), records, sim.link.log, server)


def _write_pcap(path, log, start_time: float) -> None:
    try:
        import scapy  # noqa: F401
    except ImportError as e:
        raise ImportError(
            "quicoff capture frames its datagrams with scapy, an optional "
            "extra: pip install 'quicoff[scapy]' (%s)" % e
        ) from e
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import PcapWriter

    def mac(addr: Addr) -> str:
        h = hashlib.sha256(repr(addr[0]).encode()).digest()
        return "02:" + ":".join("%02x" % b for b in h[:5])

    w = PcapWriter(str(path), linktype=1, sync=False)
    try:
        for t, src, dst, data in log:
            ip = IPv6(src=src[0], dst=dst[0]) if ":" in src[0] else IP(src=src[0], dst=dst[0])
            pkt = (
                Ether(src=mac(src), dst=mac(dst)) / ip / UDP(sport=src[1], dport=dst[1]) / Raw(data)
            )
            pkt.time = start_time + t
            w.write(pkt)
    finally:
        w.close()


# --------------------------------------------------------------------------
# `quicoff capture`


def run(args) -> int:
    specs = []
    for suite in args.suite or ["aes-128-gcm"]:
        specs.append(
            ConnectionSpec(
                suite=suite,
                version=VERSION_2 if args.quic_version == 2 else VERSION_1,
                upload=args.bytes,
                download=args.bytes,
                key_updates=args.key_updates,
                retry=args.retry,
                zero_rtt=args.zero_rtt,
            )
        )
    res = record(args.output, args.keylog, specs)
    for c in res.connections:
        print(
            "%s:%d -> %s:%d  %s  %d+%d datagrams, handshake %s, data %s, key updates "
            "requested %d/%d"
            % (
                c.client
                + c.server
                + (
                    c.spec.suite,
                    c.datagrams["c2s"],
                    c.datagrams["s2c"],
                    "ok" if c.handshake_completed else "FAILED",
                    "ok" if c.received == c.sent else "INCOMPLETE",
                    c.key_updates_requested["c2s"],
                    c.key_updates_requested["s2c"],
                )
            )
        )
    print("wrote %s (%d datagrams) and %s" % (res.pcap, len(res.datagrams), res.keylog))
    good = all(c.handshake_completed and c.received == c.sent for c in res.connections)
    return 0 if good else 1


def add_arguments(p) -> None:
    p.add_argument("output", help="pcap to write")
    p.add_argument("-k", "--keylog", required=True, help="TLS key log to write")
    p.add_argument(
        "--suite",
        action="append",
        choices=sorted(SUITES),
        help="one connection per --suite (default aes-128-gcm)",
    )
    p.add_argument("--quic-version", type=int, choices=(1, 2), default=1)
    p.add_argument("--bytes", type=int, default=65536, help="stream bytes each way")
    p.add_argument("--key-updates", type=int, default=2)
    p.add_argument("--retry", action="store_true")
    p.add_argument(
        "--zero-rtt",
        type=int,
        default=0,
        metavar="BYTES",
        help="resume with a ticket and send BYTES as 0-RTT data",
    )
    p.set_defaults(func=run)
