# SPDX-License-Identifier: Apache-2.0
"""Engine.replace_connection (quicoff_conn_replace) (issue 8 item 4):
replacing an entry is atomic, and a replacement that fails leaves the old
entry exactly as it was. Packets are protected by quicoff.ref, the
independent model. The offload application's use of it (REPLACE over the host
protocol, compat DCIDs re-sent under another index) is tested against the app
in tests/dpdk/test_control.py.
"""

from __future__ import annotations

import pytest

import quicoff
from quicoff import ref

K1 = ref.PacketKeys(bytes(range(16)), bytes(range(12)), bytes(range(16, 32)))
K2 = ref.PacketKeys(bytes(range(32, 48)), bytes(range(48, 60)), bytes(range(64, 80)))
D1, D2, D3 = b"\x11" * 8, b"\x22" * 8, b"\x33" * 8


def packet(k, dcid, pn):
    return ref.protect(
        "aes-128-gcm", k, ref.build_short_header(dcid, pn, pn_len=2), b"payload %d" % pn * 4, pn
    )


def dec(engine, pkt):
    """The packet's Result if it decrypted, else None."""
    r = engine.unprotect(pkt)[0]
    return r if r.ok else None


def test_engine_replace_connection():
    with quicoff.Engine(local_cid_len=8) as e:
        h = e.add_connection("rx", "aes-128-gcm", D1, keys=K1)
        other = e.add_connection("rx", "aes-128-gcm", D2, keys=K2)
        assert dec(e, packet(K1, D1, 1))
        before = e.connection_stats(h)
        with pytest.raises(quicoff.QuicoffError) as ei:
            e.replace_connection(h, "rx", "aes-128-gcm", D2, keys=K2)  # another entry's DCID
        assert ei.value.status == "exists"
        with pytest.raises(quicoff.QuicoffError) as ei:
            e.replace_connection(h, "rx", "aes-128-gcm", b"\x33" * 5, keys=K2)  # 5 != 8
        assert ei.value.status == "invalid_argument"
        assert e.connection_stats(h) == before
        assert e.find_connection("1rtt", D1) == h and e.find_connection("1rtt", D2) == other
        assert dec(e, packet(K1, D1, 2)), "the old entry is gone"

        assert e.replace_connection(h, "rx", "aes-128-gcm", D3, keys=K2) == h
        assert e.find_connection("1rtt", D3) == h and e.find_connection("1rtt", D1) is None
        assert e.connection_stats(h)["packets"] == 0
        assert dec(e, packet(K2, D3, 1)).payload == b"payload 1" * 4
