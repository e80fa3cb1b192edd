# SPDX-License-Identifier: Apache-2.0
"""The host's side of quicoff-dpdk's host port, as the tests play it: offload
frames sent from the host, requests matched to their ACK / STATS by request
ID, data frames to the host received. Each test module adds the requests it
needs on top (add_rx, add_tx, ...)."""

from __future__ import annotations

import random

import offload_frames as W
from harness import App

OFFLOAD_MAC = "02:0f:f1:0a:d0:00"  # the app is promiscuous: any destination works


class Host:
    """The host's QUIC stack, as far as the offload sees it."""

    def __init__(self, app: App):
        self.app = app
        self.mac = app.host.mac
        self.rid = random.randrange(1 << 30)

    def send(self, payload: bytes, ethertype: int = W.ETH_SIGNAL) -> None:
        self.app.hp.send(W.eth(OFFLOAD_MAC, self.mac, ethertype) + payload)

    def request(self, build) -> W.Frame:
        """Sends build(request_id); returns its ACK / STATS."""
        self.rid += 1
        rid = self.rid
        self.send(build(rid))
        f = self.app.hp.recv_match(
            lambda f: (
                (d := W.decode(f)) is not None and d.typ in (W.ACK, W.STATS) and d.request_id == rid
            ),
            3,
        )
        assert f is not None, f"no ACK for request {rid}"
        return W.decode(f)

    def next_data_frame(self, timeout: float = 2.0, types=(W.DATA_TO_HOST, -1)):
        """The next data frame to the host (v1 DATA_TO_HOST, or -1: compat), or None."""
        f = self.app.hp.recv_match(
            lambda f: (d := W.decode(f)) is not None and d.typ in types, timeout
        )
        return W.decode(f) if f else None
