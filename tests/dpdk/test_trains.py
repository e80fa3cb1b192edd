# SPDX-License-Identifier: Apache-2.0
"""DATA_TRAIN (docs/protocol.md §4.2.1) through the real quicoff-dpdk on a
jumbo host link (veth MTU 65535, --host-mtu 65535; root, veth pairs):
quicoff.host.OffloadPort.send_train() hands the offload trains of 1, 2, 10
and 55 packets (54 of 1200 bytes and a shorter last: as many as one
~64 KB frame holds); every packet leaves as its own datagram, which
quicoff.ref decrypts to the plaintext and PN it was given; neither plaintext
nor key bytes are on the network side.  Bad trains (segment size 0, count 0,
lengths that do not add up, a last PN past 2^62-1, an unknown entry) are
refused whole and counted, a packet too big for the network or with a bad
header is dropped alone (EVENT too_big / tx_malformed), and nothing of what
is refused reaches the network.
"""

from __future__ import annotations

import struct
import time

import pytest
from scapy.all import IP, UDP, Ether

from harness import App
from quicoff import host, ref, wire

SUITE = "aes-128-gcm"
NEXT_HOP_MAC = "02:00:00:00:be:ef"
TX_DCID = bytes.fromhex("c1c2c3c4c5c6c7c8")
KEY = ref.PacketKeys(bytes(range(0x40, 0x50)), bytes(range(0x60, 0x6C)), bytes(range(0x70, 0x80)))
INDEX = 5
SEG = 1200


def encap() -> wire.Encap:
    return wire.Encap(
        dst_mac=NEXT_HOP_MAC,
        src_mac="02:00:00:00:a0:01",
        src_ip="192.0.2.1",
        dst_ip="198.51.100.7",
        src_port=4433,
        dst_port=443,
    )


def packet(pn: int, size: int) -> bytes:
    """A plaintext 1-RTT packet of `size` bytes whose payload names its PN."""
    hdr = ref.build_short_header(TX_DCID, pn, pn_len=2)
    text = b"TRAIN plaintext pn=%08d " % pn
    body = (text * (size // len(text) + 1))[: size - len(hdr)]
    return hdr + body


@pytest.fixture(scope="module")
def app():
    a = App("qdt", ["--workers", "1", "--host-mtu", "65535"], lcores="0", host_mtu=65535)
    yield a
    assert a.stop() == 0, a.output[-3000:]


@pytest.fixture(scope="module")
def port(app):
    with host.OffloadPort(app.host.outer) as p:
        r = p.add(index=INDEX, direction="tx", suite=SUITE, key=KEY.key, iv=KEY.iv, hp=KEY.hp,
                  dcid=TX_DCID, encap=encap())  # fmt: skip
        assert r.status == "ok"
        yield p


def on_network(app: App, n: int, timeout: float = 5.0) -> list:
    out = []
    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        f = app.np.recv_match(lambda f: UDP in Ether(f), max(0.0, end - time.monotonic()))
        if f is not None:
            out.append(f)
    return out


def quiet_network(app: App, wait: float = 0.5) -> list:
    return [f for f in app.np.recv_all(timeout=wait) if UDP in Ether(f)]


def check(frames: list, first_pn: int, pkts: list) -> None:
    assert len(frames) == len(pkts)
    for i, (f, plain) in enumerate(zip(frames, pkts)):
        p = Ether(f)
        assert p.dst == NEXT_HOP_MAC and p[IP].dst == "198.51.100.7"
        u = ref.unprotect(SUITE, KEY, bytes(p[UDP].payload), dcid_len=8)
        assert u.pn == first_pn + i
        assert u.header + u.payload == plain
        assert plain[12:40] not in f, "plaintext on the network side"
        assert not any(k in f for k in (KEY.key, KEY.iv, KEY.hp)), "key bytes on the network side"


@pytest.mark.parametrize("count", [1, 2, 10, 55])
def test_train_leaves_as_protected_datagrams(app, port, count):
    app.np.drain()
    first = 1000 * count
    last = 500 if count == 55 else 321
    pkts = [packet(first + i, SEG) for i in range(count - 1)] + [packet(first + count - 1, last)]
    assert sum(map(len, pkts)) <= 65535 - 0 and (count < 55 or sum(map(len, pkts)) > 64000)
    before = app.stats()
    assert port.send_train([(INDEX, first, pkts)], segment_size=SEG) == 1
    got = on_network(app, count)
    after = app.stats()
    assert len(got) == count, {k: after[k] - before[k] for k in after if after[k] != before[k]}
    check(got, first, pkts)
    assert after["host_trains"] - before["host_trains"] == 1
    assert after["host_train_packets"] - before["host_train_packets"] == count
    assert after["tx_packets"] - before["tx_packets"] == count
    assert port.counters["trains_sent"] >= 1


def raw_train(index: int, pn: int, length: int, seg: int, count: int, body: bytes) -> bytes:
    """A DATA_TRAIN frame as no encoder writes it (the host library refuses these)."""
    hdr = bytes([0x51, 1, 0x11, 0]) + struct.pack("!IQHHHH", index, pn, length, 0, seg, count)
    return wire.frame(b"", dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:99") + hdr + body


@pytest.mark.parametrize(
    "what,pn,seg,count,n_body",
    [
        ("segment size 0", 1, 0, 2, 2 * SEG),
        ("count 0", 1, SEG, 0, 2 * SEG),
        ("lengths that do not add up", 1, SEG, 4, 2 * SEG),
        ("an empty last packet", 1, SEG, 3, 2 * SEG),
        ("a last PN past 2^62-1", wire.PN_MAX - 1, SEG, 3, 3 * SEG),
    ],
)
def test_bad_train_is_refused_whole(app, port, what, pn, seg, count, n_body):
    app.np.drain()
    body = b"".join(packet(7 + i, SEG) for i in range(n_body // SEG))
    # the decoder's status for it (the one libquicoff-wire and quicoff.wire share)
    with pytest.raises(wire.WireError):
        wire.decode(raw_train(INDEX, pn, len(body), seg, count, body)[14:])
    before = app.stats()
    app.hp.send(raw_train(INDEX, pn, len(body), seg, count, body))
    assert app.wait_stat("host_bad_frame", before["host_bad_frame"] + 1) == (
        before["host_bad_frame"] + 1
    ), what
    assert quiet_network(app) == [], what
    after = app.stats()
    assert (
        after["tx_packets"] == before["tx_packets"]
        and after["host_trains"] == before["host_trains"]
    )


def test_train_of_unknown_entry_sends_nothing(app, port):
    app.np.drain()
    before = app.stats()
    pkts = [packet(1, SEG), packet(2, SEG), packet(3, 100)]
    assert port.send_train([(INDEX + 1, 1, pkts)]) == 1
    assert app.wait_stat("tx_unknown_connection", before["tx_unknown_connection"] + 3) == (
        before["tx_unknown_connection"] + 3
    )
    assert quiet_network(app) == []


def test_bad_packets_are_dropped_alone(app, port):
    """A train whose packets are too big for the network (EVENT too_big, MTU
    1500) or too short to be a QUIC packet (tx_malformed): those are not
    sent, the others are, each protected."""
    app.np.drain()
    port.events()
    before = app.stats()
    big = [packet(300 + i, 1480) for i in range(3)]
    assert port.send_train([(INDEX, 300, big)]) == 1
    evs = [e for e in port.events(timeout=3) if e.code == "too_big"]
    assert evs and evs[0].index == INDEX and evs[0].mtu == 1500 and evs[0].pn == 300
    assert app.wait_stat("tx_too_big", before["tx_too_big"] + 3) == before["tx_too_big"] + 3
    assert quiet_network(app) == []
    # the last packet of 5 bytes has no room for the header protection sample
    pkts = [packet(400, SEG), packet(401, SEG), packet(402, SEG)[:5]]
    before = app.stats()
    assert port.send_train([(INDEX, 400, pkts)], segment_size=SEG) == 1
    check(on_network(app, 2), 400, pkts[:2])
    assert app.wait_stat("tx_malformed", before["tx_malformed"] + 1) == before["tx_malformed"] + 1
    assert quiet_network(app) == []


@pytest.mark.parametrize(
    "name,args,lcores",
    [
        ("pipeline", ["--workers", "1", "--io-mode", "pipeline", "--idle-us", "20"], "0@0,1@1"),
        (
            "lookaside",
            [
                "--workers",
                "1",
                "--crypto",
                "lookaside",
                "--cryptodev",
                "crypto_aesni_gcm",
                "--idle-us",
                "20",
            ],
            "0",
        ),  # fmt: skip
    ],
)
def test_train_in_pipeline_and_lookaside_modes(name, args, lcores):
    """The train path's other two ways out: pipeline mode (a train's datagrams
    go to the TX ring between batches) and lookaside crypto (the cryptodev
    protects the packets' own mbufs)."""
    app = App("qdu", [*args, "--host-mtu", "65535"], lcores=lcores, host_mtu=65535)
    try:
        with host.OffloadPort(app.host.outer) as p:
            p.add(index=INDEX, direction="tx", suite=SUITE, key=KEY.key, iv=KEY.iv, hp=KEY.hp,
                  dcid=TX_DCID, encap=encap())  # fmt: skip
            pkts = [packet(50 + i, SEG) for i in range(54)] + [packet(104, 500)]
            assert p.send_train([(INDEX, 50, pkts)]) == 1
            check(on_network(app, 55), 50, pkts)
    finally:
        assert app.stop() == 0, app.output[-3000:]
