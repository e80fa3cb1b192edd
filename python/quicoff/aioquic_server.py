# SPDX-License-Identifier: Apache-2.0
"""An HTTP/3 file server on aioquic whose 1-RTT packet protection runs in
quicoff: the aioquic twin of qo-h3-server (integrations/ngtcp2), with its
interface, so a driver calls both the same way:

    python -m quicoff.aioquic_server -d DIR --offload none|inproc|dpdk [--host-if IF]
        [--keylog FILE] [--stats FILE] [--key-update-after BYTES] [--offload-silence-ms MS]
        [--once] ADDR PORT KEY CERT

GET /NAME serves DIR/NAME (no "..", no query); anything else is 404. One
connection at a time, one thread (docs/aioquic.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any, Dict, List, Optional

try:
    from aioquic.buffer import Buffer
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import HeadersReceived
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.events import ConnectionTerminated
    from aioquic.quic.packet import QuicPacketType, pull_quic_header
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise SystemExit("quicoff.aioquic_server needs aioquic (pip install aioquic): %s" % _e)

from .aioquic_runtime import CID_LEN, Link, Offload, add_offload_arguments, open_udp, stats_json

_stop = False


def _on_signal(_sig: int, _frame: Any) -> None:
    global _stop
    _stop = True


def file_for(docroot: str, path: str) -> Optional[str]:
    """The request path as a file under the document root, or None."""
    path = path.split("?", 1)[0]
    if not path.startswith("/") or ".." in path:
        return None
    full = os.path.join(docroot, path.lstrip("/"))
    return full if os.path.isfile(full) else None


class Server:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.cfg = QuicConfiguration(
            is_client=False, alpn_protocols=H3_ALPN, connection_id_length=CID_LEN
        )
        self.cfg.load_cert_chain(args.cert, args.key)
        self.keylog = open(args.keylog, "a") if args.keylog else None
        self.cfg.secrets_log_file = self.keylog
        self.offload = Offload(
            args.offload, args.host_if, args.offload_silence_ms, "aioquic_server"
        )
        self.sock = open_udp(args.addr, args.port)
        self.offs: List[Any] = []
        self.bytes_served = 0
        self.last_close: Dict[str, Any] = {}  # how the last connection ended

    def accept(self) -> Optional[Link]:
        """Waits for a client's first Initial; None when stopped."""
        import select

        while not _stop:
            ready, _, _ = select.select([self.sock], [], [], 0.5)
            if not ready:
                continue
            try:
                data, addr = self.sock.recvfrom(65536)
            except BlockingIOError:
                continue
            try:
                header = pull_quic_header(Buffer(data=data), host_cid_length=CID_LEN)
            except ValueError:
                continue
            if header.packet_type != QuicPacketType.INITIAL or len(data) < 1200:
                continue
            conn = QuicConnection(
                configuration=self.cfg,
                original_destination_connection_id=header.destination_cid,
            )
            off = self.offload.attach(conn, self.sock)
            self.offs.append(off)
            link = Link(self.sock, off, addr)
            off.receive_datagrams([(data, addr)], time.monotonic())
            return link
        return None

    def serve_one(self, link: Link) -> None:
        h3 = H3Connection(link.conn)
        every = self.args.key_update_after
        mark = 0
        ended = False
        while not ended and not _stop:
            for ev in link.step():
                if isinstance(ev, ConnectionTerminated):
                    ended = True
                    self.last_close = {
                        "error_code": ev.error_code,
                        "frame_type": ev.frame_type,
                        "reason": ev.reason_phrase,
                    }
                for h in h3.handle_event(ev):
                    if isinstance(h, HeadersReceived):
                        self.respond(h3, h)
            # due every BYTES sent, started once RFC 9001 §6.1 allows it
            if (
                every
                and link.off.bytes_sent - mark >= every
                and link.off.request_key_update(time.monotonic())
            ):
                mark = link.off.bytes_sent
            link.flush()
        if _stop and not ended:
            link.conn.close()
            link.flush()
        link.off.close()

    def respond(self, h3: H3Connection, ev: HeadersReceived) -> None:
        headers: Dict[bytes, bytes] = dict(ev.headers)
        path = headers.get(b":path", b"/").decode(errors="replace")
        full = file_for(self.args.directory, path) if headers.get(b":method") == b"GET" else None
        if full is None:
            h3.send_headers(ev.stream_id, [(b":status", b"404")], end_stream=True)
            return
        with open(full, "rb") as f:
            body = f.read()
        h3.send_headers(
            ev.stream_id,
            [(b":status", b"200"), (b"content-length", str(len(body)).encode())],
        )
        h3.send_data(ev.stream_id, body, end_stream=True)
        self.bytes_served += len(body)

    def run(self) -> int:
        print(
            "aioquic_server: listening on %s %d, offload %s"
            % (self.args.addr, self.args.port, self.args.offload),
            file=sys.stderr,
            flush=True,
        )
        while not _stop:
            link = self.accept()
            if link is None:
                break
            self.serve_one(link)
            if self.args.once:
                break
        return 0

    def close(self) -> None:
        if self.args.stats:
            with open(self.args.stats, "w") as f:
                f.write(
                    stats_json(
                        self.args.offload,
                        self.offs,
                        {
                            "bytes_served": self.bytes_served,
                            "last_close": self.last_close,
                            **self.offload.report(),
                        },
                        "server",
                    )
                    + "\n"
                )
        self.offload.close()
        self.sock.close()
        if self.keylog:
            self.keylog.close()


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicoff.aioquic_server", description=__doc__)
    p.add_argument("-d", dest="directory", default=".", help="serve files from DIR")
    add_offload_arguments(p)
    p.add_argument(
        "--key-update-after",
        type=int,
        default=0,
        metavar="BYTES",
        help="start a key update every BYTES sent",
    )
    p.add_argument("--once", action="store_true", help="exit after the first connection ends")
    p.add_argument("addr")
    p.add_argument("port", type=int)
    p.add_argument("key")
    p.add_argument("cert")
    args = p.parse_args(argv)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    server = Server(args)
    try:
        return server.run()
    finally:
        server.close()


if __name__ == "__main__":
    sys.exit(main())
