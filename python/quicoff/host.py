# SPDX-License-Identifier: Apache-2.0
"""The host's end of the host <-> offload protocol, in Python: what
libquicoff-host (include/quicoff/host.h) is for a C stack, on ``quicoff.wire``.

    with OffloadPort("qdh1") as port:               # the host interface (root)
        port.add(index=1, direction="tx", suite="aes-128-gcm", key=k, iv=iv, hp=hp,
                 dcid=peer_cid, encap=wire.Encap(...))
        port.send_data([(1, pn, plaintext_packet), ...])      # DATA_TO_OFFLOAD
        port.send_train([(1, pn, [pkt, pkt2, ...])])          # DATA_TRAIN (GSO-like)
        for d in port.recv_data(timeout=0.1):                 # DATA_TO_HOST
            ...
        for ev in port.events():                              # EVENTs
            ...
        port.update(index=1, direction="tx", key_generation=1, key=k1, iv=iv1,
                    roll_generation=1)
        port.query(1, "tx").msg.conn                          # counters
        port.remove(1, "tx")

Requests carry request IDs chosen here (a random start, so two hosts on one
link, e.g. a stack and ``quicoff ctl``, do not take each other's answers); a
request with no ACK / STATS after 20 ms is re-sent as the identical frame
(same request ID: the offload runs it at most once), waits doubling, at most
6 frames (docs/protocol.md §6); then :class:`OffloadUnreachable`.  An answer
to a retry that means the first try took effect (ADD ``exists``, REMOVE
``unknown_connection``) counts as success, as §6 says.  At most one request
per (direction, index) is outstanding (:meth:`submit` raises
:class:`OffloadBusy`).

The socket is non-blocking and :meth:`fileno` can be registered with a
selector or asyncio's ``loop.add_reader`` (for aioquic); :meth:`process`
then reads what arrived and :meth:`next_timeout` says when re-sends are due.

Keys: the encoded frame kept for re-sending is a bytearray, zeroed when the
request completes or times out; the message objects a caller passes are its
own (Python cannot wipe ``bytes``).
"""

from __future__ import annotations

import os
import select
import socket
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, Dict, Iterable, List, Optional, Tuple, Union

from . import wire

__all__ = [
    "OffloadPort",
    "Reply",
    "OffloadError",
    "OffloadUnreachable",
    "OffloadBusy",
    "OffloadRefused",
]

ETH_P_QUICOFF = wire.ETHERTYPE_SIGNAL
PACKET_OUTGOING = 4  # <linux/if_packet.h>
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
SIOCGIFMTU = 0x8921  # <linux/sockios.h>: an interface's MTU

REQUEST_KINDS = ("add", "update", "remove", "query")


class OffloadError(Exception):
    """A request could not be done."""


class OffloadUnreachable(OffloadError):
    """No ACK / STATS after every try (docs/protocol.md §6 rule 3)."""


class OffloadBusy(OffloadError):
    """A request for this (direction, index) is still outstanding (§6 rule 2)."""


class OffloadRefused(OffloadError):
    """The offload answered with a status other than success."""

    def __init__(self, reply: "Reply"):
        super().__init__(
            "%s %s index %d: %s%s"
            % (
                reply.kind,
                reply.direction,
                reply.index,
                reply.status,
                " (%s)" % reply.msg.detail if reply.msg is not None and reply.msg.detail else "",
            )
        )
        self.reply = reply


@dataclass
class Reply:
    """The answer to one request."""

    request_id: int
    kind: str  #: "add", "update", "remove", "query"
    direction: str
    index: int
    tries: int  #: frames sent for it (1 = no retry)
    timed_out: bool
    status: Optional[str]  #: the offload's answer (None when timed out)
    success: bool  #: the request took effect (§6's retry answers included)
    msg: Union[wire.Ack, wire.Stats, None]


def _took_effect(kind: str, status: str, tries: int) -> bool:
    if status == "ok":
        return True
    if tries > 1 and (kind, status) in (("add", "exists"), ("remove", "unknown_connection")):
        return True
    return False


class _Pending:
    __slots__ = ("request_id", "kind", "direction", "index", "tries", "due", "frame", "callback")

    def __init__(self, request_id, kind, direction, index, frame, due, callback):
        self.request_id, self.kind, self.direction, self.index = request_id, kind, direction, index
        self.frame, self.due, self.callback, self.tries = frame, due, callback, 1


def _direction_name(d) -> str:
    return wire.DIRECTIONS[d] if isinstance(d, int) else d


class OffloadPort:
    """The host interface to one offload (see the module's docstring).

    ``sock`` (with ``src_mac``): a socket the caller opened that carries whole
    Ethernet frames per message (an AF_UNIX SOCK_SEQPACKET pair in tests);
    otherwise an AF_PACKET socket on ``ifname`` (root or CAP_NET_RAW)."""

    def __init__(
        self,
        ifname: Optional[str] = None,
        offload_mac: str = "ff:ff:ff:ff:ff:ff",
        vlan: Optional[int] = None,
        ack_timeout: float = 0.020,
        max_tries: int = 6,
        on_event: Optional[Callable[[wire.Event], None]] = None,
        sock: Optional[socket.socket] = None,
        src_mac: Optional[str] = None,
        backlog: int = 4096,
    ):
        if sock is None:
            if not ifname:
                raise ValueError("OffloadPort needs an interface name or a socket")
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_QUICOFF))
            try:
                sock.bind((ifname, ETH_P_QUICOFF))
                try:  # our own frames never come back (else told by packet type)
                    sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                except OSError:
                    pass
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                src_mac = src_mac or ":".join("%02x" % b for b in sock.getsockname()[4][:6])
            except OSError:
                sock.close()
                raise
        if src_mac is None:
            raise ValueError("src_mac is needed with a socket of the caller's")
        sock.setblocking(False)
        self.sock = sock
        self.ifname = ifname
        self.src_mac = src_mac
        self.offload_mac = offload_mac
        self.vlan = vlan
        self.ack_timeout = ack_timeout
        self.max_tries = max_tries
        self.on_event = on_event
        self.next_request_id = int.from_bytes(os.urandom(4), "big")
        self._pending: Dict[int, _Pending] = {}
        self._data: Deque[wire.DataToHost] = deque()
        self._events: Deque[wire.Event] = deque()
        self._backlog = backlog
        self._event_seq: Optional[int] = None
        self._eth_data = self._eth_header()
        self.counters = {
            "frames_sent": 0,
            "frames_received": 0,
            "requests": 0,
            "retries": 0,
            "timeouts": 0,
            "late_replies": 0,
            "events": 0,
            "events_missed": 0,
            "data_sent": 0,
            "data_received": 0,
            "backlog_dropped": 0,
            "frames_ignored": 0,
            "trains_sent": 0,
            "packets_sent": 0,
        }

    # ------------------------------------------------------------ plumbing

    def _eth_header(self) -> bytes:
        return wire.frame(b"", dst=self.offload_mac, src=self.src_mac, vlan=self.vlan)

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        for p in self._pending.values():
            p.frame[:] = bytes(len(p.frame))
        self._pending.clear()
        self.sock.close()

    def __enter__(self) -> "OffloadPort":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, frame) -> bool:
        try:
            self.sock.send(frame)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:
            if e.errno == 105:  # ENOBUFS: the device queue is full, as EAGAIN
                return False
            raise
        self.counters["frames_sent"] += 1
        return True

    # ------------------------------------------------------------ requests

    def submit(self, msg, callback: Optional[Callable[[Reply], None]] = None) -> int:
        """Sends request ``msg`` (a wire.Add / Update / Remove / Query; its
        request_id is set here) without waiting; returns the request ID.
        ``callback(reply)`` runs from :meth:`process` when it completes."""
        if getattr(msg, "kind", None) not in REQUEST_KINDS:
            raise ValueError("not a request: %r" % (msg,))
        direction = _direction_name(msg.direction)
        if msg.index != wire.INDEX_NONE:
            for p in self._pending.values():
                if p.index == msg.index and p.direction == direction:
                    raise OffloadBusy(
                        "a request for %s index %d is outstanding" % (direction, msg.index)
                    )
        rid = self.next_request_id
        msg.request_id = rid
        frame = bytearray(wire.frame(msg, dst=self.offload_mac, src=self.src_mac, vlan=self.vlan))
        if not self._send(frame):
            frame[:] = bytes(len(frame))
            raise BlockingIOError("the host interface cannot take a frame now")
        self.next_request_id = (rid + 1) & 0xFFFFFFFF
        self.counters["requests"] += 1
        self._pending[rid] = _Pending(
            rid,
            msg.kind,
            direction,
            msg.index,
            frame,
            time.monotonic() + self.ack_timeout,
            callback,
        )
        return rid

    def request(self, msg) -> Reply:
        """Sends ``msg`` and waits for its answer (re-sending as needed).
        Data and events that arrive meanwhile are kept for :meth:`recv_data`
        and :meth:`events`.  Raises OffloadUnreachable after the last try."""
        done: List[Reply] = []
        self.submit(msg, done.append)
        while not done:
            t = self.next_timeout()
            select.select([self.sock], [], [], 0.1 if t is None else t)
            self.process()
        r = done[0]
        if r.timed_out:
            raise OffloadUnreachable(
                "no answer to %s %s index %d after %d tries"
                % (r.kind, r.direction, r.index, r.tries)
            )
        return r

    def _checked(self, msg) -> Reply:
        r = self.request(msg)
        if not r.success:
            raise OffloadRefused(r)
        return r

    def add(self, **fields) -> Reply:
        """ADD (wire.Add's fields); raises OffloadRefused unless it took effect."""
        return self._checked(wire.Add(**fields))

    def update(self, **fields) -> Reply:
        """UPDATE (wire.Update's fields)."""
        return self._checked(wire.Update(**fields))

    def remove(self, index: int, direction: str) -> Reply:
        return self._checked(wire.Remove(index=index, direction=direction))

    def query(self, index: int, direction: str, table: bool = False) -> Reply:
        """The entry's counters: reply.msg.conn (and .table with table=True).
        Raises OffloadRefused (status unknown_connection) for no such entry."""
        return self._checked(wire.Query(index=index, direction=direction, conn=True, table=table))

    def stats(self) -> dict:
        """The offload table's counters (a table-only QUERY)."""
        r = self._checked(wire.Query(index=wire.INDEX_NONE, direction="tx", conn=False, table=True))
        assert isinstance(r.msg, wire.Stats)
        return dict(r.msg.table or {})

    @property
    def outstanding(self) -> int:
        """Requests sent and not yet answered or timed out."""
        return len(self._pending)

    def next_timeout(self) -> Optional[float]:
        """Seconds until the earliest re-send or timeout (None: nothing outstanding)."""
        if not self._pending:
            return None
        return max(0.0, min(p.due for p in self._pending.values()) - time.monotonic())

    def _complete(self, p: _Pending, reply: Reply) -> None:
        p.frame[:] = bytes(len(p.frame))  # it may hold keys
        del self._pending[p.request_id]
        if p.callback:
            p.callback(reply)

    def _timers(self) -> None:
        now = time.monotonic()
        for p in [p for p in self._pending.values() if p.due <= now]:
            if p.tries >= self.max_tries:
                self.counters["timeouts"] += 1
                self._complete(
                    p,
                    Reply(
                        p.request_id, p.kind, p.direction, p.index, p.tries, True, None, False, None
                    ),
                )
            elif self._send(p.frame):  # the identical frame: same request ID
                p.tries += 1
                self.counters["retries"] += 1
                p.due = now + self.ack_timeout * (1 << (p.tries - 1))
            else:
                p.due = now + 0.001

    def _answer(self, m) -> None:
        kind = "query" if isinstance(m, wire.Stats) else m.acked
        p = self._pending.get(m.request_id)
        direction = _direction_name(m.direction)
        if (
            p is None
            or p.kind != kind
            or p.index != m.index
            or (p.direction != direction and direction != "none")
        ):
            self.counters["late_replies"] += 1
            return
        status = m.status if isinstance(m.status, str) else str(m.status)
        self._complete(
            p,
            Reply(
                p.request_id,
                p.kind,
                p.direction,
                p.index,
                p.tries,
                False,
                status,
                _took_effect(p.kind, status, p.tries),
                m,
            ),
        )

    # ------------------------------------------------------------ receive

    def _event(self, ev: wire.Event) -> None:
        self.counters["events"] += 1
        if self._event_seq is not None:
            gap = (ev.seq - self._event_seq - 1) & 0xFFFFFFFF
            self.counters["events_missed"] += gap
        self._event_seq = ev.seq
        if self.on_event:
            self.on_event(ev)
        elif len(self._events) < self._backlog:
            self._events.append(ev)

    def _dispatch(self, raw: bytes) -> None:
        try:
            _eth, m = wire.decode_frame(raw)
        except wire.WireError:
            self.counters["frames_ignored"] += 1
            return
        self.counters["frames_received"] += 1
        if isinstance(m, wire.DataToHost):
            if len(self._data) >= self._backlog:
                self.counters["backlog_dropped"] += 1
            else:
                self._data.append(m)
        elif isinstance(m, (wire.Ack, wire.Stats)):
            self._answer(m)
        elif isinstance(m, wire.Event):
            self._event(m)
        else:  # requests of another host on the link, compat frames
            self.counters["frames_ignored"] += 1

    def process(self, max_frames: int = 1024) -> int:
        """Reads what has arrived (without blocking), completes requests,
        takes events and data, does due re-sends; returns frames read."""
        n = 0
        while n < max_frames:
            try:
                raw, addr = self.sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                break
            n += 1
            if isinstance(addr, tuple) and len(addr) > 2 and addr[2] == PACKET_OUTGOING:
                continue
            self._dispatch(raw)
        self._timers()
        return n

    # ------------------------------------------------------------ data and events

    def send_data(self, packets: Iterable[Tuple[int, int, bytes]]) -> int:
        """Sends (index, full PN, plaintext QUIC packet) as DATA_TO_OFFLOAD
        frames, all checked before any is sent; returns how many the socket
        took (fewer when it was full)."""
        frames = [
            self._eth_data + wire.DataToOffload(index=i, pn=pn, packet=pkt).encode()
            for i, pn, pkt in packets
        ]
        sent = 0
        for f in frames:
            if not self._send(f):
                break
            sent += 1
        self.counters["data_sent"] += sent
        self.counters["packets_sent"] += sent
        return sent

    def train_capacity(self) -> int:
        """The most packet bytes one DATA_TRAIN frame can carry on this host
        link: the interface's MTU less the train header, at most 65535 (0
        with a socket of the caller's, whose link is unknown). A 1,500-byte
        link takes one full-size QUIC packet: no train is worth it there."""
        if not self.ifname:
            return 0
        import fcntl
        import struct

        try:
            req = struct.pack("16sI", self.ifname.encode()[:15], 0)
            mtu = struct.unpack("16sI", fcntl.ioctl(self.sock, SIOCGIFMTU, req))[1]
        except OSError:
            return 0
        header = len(wire.DataTrain(packets=[b"x"]).header())
        return max(0, min(mtu - len(self._eth_data) + 14, 65535 + header) - header)

    def send_train(
        self, trains: Iterable[Tuple[int, int, List[bytes]]], segment_size: Optional[int] = None
    ) -> int:
        """Sends (index, first PN, [plaintext QUIC packets]) as DATA_TRAIN
        frames (docs/protocol.md §4.2.1): each list's packets get PNs first PN,
        +1, ..., all of one size (``segment_size``, default the first
        packet's) except the last, which may be shorter.  All are checked
        before any is sent (:class:`quicoff.wire.WireError` for a bad train);
        returns how many trains the socket took (fewer when it was full).
        A jumbo host link takes up to 65535 bytes of packets per train."""
        trains = [(i, pn, list(pkts)) for i, pn, pkts in trains]
        frames = [
            self._eth_data
            + wire.DataTrain(index=i, pn=pn, packets=pkts, segment_size=segment_size).encode()
            for i, pn, pkts in trains
        ]
        sent = 0
        for f in frames:
            if not self._send(f):
                break
            sent += 1
        self.counters["data_sent"] += sent
        self.counters["trains_sent"] += sent
        self.counters["packets_sent"] += sum(len(t[2]) for t in trains[:sent])
        return sent

    def recv_data(self, max_packets: int = 64, timeout: float = 0.0) -> List[wire.DataToHost]:
        """Up to ``max_packets`` DATA_TO_HOST, waiting at most ``timeout``
        seconds for the first."""
        end = time.monotonic() + timeout
        self.process()
        while not self._data:
            left = end - time.monotonic()
            if left <= 0:
                break
            t = self.next_timeout()
            select.select([self.sock], [], [], left if t is None else min(left, t))
            self.process()
        out = []
        while self._data and len(out) < max_packets:
            out.append(self._data.popleft())
        self.counters["data_received"] += len(out)
        return out

    def events(self, timeout: float = 0.0) -> List[wire.Event]:
        """The EVENTs received so far (when no on_event callback takes them),
        waiting at most ``timeout`` seconds for the first."""
        end = time.monotonic() + timeout
        self.process()
        while not self._events and time.monotonic() < end:
            select.select([self.sock], [], [], max(0.0, end - time.monotonic()))
            self.process()
        out = list(self._events)
        self._events.clear()
        return out
