# SPDX-License-Identifier: Apache-2.0
"""Engine.replace_connection (quicoff_conn_replace) and the stand-in offload's
use of it (issue 8 item 4): replacing an entry is atomic, and a replacement
that fails leaves the old entry exactly as it was. Packets are protected by
quicoff.ref, the independent model.
"""
from __future__ import annotations

import types

import pytest

import quicoff
from quicoff import ref, standin_offload, wire

K1 = ref.PacketKeys(bytes(range(16)), bytes(range(12)), bytes(range(16, 32)))
K2 = ref.PacketKeys(bytes(range(32, 48)), bytes(range(48, 60)), bytes(range(64, 80)))
D1, D2, D3 = b"\x11" * 8, b"\x22" * 8, b"\x33" * 8


def packet(k, dcid, pn):
    return ref.protect("aes-128-gcm", k, ref.build_short_header(dcid, pn, pn_len=2),
                       b"payload %d" % pn * 4, pn)


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


class _Standin(standin_offload.StandIn):
    """The stand-in's control path without its sockets: replies are kept."""

    def __init__(self):  # no super().__init__(): it opens AF_PACKET sockets
        self.a = types.SimpleNamespace(local_cid_len=8)
        self.engine = quicoff.Engine(local_cid_len=8)
        self.tx, self.rx, self.rx_by_dcid, self.rx_by_index = {}, {}, {}, {}
        self.c = {k: 0 for k in ("signaling_errors",)}
        self.done = {}
        self.host = None
        self.host_mac = b"\x02" * 6
        self.sent = []

    def _send(self, sock, frame):
        self.sent.append(frame)

    def add(self, rid, index, k, dcid, replace=False) -> str:
        self.v1_request(wire.Add(request_id=rid, index=index, direction="rx", dcid=dcid,
                                 key=k.key, iv=k.iv, hp=k.hp, replace=replace), b"\x04" * 6)
        return wire.decode_frame(self.sent[-1])[1].status


def test_standin_failed_replace_keeps_the_entry():
    s = _Standin()
    assert s.add(1, 10, K1, D1) == "ok"
    assert s.add(2, 11, K2, D2) == "ok"
    h = s.rx_by_index[10]
    assert s.add(3, 10, K2, D2, replace=True) == "exists"
    assert s.add(4, 10, K2, b"\x33" * 5, replace=True) == "invalid_argument"
    assert s.rx_by_index[10] == h and s.engine.find_connection("1rtt", D1) == h
    assert dec(s.engine, packet(K1, D1, 1)), "a failed REPLACE removed the entry"
    assert s.add(5, 10, K2, D3, replace=True) == "ok"
    assert s.engine.find_connection("1rtt", D3) == h and s.rx_by_dcid.get(D1) is None


def test_standin_compat_peer_by_dcid():
    """seed 000's RX table: a DCID re-sent under another index gets the new keys."""
    s = _Standin()
    s.compat_signaling(wire.CompatPeer(index=1, hp_key=K1.hp, quic_key=K1.key, iv=K1.iv,
                                       dcid=D1, full_pn=wire.PN_NONE))
    s.compat_signaling(wire.CompatPeer(index=2, hp_key=K2.hp, quic_key=K2.key, iv=K2.iv,
                                       dcid=D1, full_pn=wire.PN_NONE))
    h = s.rx_by_dcid[D1]
    assert s.rx[h] == (2, "compat") and len(s.rx) == 1
    assert dec(s.engine, packet(K2, D1, 1))
