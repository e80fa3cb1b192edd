# SPDX-License-Identifier: Apache-2.0
"""A minimal HTTP/3 download client on unmodified aioquic (its public API only).

Host B's aioquic client in ``quicoff demo --stack``: aioquic ships its own
HTTP/3 client (examples/http3_client.py) only in the source distribution, so
this is the smallest equivalent, written against what aioquic documents
(``aioquic.asyncio.connect``, ``QuicConnectionProtocol`` and its ``_quic``,
as aioquic's own examples subclass it, ``H3Connection``,
``QuicConnection.request_key_update``, ``QuicLogger``). Nothing of quicoff is imported: the
point of the client side is a stack that knows nothing of the offload.

    python -m quicoff_lab.h3_client --download DIR [--key-update-after BYTES]
        [--stats FILE] URL...

GETs every URL concurrently on one connection, writes each body to
DIR/<last path component>, and with ``--key-update-after`` starts one key
update once that many body bytes have arrived, if that would be the
connection's first: aioquic starts one whenever asked, and a second one soon
after the server's breaks RFC 9001 §6.5 (the server cannot have the keys
yet, drops the packets, and the download stalls). ``--stats`` writes JSON:
requests, bytes, seconds from the first request to the last body byte, the
key updates it started and held back. Exit status 0 when every response was
200 and complete.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import sys
import time
from typing import Dict, List, Optional
from urllib.parse import urlparse

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import QuicEvent
from aioquic.quic.logger import QuicLogger, QuicLoggerTrace

# flow-control windows large enough that a bulk download is not bounded by
# them on the testbed (aioquic's default is 1 MB)
WINDOW = 16 << 20


class _KeyUpdateTrace(QuicLoggerTrace):
    """Keeps no events, only counts the 1-RTT key updates: aioquic logs each
    one as security key_updated events with a local_update or remote_update
    trigger (the handshake's keys have the trigger "tls")."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.key_updates = 0

    def log_event(self, *, category: str, event: str, data: dict) -> None:
        if event == "key_updated" and data.get("trigger") in ("local_update", "remote_update"):
            self.key_updates += 1


class _KeyUpdateLogger(QuicLogger):
    def start_trace(self, is_client: bool, odcid: bytes) -> QuicLoggerTrace:
        self.trace = _KeyUpdateTrace(is_client=is_client, odcid=odcid)
        self._traces.append(self.trace)  # end_trace checks it is one of ours
        return self.trace


class _Response:
    def __init__(self, done: asyncio.Future):
        self.status: Optional[int] = None
        self.body = bytearray()
        self.done = done


class H3Client(QuicConnectionProtocol):
    """One HTTP/3 connection; ``get()`` returns when the response has ended."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.responses: Dict[int, _Response] = {}
        self.received = 0
        self.key_update_after: Optional[int] = None
        self.key_updates_started = 0
        self.key_updates_held_back = 0

    async def get(self, url: str) -> _Response:
        u = urlparse(url)
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(
            sid,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", u.netloc.encode()),
                (b":path", (u.path or "/").encode()),
                (b"user-agent", b"aioquic"),
            ],
            end_stream=True,
        )
        r = self.responses[sid] = _Response(self._loop.create_future())
        self.transmit()
        return await r.done

    def quic_event_received(self, event: QuicEvent) -> None:
        for ev in self.h3.handle_event(event):
            self._h3_event(ev)

    def _h3_event(self, ev: H3Event) -> None:
        r = self.responses.get(getattr(ev, "stream_id", -1))
        if r is None:
            return
        if isinstance(ev, HeadersReceived):
            for k, v in ev.headers:
                if k == b":status":
                    r.status = int(v)
        elif isinstance(ev, DataReceived):
            r.body += ev.data
            self.received += len(ev.data)
            if self.key_update_after is not None and self.received >= self.key_update_after:
                self.key_update_after = None
                log = self._quic.configuration.quic_logger
                assert isinstance(log, _KeyUpdateLogger)  # set by _main
                if log.trace.key_updates:
                    self.key_updates_held_back += 1  # the server's came first
                else:
                    self._quic.request_key_update()
                    self.key_updates_started += 1
        if getattr(ev, "stream_ended", False) and not r.done.done():
            r.done.set_result(r)


async def _main(a) -> int:
    cfg = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        verify_mode=ssl.CERT_NONE,  # the testbed's self-signed certificate
        max_data=WINDOW,
        max_stream_data=WINDOW,
        server_name=a.server_name,
    )
    cfg.quic_logger = _KeyUpdateLogger()  # how the client sees the server's key updates
    if a.keylog:
        cfg.secrets_log_file = open(a.keylog, "a")
    u = urlparse(a.urls[0])
    os.makedirs(a.download, exist_ok=True)
    async with connect(
        u.hostname, u.port or 443, configuration=cfg, create_protocol=H3Client
    ) as client:
        assert isinstance(client, H3Client)
        client.key_update_after = a.key_update_after
        t0 = time.monotonic()
        got: List[_Response] = await asyncio.wait_for(
            asyncio.gather(*(client.get(url) for url in a.urls)), a.timeout
        )
        elapsed = time.monotonic() - t0
        started = client.key_updates_started
        held_back = client.key_updates_held_back
    ok = True
    for url, r in zip(a.urls, got):
        name = os.path.basename(urlparse(url).path) or "index.html"
        with open(os.path.join(a.download, name), "wb") as f:
            f.write(r.body)
        if r.status != 200:
            sys.stderr.write("h3_client: %s: status %s\n" % (url, r.status))
            ok = False
    if a.stats:
        with open(a.stats, "w") as f:
            json.dump(
                {
                    "requests": len(got),
                    "bytes": sum(len(r.body) for r in got),
                    "seconds": elapsed,
                    "key_updates_started": started,
                    "key_updates_held_back": held_back,
                },
                f,
            )
    return 0 if ok else 1


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("urls", nargs="+", metavar="URL")
    p.add_argument("--download", required=True, metavar="DIR")
    p.add_argument("--key-update-after", type=int, default=None, metavar="BYTES")
    p.add_argument("--keylog", metavar="FILE", help="TLS secrets, SSLKEYLOGFILE format")
    p.add_argument("--stats", metavar="FILE")
    p.add_argument("--server-name", default="localhost", help="TLS SNI")
    p.add_argument("--timeout", type=float, default=120.0)
    a = p.parse_args(argv)
    return asyncio.run(_main(a))


if __name__ == "__main__":
    sys.exit(main())
