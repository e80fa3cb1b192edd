# SPDX-License-Identifier: Apache-2.0
"""Lookaside crypto (rte_cryptodev) gives the same bytes as inline crypto.

One scripted exchange -- connections of every suite, 1-RTT and Handshake
(long header) entries, a multipath nonce, several packet-number lengths and
sizes, a key update each way, a tampered packet, a coalesced datagram -- is
run through quicoff-dpdk in inline mode and in lookaside mode on a software
cryptodev; the frames leaving on both ports must be identical, and so must
libquicoff's counters (lookaside runs libquicoff's split data path: all but
the AEAD); every protected packet must decrypt with the reference model, and
every AEAD must have gone through the cryptodev.
"""

from __future__ import annotations

import random
import re

import pytest
from scapy.all import UDP, Ether

import offload_frames as W
from harness import App
from quicoff import ref
from test_app import Host, enc4, keys_for, net_frame, quic_of

SCID = b"\x5c" * 6


def conns(suites):
    """(index, suite, keys, tx dcid, rx dcid, level, path_id)"""
    out = []
    for i, s in enumerate(suites):
        out.append(
            (
                1 + i,
                s,
                keys_for(s, 300 + i),
                bytes([0xD0 + i]) * 9,
                bytes([0xE0 + i]) * 8,
                "1rtt",
                0,
            )
        )
    if "aes-128-gcm" in suites:
        out.append(
            (
                20,
                "aes-128-gcm",
                keys_for("aes-128-gcm", 320),
                b"\x4e" * 5,
                b"\x4f" * 7,
                "handshake",
                0,
            )
        )
        out.append(
            (
                21,
                "aes-256-gcm" if "aes-256-gcm" in suites else "aes-128-gcm",
                keys_for("aes-256-gcm", 321)
                if "aes-256-gcm" in suites
                else keys_for("aes-128-gcm", 321),
                b"\x51" * 8,
                b"\x52" * 8,
                "1rtt",
                7,
            )
        )
    return out


def run_scenario(app: App, suites) -> tuple:
    host = Host(app)
    host.rid = 1
    cs = conns(suites)
    for idx, suite, k, txd, rxd, level, path in cs:
        lvl = {"1rtt": 0, "handshake": 3}[level]
        kw = dict(path_id=path, nonce="multipath") if path else {}
        nk = keys_for(suite, 900 + idx)
        nk = ref.PacketKeys(nk.key, nk.iv, k.hp)
        extra = dict(next_key=nk.key, next_iv=nk.iv) if level == "1rtt" else {}
        a = host.request(
            lambda r: W.add(
                r,
                idx,
                W.TX,
                suite,
                k.key,
                k.iv,
                k.hp,
                dcid=txd,
                encap=enc4(sport=6000 + idx),
                level=lvl,
                **kw,
            )
        )
        assert a.status_name == "ok", (idx, a.status_name)
        a = host.request(
            lambda r: W.add(
                r, idx, W.RX, suite, k.key, k.iv, k.hp, dcid=rxd, level=lvl, **kw, **extra
            )
        )
        assert a.status_name == "ok", (idx, a.status_name)

    rng = random.Random(7)
    expect_tx = []
    # host -> network
    for idx, suite, k, txd, rxd, level, path in cs:
        for pn in (0, 1, 300, 70000):
            payload = rng.randbytes(rng.choice((4, 60, 700, 1300)))
            if level == "handshake":
                hdr = ref.build_long_header("handshake", txd, SCID, pn, len(payload))
            else:
                hdr = ref.build_short_header(txd, pn)
            host.data(idx, pn, hdr + payload)
            expect_tx.append((idx, suite, k, txd, level, path, pn, hdr, payload))
    # a host-initiated key update on the first connection
    idx, suite, k, txd = cs[0][0], cs[0][1], cs[0][2], cs[0][3]
    k1 = keys_for(suite, 901)
    k1 = ref.PacketKeys(k1.key, k1.iv, k.hp)
    assert (
        host.request(
            lambda r: W.update(r, idx, W.TX, key_generation=1, key=k1.key, iv=k1.iv)
        ).status_name
        == "ok"
    )
    hdr = ref.build_short_header(txd, 80000, key_phase=1)
    host.data(idx, 80000, hdr + b"after the update" * 3)
    expect_tx.append((idx, suite, k1, txd, "1rtt", 0, 80000, hdr, b"after the update" * 3))

    # network -> host
    expect_rx = 0
    for idx, suite, k, txd, rxd, level, path in cs:
        kw = dict(path_id=path, nonce_layout="multipath") if path else {}
        for pn in (5, 6, 400):
            payload = rng.randbytes(rng.choice((4, 100, 1200)))
            hdr = (
                ref.build_long_header("handshake", rxd, SCID, pn, len(payload))
                if level == "handshake"
                else ref.build_short_header(rxd, pn)
            )
            app.np.send(net_frame(ref.protect(suite, k, hdr, payload, pn, **kw)))
            expect_rx += 1
        # the peer's key update (1-RTT), then a tampered packet
        if level == "1rtt":
            nk = keys_for(suite, 900 + idx)
            nk = ref.PacketKeys(nk.key, nk.iv, k.hp)
            hdr = ref.build_short_header(rxd, 401, key_phase=1)
            app.np.send(net_frame(ref.protect(suite, nk, hdr, b"peer updated" * 4, 401, **kw)))
            expect_rx += 1
            bad = bytearray(
                ref.protect(
                    suite,
                    nk,
                    ref.build_short_header(rxd, 402, key_phase=1),
                    b"tampered" * 4,
                    402,
                    **kw,
                )
            )
            bad[-1] ^= 0x80
            app.np.send(net_frame(bytes(bad)))
    # a coalesced datagram: Handshake + 1-RTT
    hs = [c for c in cs if c[5] == "handshake"]
    if hs:
        _, s_h, k_h, _, rxd_h, _, _ = hs[0]
        _, s_1, k_1, _, rxd_1, _, _ = cs[0]
        nk = keys_for(s_1, 900 + cs[0][0])
        nk = ref.PacketKeys(nk.key, nk.iv, k_1.hp)
        p1 = ref.protect(
            s_h, k_h, ref.build_long_header("handshake", rxd_h, SCID, 401, 30), b"H" * 30, 401
        )
        p2 = ref.protect(s_1, nk, ref.build_short_header(rxd_1, 403, key_phase=1), b"1" * 50, 403)
        app.np.send(net_frame(p1 + p2))
        expect_rx += 2

    net = [f for f in app.np.recv_all(timeout=1, quiet=0.2) if UDP in Ether(f)]
    hostf = [
        f
        for f in app.hp.recv_all(timeout=0.5, quiet=0.2)
        if (d := W.decode(f)) is not None and d.typ == W.DATA_TO_HOST
    ]
    assert len(net) == len(expect_tx), (len(net), len(expect_tx))
    for f, (idx, suite, k, txd, level, path, pn, hdr, payload) in zip(net, expect_tx):
        kw = dict(path_id=path, nonce_layout="multipath") if path else {}
        u = ref.unprotect(suite, k, quic_of(f), dcid_len=len(txd), **kw)
        assert (u.header, u.payload, u.pn) == (hdr, payload, pn)
    assert len(hostf) == expect_rx, (len(hostf), expect_rx)
    for f in hostf:
        assert W.decode(f).status_name == "ok"
    stats = app.stats()
    assert stats["auth_failures"] == sum(1 for c in cs if c[5] == "1rtt")
    # libquicoff's counters (the table's and the first RX entry's), in both modes
    table = app.tel("/quicoff/table")
    assert (table["tx_packets"], table["rx_packets"], table["auth_failures"]) == (
        stats["tx_packets"],
        stats["rx_packets"],
        stats["auth_failures"],
    )
    conn = app.tel("/quicoff/connection,rx,1")
    assert conn["packets"] >= 4 and conn["key_updates"] == 1 and conn["auth_failures"] == 1
    del table["backend"], table["retired_pending"]  # the latter: reclamation timing
    # frames to the host carry the app's and the test port's (random) MACs: compare from the EtherType
    return net, [f[12:] for f in hostf], stats, (table, conn)


ALL = ["aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305"]


@pytest.fixture(scope="module")
def inline_result():
    app = App("qla", ["--workers", "1", "--idle-us", "20"])
    try:
        return run_scenario(app, ALL)
    finally:
        assert app.stop() == 0, app.output[-3000:]


@pytest.mark.parametrize(
    "cryptodev,suites",
    [
        ("crypto_aesni_mb", ALL),  # crypto_ipsec_mb: all four QUIC AEADs
        (
            "crypto_openssl",
            ["aes-128-gcm", "aes-128-ccm"],
        ),  # the DPU prototype's PMD (no ChaCha20-Poly1305 in 22.11)
        ("crypto_aesni_gcm", ["aes-128-gcm", "aes-256-gcm"]),
    ],
)
def test_lookaside_gives_the_same_bytes_as_inline(inline_result, cryptodev, suites):
    app = App(
        "qlb",
        ["--workers", "1", "--idle-us", "20", "--crypto", "lookaside", "--cryptodev", cryptodev],
    )
    try:
        assert f"lookaside cryptodev {cryptodev}" in app.output
        net, hostf, stats, lib = run_scenario(app, suites)
        assert stats["cdev_enqueue_failed"] == 0 and stats["cdev_op_failed"] == 0
        assert stats["cdev_no_session"] == 0
        assert stats["tx_packets"] > 0 and stats["rx_packets"] > 0
        # every AEAD went through the cryptodev (DPDK's own counters): each
        # packet protected or unprotected, and each that failed authentication
        dev = re.search(rf"lookaside cryptodev {cryptodev} \(id (\d+)", app.output).group(1)
        cd = app.tel(f"/cryptodev/stats,{dev}")
        aeads = stats["tx_packets"] + stats["rx_packets"] + stats["auth_failures"]
        assert cd["enqueued_count"] == cd["dequeued_count"] == aeads, (cd, aeads)
        if suites == ALL:
            ref_net, ref_host, _, ref_lib = inline_result
        else:
            ref_app = App("qlc", ["--workers", "1", "--idle-us", "20"])
            try:
                ref_net, ref_host, _, ref_lib = run_scenario(ref_app, suites)
            finally:
                assert ref_app.stop() == 0
        assert net == ref_net
        assert hostf == ref_host
        # the library's counters too: table and entry, identical to inline
        assert lib == ref_lib
    finally:
        rc = app.stop()
    assert rc == 0, app.output[-3000:]


def test_sessions_follow_the_library_keys():
    """Sessions are made when libquicoff installs a key and freed when it
    retires it; a suite the cryptodev lacks is refused by the ADD (as a key the
    session pool cannot hold would be: test_split covers a refused install);
    QUERY answers with the library's counters."""
    app = App(
        "qld",
        [
            "--workers",
            "1",
            "--idle-us",
            "20",
            "--crypto",
            "lookaside",
            "--cryptodev",
            "crypto_aesni_gcm",
        ],
    )
    try:
        host = Host(app)
        host.rid = 1
        la = lambda: app.tel("/quicoff/lookaside")  # noqa: E731
        assert (la()["keys"], la()["sessions"]) == (0, 0)
        k = keys_for("aes-128-gcm", 60)
        nk = keys_for("aes-128-gcm", 61)
        rxd = b"\x61" * 8
        a = host.request(
            lambda r: W.add(
                r,
                1,
                W.RX,
                "aes-128-gcm",
                k.key,
                k.iv,
                k.hp,
                dcid=rxd,
                next_key=nk.key,
                next_iv=nk.iv,
            )
        )
        assert a.status_name == "ok"
        # a 1-RTT key gets its four short-header sessions (PN length 1..4) at once
        assert (la()["keys"], la()["sessions"]) == (2, 8)
        txd = b"\x62" * 5
        a = host.request(
            lambda r: W.add(
                r, 2, W.TX, "aes-128-gcm", k.key, k.iv, k.hp, dcid=txd, encap=enc4(), level=3
            )
        )
        assert a.status_name == "ok"
        assert (la()["keys"], la()["sessions"]) == (3, 8)
        # a long header's session on first use
        payload = b"H" * 40
        host.data(2, 1, ref.build_long_header("handshake", txd, SCID, 1, len(payload)) + payload)
        assert app.np.recv_match(lambda f: UDP in Ether(f), 2) is not None
        assert la()["sessions"] == 9
        # packets through the cryptodev, counted by the library: QUERY says so
        for pn in (1, 2):
            app.np.send(
                net_frame(
                    ref.protect("aes-128-gcm", k, ref.build_short_header(rxd, pn), b"x" * 50, pn)
                )
            )
        assert app.wait_stat("rx_packets", 2) == 2
        q = host.request(lambda r: W.query(r, 1, W.RX))
        assert q.typ == W.STATS and q.status_name == "ok"
        assert app.tel("/quicoff/connection,rx,1")["packets"] == 2
        # new keys for generation 1: the replaced key's sessions go back
        k2 = keys_for("aes-128-gcm", 62)
        assert (
            host.request(
                lambda r: W.update(r, 1, W.RX, key_generation=1, key=k2.key, iv=k2.iv)
            ).status_name
            == "ok"
        )
        assert (la()["keys"], la()["sessions"]) == (3, 9)
        # a suite this cryptodev lacks: refused, nothing made
        c = keys_for("chacha20-poly1305", 63)
        a = host.request(
            lambda r: W.add(r, 3, W.RX, "chacha20-poly1305", c.key, c.iv, c.hp, dcid=b"\x63" * 8)
        )
        assert a.status_name == "unsupported"
        assert (la()["keys"], la()["sessions"]) == (3, 9)
        # removal frees everything
        assert host.request(lambda r: W.remove(r, 1, W.RX)).status_name == "ok"
        assert host.request(lambda r: W.remove(r, 2, W.TX)).status_name == "ok"
        assert (la()["keys"], la()["sessions"]) == (0, 0)
    finally:
        rc = app.stop()
    assert rc == 0, app.output[-3000:]
