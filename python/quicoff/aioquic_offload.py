# SPDX-License-Identifier: Apache-2.0
"""aioquic's 1-RTT packet protection in a quicoff offload.

    conn = QuicConnection(configuration=cfg, ...)
    off = OffloadedConnection(conn, "inproc", engine=quicoff.Engine(local_cid_len=8))
    off.receive_datagrams([(data, addr)], now)      # instead of conn.receive_datagram
    for data, addr in off.datagrams_to_send(now):   # instead of conn.datagrams_to_send
        sock.sendto(data, addr)

The handshake (Initial, Handshake) runs on aioquic's own crypto. When TLS
gives a 1-RTT secret, an entry is installed in the offload for it (TX: the
peer's CID; RX: ours), with the next key generation derived from the secret,
so both key phases are there. From then on aioquic writes 1-RTT packets in
plaintext (a null AEAD: the payload and a tag of 16 zero bytes; a zero
header-protection mask) and the offload protects them; received 1-RTT
packets are unprotected by the offload first and aioquic reads them
decrypted. This is MsQuic's QUIC Encryption Offload shape, and the same seam
as qo-h3-server's (docs/ngtcp2.md); docs/aioquic.md says how it hooks aioquic.

Modes:

* ``"none"``   aioquic's own crypto (the baseline; the counters still count);
* ``"inproc"`` a :class:`quicoff.Engine` in this process, one burst per
  batch of datagrams;
* ``"dpdk"``   a quicoff-dpdk over the host port (:class:`quicoff.host.OffloadPort`):
  1-RTT packets leave as DATA_TO_OFFLOAD frames and come back as
  DATA_TO_HOST (:meth:`OffloadedConnection.receive_from_offload`); the
  handshake's datagrams go through the offload's pass-through as ordinary UDP.

A connection whose entries the offload refuses keeps aioquic's crypto (the
QEO fallback): ``counters["fallback"]`` says so.  In dpdk mode a lost
offload is noticed (:meth:`OffloadedConnection.watch_offload`: nothing heard
from it for ``silence`` seconds while bytes are in flight, then a QUERY of
the RX entry that goes unanswered or finds no entry, or an UPDATE that is
not acknowledged) and the connection falls back to aioquic's own 1-RTT keys,
which it never stopped deriving (``counters["offload_lost"]``).  Packet numbers are exact:
aioquic hands the full PN of each packet it seals to the AEAD, and the
offload returns the full PN of each packet it opens.

aioquic is an optional dependency (``pip install aioquic``); it is imported
when this module is.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:
    from aioquic import tls as _tls
    from aioquic.buffer import Buffer, BufferReadError
    from aioquic.quic.crypto import CryptoContext, CryptoError, CryptoPair
    from aioquic.quic.packet import QuicErrorCode, pull_quic_header
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "quicoff.aioquic_offload needs aioquic (pip install aioquic, or quicoff[aioquic]): %s" % _e
    ) from _e

from . import wire
from ._engine import derive_next_secret
from .host import OffloadError, OffloadRefused

__all__ = ["OffloadedConnection", "MODES", "SUITES", "TAG_LEN", "DEFAULT_SILENCE"]

MODES = ("none", "inproc", "dpdk")
TAG_LEN = 16
#: seconds of silence from the offload, with bytes in flight, before it is
#: asked whether it still holds the connection (qo-h3-server's
#: --offload-silence-ms default, 500)
DEFAULT_SILENCE = 0.5
ZERO_TAG = bytes(TAG_LEN)

#: aioquic's TLS cipher suites -> quicoff's suite names (aioquic offers no CCM)
SUITES = {
    _tls.CipherSuite.AES_128_GCM_SHA256: "aes-128-gcm",
    _tls.CipherSuite.AES_256_GCM_SHA384: "aes-256-gcm",
    _tls.CipherSuite.CHACHA20_POLY1305_SHA256: "chacha20-poly1305",
}

Address = Any  # aioquic's NetworkAddress


class _CountingAEAD:
    """aioquic's AEAD with every call counted: the proof that an offloaded
    connection makes no 1-RTT AEAD call of its own."""

    __slots__ = ("_aead", "_owner")

    def __init__(self, aead: Any, owner: "OffloadedConnection"):
        self._aead, self._owner = aead, owner

    def encrypt(self, data: bytes, associated_data: bytes, packet_number: int) -> bytes:
        self._owner.counters["host_1rtt_aead_calls"] += 1
        return self._aead.encrypt(data, associated_data, packet_number)

    def decrypt(self, data: bytes, associated_data: bytes, packet_number: int) -> bytes:
        self._owner.counters["host_1rtt_aead_calls"] += 1
        return self._aead.decrypt(data, associated_data, packet_number)


class _OneRttContext(CryptoContext):
    """One direction's 1-RTT context: aioquic's, plus a hook on setup that
    hands the secret to the offload."""

    def __init__(self, owner: "OffloadedConnection", direction: str, old: CryptoContext):
        super().__init__(setup_cb=old._setup_cb, teardown_cb=old._teardown_cb)
        self._owner, self._direction = owner, direction

    def setup(self, *, cipher_suite: Any, secret: bytes, version: int) -> None:
        super().setup(cipher_suite=cipher_suite, secret=secret, version=version)
        self.aead = _CountingAEAD(self.aead, self._owner)
        self._owner._secret_ready(self._direction, cipher_suite, secret, version)

    def decrypt_packet(
        self, packet: bytes, encrypted_offset: int, expected_packet_number: int
    ) -> Tuple[bytes, bytes, int, bool]:
        # aioquic opens a packet of the other key phase with a throwaway
        # context of the next keys, whose AEAD is not the counted one
        try:
            out = super().decrypt_packet(packet, encrypted_offset, expected_packet_number)
        except CryptoError:
            if self.hp is not None:
                plain_header, _pn = self.hp.remove(packet, encrypted_offset)
                if (plain_header[0] & 4) >> 2 != self.key_phase:
                    self._owner.counters["host_1rtt_aead_calls"] += 1
            raise
        if out[3]:
            self._owner.counters["host_1rtt_aead_calls"] += 1
        return out


class _Received:
    """The 1-RTT packet the offload has just opened, for the null decrypt."""

    __slots__ = ("packet", "header_len", "payload", "pn", "generation")

    def __init__(self, packet: bytes, header_len: int, payload: bytes, pn: int, generation: int):
        self.packet, self.header_len, self.payload = packet, header_len, payload
        self.pn, self.generation = pn, generation


class _OneRttPair(CryptoPair):
    """The 1-RTT CryptoPair: aioquic's while the offload holds no entry for a
    direction, the null seam once it does."""

    def __init__(self, owner: "OffloadedConnection", old: CryptoPair):
        super().__init__()
        self._owner = owner
        self.recv = _OneRttContext(owner, "rx", old.recv)
        self.send = _OneRttContext(owner, "tx", old.send)
        self.received: Optional[_Received] = None  # set around conn.receive_datagram

    # -- TX: aioquic gives the plaintext header (PN bytes and key phase in it),
    # the payload and the full packet number.
    def encrypt_packet(
        self, plain_header: bytes, plain_payload: bytes, packet_number: int
    ) -> bytes:
        if self._update_key_requested:
            self._update_key("local_update")
        owner = self._owner
        owner.counters["stack_1rtt_packets_sent"] += 1
        owner._seen("tx", owner._gen["tx"])
        owner._first_pn.setdefault(owner._gen["tx"], packet_number)
        if not owner.offloading("tx"):
            return self.send.encrypt_packet(plain_header, plain_payload, packet_number)
        owner._sealed.append((plain_header, plain_payload, packet_number, owner._gen["tx"]))
        return plain_header + plain_payload + ZERO_TAG

    # -- RX: only the packet the offload opened is accepted, under the PN the
    # offload decoded; anything else (a packet the offload did not open, e.g.
    # one that failed there) is refused, as a failed decryption would be.
    def decrypt_packet(
        self, packet: bytes, encrypted_offset: int, expected_packet_number: int
    ) -> Tuple[bytes, bytes, int]:
        owner = self._owner
        got, self.received = self.received, None
        if got is not None and got.packet != packet:
            got = None
        # Decided per packet, not per mode: after a fallback, until the
        # offload gets the REMOVE, it still opens the peer's packets.
        if got is None and not owner.offloading("rx"):
            out = super().decrypt_packet(packet, encrypted_offset, expected_packet_number)
            owner.counters["stack_1rtt_packets_received"] += 1
            owner._seen("rx", owner._gen["rx"])  # aioquic opens only its current generation
            return out
        if got is None and owner.mode == "inproc":
            # a 1-RTT packet behind the Handshake packet that gave the keys,
            # in one datagram: it reached aioquic before the entry existed
            got = owner._open_now(packet)
        if got is None:
            raise CryptoError("1-RTT packet not opened by the offload")
        header = got.packet[: got.header_len]
        # The peer's key update: the offload opened the packet with a newer
        # generation than aioquic's. (aioquic's own rule, "a phase bit other
        # than the current one", would also take a late packet of the old
        # phase, or one sent before the peer saw our update, for an update.)
        if got.generation > owner._gen["rx"]:
            self._update_key("remote_update")
        owner.counters["stack_1rtt_packets_received"] += 1
        owner._seen("rx", got.generation)
        return header, got.payload, got.pn

    def _update_key(self, trigger: str) -> None:
        super()._update_key(trigger)  # aioquic's derivation: keys stay in step
        owner = self._owner
        for ctx in (self.recv, self.send):
            ctx.aead = _CountingAEAD(ctx.aead, owner)
        owner._key_update(trigger)


class OffloadedConnection:
    """One aioquic ``QuicConnection`` whose 1-RTT protection runs in an
    offload (see the module's docstring).  Attach it before the connection
    sends or receives anything (before ``connect()`` for a client).

    ``engine``: the :class:`quicoff.Engine` for ``"inproc"`` (its
    ``local_cid_len`` must be aioquic's ``connection_id_length``);
    ``port``, ``index`` and ``encap``: for ``"dpdk"``, the
    :class:`quicoff.host.OffloadPort`, the entry index to use (TX and RX), and
    a function ``encap(conn) -> wire.Encap`` giving the addresses of the
    datagrams the offload sends for this connection; ``silence``: seconds
    without a frame from the offload, while bytes are in flight, before it
    is asked whether it still holds the connection (:meth:`watch_offload`);
    ``on_fallback(reason)``: called when a lost offload puts the connection
    back on aioquic's keys."""

    def __init__(
        self,
        conn: Any,
        mode: str,
        *,
        engine: Any = None,
        port: Any = None,
        index: int = 0,
        encap: Optional[Callable[[Any], Any]] = None,
        silence: float = DEFAULT_SILENCE,
        on_fallback: Optional[Callable[[str], None]] = None,
    ):
        if mode not in MODES:
            raise ValueError("mode must be one of %s" % (MODES,))
        if mode == "inproc" and engine is None:
            raise ValueError("inproc needs an Engine")
        if mode == "dpdk" and (port is None or encap is None):
            raise ValueError("dpdk needs an OffloadPort and an encap function")
        if silence <= 0:
            raise ValueError("silence must be > 0")
        if getattr(conn, "_cryptos", None):
            raise ValueError("attach the offload before the connection starts")
        self.conn, self.mode = conn, mode
        self.engine, self.port, self.index, self._encap = engine, port, index, encap
        self.counters: Dict[str, int] = {
            "stack_1rtt_packets_sent": 0,
            "stack_1rtt_packets_received": 0,
            "host_1rtt_aead_calls": 0,
            "key_updates_tx": 0,
            "key_updates_rx": 0,
            "update_key_calls": 0,
            "offload_tx_packets": 0,
            "offload_rx_packets": 0,
            "offload_tx_failures": 0,
            "offload_rx_failures": 0,
            "offload_rx_unread": 0,
            "fallback": 0,
            "offload_lost": 0,
            "offload_updates_deferred": 0,
        }
        # the packet bytes one DATA_TRAIN can carry on the host link (0: no trains)
        self._train_cap = port.train_capacity() if hasattr(port, "train_capacity") else 0
        self.bytes_sent = 0  #: UDP payload bytes aioquic wrote, whichever way they left
        self.offload_counters = {"tx_packets": 0, "rx_packets": 0, "close_errors": 0}
        self.close_error: Optional[BaseException] = None
        self._handle: Dict[str, Any] = {}  # direction -> Engine handle / port index
        self._suite: Optional[str] = None
        self._version = 1
        self._secret: Dict[str, bytes] = {}  # direction -> secret of generation _installed
        self._gen = {"tx": 0, "rx": 0}  # aioquic's current key generation
        self._installed = {"tx": 0, "rx": 0}  # the highest generation the offload holds
        self._offload_gen = {"tx": 0, "rx": 0}  # the offload entry's current generation
        self._wire_gen = {"tx": 0, "rx": 0}  # the newest generation sent / opened
        self._first_pn: Dict[int, int] = {}  # generation -> first PN sent with it
        # generation -> the PN of our first packet after the peer's first one of it
        self._ack_after_rx: Dict[int, int] = {}
        self._rx_seen_at: Dict[int, float] = {}  # generation -> when we first read it
        self._now = 0.0  # the clock of the datagrams being read
        self._sealed: List[Tuple[bytes, bytes, int, int]] = []  # (header, payload, pn, gen)
        self._pair: Optional[_OneRttPair] = None
        # the offload's liveness (dpdk): frames it sent us, when that last changed
        self.silence, self._on_fallback = silence, on_fallback
        self.lost_reason: Optional[str] = None
        self._heard_frames = -1
        self._heard_at = 0.0
        self._probing = False
        original = conn._initialize

        def _initialize(peer_cid: bytes) -> None:
            original(peer_cid)
            self._pair = _OneRttPair(self, conn._cryptos[_tls.Epoch.ONE_RTT])
            conn._cryptos[_tls.Epoch.ONE_RTT] = self._pair

        conn._initialize = _initialize

    # ------------------------------------------------------------ state

    def offloading(self, direction: str) -> bool:
        """The offload holds this direction's 1-RTT entry."""
        return direction in self._handle

    def _secret_ready(self, direction: str, cipher_suite: Any, secret: bytes, version: int) -> None:
        if self.mode == "none" or direction in self._handle:
            return
        suite = SUITES.get(cipher_suite)
        if suite is None:
            self.counters["fallback"] += 1
            return
        # the entry's DCID: the peer's CID in what we send, ours in what we receive
        dcid = self.conn._peer_cid.cid if direction == "tx" else self.conn.host_cid
        try:
            if self.mode == "inproc":
                handle: Any = self.engine.add_connection(
                    direction, suite, dcid, secret=secret, version=version
                )
            else:
                self.port.add(
                    index=self.index,
                    direction=direction,
                    suite=suite,
                    quic_version=version,
                    dcid=dcid,
                    secret=secret,
                    encap=self._encap(self.conn) if direction == "tx" else None,
                )
                handle = self.index
        except Exception:  # refused or unreachable: this connection keeps aioquic's crypto
            self.counters["fallback"] += 1
            return
        self._suite, self._version = suite, version
        self._handle[direction] = handle
        self._gen[direction] = self._offload_gen[direction] = 0
        self._installed[direction] = 1  # generation 1 derived from the secret ("quic ku")
        self._secret[direction] = derive_next_secret(suite, secret, version)

    def _key_update(self, trigger: str) -> None:
        # aioquic moves both directions at once, whoever started it
        self.counters["update_key_calls"] += 1
        for d in ("tx", "rx"):
            self._gen[d] += 1

    def _seen(self, direction: str, generation: int) -> None:
        """Counts key updates as the wire shows them: the first packet of a
        newer generation sent (tx) or opened (rx)."""
        if direction == "rx":
            # our next packet acknowledges the peer's first of this generation
            self._ack_after_rx.setdefault(generation, self.conn._packet_number)
            self._rx_seen_at.setdefault(generation, self._now)
        if generation > self._wire_gen[direction]:
            self.counters["key_updates_" + direction] += generation - self._wire_gen[direction]
            self._wire_gen[direction] = generation

    def _install_next(self, direction: str) -> None:
        """Once the offload has moved to the generation it holds last, give
        it the one after (it replaces the generation before, in the same
        phase slot; docs/design.md "Key phases")."""
        if (
            direction not in self._handle
            or self._offload_gen[direction] != self._installed[direction]
        ):
            return
        gen = self._installed[direction] + 1
        secret = derive_next_secret(self._suite, self._secret[direction], self._version)
        if self.mode == "inproc":
            self.engine.update_connection(
                self._handle[direction], secret=secret, key_generation=gen
            )
        else:
            try:
                self.port.update(
                    index=self.index, direction=direction, key_generation=gen, secret=secret
                )
            except OffloadRefused as e:
                if e.reply.status != "invalid_argument":
                    self.fall_back("UPDATE %s refused (%s)" % (direction, e))
                    return
                # quicoff-dpdk reads control requests and data frames from
                # separate queues, so this UPDATE can overtake the data frame
                # that moves the TX entry to the generation before; it then
                # refuses a generation two ahead (invalid_argument) and changes
                # nothing. Try again at the next flush; until it takes, packets
                # of that generation are not handed over (datagrams_to_send).
                self.counters["offload_updates_deferred"] += 1
                return
            except OffloadError as e:
                # without the next generation the offload cannot follow the
                # next key update: it is as good as lost
                self.fall_back("UPDATE %s not acknowledged (%s)" % (direction, e))
                return
        self._secret[direction], self._installed[direction] = secret, gen

    # ------------------------------------------------------------ a lost offload

    def watch_offload(self, now: float) -> None:
        """dpdk: call it on every turn of the event loop. While the offload
        lives, frames come from it (DATA_TO_HOST, ACKs, EVENTs). When none
        came for ``silence`` seconds while aioquic has bytes in flight, the
        RX entry is QUERYed (without waiting): no answer after the port's
        re-sends, or an answer without the entry (a restarted offload), and
        the connection falls back. Why silence plus a QUERY and not silence
        alone: a peer that stops sending is silent too, and only the offload
        can say it is alive; a QUERY on a timer would cost a host-link round
        trip every period while data flows (as qo-h3-server, docs/ngtcp2.md)."""
        if self.mode != "dpdk" or not self._handle or self._probing:
            return
        heard = self.port.counters["frames_received"]
        if heard != self._heard_frames:
            self._heard_frames, self._heard_at = heard, now
            return
        if now - self._heard_at < self.silence or self.conn._loss.bytes_in_flight <= 0:
            return
        query = wire.Query(index=self.index, direction="rx", conn=True, table=False)
        try:
            self.port.submit(query, self._probe_answered)
        except (OffloadError, OSError):  # busy, or the host link is full: next turn
            return
        self._probing = True

    def _probe_answered(self, reply: Any) -> None:
        self._probing = False
        if reply.timed_out:
            self.fall_back(
                "the offload stopped answering (no answer to a QUERY of the RX entry "
                "after %d tries)" % reply.tries
            )
        elif not reply.success:
            self.fall_back("the offload answered the QUERY of the RX entry: %s" % reply.status)
        else:  # alive and holding the entry: the peer is what is silent
            self._heard_frames = -1

    def fall_back(self, reason: str) -> None:
        """The offload is lost: from the next packet aioquic seals and opens
        1-RTT with its own keys. They are there and current: the 1-RTT
        contexts are aioquic's, set up from the secrets and moved by its own
        ``_update_key`` at every key update, so the key phase aioquic writes,
        the generation the peer uses and aioquic's packet numbers all carry
        on; the null-sealed packets lost in the offload are losses aioquic
        resends. REMOVEs go without waiting, so an offload that comes back
        drops the keys. Should aioquic hold no valid 1-RTT keys (it never
        drops them in 1.7), the connection is closed instead, with the reason:
        a null-sealed packet never goes to the network."""
        if not self._handle:
            return
        self.lost_reason = reason
        self.counters["offload_lost"] += 1
        self.counters["fallback"] += 1
        dirs = list(self._handle)
        self._handle.clear()
        for d in dirs:
            try:
                self.port.submit(wire.Remove(index=self.index, direction=d))
            except (OffloadError, OSError):  # best effort: the offload is gone
                pass
        pair = self._pair
        if pair is None or not (pair.send.is_valid() and pair.recv.is_valid()):
            reason += "; aioquic has no 1-RTT keys of its own to go on with"
            self.lost_reason = reason
            self.conn.close(
                error_code=QuicErrorCode.INTERNAL_ERROR, reason_phrase="offload lost: " + reason
            )
        if self._on_fallback is not None:
            self._on_fallback(reason)

    def request_key_update(self, now: Optional[float] = None) -> bool:
        """Starts a key update (aioquic's ``request_key_update``) when RFC
        9001 §6.1 allows one: the handshake is confirmed and a packet sent
        with the current keys has been acknowledged. aioquic does not check
        that rule. And, for the peer's sake, once the peer has had its own
        packets of the current phase acknowledged (it has acknowledged a
        packet we sent after we read its first one of this phase) and three
        PTOs have passed since we read it: until then an ngtcp2 peer keeps
        the previous keys (RFC 9001 §6.5), has no next keys yet and drops
        what we send, and the download stalls. ``now``: the clock given to
        aioquic (default time.monotonic()). Returns whether it started one."""
        conn, g = self.conn, self._gen["tx"]
        if not conn._handshake_confirmed:
            return False
        now = time.monotonic() if now is None else now
        first = self._first_pn.get(g)
        acked = conn._spaces[_tls.Epoch.ONE_RTT].largest_acked_packet
        peer_confirmed = g == 0 or (
            acked >= self._ack_after_rx.get(g, 1 << 62)
            and now >= self._rx_seen_at[g] + 3 * conn._loss.get_probe_timeout()
        )
        if (
            self._pair is None
            or self._pair._update_key_requested
            or first is None
            or acked < first
            or not peer_confirmed
        ):
            return False
        conn.request_key_update()
        return True

    # ------------------------------------------------------------ TX

    def datagrams_to_send(
        self, now: float, send_udp: Optional[Callable[[bytes, Address], None]] = None
    ) -> List[Tuple[bytes, Address]]:
        """aioquic's datagrams, their 1-RTT packets protected by the offload.
        In dpdk mode the 1-RTT packets leave through the offload and what is
        returned is only what goes as ordinary UDP (long-header packets).
        ``send_udp(data, addr)`` (dpdk): that UDP part is sent through it
        before the 1-RTT packets go to the offload, and nothing is returned.
        The handshake packet aioquic coalesced in front of the first 1-RTT
        packet then reaches the wire first: the offload forwards what it
        passes through sooner than what it protects, and a peer (or tshark)
        that meets 1-RTT before the server's Handshake flight must buffer or
        drop it."""
        self._sealed = []
        self._install_next("tx")  # a deferred UPDATE, before aioquic may seal with it
        datagrams = self.conn.datagrams_to_send(now=now)
        self.bytes_sent += sum(len(d) for d, _a in datagrams)
        sealed, self._sealed = self._sealed, []
        if not sealed:
            return datagrams
        # A 1-RTT packet is the last of its datagram; aioquic sealed them in
        # the order of the datagrams.
        found = []  # (datagram index, offset, header, payload, pn, gen)
        k = 0
        for i, (data, _addr) in enumerate(datagrams):
            if k == len(sealed):
                break
            header, payload, pn, gen = sealed[k]
            off = len(data) - len(header) - len(payload) - TAG_LEN
            if off >= 0 and data[off : off + len(header)] == header and not data[off] & 0x80:
                found.append((i, off, header, payload, pn, gen))
                k += 1
        if k != len(sealed):  # never send what was not matched: it is plaintext
            raise RuntimeError("aioquic wrote 1-RTT packets this seam cannot find")
        out: List[Optional[Tuple[bytes, Address]]] = list(datagrams)
        if self.mode == "inproc":
            handle = self._handle["tx"]
            results = self.engine.protect_burst(
                [(handle, h, p, pn) for (_i, _o, h, p, pn, _g) in found]
            )
            for (i, off, *_rest), r in zip(found, results):
                data, addr = datagrams[i]
                if r.ok and r.packet is not None:
                    out[i] = (data[:off] + r.packet, addr)
                    self.counters["offload_tx_packets"] += 1
                else:
                    out[i] = None
                    self.counters["offload_tx_failures"] += 1
        else:
            # a generation the offload does not hold yet (its UPDATE was
            # deferred) would be sealed with the keys of two generations ago:
            # not handed over, aioquic resends the frames
            held = [f for f in found if f[5] <= self._installed["tx"]]
            self.counters["offload_tx_failures"] += len(found) - len(held)
            for i, off, *_rest in found:
                data, addr = datagrams[i]
                out[i] = (data[:off], addr) if off else None
            if send_udp is not None:
                for d in out:
                    if d is not None:
                        send_udp(*d)
                out = []
            found = held
            frames = [(self.index, pn, h + p) for (_i, _o, h, p, pn, _g) in found]
            sent = self._send_frames(frames)
            self.counters["offload_tx_packets"] += sent
            self.counters["offload_tx_failures"] += len(frames) - sent
        # the offload moves to a generation with the first packet of its phase
        self._offload_gen["tx"] = max([self._offload_gen["tx"]] + [g for *_r, g in found])
        self._install_next("tx")
        return [d for d in out if d is not None]

    def _send_frames(self, frames: List[Tuple[int, int, bytes]]) -> int:
        """dpdk: the flush's 1-RTT packets to the offload, in order. A run of
        packets with consecutive PNs, all of the first one's size but a
        shorter last (what aioquic writes for a stream), goes as one
        DATA_TRAIN frame up to the host link's capacity (one frame instead of
        one per packet: docs/protocol.md §4.2.1); a packet alone as
        DATA_TO_OFFLOAD. Returns how many packets the host link took."""
        cap = self._train_cap
        sent = i = 0
        while i < len(frames):
            size = len(frames[i][2])
            j, total = i + 1, size
            while (
                j < len(frames)
                and frames[j][1] == frames[j - 1][1] + 1
                and len(frames[j - 1][2]) == size
                and len(frames[j][2]) <= size
                and total + len(frames[j][2]) <= cap
            ):
                total += len(frames[j][2])
                j += 1
            if j - i > 1:
                run = [p for _x, _pn, p in frames[i:j]]
                ok = self.port.send_train([(self.index, frames[i][1], run)]) == 1
            else:
                ok = self.port.send_data(frames[i:j]) == 1
            if not ok:  # the host link is full: the rest is lost too
                break
            sent += j - i
            i = j
        return sent

    # ------------------------------------------------------------ RX

    def _one_rtt_offset(self, data: bytes) -> int:
        """Where the datagram's short-header packet starts (-1: none), after
        any coalesced long-header packets."""
        buf = Buffer(data=data)
        cid_len = len(self.conn.host_cid)
        try:
            while not buf.eof():
                start = buf.tell()
                if not data[start] & 0x80:
                    return start
                header = pull_quic_header(buf, host_cid_length=cid_len)
                if header.packet_length <= 0:
                    return -1
                buf.seek(start + header.packet_length)
        except (BufferReadError, ValueError):
            return -1
        return -1

    def receive_datagrams(self, datagrams: Sequence[Tuple[bytes, Address]], now: float) -> None:
        """Hands UDP datagrams to aioquic; in inproc mode their 1-RTT packets
        are first unprotected by the Engine, in one burst."""
        self._now = now
        if self.mode != "inproc" or not self.offloading("rx"):
            for data, addr in datagrams:
                self.conn.receive_datagram(data, addr, now=now)
            return
        offsets = [self._one_rtt_offset(d) for d, _a in datagrams]
        todo = [(i, off) for i, off in enumerate(offsets) if off >= 0]
        results = self.engine.unprotect_burst([datagrams[i][0][off:] for i, off in todo])
        opened: Dict[int, Any] = {}
        for (i, _off), r in zip(todo, results):
            if r.ok and r.level == "1rtt" and r.header is not None and r.payload is not None:
                opened[i] = r
                self.counters["offload_rx_packets"] += 1
            else:
                self.counters["offload_rx_failures"] += 1
        for i, (data, addr) in enumerate(datagrams):
            r = opened.get(i)
            if r is None:  # as received: long headers, or a 1-RTT packet aioquic will refuse
                self.conn.receive_datagram(data, addr, now=now)
                continue
            gen = self._rx_generation(r.key_updated, r.old_keys)
            self._deliver(data[: offsets[i]], r.header, r.payload, r.pn, gen, addr, now)

    def receive_from_offload(self, packets: Sequence[Any], addr: Address, now: float) -> None:
        """dpdk mode: DATA_TO_HOST packets (quicoff.wire.DataToHost, opened by
        the offload) from the peer at ``addr``."""
        self._now = now
        for d in packets:
            if d.index != self.index:  # another connection's (an old one's late packets)
                continue
            if d.status not in ("ok", "usage_limit_reached") or d.level != "1rtt":
                self.counters["offload_rx_failures"] += 1
                continue
            pkt = bytes(d.packet)
            hlen = 1 + len(self.conn.host_cid) + (pkt[0] & 3) + 1 if pkt else 0
            if not pkt or pkt[0] & 0x80 or len(pkt) < hlen:
                self.counters["offload_rx_failures"] += 1
                continue
            self.counters["offload_rx_packets"] += 1
            gen = self._rx_generation(bool(d.flags & 1), bool(d.flags & 8))
            self._deliver(b"", pkt[:hlen], pkt[hlen:], d.pn, gen, addr, now)

    def _deliver(
        self,
        prefix: bytes,
        header: bytes,
        payload: bytes,
        pn: int,
        generation: int,
        addr: Address,
        now: float,
    ) -> None:
        packet = header + payload + ZERO_TAG
        assert self._pair is not None
        self._pair.received = _Received(packet, len(header), payload, pn, generation)
        try:
            self.conn.receive_datagram(prefix + packet, addr, now=now)
            if self._pair.received is not None:
                # opened, but aioquic did not read it: it is closing (it
                # ignores datagrams then), or the datagram failed its checks
                self.counters["offload_rx_unread"] += 1
        finally:
            self._pair.received = None

    def _open_now(self, packet: bytes) -> Optional[_Received]:
        (r,) = self.engine.unprotect_burst([packet])
        if not (r.ok and r.level == "1rtt" and r.header is not None and r.payload is not None):
            self.counters["offload_rx_failures"] += 1
            return None
        self.counters["offload_rx_packets"] += 1
        gen = self._rx_generation(r.key_updated, r.old_keys)
        return _Received(r.header + r.payload + ZERO_TAG, len(r.header), r.payload, r.pn, gen)

    def _rx_generation(self, key_updated: bool, old_keys: bool) -> int:
        """The generation the offload opened a packet with (its results come
        in order); after its RX entry moves, it is given the next one."""
        if key_updated:
            self._offload_gen["rx"] += 1
            self._install_next("rx")
        return self._offload_gen["rx"] - (1 if old_keys else 0)

    # ------------------------------------------------------------ end

    def close(self) -> None:
        """Removes the connection's entries from the offload, after reading
        the offload's own packet counts of them into ``offload_counters``
        ({"tx_packets", "rx_packets"}: what the offload says it did, to
        compare with the stack's counts)."""
        for direction, handle in list(self._handle.items()):
            key = direction + "_packets"
            try:
                if self.mode == "inproc":
                    st = self.engine.connection_stats(handle)
                    self.offload_counters[key] += st["packets"]
                    self.engine.remove_connection(handle)
                else:
                    conn = self.port.query(handle, direction).msg.conn
                    self.offload_counters[key] += conn["packets"]
                    self.port.remove(handle, direction)
            except Exception as e:  # the offload is gone: nothing left to remove
                self.offload_counters["close_errors"] += 1
                self.close_error = e
            del self._handle[direction]
