# SPDX-License-Identifier: Apache-2.0
"""An HTTP/3 client on aioquic whose 1-RTT packet protection runs in quicoff,
so that both hosts of a transfer can be offloaded (issue 10's "both hosts"
run). It downloads each URL into a directory, like Debian's gtlsclient
--download:

    python -m quicoff.aioquic_client --download DIR [--offload none|inproc|dpdk]
        [--host-if IF] [--keylog FILE] [--stats FILE] [--key-update-after BYTES]
        [--offload-silence-ms MS] ADDR PORT URL...

The URLs' paths are asked of the server at ADDR PORT (their host names are
sent as :authority and SNI); each body is written to DIR/<last path part>.
The server's certificate is not verified unless --ca FILE is given (the
test servers' are self-signed). Exit status 0 when every response is 200
and complete.
"""

from __future__ import annotations

import argparse
import os
import ssl
import sys
import time
from typing import Dict, List, Optional
from urllib.parse import urlparse

try:
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import DataReceived, HeadersReceived
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise SystemExit("quicoff.aioquic_client needs aioquic (pip install aioquic): %s" % _e)

from .aioquic_runtime import CID_LEN, Link, Offload, add_offload_arguments, open_udp, stats_json


class Download:
    __slots__ = ("url", "path", "out", "status", "received", "done")

    def __init__(self, url: str, directory: str):
        u = urlparse(url)
        self.url = url
        self.path = (u.path or "/") + ("?" + u.query if u.query else "")
        name = os.path.basename(u.path.rstrip("/")) or "index.html"
        self.out = open(os.path.join(directory, name), "wb")
        self.status: Optional[bytes] = None
        self.received = 0
        self.done = False


def run(args: argparse.Namespace) -> int:
    first = urlparse(args.urls[0])
    cfg = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        connection_id_length=CID_LEN,
        server_name=first.hostname,
    )
    if args.ca:
        cfg.load_verify_locations(args.ca)
    else:
        cfg.verify_mode = ssl.CERT_NONE
    keylog = open(args.keylog, "a") if args.keylog else None
    cfg.secrets_log_file = keylog
    offload = Offload(args.offload, args.host_if, args.offload_silence_ms, "aioquic_client")
    sock = open_udp("::" if ":" in args.addr else "0.0.0.0", 0)
    peer = (args.addr, args.port)
    conn = QuicConnection(configuration=cfg)
    off = offload.attach(conn, sock)
    link = Link(sock, off, peer)
    os.makedirs(args.download, exist_ok=True)
    downloads: Dict[int, Download] = {}
    h3 = H3Connection(conn)
    every, mark, body = args.key_update_after, 0, 0
    deadline = time.monotonic() + args.timeout
    ok = False
    try:
        conn.connect(peer, now=time.monotonic())
        link.flush()
        ended = False
        while not ended and time.monotonic() < deadline:
            for ev in link.step():
                if isinstance(ev, HandshakeCompleted):
                    for url in args.urls:
                        d = Download(url, args.download)
                        sid = conn.get_next_available_stream_id()
                        authority = urlparse(url).netloc.encode()
                        h3.send_headers(
                            sid,
                            [
                                (b":method", b"GET"),
                                (b":scheme", b"https"),
                                (b":authority", authority),
                                (b":path", d.path.encode()),
                            ],
                            end_stream=True,
                        )
                        downloads[sid] = d
                elif isinstance(ev, ConnectionTerminated):
                    ended = True
                for h in h3.handle_event(ev):
                    d = downloads.get(getattr(h, "stream_id", -1))
                    if d is None:
                        continue
                    if isinstance(h, HeadersReceived):
                        d.status = dict(h.headers).get(b":status")
                    elif isinstance(h, DataReceived):
                        d.out.write(h.data)
                        d.received += len(h.data)
                        body += len(h.data)
                    if getattr(h, "stream_ended", False):
                        d.done = True
            if every and body - mark >= every and off.request_key_update(time.monotonic()):
                mark = body
            if downloads and all(d.done for d in downloads.values()) and not ok:
                ok = all(d.status == b"200" for d in downloads.values())
                conn.close()
                ended = True
            link.flush()
    finally:
        for d in downloads.values():
            d.out.close()
        off.close()
        if args.stats:
            with open(args.stats, "w") as f:
                extra = {"bytes_received": body, "ok": ok, **offload.report()}
                f.write(stats_json(args.offload, [off], extra, "client") + "\n")
        offload.close()
        sock.close()
        if keylog:
            keylog.close()
    for d in downloads.values():
        if not d.done or d.status != b"200":
            print(
                "aioquic_client: %s: %s" % (d.url, "incomplete" if not d.done else d.status),
                file=sys.stderr,
            )
    if not downloads:
        print("aioquic_client: no connection to %s %d" % peer, file=sys.stderr)
    return 0 if ok else 1


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicoff.aioquic_client", description=__doc__)
    p.add_argument("--download", "-o", default=".", metavar="DIR", help="write bodies here")
    add_offload_arguments(p)
    p.add_argument(
        "--key-update-after",
        "--key-update",
        type=int,
        default=0,
        metavar="BYTES",
        help="start a key update every BYTES of response body received",
    )
    p.add_argument("--ca", metavar="FILE", help="verify the server's certificate with these CAs")
    p.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds")
    p.add_argument("addr")
    p.add_argument("port", type=int)
    p.add_argument("urls", nargs="+", metavar="URL")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
