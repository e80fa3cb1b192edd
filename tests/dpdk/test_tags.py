# SPDX-License-Identifier: Apache-2.0
"""Tag stacks (issue 8 item 5): default-deny on what the parser cannot walk.

An offload frame (0x88B5 signaling with keys, data with plaintext) hidden
behind tags the classifier did not walk was taken for the host's own traffic
and forwarded to the network in clear; the same frames from the network were
passed to the host. Each tag form is sent on the host side and on the network
side, and the other side is captured: no key byte string and no plaintext may
appear there, and a counter must say what became of the frame
(tag_stack_dropped for stacks deeper than two tags, otherwise the frame is
handled as an offload frame: ACKed / protected from the host,
signal_from_network from the network).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from scapy.all import IP, UDP, Raw, raw

import offload_frames as W
from harness import App
from quicoff import ref

OFFLOAD_MAC = "02:0f:f1:0a:d0:00"
NEXT_HOP_MAC = "02:00:00:00:be:ef"
PEER_MAC = "02:00:00:00:70:01"

# (name, [TPIDs outer first], walkable: at most two tags the parser knows)
FORMS = [
    ("1x8100", [0x8100], True),
    ("1x88a8", [0x88A8], True),
    ("1x9100", [0x9100], True),
    ("1x9200", [0x9200], True),
    ("88a8+8100", [0x88A8, 0x8100], True),
    ("9100+8100", [0x9100, 0x8100], True),
    ("3x8100", [0x8100] * 3, False),
    ("88a8+8100+8100", [0x88A8, 0x8100, 0x8100], False),
    ("9100+9100+8100", [0x9100, 0x9100, 0x8100], False),
    ("4x8100", [0x8100] * 4, False),
    ("9200+5x8100", [0x9200] + [0x8100] * 5, False),
]
IDS = [f[0] for f in FORMS]


def tagged(dst: str, src: str, tpids, ethertype: int, payload: bytes) -> bytes:
    """Ethernet + the tag stack (VLAN IDs 101, 102, ...) + ethertype + payload."""
    tags = b"".join(struct.pack("!HH", t, 101 + i) for i, t in enumerate(tpids))
    return W.mac_bytes(dst) + W.mac_bytes(src) + tags + struct.pack("!H", ethertype) + payload


def snap(dst: str, src: str, ethertype: int, payload: bytes) -> bytes:
    """802.3 length + LLC/SNAP (RFC 1042) carrying ethertype: one more depth."""
    body = b"\xaa\xaa\x03\x00\x00\x00" + struct.pack("!H", ethertype) + payload
    return W.mac_bytes(dst) + W.mac_bytes(src) + struct.pack("!H", len(body)) + body


def secret_add(rid: int, index: int, direction: int, seed: int):
    """An ADD whose key bytes are unique: the byte string to look for."""
    r = random.Random(seed)
    key, iv, hp = r.randbytes(16), r.randbytes(12), r.randbytes(16)
    return W.add(rid, index, direction, "aes-128-gcm", key, iv, hp, dcid=bytes([index]) * 8), [
        key,
        hp,
    ]


def leaked(frames, needles) -> list:
    return [f for f in frames for n in needles if n in f]


@pytest.fixture(scope="module")
def app():
    a = App("qdtg", ["--workers", "1"], lcores="0")
    yield a
    assert a.stop(__import__("signal").SIGTERM) == 0, a.output[-3000:]


@pytest.fixture
def clean(app):
    app.hp.drain()
    app.np.drain()
    return app


def settle(app, name: str, before: dict, timeout: float = 3.0) -> int:
    return app.wait_stat(name, before[name] + 1, timeout) - before[name]


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_host_add_behind_tags_never_reaches_network(clean, form):
    app = clean
    name, tpids, walkable = form
    index = 40 + IDS.index(name)
    before = app.stats()
    rid = random.randrange(1, 1 << 30)
    frame, needles = secret_add(rid, index, W.RX, seed=index)
    app.hp.send(tagged(OFFLOAD_MAC, app.host.mac, tpids, W.ETH_SIGNAL, frame))
    net = app.np.recv_all(timeout=0.5, quiet=0.2)
    assert not leaked(net, needles), "key bytes on the network side"
    assert app.stats()["pass_to_net"] == before["pass_to_net"]
    if walkable:
        ack = app.hp.recv_match(
            lambda f: (d := W.decode(f)) is not None and d.typ == W.ACK and d.request_id == rid, 3
        )
        assert ack is not None, "a walkable tag stack: the ADD is the offload's, answered"
        assert W.decode(ack).status_name == "ok"
    else:
        assert settle(app, "tag_stack_dropped", before) == 1
        assert app.stats()["sig_rx"] == before["sig_rx"]


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_host_data_behind_tags_never_reaches_network_in_clear(clean, form):
    app = clean
    name, tpids, walkable = form
    index = 60 + IDS.index(name)
    r = random.Random(index)
    k = ref.PacketKeys(r.randbytes(16), r.randbytes(12), r.randbytes(16))
    dcid = bytes([index]) * 8
    rid = random.randrange(1, 1 << 30)
    enc = W.encap_tlv(NEXT_HOP_MAC, "02:00:00:00:a0:01", "192.0.2.1", "198.51.100.7", 4433, 443)
    app.hp.send(
        W.eth(OFFLOAD_MAC, app.host.mac, W.ETH_SIGNAL)
        + W.add(rid, index, W.TX, "aes-128-gcm", k.key, k.iv, k.hp, dcid=dcid, encap=enc)
    )
    assert (
        app.hp.recv_match(
            lambda f: (d := W.decode(f)) is not None and d.typ == W.ACK and d.request_id == rid, 3
        )
        is not None
    )
    app.np.drain()
    before = app.stats()
    plaintext = b"PLAINTEXT-" + name.encode() + b"-" + r.randbytes(24).hex().encode()
    quic = ref.build_short_header(dcid, 1, pn_len=2) + plaintext
    app.hp.send(
        tagged(OFFLOAD_MAC, app.host.mac, tpids, W.ETH_SIGNAL, W.data_to_offload(index, 1, quic))
    )
    net = app.np.recv_all(timeout=0.5, quiet=0.2)
    assert not leaked(net, [plaintext[:32]]), "plaintext on the network side"
    assert app.stats()["pass_to_net"] == before["pass_to_net"]
    if walkable:
        assert settle(app, "tx_packets", before) == 1, "a walkable stack: protected and sent"
    else:
        assert settle(app, "tag_stack_dropped", before) == 1
        assert app.stats()["tx_packets"] == before["tx_packets"]


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_network_add_behind_tags_never_reaches_host(clean, form):
    app = clean
    name, tpids, walkable = form
    before = app.stats()
    frame, needles = secret_add(7, 80 + IDS.index(name), W.RX, seed=1000 + IDS.index(name))
    app.np.send(tagged("02:00:00:00:a0:01", PEER_MAC, tpids, W.ETH_SIGNAL, frame))
    host = app.hp.recv_all(timeout=0.5, quiet=0.2)
    assert not leaked(host, needles), "a network frame with keys reached the host"
    counter = "signal_from_network" if walkable else "tag_stack_dropped"
    assert settle(app, counter, before) == 1
    after = app.stats()
    assert after["pass_to_host"] == before["pass_to_host"]
    assert after["sig_rx"] == before["sig_rx"], "a network frame was applied as signaling"


@pytest.mark.parametrize(
    "form", [f for f in FORMS if not f[2]], ids=[f[0] for f in FORMS if not f[2]]
)
def test_ip_behind_deep_stack_dropped_both_ways(clean, form):
    """Default-deny is not only for offload EtherTypes: a stack the parser
    cannot walk is dropped whatever it carries, from either port."""
    app = clean
    name, tpids, _ = form
    marker = b"DEEP-IP-" + name.encode()
    ip = raw(IP(src="198.51.100.7", dst="192.0.2.1") / UDP(sport=443, dport=4433) / Raw(marker))
    for send, capture in ((app.hp, app.np), (app.np, app.hp)):
        before = app.stats()
        send.send(tagged("02:00:00:00:a0:01", PEER_MAC, tpids, 0x0800, ip))
        assert not leaked(capture.recv_all(timeout=0.5, quiet=0.2), [marker])
        assert settle(app, "tag_stack_dropped", before) == 1
        after = app.stats()
        assert (after["pass_to_net"], after["pass_to_host"]) == (
            before["pass_to_net"],
            before["pass_to_host"],
        )


@pytest.mark.parametrize("side", ["host", "network"])
def test_snap_wrapped_offload_frame_dropped(clean, side):
    """0x88B5 behind an 802.3 length and RFC 1042 SNAP: an offload EtherType
    at another depth, never forwarded."""
    app = clean
    send, capture = (app.hp, app.np) if side == "host" else (app.np, app.hp)
    before = app.stats()
    frame, needles = secret_add(9, 99, W.TX, seed=4242 + (side == "host"))
    send.send(snap(OFFLOAD_MAC, PEER_MAC, W.ETH_SIGNAL, frame))
    assert not leaked(capture.recv_all(timeout=0.5, quiet=0.2), needles)
    assert settle(app, "tag_stack_dropped", before) == 1


def test_counter_named_in_telemetry_and_docs(app):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "dpdk.md").read_text()
    for name in ("tag_stack_dropped", "truncated_dropped"):
        assert name in app.stats()
        assert f"`{name}`" in doc
