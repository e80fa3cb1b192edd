# SPDX-License-Identifier: Apache-2.0
"""aioquic on quicoff (quicoff.aioquic_offload, docs/aioquic.md), no root.

* In process, two aioquic connections joined by a list of datagrams: the
  offloaded side makes no 1-RTT AEAD call, the Engine protects and opens
  exactly the packets aioquic wrote and read, under aioquic's own packet
  numbers, through key updates started by either side; a refused entry
  keeps aioquic's crypto; a key update is only started when RFC 9001 §6.1
  allows it.
* ``python -m quicoff.aioquic_server`` on loopback, downloaded from by the
  UNMODIFIED Debian ``gtlsclient`` (1 MB with the server's key updates, 20 MB
  with the client's) and by ``quicoff.aioquic_client`` (both hosts
  offloaded), SHA-256 checked, in --offload inproc and none;
* the wire is standard QUIC: a capture made by a UDP relay decrypts in
  tshark with the key log, every 1-RTT packet, and holds none of the file.
"""

import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("aioquic", reason="SKIPPED LOUDLY: aioquic is not installed (the test extra)")

from aioquic import tls
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import StreamDataReceived
from test_ngtcp2_server import Relay, free_udp_port, tshark_1rtt

import quicoff
import quicoff.wire
from quicoff.aioquic_offload import OffloadedConnection
from quicoff.host import OffloadRefused, OffloadUnreachable, Reply

GTLSCLIENT = shutil.which("gtlsclient")
TSHARK = shutil.which("tshark")
OPENSSL = shutil.which("openssl")
SIZES = {"1m": 1 << 20, "20m": 20 << 20}
MODES = ("none", "inproc")
TIMEOUT = 180


# ---------------------------------------------------------------- in process


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    assert OPENSSL, "openssl not found"
    d = tmp_path_factory.mktemp("aioquic")
    from quicoff_lab.certs import self_signed

    self_signed(d)
    return d


class Pair:
    """A client and a server connection, each offloaded or not, that hand
    each other their datagrams with no socket."""

    CLIENT, SERVER = ("10.0.0.1", 1234), ("10.0.0.2", 443)

    def __init__(self, certs, client_mode, server_mode, engine=None):
        self.engine = engine or quicoff.Engine(local_cid_len=8)
        ccfg = QuicConfiguration(is_client=True, alpn_protocols=["test"])
        ccfg.verify_mode = 0
        scfg = QuicConfiguration(is_client=False, alpn_protocols=["test"])
        scfg.load_cert_chain(str(certs / "cert.pem"), str(certs / "key.pem"))
        self.client = QuicConnection(configuration=ccfg)
        self.server = QuicConnection(
            configuration=scfg,
            original_destination_connection_id=self.client.original_destination_connection_id,
        )
        self.c = OffloadedConnection(self.client, client_mode, engine=self.engine)
        self.s = OffloadedConnection(self.server, server_mode, engine=self.engine)
        self.now = 1.0
        self.client.connect(self.SERVER, now=self.now)
        self.received = {"client": bytearray(), "server": bytearray()}

    def _events(self):
        for name, conn in (("client", self.client), ("server", self.server)):
            while (ev := conn.next_event()) is not None:
                if isinstance(ev, StreamDataReceived):
                    self.received[name] += ev.data

    def run(self, rounds=200, until=None):
        for _ in range(rounds):
            self.now += 0.001
            moved = 0
            for src, dst, addr in ((self.c, self.s, self.CLIENT), (self.s, self.c, self.SERVER)):
                out = src.datagrams_to_send(self.now)
                moved += len(out)
                if out:
                    dst.receive_datagrams([(d, addr) for d, _a in out], self.now)
            self._events()
            if until is not None and until():
                return
            if not moved:
                for conn in (self.client, self.server):
                    t = conn.get_timer()
                    if t is not None and t <= self.now + 0.05:
                        self.now = max(self.now, t)
                        conn.handle_timer(self.now)


@pytest.mark.parametrize(
    "client_mode,server_mode", [("none", "inproc"), ("inproc", "none"), ("inproc", "inproc")]
)
def test_in_process_transfer_key_updates_both_ways(certs, client_mode, server_mode):
    p = Pair(certs, client_mode, server_mode)
    p.run(until=lambda: p.client._handshake_confirmed)
    assert p.c.offloading("tx") == (client_mode == "inproc")
    assert p.s.offloading("rx") == (server_mode == "inproc")
    data = os.urandom(300_000)
    sid = p.client.get_next_available_stream_id()
    p.client.send_stream_data(sid, data[:100_000])
    p.run(until=lambda: len(p.received["server"]) > 0)
    p.server.send_stream_data(sid, data)  # the server answers on the same stream
    p.run(until=lambda: len(p.received["server"]) >= 100_000)
    p.run(rounds=2000, until=lambda: p.c.request_key_update(p.now))  # the client's update
    assert p.c._pair._update_key_requested
    p.client.send_stream_data(sid, data[100_000:200_000])
    p.run(until=lambda: len(p.received["server"]) >= 200_000)
    p.run(rounds=20)
    p.run(rounds=2000, until=lambda: p.s.request_key_update(p.now))  # then the server's
    assert p.s._pair._update_key_requested
    p.client.send_stream_data(sid, data[200_000:], end_stream=True)
    p.run(
        until=lambda: (
            len(p.received["server"]) == len(data) and len(p.received["client"]) == len(data)
        )
    )
    assert bytes(p.received["server"]) == data and bytes(p.received["client"]) == data
    for off, mode in ((p.c, client_mode), (p.s, server_mode)):
        n = off.counters
        assert n["key_updates_tx"] >= 2 and n["key_updates_rx"] >= 2, n
        if mode == "inproc":
            assert n["host_1rtt_aead_calls"] == 0, n
            assert n["offload_tx_packets"] == n["stack_1rtt_packets_sent"], n
            assert n["offload_rx_packets"] == n["stack_1rtt_packets_received"], n
            assert n["offload_tx_failures"] == n["offload_rx_failures"] == 0, n
        else:
            # aioquic's own AEAD, one call per 1-RTT packet (a packet aioquic
            # failed to open would add one: there are none on a clean link)
            assert n["host_1rtt_aead_calls"] == (
                n["stack_1rtt_packets_sent"] + n["stack_1rtt_packets_received"]
            ), n
    # the Engine's own counts of the entries, read when they are removed
    for off, mode in ((p.c, client_mode), (p.s, server_mode)):
        off.close()
        if mode == "inproc":
            assert off.offload_counters["tx_packets"] == off.counters["stack_1rtt_packets_sent"]
            assert off.offload_counters["rx_packets"] == off.counters["stack_1rtt_packets_received"]
    assert p.engine.connections == []


def test_packet_numbers_are_aioquics(certs):
    """The Engine protects each packet under the full PN aioquic chose (the
    peer, on aioquic's own crypto, opens them all and acknowledges them)."""
    p = Pair(certs, "none", "inproc")
    seen = []
    real = p.engine.protect_burst

    def spy(items):
        items = list(items)
        seen.extend(pn for _h, _hd, _p, pn in items)
        return real(items)

    p.engine.protect_burst = spy
    p.run(until=lambda: p.client._handshake_confirmed)
    sid = p.client.get_next_available_stream_id()
    p.client.send_stream_data(sid, b"x", end_stream=False)
    p.run(until=lambda: len(p.received["server"]) > 0)
    p.server.send_stream_data(sid, os.urandom(50_000), end_stream=True)
    p.run(until=lambda: len(p.received["client"]) == 50_000)
    assert seen and seen == sorted(seen) and len(set(seen)) == len(seen)
    # the client, on aioquic's own crypto, opened them: what it has received
    # covers them, and the server saw them acknowledged
    p.run(rounds=30)
    got = p.client._spaces[tls.Epoch.ONE_RTT].ack_queue
    assert all(pn in got for pn in seen if pn > got.bounds().start), (seen[:5], got)
    assert p.server._spaces[tls.Epoch.ONE_RTT].largest_acked_packet >= seen[-1] - 2


def test_a_refused_entry_keeps_aioquics_crypto(certs):
    class Full(quicoff.Engine):
        def add_connection(self, *a, **kw):
            raise quicoff.QuicoffError(1, "table full")

    with Full(local_cid_len=8) as engine:
        p = Pair(certs, "none", "inproc", engine=engine)
        p.run(until=lambda: p.client._handshake_confirmed)
        sid = p.client.get_next_available_stream_id()
        p.client.send_stream_data(sid, b"x")
        p.run(until=lambda: len(p.received["server"]) > 0)
        p.server.send_stream_data(sid, b"y" * 20_000, end_stream=True)
        p.run(until=lambda: len(p.received["client"]) == 20_000)
        n = p.s.counters
        assert n["fallback"] == 2 and not p.s.offloading("tx") and not p.s.offloading("rx")
        assert n["host_1rtt_aead_calls"] > 0 and n["offload_tx_packets"] == 0


def test_key_update_waits_for_an_ack_of_the_current_phase(certs):
    """RFC 9001 §6.1: no new update before a packet of the current phase is
    acknowledged (aioquic does not check it), and not before the peer can
    have confirmed its side and dropped its old keys, 3 PTO (§6.5): ngtcp2
    peers drop the packets of an update started too early, which stalled
    downloads."""
    p = Pair(certs, "none", "inproc")
    assert not p.s.request_key_update(p.now)  # handshake not confirmed
    p.run(until=lambda: p.server._handshake_confirmed and p.client._handshake_confirmed)
    p.run(rounds=10)
    assert p.s.request_key_update(p.now)  # generation 0: as soon as the handshake is confirmed
    assert not p.s.request_key_update(p.now)  # requested, not yet sent
    p.server.send_stream_data(1, b"z" * 3000)  # a unidirectional stream of the server
    p.s.datagrams_to_send(p.now)  # sent in the new phase, never acknowledged
    assert p.s.counters["key_updates_tx"] == 1
    assert not p.s.request_key_update(p.now)
    # acknowledged, and the peer answered in the new phase: still 3 PTO to wait
    p.run(until=lambda: p.s.counters["key_updates_rx"] == 1)
    p.run(rounds=5)
    assert not p.s.request_key_update(p.now)
    p.now += 3 * p.server._loss.get_probe_timeout()
    p.run(rounds=5)
    assert p.s.request_key_update(p.now)


# ---------------------------------------------------------------- a lost offload


class ScriptedPort:
    """quicoff.host.OffloadPort's interface, scripted: an in-process Engine
    stands for the offload's table, frames are delivered at once, and the
    offload can be stopped (SIGSTOP: nothing crosses, nothing is answered),
    resumed (SIGCONT) or restarted (a fresh offload: no entries, the peer's
    packets pass through as ordinary UDP, requests answered)."""

    def __init__(self, engine):
        self.engine = engine
        self.state = "alive"  # "alive" | "stopped" | "restarted"
        self.handles = {}  # (index, direction) -> Engine handle
        self.counters = {"frames_received": 0}
        self.to_peer = []  # datagrams the offload protected and sent
        self.to_host = []  # wire.DataToHost for the host
        self.pending = []  # [request, callback, tries]
        self.queries = 0
        self.lost_frames = 0
        self.cap = 0  # train_capacity(): no trains unless a test sets it
        self.trains = []  # (packets, bytes) of each DATA_TRAIN sent

    def _answer(self):
        if self.state == "stopped":
            raise OffloadUnreachable("stopped")
        self.counters["frames_received"] += 1  # the ACK

    def add(self, *, index, direction, suite, quic_version, dcid, secret, encap):
        self._answer()
        self.handles[(index, direction)] = self.engine.add_connection(
            direction, suite, dcid, secret=secret, version=quic_version
        )

    def update(self, *, index, direction, key_generation, secret):
        self._answer()
        h = self.handles[(index, direction)]
        self.engine.update_connection(h, secret=secret, key_generation=key_generation)

    def submit(self, msg, callback=None):
        self.queries += msg.kind == "query"
        self.pending.append([msg, callback, 0])
        return len(self.pending)

    def process(self):
        """Answers the requests, or, stopped, lets them time out after the
        port's 6 tries."""
        left = []
        for item in self.pending:
            msg, callback, tries = item
            key = (msg.index, msg.direction)
            if self.state == "stopped":
                item[2] += 1
                if item[2] < 6:
                    left.append(item)
                elif callback:
                    callback(
                        Reply(0, msg.kind, msg.direction, msg.index, 6, True, None, False, None)
                    )
                continue
            self.counters["frames_received"] += 1
            status = "ok" if key in self.handles else "unknown_connection"
            if msg.kind == "remove" and key in self.handles:
                self.engine.remove_connection(self.handles.pop(key))
            if callback:
                ok = status == "ok"
                callback(Reply(0, msg.kind, msg.direction, msg.index, 1, False, status, ok, None))
        self.pending = left

    def send_data(self, frames):
        for index, pn, packet in frames:
            h = self.handles.get((index, "tx"))
            if self.state != "alive" or h is None:
                self.lost_frames += 1
                continue
            header_len = 1 + 8 + (packet[0] & 3) + 1
            (r,) = self.engine.protect_burst([(h, packet[:header_len], packet[header_len:], pn)])
            assert r.ok, r
            self.to_peer.append(r.packet)
        return len(frames)

    def train_capacity(self):
        return self.cap

    def send_train(self, trains):
        for index, pn, packets in trains:
            self.trains.append((len(packets), sum(len(x) for x in packets)))
            self.send_data([(index, pn + k, pkt) for k, pkt in enumerate(packets)])
        return len(trains)

    def from_network(self, datagram):
        """The peer's datagram reaches the offload: True when the host does
        not get it as UDP (opened into DATA_TO_HOST, or stopped)."""
        if self.state == "stopped":
            return True
        if datagram[0] & 0x80 or not self.handles:
            return False  # long header, or no entry: pass-through
        (r,) = self.engine.unprotect_burst([datagram])
        if not r.ok:
            return False
        self.counters["frames_received"] += 1
        self.to_host.append(
            quicoff.wire.DataToHost(
                index=next(i for i, d in self.handles if d == "rx"),
                pn=r.pn,
                packet=r.header + r.payload,
                flags=(1 if r.key_updated else 0) | (8 if r.old_keys else 0),
            )
        )
        return True

    def recv_data(self, max_packets=64):
        out, self.to_host = self.to_host, []
        return out

    def restart(self):
        for h in self.handles.values():
            self.engine.remove_connection(h)
        self.handles.clear()
        self.state = "restarted"


class DpdkPair(Pair):
    """The server on a ScriptedPort in dpdk mode, the client on aioquic's
    own crypto; ``net`` keeps every datagram the server side put on the
    network (by UDP or through the offload)."""

    def __init__(self, certs, silence=0.05, train_cap=0):
        self.port = ScriptedPort(quicoff.Engine(local_cid_len=8))
        self.port.cap = train_cap
        self.lost = []
        real = OffloadedConnection

        def attach(conn, mode, engine):
            if conn.configuration.is_client:
                return real(conn, "none")
            return real(
                conn,
                "dpdk",
                port=self.port,
                index=1,
                encap=lambda c: None,
                silence=silence,
                on_fallback=self.lost.append,
            )

        import test_aioquic_offload as me

        me.OffloadedConnection = attach
        try:
            super().__init__(certs, "none", "dpdk", engine=self.port.engine)
        finally:
            me.OffloadedConnection = real
        self.net = []
        self.blackhole_client = False

    def run(self, rounds=200, until=None):
        for _ in range(rounds):
            self.now += 0.001
            back = self.c.datagrams_to_send(self.now)
            if self.blackhole_client:
                back = []
            udp = [(d, self.CLIENT) for d, _a in back if not self.port.from_network(d)]
            if udp:
                self.s.receive_datagrams(udp, self.now)
            self.port.process()
            data = self.port.recv_data()
            if data:
                self.s.receive_from_offload(data, self.CLIENT, self.now)
            self.s.watch_offload(self.now)
            out = self.s.datagrams_to_send(self.now) + [(d, None) for d in self.port.to_peer]
            self.port.to_peer = []
            self.net += [d for d, _a in out]
            if out:
                self.c.receive_datagrams([(d, self.SERVER) for d, _a in out], self.now)
            self._events()
            if until is not None and until():
                return
            if not (out or back or data):
                for conn in (self.client, self.server):
                    t = conn.get_timer()
                    if t is not None and t <= self.now + 0.05:
                        self.now = max(self.now, t)
                        conn.handle_timer(self.now)


def _download(p, size):
    p.run(until=lambda: p.client._handshake_confirmed and p.s.offloading("rx"))
    assert p.s.offloading("tx") and p.s.offloading("rx")
    data = os.urandom(size)
    sid = p.client.get_next_available_stream_id()
    p.client.send_stream_data(sid, b"GET")
    p.run(until=lambda: len(p.received["server"]) > 0)
    p.server.send_stream_data(sid, data, end_stream=True)
    return data


def _no_plaintext(p, data):
    """No null-sealed 1-RTT packet left (16 zero bytes where its tag is;
    a 1-RTT packet is the last of its datagram) and no piece of the data."""
    short = [d for d in p.net if not d[0] & 0x80]
    assert short, "no 1-RTT datagram on the network"
    assert not [d for d in short if d.endswith(bytes(16))], "a null-sealed 1-RTT packet left"
    wire_bytes = b"".join(p.net)
    leaked = [o for o in range(0, len(data), 4096) if data[o : o + 64] in wire_bytes]
    assert not leaked, "data in plaintext on the network at offsets %s" % leaked[:5]


@pytest.mark.parametrize("fault", ["stopped", "restarted"])
def test_a_lost_offload_puts_the_connection_on_aioquics_keys(certs, fault):
    """The offload stops (SIGSTOP) or comes back empty (SIGKILL and a fresh
    one) mid-transfer: after the silence, the QUERY of the RX entry goes
    unanswered or finds no entry, and the connection falls back to
    aioquic's keys (current generation: a key update came before) and
    completes, with no null-sealed packet on the network."""
    p = DpdkPair(certs)
    data = _download(p, 1_000_000)
    p.run(until=lambda: len(p.received["client"]) >= 50_000)
    # one key update of the server's in between, so the fallback is not at generation 0
    p.now += 3 * p.server._loss.get_probe_timeout()
    p.run(rounds=20)
    assert p.s.request_key_update(p.now)
    p.run(until=lambda: p.s.counters["key_updates_rx"] >= 1)
    assert p.s.offloading("tx") and p.s._gen["tx"] == 1
    assert len(p.received["client"]) < len(data) // 2, "stopped too late"
    assert p.s.counters["offload_lost"] == 0 and p.port.queries == 0  # data flows: no probe
    if fault == "stopped":
        p.port.state = "stopped"
    else:
        p.port.restart()
    stopped_at = p.now
    p.run(rounds=5000, until=lambda: p.s.counters["offload_lost"] == 1)
    assert p.s.counters["offload_lost"] == 1, p.s.counters
    assert p.now - stopped_at >= p.s.silence  # silence first, then the QUERY
    assert p.port.queries == 1
    want = "stopped answering" if fault == "stopped" else "unknown_connection"
    assert len(p.lost) == 1 and want in p.lost[0], p.lost
    assert not p.s.offloading("tx") and not p.s.offloading("rx")
    if fault == "stopped":
        p.port.state = "alive"  # SIGCONT: it gets the REMOVEs
    p.run(rounds=20000, until=lambda: len(p.received["client"]) == len(data))
    assert bytes(p.received["client"]) == data
    n = p.s.counters
    assert n["fallback"] == 1 and n["host_1rtt_aead_calls"] > 0, n
    assert p.port.handles == {}  # the REMOVEs reached a resumed offload
    _no_plaintext(p, data)


def test_a_silent_peer_is_not_a_lost_offload(certs):
    """The peer goes quiet while bytes are in flight: the offload answers
    the QUERY with the entry and the connection stays offloaded."""
    p = DpdkPair(certs)
    data = _download(p, 200_000)
    p.run(until=lambda: len(p.received["client"]) >= 50_000)
    p.blackhole_client = True
    p.run(rounds=3000, until=lambda: p.port.queries >= 2)
    assert p.port.queries >= 2 and p.s.counters["offload_lost"] == 0
    assert p.s.offloading("tx") and p.s.offloading("rx")
    p.blackhole_client = False
    p.run(rounds=20000, until=lambda: len(p.received["client"]) == len(data))
    assert bytes(p.received["client"]) == data
    assert p.s.counters["host_1rtt_aead_calls"] == 0 and p.s.counters["fallback"] == 0
    _no_plaintext(p, data)


def test_an_unacknowledged_update_puts_the_connection_on_aioquics_keys(certs):
    """An UPDATE the offload does not acknowledge: without the next keys it
    cannot follow the next key update, so the connection falls back."""
    p = DpdkPair(certs)
    data = _download(p, 1_000_000)
    p.run(until=lambda: len(p.received["client"]) >= 50_000)

    def unanswered(**_kw):
        raise OffloadUnreachable("no answer to UPDATE tx index 1 after 6 tries")

    p.port.update = unanswered
    p.now += 3 * p.server._loss.get_probe_timeout()
    p.run(rounds=20)
    assert p.s.request_key_update(p.now)
    p.run(rounds=2000, until=lambda: p.s.counters["offload_lost"] == 1)
    assert len(p.received["client"]) < len(data), "the transfer ended first"
    assert len(p.lost) == 1 and "UPDATE" in p.lost[0], (p.lost, p.s.counters)
    p.run(rounds=20000, until=lambda: len(p.received["client"]) == len(data))
    assert bytes(p.received["client"]) == data
    _no_plaintext(p, data)


def test_an_update_that_overtakes_the_data_is_sent_again(certs):
    """The offload application queues control requests and data frames apart, so the
    UPDATE of the generation after can reach the table before the frame
    that moves the TX entry, which then refuses it as two generations ahead
    (invalid_argument, nothing changed). The seam sends it again at the next
    flush: the connection stays offloaded and the next key update works."""
    p = DpdkPair(certs)
    data = _download(p, 1_000_000)
    p.run(until=lambda: len(p.received["client"]) >= 50_000)
    real_update, refused = p.port.update, []

    def overtaken(**kw):
        if kw["direction"] == "tx" and not refused:
            refused.append(kw["key_generation"])
            raise OffloadRefused(
                Reply(0, "update", "tx", kw["index"], 1, False, "invalid_argument", False, None)
            )
        return real_update(**kw)

    p.port.update = overtaken
    for n in (1, 2):
        p.now += 3 * p.server._loss.get_probe_timeout()
        p.run(rounds=20)
        assert p.s.request_key_update(p.now), n
        p.run(until=lambda: p.s.counters["key_updates_rx"] >= n)
        assert p.s.counters["key_updates_rx"] >= n, p.s.counters
    assert refused == [2]
    n = p.s.counters
    assert n["offload_updates_deferred"] == 1 and n["offload_lost"] == 0, n
    assert p.s.offloading("tx") and p.s._installed["tx"] >= 3
    assert len(p.received["client"]) < len(data), "the transfer ended first"
    p.run(rounds=20000, until=lambda: len(p.received["client"]) == len(data))
    assert bytes(p.received["client"]) == data
    assert p.s.counters["host_1rtt_aead_calls"] == 0 and p.s.counters["fallback"] == 0
    _no_plaintext(p, data)


def test_runs_of_packets_leave_as_trains(certs):
    """dpdk on a jumbo host link: a flush's consecutive packets of one size
    (a shorter last) go as DATA_TRAIN frames no longer than the link takes;
    every packet is protected under its own PN and the transfer is exact."""
    p = DpdkPair(certs, train_cap=9000)
    data = _download(p, 1_000_000)
    p.run(rounds=20000, until=lambda: len(p.received["client"]) == len(data))
    assert bytes(p.received["client"]) == data
    trains, n = p.port.trains, p.s.counters
    assert trains and max(k for k, _b in trains) > 1, trains
    assert all(b <= 9000 for _k, b in trains), trains  # within the link's capacity
    in_trains = sum(k for k, _b in trains)
    assert in_trains > n["offload_tx_packets"] // 2, (in_trains, n)
    assert n["offload_tx_packets"] == n["stack_1rtt_packets_sent"] and n["offload_tx_failures"] == 0
    assert n["host_1rtt_aead_calls"] == 0
    _no_plaintext(p, data)


# ---------------------------------------------------------------- programs


@pytest.fixture(scope="module")
def site(certs):
    (certs / "htdocs").mkdir(exist_ok=True)
    for name, size in SIZES.items():
        (certs / "htdocs" / name).write_bytes(os.urandom(size))
    return certs


def start_server(site, tmp, mode, name, server_args=()):
    port = free_udp_port()
    stats = tmp / ("stats-%s-%s.json" % (mode, name))
    keylog = tmp / ("keys-%s-%s.log" % (mode, name))
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "quicoff.aioquic_server",
            "-d",
            str(site / "htdocs"),
            "--offload",
            mode,
            "--once",
            "--stats",
            str(stats),
            "--keylog",
            str(keylog),
            *server_args,
            "127.0.0.1",
            str(port),
            str(site / "key.pem"),
            str(site / "cert.pem"),
        ],
        stderr=subprocess.PIPE,
    )
    ready, _, _ = select.select([server.stderr], [], [], 30)
    line = server.stderr.readline().decode(errors="replace") if ready else "(silent 30 s)"
    assert "listening" in line, "aioquic_server: %s" % line
    return server, port, stats, keylog


def finish(server, site, out, name, stats):
    try:
        server.wait(timeout=TIMEOUT)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=10)
    err = server.stderr.read().decode(errors="replace")
    assert server.returncode == 0, err
    got = (out / name).read_bytes() if (out / name).exists() else b""
    want = (site / "htdocs" / name).read_bytes()
    return json.loads(stats.read_text()), hashlib.sha256(got).digest() == hashlib.sha256(
        want
    ).digest()


def gtls_download(site, tmp, mode, name, *, server_args=(), client_args=(), relay=False):
    server, port, stats, keylog = start_server(site, tmp, mode, name, server_args)
    out = tmp / ("dl-%s-%s" % (mode, name))
    out.mkdir()
    rel = Relay(port, tmp / ("wire-%s-%s.pcap" % (mode, name))) if relay else None
    cport = rel.port if rel else port
    t0 = time.monotonic()
    try:
        client = subprocess.run(
            [
                GTLSCLIENT,
                "-q",
                "--exit-on-all-streams-close",
                "--download",
                str(out),
                *client_args,
                "127.0.0.1",
                str(cport),
                "https://127.0.0.1:%d/%s" % (cport, name),
            ],
            capture_output=True,
            timeout=TIMEOUT,
        )
        assert client.returncode == 0, client.stdout[-2000:] + client.stderr[-2000:]
        seconds = time.monotonic() - t0
        st, ok = finish(server, site, out, name, stats)
    finally:
        if server.poll() is None:
            server.terminate()
        if rel:
            rel.close()
    print(
        "aioquic_server --offload %s: %s to gtlsclient in %.2f s (%.0f Mbit/s)"
        % (mode, name, seconds, SIZES[name] * 8 / seconds / 1e6)
    )
    return st, ok, keylog, rel


def check_counters(mode, st):
    sent, received = st["stack_1rtt_packets_sent"], st["stack_1rtt_packets_received"]
    assert sent > 0 and received > 0, st
    if mode == "inproc":
        assert st["host_1rtt_aead_calls"] == 0, st
        # the Engine's own counts of the connection's entries
        assert st["offload_tx_packets"] == sent, st
        assert st["offload_rx_packets"] == received + st["offload_rx_unread"], st
        assert st["offload_rx_unread"] <= 2, st
        assert st["offload_tx_failures"] == 0 and st["offload_rx_failures"] == 0, st
        assert st["fallback_connections"] == 0, st
    else:
        assert st["host_1rtt_aead_calls"] >= sent + received, st
        assert st["offload_tx_packets"] == 0 and st["offload_rx_packets"] == 0, st


@pytest.fixture
def gtlsclient():
    assert GTLSCLIENT, "gtlsclient not found: apt-get install ngtcp2-client"


@pytest.mark.parametrize("mode", MODES)
def test_gtlsclient_1mb_with_server_key_updates(site, tmp_path, mode, gtlsclient):
    st, ok, _, _ = gtls_download(
        site, tmp_path, mode, "1m", server_args=("--key-update-after", str(256 * 1024))
    )
    assert ok, "SHA-256 of the download differs"
    assert st["bytes_served"] == SIZES["1m"]
    assert st["key_updates_s2c"] >= 1 and st["key_updates_c2s"] >= 1, st
    check_counters(mode, st)


@pytest.mark.parametrize("mode", MODES)
def test_gtlsclient_20mb_with_a_client_key_update(site, tmp_path, mode, gtlsclient):
    st, ok, _, _ = gtls_download(site, tmp_path, mode, "20m", client_args=("--key-update=20ms",))
    assert ok, "SHA-256 of the download differs"
    assert st["key_updates_c2s"] >= 1, st
    assert st["key_updates_s2c"] >= 1, st  # the server answers in the new phase
    check_counters(mode, st)


@pytest.mark.parametrize("name", ["1m", "20m"])
def test_aioquic_client_both_hosts_offloaded(site, tmp_path, name):
    server, port, stats, _ = start_server(site, tmp_path, "inproc", name)
    out = tmp_path / "dl"
    cstats = tmp_path / "client.json"
    t0 = time.monotonic()
    try:
        client = subprocess.run(
            [
                sys.executable,
                "-m",
                "quicoff.aioquic_client",
                "--download",
                str(out),
                "--offload",
                "inproc",
                "--stats",
                str(cstats),
                "--key-update-after",
                str(300_000),
                "127.0.0.1",
                str(port),
                "https://localhost:%d/%s" % (port, name),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert client.returncode == 0, client.stderr[-3000:]
        seconds = time.monotonic() - t0
        st, ok = finish(server, site, out, name, stats)
    finally:
        if server.poll() is None:
            server.terminate()
    print(
        "aioquic_server and aioquic_client both --offload inproc: %s in %.2f s (%.0f Mbit/s)"
        % (name, seconds, SIZES[name] * 8 / seconds / 1e6)
    )
    assert ok, "SHA-256 of the download differs"
    check_counters("inproc", st)
    cst = json.loads(cstats.read_text())
    check_counters("inproc", cst)
    assert cst["key_updates_c2s"] >= 1 and st["key_updates_c2s"] >= 1, (cst, st)


@pytest.mark.parametrize("mode", MODES)
def test_plain_aioquic_client_holds_its_update_back_after_the_servers(site, tmp_path, mode):
    """The demo's plain aioquic client (quicoff_lab.h3_client) asked for a
    key update after the server has started one: plain aioquic would start
    it at once, a second update the server cannot follow yet (RFC 9001
    §6.5), and the download stalled. It holds it back; the download is
    byte-exact."""
    server, port, stats, _ = start_server(
        site, tmp_path, mode, "1m", ("--key-update-after", str(64 * 1024))
    )
    out = tmp_path / "dl"
    cstats = tmp_path / "client.json"
    try:
        client = subprocess.run(
            [
                sys.executable,
                "-m",
                "quicoff_lab.h3_client",
                "--download",
                str(out),
                "--stats",
                str(cstats),
                "--key-update-after",
                str(768 * 1024),
                "--timeout",
                "60",
                "https://127.0.0.1:%d/1m" % port,
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert client.returncode == 0, client.stdout[-2000:] + client.stderr[-2000:]
        st, ok = finish(server, site, out, "1m", stats)
    finally:
        if server.poll() is None:
            server.terminate()
    assert ok, "SHA-256 of the download differs"
    cst = json.loads(cstats.read_text())
    assert cst["key_updates_held_back"] == 1 and cst["key_updates_started"] == 0, cst
    assert st["key_updates_s2c"] >= 1 and st["key_updates_c2s"] >= 1, st
    check_counters(mode, st)


@pytest.mark.parametrize("mode", MODES)
def test_wire_is_standard_quic_without_plaintext(site, tmp_path, mode, gtlsclient):
    assert TSHARK, "tshark not found: apt-get install tshark"
    st, ok, keylog, rel = gtls_download(
        site,
        tmp_path,
        mode,
        "1m",
        server_args=("--key-update-after", str(256 * 1024)),
        relay=True,
    )
    assert ok, "SHA-256 of the download differs"
    check_counters(mode, st)
    assert st["key_updates_s2c"] >= 1, st
    lines = tshark_1rtt(rel.pcap, keylog, rel.port)
    from_server = [ln for ln in lines if ln.split("\t")[0] == str(rel.port)]
    decrypted = [ln for ln in lines if ln.split("\t")[1:2] != [""]]
    assert len(from_server) >= 700, "tshark sees %d 1-RTT packets from the server" % len(
        from_server
    )
    assert len(decrypted) == len(lines), "tshark decrypts %d of %d 1-RTT packets" % (
        len(decrypted),
        len(lines),
    )
    wire = rel.pcap.read_bytes()
    body = (site / "htdocs" / "1m").read_bytes()
    leaked = [off for off in range(0, len(body), 4096) if body[off : off + 64] in wire]
    assert not leaked, "file bytes in plaintext on the wire at offsets %s" % leaked[:5]


def test_server_usage_matches_qo_h3_server():
    """The demo driver calls both servers the same way: the same options."""
    p = subprocess.run(
        [sys.executable, "-m", "quicoff.aioquic_server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    for opt in (
        "-d",
        "--offload",
        "--host-if",
        "--keylog",
        "--stats",
        "--key-update-after",
        "--once",
        "--offload-silence-ms",
    ):
        assert opt in p.stdout, opt
    assert "{none,inproc,dpdk}" in p.stdout
