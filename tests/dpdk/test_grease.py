# SPDX-License-Identifier: Apache-2.0
"""quicoff-dpdk and the greased QUIC bit (RFC 9287), installed through ADD.

ngtcp2 clears the fixed bit (0x40) on many packets once grease_quic_bit was
advertised. An ADD without TLV 0x0014 (or with 1) accepts them: RX greased
packets reach the host decrypted, TX greased plaintext leaves protected with
the bit still 0. An ADD with 0x0014 = 0 keeps RFC 9000's rule: RX greased
packets are malformed (the host gets the frame as received, still
encrypted), TX ones are dropped and counted, never sent in clear. The golden
model is quicoff.ref. Run under flock /tmp/quicoff-net.lock (fixed veth names).
"""

from __future__ import annotations

import random
import signal

import pytest
from scapy.all import IP, UDP, Ether, Raw, raw

import hostside
import offload_frames as W
from harness import App
from quicoff import ref

NEXT_HOP_MAC = "02:00:00:00:be:ef"
PEER_MAC = "02:00:00:00:70:01"
SUITE = "aes-128-gcm"
HANDSHAKE = 3  # quicoff_level_t


def keys_for(seed: int) -> ref.PacketKeys:
    r = random.Random(seed)
    return ref.PacketKeys(r.randbytes(16), r.randbytes(12), r.randbytes(16))


def greased(header: bytes) -> bytes:
    return bytes([header[0] & ~0x40]) + header[1:]


def net_frame(quic: bytes) -> bytes:
    return raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
        / IP(src="198.51.100.7", dst="192.0.2.1")
        / UDP(sport=443, dport=4433)
        / Raw(quic)
    )


def is_udp(f: bytes) -> bool:
    return UDP in Ether(f)


@pytest.fixture(scope="module")
def app():
    a = App("qdg", ["--workers", "1"], lcores="0")
    yield a
    assert a.stop(signal.SIGTERM) == 0, a.output[-3000:]


class Host(hostside.Host):
    def add(self, index, direction, k, dcid, **kw) -> str:
        return self.request(
            lambda r: W.add(r, index, direction, SUITE, k.key, k.iv, k.hp, dcid=dcid, **kw)
        ).status_name

    def next_data(self, timeout=2.0):
        return self.next_data_frame(timeout, types=(W.DATA_TO_HOST,))


@pytest.fixture
def host(app):
    app.hp.drain()
    app.np.drain()
    return Host(app)


def enc():
    return W.encap_tlv(NEXT_HOP_MAC, "02:00:00:00:a0:01", "192.0.2.1", "198.51.100.7", 4433, 443)


@pytest.mark.parametrize("tlv", [None, True], ids=["absent", "1"])
def test_rx_greased_reaches_host_decrypted(host, tlv):
    idx = 1 if tlv is None else 2
    k, dcid = keys_for(idx), bytes([idx]) * 8
    assert host.add(idx, W.RX, k, dcid, grease_quic_bit=tlv) == "ok"
    for pn in range(3):
        hdr = greased(ref.build_short_header(dcid, pn, pn_len=2))
        payload = random.Random(pn).randbytes(60)
        host.app.np.send(net_frame(ref.protect(SUITE, k, hdr, payload, pn)))
        d = host.next_data()
        assert d is not None, "a greased packet did not reach the host"
        assert (d.index, d.pn, d.status_name) == (idx, pn, "ok")
        assert d.quic == hdr + payload and not d.quic[0] & 0x40


def test_rx_greased_handshake(host):
    k, dcid = keys_for(3), b"\x03" * 8
    assert host.add(3, W.RX, k, dcid, level=HANDSHAKE) == "ok"
    payload = b"\x06" * 50
    hdr = greased(ref.build_long_header("handshake", dcid, b"\xaa" * 4, 7, len(payload), pn_len=2))
    host.app.np.send(net_frame(ref.protect(SUITE, k, hdr, payload, 7)))
    d = host.next_data()
    assert d is not None and d.status_name == "ok" and d.quic == hdr + payload


def test_rx_flag_off_is_malformed_and_passed_as_received(host):
    k, dcid = keys_for(4), b"\x04" * 8
    assert host.add(4, W.RX, k, dcid, grease_quic_bit=False) == "ok"
    before = host.app.stats()
    pkt = ref.protect(SUITE, k, greased(ref.build_short_header(dcid, 1, pn_len=2)), b"z" * 60, 1)
    f = net_frame(pkt)
    host.app.np.send(f)
    assert host.app.hp.recv_match(lambda g: g == f, 2) == f, "not passed as received"
    assert (
        host.app.wait_stat("rx_malformed", before["rx_malformed"] + 1) == before["rx_malformed"] + 1
    )
    # the bit set: decrypted as always
    hdr = ref.build_short_header(dcid, 2, pn_len=2)
    host.app.np.send(net_frame(ref.protect(SUITE, k, hdr, b"y" * 60, 2)))
    d = host.next_data()
    assert d is not None and d.status_name == "ok" and d.quic == hdr + b"y" * 60


def test_tx_greased_protected_as_written(host):
    k, dcid = keys_for(5), b"\x05" * 8
    assert host.add(5, W.TX, k, dcid, encap=enc()) == "ok"
    hdr = greased(ref.build_short_header(dcid, 9, pn_len=2))
    payload = b"p" * 80
    host.send(W.data_to_offload(5, 9, hdr + payload))
    f = host.app.np.recv_match(is_udp, 2)
    assert f is not None, "nothing on the network side"
    quic = bytes(Ether(f)[UDP].payload)
    assert quic == ref.protect(SUITE, k, hdr, payload, 9) and not quic[0] & 0x40


def test_tx_flag_off_dropped_never_sent(host):
    k, dcid = keys_for(6), b"\x06" * 8
    assert host.add(6, W.TX, k, dcid, encap=enc(), grease_quic_bit=False) == "ok"
    before = host.app.stats()
    host.send(
        W.data_to_offload(6, 1, greased(ref.build_short_header(dcid, 1, pn_len=2)) + b"secret" * 10)
    )
    assert (
        host.app.wait_stat("tx_malformed", before["tx_malformed"] + 1) == before["tx_malformed"] + 1
    )
    assert host.app.np.recv(0.3) is None, "something left on the network side"
