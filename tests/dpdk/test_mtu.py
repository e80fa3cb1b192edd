# SPDX-License-Identifier: Apache-2.0
"""Too big for the wire (issue 8 item 6).

A protected packet over the network MTU was counted as sent and dropped by
the kernel; now it is dropped before protection (tx_too_big) and the host
gets EVENT too_big carrying the MTU (decoded here by quicoff.wire, and by
offload_frames, which checks quicoff.wire's reading against Scapy's). Frames
exactly at the MTU still pass, both ways. On a jumbo port (veths of MTU 9000, af_packet rings
sized for it, --net-mtu 9000) 9,000-byte packets pass whole; with the PMD's
default rings the kernel cuts frames over ~2 kB, and a cut frame must never
be forwarded (truncated_dropped).
"""

from __future__ import annotations

import random
import signal
import time

import pytest
from scapy.all import IP, UDP, Ether, IPv6, Raw, raw

import offload_frames as W
from harness import App
from quicoff import ref
from quicoff import wire as QW

OFFLOAD_MAC = "02:0f:f1:0a:d0:00"
NEXT_HOP_MAC = "02:00:00:00:be:ef"
PEER_MAC = "02:00:00:00:70:01"
SUITE = "aes-128-gcm"
TAG = 16


def keys(seed: int) -> ref.PacketKeys:
    r = random.Random(seed)
    return ref.PacketKeys(r.randbytes(16), r.randbytes(12), r.randbytes(16))


def enc(v6: bool) -> bytes:
    if v6:
        return W.encap_tlv(
            NEXT_HOP_MAC, "02:00:00:00:a0:02", "2001:db8::1", "2001:db8:7::9", 5000, 6000, vlan=100
        )
    return W.encap_tlv(NEXT_HOP_MAC, "02:00:00:00:a0:01", "192.0.2.1", "198.51.100.7", 4433, 443)


class Host:
    def __init__(self, app: App):
        self.app = app
        self.rid = random.randrange(1 << 30)

    def send(self, payload: bytes) -> None:
        self.app.hp.send(W.eth(OFFLOAD_MAC, self.app.host.mac, W.ETH_SIGNAL) + payload)

    def request(self, frame_of) -> W.Frame:
        self.rid += 1
        rid = self.rid
        self.send(frame_of(rid))
        f = self.app.hp.recv_match(
            lambda f: (d := W.decode(f)) is not None and d.typ == W.ACK and d.request_id == rid, 3
        )
        assert f is not None, "no ACK"
        return W.decode(f)

    def add_tx(self, index: int, k, dcid: bytes, v6: bool = False) -> None:
        a = self.request(
            lambda r: W.add(r, index, W.TX, SUITE, k.key, k.iv, k.hp, dcid=dcid, encap=enc(v6))
        )
        assert a.status_name == "ok"

    def add_rx(self, index: int, k, dcid: bytes) -> None:
        a = self.request(lambda r: W.add(r, index, W.RX, SUITE, k.key, k.iv, k.hp, dcid=dcid))
        assert a.status_name == "ok"

    def events(self, code: int, timeout: float = 1.0):
        out = []
        while (
            f := self.app.hp.recv_match(
                lambda f: (d := W.decode(f)) is not None and d.typ == W.EVENT and d.flags == code,
                timeout,
            )
        ) is not None:
            out.append(f)
            timeout = 0.3
        return out


def quic_packet(dcid: bytes, pn: int, size: int) -> bytes:
    hdr = ref.build_short_header(dcid, pn, pn_len=2)
    return hdr + random.Random(pn * 7919 + size).randbytes(size - len(hdr))


def ip_len_of(quic_len: int, v6: bool) -> int:
    """The IP packet a QUIC packet of quic_len plaintext bytes leaves as."""
    return (40 if v6 else 20) + 8 + quic_len + TAG


def quic_len_for(ip_len: int, v6: bool) -> int:
    return ip_len - (40 if v6 else 20) - 8 - TAG


def is_udp(f: bytes) -> bool:
    return UDP in Ether(f)


def check_tx(app: App, index: int, k, dcid: bytes, v6: bool, mtu: int):
    """One packet exactly at the MTU (sent, whole), one byte over (dropped,
    counted, EVENT too_big with the MTU)."""
    host = Host(app)
    at = quic_packet(dcid, 1, quic_len_for(mtu, v6))
    before = app.stats()
    host.send(W.data_to_offload(index, 1, at))
    f = app.np.recv_match(is_udp, 3)
    assert f is not None, "a packet exactly at the MTU was not sent"
    p = Ether(f)
    ip = p[IPv6] if v6 else p[IP]
    assert (ip.plen + 40 if v6 else ip.len) == mtu
    u = ref.unprotect(SUITE, k, bytes(p[UDP].payload), dcid_len=len(dcid), largest_pn=0)
    assert u.header + u.payload == at and u.pn == 1

    over = quic_packet(dcid, 2, quic_len_for(mtu, v6) + 1)
    assert ip_len_of(len(over), v6) == mtu + 1
    host.send(W.data_to_offload(index, 2, over))
    ev = host.events(7)
    assert len(ev) == 1, "EVENT too_big"
    assert app.np.recv_match(is_udp, 0.5) is None, "a packet over the MTU was sent"
    after = app.stats()
    assert after["tx_too_big"] == before["tx_too_big"] + 1
    assert after["tx_packets"] == before["tx_packets"] + 1
    # the package's decoder (what a host stack uses) and the tests' own
    eth, e = QW.decode_frame(ev[0])
    assert (e.kind, e.code, e.mtu, e.index, e.direction, e.status, e.pn) == (
        "event",
        "too_big",
        mtu,
        index,
        "tx",
        "no_space",
        2,
    )
    assert e.count == after["tx_too_big"]
    d = W.decode(ev[0])
    assert d.u32(W.T_MTU) == mtu and d.u64(W.T_COUNT) == e.count


# ---------------------------------------------------------------- MTU 1500


@pytest.fixture(scope="module")
def app():
    a = App(
        "qdmt",
        [
            "--workers",
            "1",
            "--compat",
            "--encap-dst-mac",
            NEXT_HOP_MAC,
            "--encap-src-ip",
            "10.1.0.1",
            "--encap-dst-ip",
            "10.2.0.1",
            "--encap-sport",
            "1111",
            "--encap-dport",
            "2222",
        ],
        lcores="0",
    )
    yield a
    assert a.stop(signal.SIGTERM) == 0, a.output[-3000:]


@pytest.fixture
def clean(app):
    app.hp.drain()
    app.np.drain()
    return app


def test_network_mtu_is_the_ports(app):
    assert "network MTU 1500 (the port's)" in app.output


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6+vlan"])
def test_tx_at_and_one_over_the_mtu(clean, v6):
    index = 3 + v6
    k, dcid = keys(index), bytes([index]) * 8
    Host(clean).add_tx(index, k, dcid, v6)
    check_tx(clean, index, k, dcid, v6, 1500)


def test_issue_sizes(clean):
    """The issue's case: a host frame of 1,491 bytes (a 1,457-byte QUIC
    packet) would be 1,501 bytes of IPv4 on the wire."""
    app, host = clean, Host(clean)
    k, dcid = keys(5), b"\x05" * 8
    host.add_tx(5, k, dcid)
    frame = W.eth(OFFLOAD_MAC, app.host.mac, W.ETH_SIGNAL) + W.data_to_offload(
        5, 0, quic_packet(dcid, 0, 1457)
    )
    assert len(frame) == 1491
    before = app.stats()["tx_too_big"]
    app.hp.send(frame)
    assert app.wait_stat("tx_too_big", before + 1) == before + 1
    assert app.np.recv_match(is_udp, 0.5) is None


def test_too_big_events_are_rate_limited(clean):
    app, host = clean, Host(clean)
    k, dcid = keys(6), b"\x06" * 8
    host.add_tx(6, k, dcid)
    before = app.stats()
    for pn in range(5):
        host.send(W.data_to_offload(6, pn, quic_packet(dcid, pn, 1470)))
    assert app.wait_stat("tx_too_big", before["tx_too_big"] + 5) == before["tx_too_big"] + 5
    ev = host.events(7, 1.0)
    after = app.stats()
    assert len(ev) == 1, "at most one EVENT per (entry, code) per 100 ms"
    assert after["events_suppressed"] - before["events_suppressed"] == 4


def test_compat_host_gets_no_v1_event(clean):
    """A compat-format entry: the too-big packet is dropped and counted
    the same, but a compat host cannot parse v1 frames: no EVENT."""
    app = clean
    k, dcid = keys(8), b"\x08" * 8
    app.hp.send(
        W.eth(OFFLOAD_MAC, app.host.mac, W.ETH_SIGNAL)
        + W.compat_host(8, 0, k.hp, k.key, k.iv, 0, 8)
    )
    time.sleep(0.3)  # compat signaling is not acknowledged

    def data(pn, n):
        return W.eth(OFFLOAD_MAC, app.host.mac, W.ETH_DATA) + W.compat_data(
            8, pn, quic_packet(dcid, pn, n)
        )

    app.hp.send(data(1, quic_len_for(1500, False)))
    f = app.np.recv_match(is_udp, 3)
    assert f is not None and Ether(f)[IP].len == 1500
    before = app.stats()
    app.hp.send(data(2, quic_len_for(1500, False) + 1))
    assert app.wait_stat("tx_too_big", before["tx_too_big"] + 1) == before["tx_too_big"] + 1
    assert app.np.recv_match(is_udp, 0.5) is None
    assert not [
        f
        for f in app.hp.recv_all(timeout=0.5, quiet=0.3)
        if (d := W.decode(f)) is not None and d.typ == W.EVENT
    ]
    assert app.stats()["events_sent"] == before["events_sent"]


def test_rx_at_the_mtu_reaches_host(clean):
    """Network -> host: a datagram exactly at the MTU is unprotected and
    delivered (the host frame is smaller than the network frame)."""
    app, host = clean, Host(clean)
    k, dcid = keys(7), b"\x07" * 8
    host.add_rx(7, k, dcid)
    hdr = ref.build_short_header(dcid, 3, pn_len=2)
    payload = random.Random(3).randbytes(1500 - 28 - TAG - len(hdr))
    pkt = ref.protect(SUITE, k, hdr, payload, 3)
    frame = raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
        / IP(src="198.51.100.7", dst="192.0.2.1")
        / UDP(sport=443, dport=4433)
        / Raw(pkt)
    )
    assert len(frame) == 1514
    app.np.send(frame)
    f = app.hp.recv_match(lambda f: (d := W.decode(f)) is not None and d.typ == W.DATA_TO_HOST, 3)
    assert f is not None and W.decode(f).quic == hdr + payload


def test_option_rejected_when_out_of_range():
    from harness import find_binary, sh

    r = sh(
        str(find_binary()),
        "--no-huge",
        "-m",
        "256",
        "--no-pci",
        "-l",
        "0",
        "--file-prefix",
        "qdt_mtuopt",
        "--vdev",
        "net_null0",
        "--vdev",
        "net_null1",
        "--",
        "--net-mtu",
        "67",
        check=False,
    )
    assert r.returncode != 0 and "bad value '67' for --net-mtu" in r.stdout + r.stderr


# ---------------------------------------------------------------- jumbo


@pytest.fixture(scope="module")
def jumbo():
    a = App("qdjb", ["--workers", "1", "--net-mtu", "9000"], lcores="0", mtu=9000)
    yield a
    assert a.stop(signal.SIGTERM) == 0, a.output[-3000:]


def test_jumbo_port_at_and_over_the_mtu(jumbo):
    jumbo.hp.drain()
    jumbo.np.drain()
    assert "network MTU 9000 (--net-mtu)" in jumbo.output
    k, dcid = keys(9), b"\x09" * 8
    Host(jumbo).add_tx(9, k, dcid)
    check_tx(jumbo, 9, k, dcid, False, 9000)


def test_jumbo_rx_whole(jumbo):
    host = Host(jumbo)
    k, dcid = keys(10), b"\x0a" * 8
    host.add_rx(10, k, dcid)
    hdr = ref.build_short_header(dcid, 1, pn_len=2)
    payload = random.Random(10).randbytes(9000 - 28 - TAG - len(hdr))
    pkt = ref.protect(SUITE, k, hdr, payload, 1)
    jumbo.np.send(
        raw(
            Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
            / IP(src="198.51.100.7", dst="192.0.2.1")
            / UDP(sport=443, dport=4433)
            / Raw(pkt)
        )
    )
    f = jumbo.hp.recv_match(lambda f: (d := W.decode(f)) is not None and d.typ == W.DATA_TO_HOST, 3)
    assert f is not None and W.decode(f).quic == hdr + payload


# ---------------------------------------------------------------- cut frames


@pytest.fixture(scope="module")
def cutting():
    """Veths of MTU 9000 behind af_packet rings of the default size (framesz
    2048): the kernel cuts every longer frame to fit the ring."""
    a = App("qdcut", ["--workers", "1"], lcores="0", mtu=9000, framesz_mtu=1500)
    yield a
    assert a.stop(signal.SIGTERM) == 0, a.output[-3000:]


@pytest.mark.parametrize("side", ["from-host", "from-network"])
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_cut_frame_never_forwarded(cutting, side, v6):
    app = cutting
    app.hp.drain()
    app.np.drain()
    marker = b"CUT-" + side.encode() + (b"-6" if v6 else b"-4")
    body = marker + random.Random(1).randbytes(4000)
    ip = (
        IPv6(src="2001:db8::7", dst="2001:db8::1")
        if v6
        else IP(src="198.51.100.7", dst="192.0.2.1")
    )
    frame = raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01") / ip / UDP(sport=53, dport=53) / Raw(body)
    )
    send, capture = (app.hp, app.np) if side == "from-host" else (app.np, app.hp)
    before = app.stats()
    send.send(frame)
    got = [f for f in capture.recv_all(timeout=0.6, quiet=0.3) if marker in f]
    assert not got, f"a cut frame was forwarded ({[len(f) for f in got]} bytes)"
    assert (
        app.wait_stat("truncated_dropped", before["truncated_dropped"] + 1)
        == before["truncated_dropped"] + 1
    )
    # a frame that fits the ring still passes
    small = raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
        / ip
        / UDP(sport=53, dport=53)
        / Raw(marker + b"small")
    )
    send.send(small)
    assert capture.recv_match(lambda f: marker + b"small" in f, 2) is not None
