# SPDX-License-Identifier: Apache-2.0
"""What ``quicoff.aioquic_server`` and ``quicoff.aioquic_client`` share: the
offload options (the same as qo-h3-server's), the offload each mode uses,
one connection's event loop on a UDP socket (and the host port in dpdk
mode), and the --stats JSON.

One thread, no asyncio: the loop reads a batch of datagrams, hands it to
:class:`quicoff.aioquic_offload.OffloadedConnection` (one Engine burst in
inproc mode), runs aioquic's timer, and sends what aioquic wrote, so the
three modes are one code path.
"""

from __future__ import annotations

import argparse
import json
import resource
import select
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .aioquic_offload import DEFAULT_SILENCE, MODES, OffloadedConnection

CID_LEN = 8  # aioquic's default connection_id_length; the Engine's local_cid_len
BATCH = 64


def add_offload_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--offload", choices=MODES, default="none", help="where 1-RTT protection runs")
    p.add_argument(
        "--host-if", metavar="IF", help="dpdk: the host interface to quicoff-dpdk's host port"
    )
    p.add_argument("--keylog", metavar="FILE", help="TLS secrets, SSLKEYLOGFILE format")
    p.add_argument("--stats", metavar="FILE", help="JSON counters and CPU time at exit")
    p.add_argument(
        "--offload-silence-ms",
        type=_positive_ms,
        default=int(DEFAULT_SILENCE * 1000),
        metavar="MS",
        help="dpdk: silence before the offload is asked if alive (%(default)s)",
    )


def _positive_ms(text: str) -> int:
    ms = int(text)
    if ms <= 0:
        raise argparse.ArgumentTypeError("--offload-silence-ms must be > 0")
    return ms


class Offload:
    """The offload of one program run: an Engine (inproc), a host port
    (dpdk), or none; :meth:`attach` puts a connection on it."""

    def __init__(
        self,
        mode: str,
        host_if: Optional[str] = None,
        silence_ms: int = int(DEFAULT_SILENCE * 1000),
        prog: str = "aioquic",
    ):
        self.mode, self.silence, self.prog = mode, silence_ms / 1000.0, prog
        self.engine: Any = None
        self.port: Any = None
        self.events: Dict[str, int] = {}  # dpdk: the offload's EVENTs by code
        self._next_index = 1
        if mode == "inproc":
            from ._engine import Engine

            self.engine = Engine(local_cid_len=CID_LEN)
        elif mode == "dpdk":
            if not host_if:
                raise SystemExit("--offload dpdk needs --host-if IF (quicoff-dpdk's host port)")
            from .host import OffloadPort

            self.port = OffloadPort(host_if, on_event=self._event)

    def _event(self, ev: Any) -> None:
        code = str(ev.code)
        self.events[code] = self.events.get(code, 0) + 1

    def report(self) -> Dict[str, Any]:
        """What the --stats JSON says of the offload itself."""
        if self.port is None:
            return {}
        return {"offload_events": dict(self.events), "host_port": dict(self.port.counters)}

    def attach(self, conn: Any, sock: socket.socket) -> OffloadedConnection:
        index = self._next_index
        self._next_index += 1
        return OffloadedConnection(
            conn,
            self.mode,
            engine=self.engine,
            port=self.port,
            index=index,
            encap=lambda c: encap_for(sock.getsockname(), c._network_paths[0].addr),
            silence=self.silence,
            on_fallback=self._fell_back,
        )

    def _fell_back(self, reason: str) -> None:
        print(
            "%s: offload lost: %s; the connection is back on aioquic's own 1-RTT keys"
            % (self.prog, reason),
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        if self.port is not None:
            self.port.close()


def _ip_json(*args: str) -> List[Dict[str, Any]]:
    out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out or "[]")


def encap_for(local: Tuple[str, int], peer: Tuple[str, int]) -> Any:
    """The Ethernet/IP/UDP addresses of the datagrams the offload sends for a
    connection: what the host's own stack would put on them (the route's
    device and source, the next hop's MAC from the neighbour table, which
    the handshake's datagrams have filled)."""
    from . import wire

    route = _ip_json("route", "get", peer[0])[0]
    dev = route["dev"]
    src_ip = local[0] if local[0] not in ("0.0.0.0", "") else route.get("prefsrc", "0.0.0.0")
    with open("/sys/class/net/%s/address" % dev) as f:
        src_mac = f.read().strip()
    hop = route.get("gateway", peer[0])
    neigh = [n for n in _ip_json("neigh", "show", hop, "dev", dev) if n.get("lladdr")]
    if not neigh:
        raise RuntimeError("no neighbour entry for %s on %s" % (hop, dev))
    return wire.Encap(
        dst_mac=neigh[0]["lladdr"],
        src_mac=src_mac,
        src_ip=src_ip,
        dst_ip=peer[0],
        src_port=local[1],
        dst_port=peer[1],
    )


class Link:
    """One aioquic connection on a UDP socket, through its offload."""

    def __init__(self, sock: socket.socket, off: OffloadedConnection, peer: Any):
        self.sock, self.off, self.peer = sock, off, peer
        self.conn = off.conn

    def read_udp(self, limit: int = BATCH) -> List[Tuple[bytes, Any]]:
        out = []
        while len(out) < limit:
            try:
                data, addr = self.sock.recvfrom(65536)
            except (BlockingIOError, InterruptedError):
                break
            out.append((data, addr))
        return out

    def step(self, max_wait: float = 0.5) -> List[Any]:
        """Waits for input or aioquic's timer, feeds what came, and returns
        the QUIC events aioquic produced."""
        timer = self.conn.get_timer()
        wait = max_wait if timer is None else max(0.0, min(max_wait, timer - time.monotonic()))
        fds: List[Any] = [self.sock]
        port = self.off.port
        data: List[Any] = []
        if port is not None:
            fds.append(port)
            t = port.next_timeout()
            wait = wait if t is None else min(wait, t)
            # DATA_TO_HOST kept while a request waited for its ACK: the
            # socket will not wake us for them
            data = port.recv_data(max_packets=BATCH)
            if data:
                wait = 0.0
        ready, _, _ = select.select(fds, [], [], wait)
        now = time.monotonic()
        if self.sock in ready:
            batch = [(d, a) for d, a in self.read_udp() if a == self.peer]
            if batch:
                self.off.receive_datagrams(batch, now)
        if port is not None:
            data += port.recv_data(max_packets=BATCH)
            if data:
                self.off.receive_from_offload(data, self.peer, now)
            self.off.watch_offload(now)
        timer = self.conn.get_timer()
        if timer is not None and now >= timer:
            self.conn.handle_timer(now)
        events = []
        while True:
            ev = self.conn.next_event()
            if ev is None:
                return events
            events.append(ev)

    def flush(self) -> None:
        for data, addr in self.off.datagrams_to_send(time.monotonic(), self._send_udp):
            self._send_udp(data, addr)

    def _send_udp(self, data: bytes, addr) -> None:
        try:
            self.sock.sendto(data, addr)
        except (BlockingIOError, InterruptedError):
            select.select([], [self.sock], [], 0.05)  # full send buffer: as a loss


def stats_json(mode: str, offs: List[OffloadedConnection], extra: Dict[str, Any], role: str) -> str:
    """The --stats JSON, with qo-h3-server's keys (docs/ngtcp2.md)."""
    total: Dict[str, int] = {}
    own = {"tx_packets": 0, "rx_packets": 0}
    for o in offs:
        for k, v in o.counters.items():
            total[k] = total.get(k, 0) + v
        for k in own:
            own[k] += o.offload_counters[k]
    fell_back = sum(1 for o in offs if o.counters["fallback"])
    ru = resource.getrusage(resource.RUSAGE_SELF)
    tx, rx = ("s2c", "c2s") if role == "server" else ("c2s", "s2c")
    out: Dict[str, Any] = {"mode": mode, "stack": "aioquic", "connections": len(offs)}
    out.update(extra)
    out.update(
        {
            "stack_1rtt_packets_sent": total.get("stack_1rtt_packets_sent", 0),
            "stack_1rtt_packets_received": total.get("stack_1rtt_packets_received", 0),
            "host_1rtt_aead_calls": total.get("host_1rtt_aead_calls", 0),
            "key_updates_" + tx: total.get("key_updates_tx", 0),
            "key_updates_" + rx: total.get("key_updates_rx", 0),
            "update_key_calls": total.get("update_key_calls", 0),
            # what the offload itself says it protected and opened
            "offload_tx_packets": own["tx_packets"],
            "offload_rx_packets": own["rx_packets"],
            # what the seam handed it and got back refused
            "offload_tx_failures": total.get("offload_tx_failures", 0),
            "offload_rx_failures": total.get("offload_rx_failures", 0),
            # opened by the offload, then not read by aioquic (it was closing)
            "offload_rx_unread": total.get("offload_rx_unread", 0),
            # connections that fell back (a refused direction or a lost
            # offload; qo-h3-server's "fallbacks"), and those of a lost offload
            "fallback_connections": fell_back,
            "fallbacks": fell_back,
            "offload_lost": total.get("offload_lost", 0),
            "cpu_user_s": ru.ru_utime,
            "cpu_sys_s": ru.ru_stime,
        }
    )
    return json.dumps(out)


def open_udp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind((host, port))
    s.setblocking(False)
    return s
