# SPDX-License-Identifier: Apache-2.0
"""quicoff-dpdk end to end on veth pairs (net_af_packet, --no-huge).

Frames enter and leave through raw sockets on the test side of the veths; the
golden model is quicoff.ref (pure Python, independent of the C code): every
protected packet captured on the network side must decrypt with it to the
plaintext the host gave, and every packet the reference protects must reach
the host decrypted, with its metadata.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from scapy.all import ARP, IP, UDP, Dot1Q, Ether, IPv6, Raw, raw

import hostside
import offload_frames as W
from harness import App
from hostside import OFFLOAD_MAC
from quicoff import ref

NEXT_HOP_MAC = "02:00:00:00:be:ef"  # encapsulation: where protected packets go
PEER_MAC = "02:00:00:00:70:01"
KEYLEN = {"aes-128-gcm": 16, "aes-256-gcm": 32, "aes-128-ccm": 16, "chacha20-poly1305": 32}
SUITES = list(KEYLEN)


def keys_for(suite: str, seed: int) -> ref.PacketKeys:
    r = random.Random(seed)
    n = KEYLEN[suite]
    return ref.PacketKeys(r.randbytes(n), r.randbytes(12), r.randbytes(n))


class Host(hostside.Host):
    """The requests and frames these tests use."""

    def add_tx(self, index, suite, keys, dcid, encap, **kw) -> W.Frame:
        return self.request(
            lambda r: W.add(
                r, index, W.TX, suite, keys.key, keys.iv, keys.hp, dcid=dcid, encap=encap, **kw
            )
        )

    def add_rx(self, index, suite, keys, dcid, **kw) -> W.Frame:
        return self.request(
            lambda r: W.add(r, index, W.RX, suite, keys.key, keys.iv, keys.hp, dcid=dcid, **kw)
        )

    def data(self, index: int, pn: int, quic: bytes) -> None:
        self.send(W.data_to_offload(index, pn, quic))

    def next_event(self, code: int, timeout: float = 2.0):
        f = self.app.hp.recv_match(
            lambda f: (d := W.decode(f)) is not None and d.typ == W.EVENT and d.flags == code,
            timeout,
        )
        return W.decode(f) if f else None


def enc4(sport=4433, dport=443):
    return W.encap_tlv(NEXT_HOP_MAC, "02:00:00:00:a0:01", "192.0.2.1", "198.51.100.7", sport, dport)


def enc6_vlan():
    return W.encap_tlv(
        NEXT_HOP_MAC,
        "02:00:00:00:a0:02",
        "2001:db8::1",
        "2001:db8:7::9",
        5000,
        6000,
        ttl=17,
        vlan=100,
    )


def net_frame(quic: bytes, v6: bool = False, sport=443, dport=4433) -> bytes:
    ip = (
        IPv6(src="2001:db8:7::9", dst="2001:db8::1")
        if v6
        else IP(src="198.51.100.7", dst="192.0.2.1")
    )
    return raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
        / ip
        / UDP(sport=sport, dport=dport)
        / Raw(quic)
    )


def quic_of(frame: bytes) -> bytes:
    return bytes(Ether(frame)[UDP].payload)


def checksums_ok(frame: bytes) -> bool:
    p = Ether(frame)
    got_udp = p[UDP].chksum
    q = p.copy()
    del q[UDP].chksum
    if IP in q:
        got_ip = p[IP].chksum
        del q[IP].chksum
        q = Ether(raw(q))
        return q[IP].chksum == got_ip and q[UDP].chksum == got_udp
    q = Ether(raw(q))
    return q[UDP].chksum == got_udp


def is_udp(f: bytes) -> bool:
    return UDP in Ether(f)


# ---------------------------------------------------------------- the inline instance


@pytest.fixture(scope="module")
def app():
    a = App(
        "qdi",
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
    rc = a.stop(__import__("signal").SIGTERM)
    assert rc == 0, a.output[-3000:]
    assert "quicoff-dpdk: stopped" in a.output


@pytest.fixture
def host(app):
    app.hp.drain()
    app.np.drain()
    return Host(app)


def test_options_printed_and_ports_checked(app):
    out = app.output
    for opt in (
        "host-port       0",
        "net-port        1",
        "workers         1",
        "crypto          inline",
        "compat          yes",
        "local-cid-len   8",
    ):
        assert opt in out
    assert "UDP checksum in software" in out or "UDP checksum by the port" in out


def test_add_is_acknowledged_once(host):
    k = keys_for("aes-128-gcm", 1)
    a = host.add_tx(1, "aes-128-gcm", k, b"\x11" * 8, enc4())
    assert (a.typ, a.status_name, a.flags, a.index, a.direction) == (W.ACK, "ok", W.ADD, 1, W.TX)
    # the same request again (a retry): not executed twice, the same answer
    rid = host.rid
    host.send(W.add(rid, 1, W.TX, "aes-128-gcm", k.key, k.iv, k.hp, dcid=b"\x11" * 8, encap=enc4()))
    f = host.app.hp.recv_match(lambda f: (d := W.decode(f)) is not None and d.typ == W.ACK, 3)
    assert W.decode(f).status_name == "ok" and W.decode(f).request_id == rid
    assert host.app.stats()["sig_retried"] >= 1
    # a new ADD of the same index: exists, unless REPLACE
    assert host.add_tx(1, "aes-128-gcm", k, b"\x11" * 8, enc4()).status_name == "exists"
    assert host.add_tx(1, "aes-128-gcm", k, b"\x11" * 8, enc4(), replace=True).status_name == "ok"
    # a bad request is answered too
    bad = host.add_rx(9, "aes-128-gcm", k, b"\x01" * 5)  # DCID length != --local-cid-len
    assert bad.status_name == "invalid_argument"


@pytest.mark.parametrize("suite", SUITES)
def test_tx_protected_packet_decrypts_with_reference(host, suite):
    idx = 10 + SUITES.index(suite)
    k = keys_for(suite, idx)
    dcid = bytes(range(idx, idx + 12))  # the peer's CID: 12 bytes
    v6 = suite == "aes-256-gcm"
    assert host.add_tx(idx, suite, k, dcid, enc6_vlan() if v6 else enc4()).status_name == "ok"
    for pn, size in ((0, 20), (1, 300), (77, 1200), (70000, 40)):
        hdr = ref.build_short_header(dcid, pn, pn_len=4 if pn > 65535 else 2)
        payload = random.Random(pn).randbytes(size)
        host.data(idx, pn, hdr + payload)
        f = host.app.np.recv_match(is_udp, 2)
        assert f is not None, "nothing on the network side"
        p = Ether(f)
        assert p.dst == NEXT_HOP_MAC
        if v6:
            assert p[Dot1Q].vlan == 100
            assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == ("2001:db8::1", "2001:db8:7::9", 17)
            assert (p[UDP].sport, p[UDP].dport) == (5000, 6000)
        else:
            assert (p[IP].src, p[IP].dst, p[IP].flags.DF) == ("192.0.2.1", "198.51.100.7", True)
            assert (p[UDP].sport, p[UDP].dport) == (4433, 443)
        assert checksums_ok(f)
        u = ref.unprotect(suite, k, quic_of(f), dcid_len=12, largest_pn=pn - 1 if pn else None)
        assert (u.header, u.payload, u.pn) == (hdr, payload, pn)


@pytest.mark.parametrize("suite", SUITES)
def test_rx_packet_reaches_host_decrypted(host, suite):
    idx = 20 + SUITES.index(suite)
    k = keys_for(suite, idx)
    dcid = bytes([idx]) * 8
    assert host.add_rx(idx, suite, k, dcid).status_name == "ok"
    for pn, size in ((0, 30), (1, 1000), (2, 5)):
        hdr = ref.build_short_header(dcid, pn, pn_len=1)
        payload = random.Random(pn).randbytes(size)
        pkt = ref.protect(suite, k, hdr, payload, pn)
        host.app.np.send(net_frame(pkt, v6=(pn == 1)))
        d = host.next_data_frame()
        assert d is not None, "nothing on the host side"
        assert (d.typ, d.index, d.pn, d.status_name, d.level, d.key_phase) == (
            W.DATA_TO_HOST,
            idx,
            pn,
            "ok",
            0,
            0,
        )
        assert d.quic == hdr + payload


def test_tampered_packet_dropped_counted_and_reported(host):
    suite, idx = "aes-128-gcm", 30
    k = keys_for(suite, idx)
    dcid = b"\x30" * 8
    assert host.add_rx(idx, suite, k, dcid).status_name == "ok"
    before = host.app.stats()["auth_failures"]
    pkt = bytearray(
        ref.protect(suite, k, ref.build_short_header(dcid, 5, pn_len=2), b"secret payload" * 5, 5)
    )
    pkt[-20] ^= 0x01
    host.app.np.send(net_frame(bytes(pkt)))
    ev = host.next_event(1)  # auth_failed
    assert ev is not None and ev.index == idx and ev.status_name == "auth_failed"
    assert ev.u64(W.T_PN) == 5 and ev.u64(W.T_COUNT) >= 1
    assert host.next_data_frame(0.5) is None, "a tampered packet reached the host"
    assert host.app.wait_stat("auth_failures", before + 1) == before + 1
    # the connection still works
    good = ref.protect(suite, k, ref.build_short_header(dcid, 6, pn_len=2), b"ok" * 10, 6)
    host.app.np.send(net_frame(good))
    d = host.next_data_frame()
    assert d is not None and d.pn == 6 and d.status_name == "ok"


def test_usage_threshold_event_carries_the_key_count(host):
    """A TX entry with a usage threshold of 3: the 3rd packet is still
    protected and sent, and the host gets EVENT usage_limit_reached with the
    key's packet count (read on the data path, quicoff_conn_key_packets)."""
    suite, idx = "aes-128-gcm", 31
    k = keys_for(suite, idx)
    dcid = b"\x31" * 8
    assert host.add_tx(idx, suite, k, dcid, enc4(), threshold=3).status_name == "ok"
    for pn in range(3):
        host.data(idx, pn, ref.build_short_header(dcid, pn, pn_len=2) + b"u" * 40)
    ev = host.next_event(2)  # usage_limit_reached
    assert ev is not None and ev.index == idx and ev.status_name == "usage_limit_reached"
    assert ev.u64(W.T_PN) == 2 and ev.u64(W.T_COUNT) == 3
    sent = [f for f in host.app.np.recv_all(timeout=1) if is_udp(f)]
    assert len(sent) == 3, "packets past the threshold are still protected and sent"
    assert ref.unprotect(suite, k, quic_of(sent[-1]), dcid_len=8).pn == 2


def test_unknown_and_non_quic_traffic_passed_unchanged(host):
    before = host.app.stats()
    unknown = net_frame(
        ref.protect(
            "aes-128-gcm",
            keys_for("aes-128-gcm", 99),
            ref.build_short_header(b"\xee" * 8, 1, pn_len=1),
            b"x" * 40,
            1,
        )
    )
    dns = raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
        / IP(src="1.1.1.1", dst="10.0.0.1")
        / UDP(sport=53, dport=5353)
        / Raw(b"\x12\x34\x01\x00" + b"\0" * 20)
    )
    arp = raw(Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="10.0.0.9", pdst="10.0.0.1"))
    for f in (unknown, dns, arp):
        host.app.np.send(f)
        got = host.app.hp.recv_match(lambda g: g == f, 2)
        assert got == f, "not passed to the host unchanged"
    ev = host.next_event(4)  # unknown_connection
    assert ev is not None and ev.tlvs[W.T_DCID] == b"\xee" * 8
    after = host.app.stats()
    assert after["rx_unknown_connection"] == before["rx_unknown_connection"] + 1
    assert after["pass_to_host"] >= before["pass_to_host"] + 3


def test_zero_length_cid_matched_by_local_address(host):
    """An entry without a DCID is found by the datagram's local address + port
    (here a Handshake entry: long headers carry their DCID length, 0)."""
    suite = "aes-256-gcm"
    k = keys_for(suite, 80)
    a = host.request(
        lambda r: W.add(
            r, 80, W.RX, suite, k.key, k.iv, k.hp, level=3, local_addr=("192.0.2.1", 4433)
        )
    )
    assert a.status_name == "ok"
    payload = b"zero-length CID" * 3
    hdr = ref.build_long_header("handshake", b"", b"\x33" * 4, 3, len(payload))
    pkt = ref.protect(suite, k, hdr, payload, 3)
    host.app.np.send(net_frame(pkt, dport=4433))
    d = host.next_data_frame()
    assert d is not None and (d.index, d.pn, d.level, d.quic) == (80, 3, 3, hdr + payload)
    # the same packet to another port matches nothing: passed as it came
    f = net_frame(pkt, dport=4434)
    host.app.np.send(f)
    assert host.app.hp.recv_match(lambda g: g == f, 2) == f


def test_ip_options_are_not_quic(host):
    """A packet of a known connection inside IPv4 with options is not for the
    offload: the host gets it as it came. (Fragments are refused the same way
    by encap.c, but net_af_packet cannot show it: its PACKET_FANOUT group sets
    FLAG_DEFRAG, so the kernel hands the application reassembled datagrams.)"""
    suite, idx = "aes-128-gcm", 85
    k = keys_for(suite, idx)
    dcid = b"\x85" * 8
    assert host.add_rx(idx, suite, k, dcid).status_name == "ok"
    quic = ref.protect(suite, k, ref.build_short_header(dcid, 1, pn_len=1), b"z" * 100, 1)
    from scapy.all import IPOption_NOP

    f = raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
        / IP(src="198.51.100.7", dst="192.0.2.1", options=[IPOption_NOP()] * 4)
        / UDP(sport=443, dport=4433)
        / Raw(quic)
    )
    host.app.np.send(f)
    assert host.app.hp.recv_match(lambda g: g == f, 2) == f
    assert host.next_data_frame(0.3) is None


def test_garbage_on_both_ports_does_no_harm(host):
    rng = random.Random(5)
    frames = []
    for _ in range(400):
        et = rng.choice([0x88B5, 0x88B6, 0x0800, 0x86DD, 0x8100])
        body = bytearray(rng.randbytes(rng.randrange(0, 200)))
        if et == 0x88B5 and body and rng.random() < 0.5:
            body[0:3] = bytes([0x51, 0x01, rng.choice([0x01, 0x02, 0x03, 0x04, 0x10, 0x81])])
        if et in (0x0800, 0x86DD) and len(body) > 40 and rng.random() < 0.7:
            body[0] = 0x45 if et == 0x0800 else 0x60
            body[9 if et == 0x0800 else 6] = 17
        frames.append(W.eth(OFFLOAD_MAC, host.mac, et) + bytes(body))
    for f in frames:
        host.app.hp.send(f)
        host.app.np.send(f)
    time.sleep(0.5)
    host.app.hp.drain()
    host.app.np.drain()
    # still alive and still correct
    k = keys_for("aes-128-gcm", 86)
    dcid = b"\x86" * 8
    assert host.add_rx(86, "aes-128-gcm", k, dcid).status_name == "ok"
    host.app.np.send(
        net_frame(
            ref.protect("aes-128-gcm", k, ref.build_short_header(dcid, 1), b"still here" * 3, 1)
        )
    )
    d = host.next_data_frame()
    assert d is not None and d.index == 86 and d.status_name == "ok"


def test_host_traffic_of_its_own_passes_to_network(host):
    f = raw(Ether(src=host.mac, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="10.0.0.1", pdst="10.0.0.9"))
    host.app.hp.send(f)
    assert host.app.np.recv_match(lambda g: g == f, 2) == f


def test_signaling_from_network_port_is_ignored(host):
    k = keys_for("aes-128-gcm", 40)
    before = host.app.stats()["signal_from_network"]
    evil = W.add(0x4242, 40, W.TX, "aes-128-gcm", k.key, k.iv, k.hp, dcid=b"\x40" * 8, encap=enc4())
    host.app.np.send(W.eth(OFFLOAD_MAC, PEER_MAC, W.ETH_SIGNAL) + evil)
    host.app.np.send(W.eth(OFFLOAD_MAC, PEER_MAC, W.ETH_DATA) + W.compat_data(40, 1, b"\x40" * 30))
    assert host.app.wait_stat("signal_from_network", before + 2) == before + 2
    assert host.app.np.recv(0.5) is None, "answered on the network side"
    assert (
        host.app.hp.recv_match(
            lambda f: (d := W.decode(f)) is not None and d.request_id == 0x4242, 0.5
        )
        is None
    )
    # nothing was installed
    q = host.request(lambda r: W.query(r, 40, W.TX))
    assert q.typ == W.STATS and q.status_name == "unknown_connection"


def test_remove_then_data_is_dropped_never_sent(host):
    k = keys_for("aes-128-gcm", 50)
    dcid = b"\x50" * 8
    assert host.add_tx(50, "aes-128-gcm", k, dcid, enc4()).status_name == "ok"
    hdr = ref.build_short_header(dcid, 1, pn_len=1)
    host.data(50, 1, hdr + b"A" * 50)
    assert host.app.np.recv_match(is_udp, 2) is not None
    assert host.request(lambda r: W.remove(r, 50, W.TX)).status_name == "ok"
    before = host.app.stats()
    host.data(50, 2, ref.build_short_header(dcid, 2, pn_len=1) + b"B" * 50)
    # a PN that does not match the header, and a header too short to protect
    host.data(1, 9, ref.build_short_header(b"\x11" * 8, 8, pn_len=1) + b"C" * 50)
    host.data(1, 3, ref.build_short_header(b"\x11" * 8, 3, pn_len=1) + b"D")
    assert host.app.np.recv(0.5) is None, "an unprotected packet left on the network side"
    after = host.app.wait_stat("tx_dropped", before["tx_dropped"] + 3)
    assert after == before["tx_dropped"] + 3
    s = host.app.stats()
    assert s["tx_unknown_connection"] == before["tx_unknown_connection"] + 1
    assert s["tx_malformed"] == before["tx_malformed"] + 2
    assert host.request(lambda r: W.remove(r, 50, W.TX)).status_name == "unknown_connection"


def test_key_update_both_directions(host):
    suite = "chacha20-poly1305"
    k0, k1 = keys_for(suite, 60), keys_for(suite, 61)
    k1 = ref.PacketKeys(k1.key, k1.iv, k0.hp)  # HP keys never change (RFC 9001 §6)
    dcid = b"\x60" * 8
    assert host.add_tx(60, suite, k0, dcid, enc4()).status_name == "ok"
    assert host.add_rx(60, suite, k0, dcid, next_key=k1.key, next_iv=k1.iv).status_name == "ok"
    # TX: the host installs generation 1 and rolls to it
    assert (
        host.request(
            lambda r: W.update(r, 60, W.TX, key_generation=1, key=k1.key, iv=k1.iv)
        ).status_name
        == "ok"
    )
    assert host.request(lambda r: W.update(r, 60, W.TX, roll_to=1)).status_name == "ok"
    assert host.request(lambda r: W.update(r, 60, W.TX, roll_to=1)).status_name == "ok"  # retry
    hdr = ref.build_short_header(dcid, 10, pn_len=1, key_phase=1)
    host.data(60, 10, hdr + b"new keys" * 8)
    f = host.app.np.recv_match(is_udp, 2)
    u = ref.unprotect(suite, k1, quic_of(f), dcid_len=8)
    assert u.payload == b"new keys" * 8 and u.key_phase == 1
    # RX: the peer moves to key phase 1
    for pn, kp, kk in ((1, 0, k0), (2, 1, k1), (3, 1, k1)):
        pkt = ref.protect(
            suite,
            kk,
            ref.build_short_header(dcid, pn, pn_len=1, key_phase=kp),
            b"phase%d" % kp * 6,
            pn,
        )
        host.app.np.send(net_frame(pkt))
        d = host.next_data_frame()
        assert d is not None and d.status_name == "ok" and d.key_phase == kp and d.pn == pn
    ev = host.next_event(3)  # key_update
    assert ev is not None and ev.index == 60 and ev.u64(W.T_PN) == 2


def test_compat_frames_of_the_dpu_prototype(host):
    """The compat format's frames as the DPU prototype sends them (docs/protocol.md):
    signaling_host / signaling_peer and data_pkt, nonce with the path ID as its
    set_nonce() wrote it."""
    suite, path_id = "aes-128-gcm", 0x01020304
    k = keys_for(suite, 70)
    dcid = bytes(range(0x70, 0x78))
    host.send(W.compat_host(7, 0, k.hp, k.key, k.iv, path_id, 8))
    host.send(W.compat_peer(7, 0, k.hp, k.key, k.iv, path_id, dcid, 0))
    time.sleep(0.3)
    hdr = ref.build_short_header(dcid, 1, pn_len=2)
    host.send(W.compat_data(7, 1, hdr + b"compat" * 10), W.ETH_DATA)
    f = host.app.np.recv_match(is_udp, 2)
    assert f is not None
    p = Ether(f)
    assert (p[IP].src, p[IP].dst, p[UDP].sport, p[UDP].dport) == (
        "10.1.0.1",
        "10.2.0.1",
        1111,
        2222,
    )
    u = ref.unprotect(
        suite, k, quic_of(f), dcid_len=8, path_id=path_id, nonce_layout="multipath-path-id-le"
    )
    assert u.payload == b"compat" * 10
    # and back: the peer's packet reaches the host as a compat data_pkt
    host.app.np.send(net_frame(quic_of(f)))
    d = host.next_data_frame()
    assert d is not None and d.typ == -1 and (d.index, d.pn) == (7, 1)
    assert d.quic == hdr + b"compat" * 10
    assert host.app.stats()["compat_rejected"] == 0
    # a Full_pn past 2^62-1 (protocol.md §3.7) does not decode: a bad frame, never sent
    before = host.app.stats()
    host.send(W.crafted_compat_data(7, 1 << 62, hdr + b"x" * 40), W.ETH_DATA)
    bad = host.app.wait_stat("host_bad_frame", before["host_bad_frame"] + 1)
    assert bad == before["host_bad_frame"] + 1
    assert host.app.np.recv(0.3) is None, "a packet left for an invalid Full_pn"
    s = host.app.stats()
    assert s["tx_malformed"] == before["tx_malformed"] + 1
    assert s["tx_unknown_connection"] == before["tx_unknown_connection"]


def test_telemetry_endpoints(host):
    t = host.app.tel
    conns = t("/quicoff/connections")
    assert conns["count"] >= 2 and 10 in conns["tx"] and 20 in conns["rx"]
    c = t("/quicoff/connection,rx,20")
    assert c["suite"] == "aes-128-gcm" and c["packets"] == 3 and c["largest_pn"] == 2
    assert t("/quicoff/table")["connections"] == conns["count"]
    # run to completion, one worker: the main lcore (0) does everything
    assert 0 in t("/quicoff/lcores")
    assert t("/quicoff/lcore,0")["tx_packets"] >= 16
    assert t("/quicoff/options")["crypto"] == "inline"
    assert t("/quicoff/options")["io_mode"] == "rtc"


def test_counters_printed_at_exit_match_telemetry(app):
    s = app.stats()
    assert s["tx_packets"] > 0 and s["rx_packets"] > 0
    app.hp.drain()
    app.np.drain()
    # the module fixture stops the app with SIGTERM and checks the totals then


# ---------------------------------------------------------------- steering over N workers


@pytest.mark.parametrize("io_mode", ["rtc", "pipeline"])
def test_workers_steering_and_changes_under_traffic(io_mode):
    """3 workers (lcores mapped onto this machine's CPUs): connections added and
    removed while a stream flows in both directions. Every packet on the network
    side decrypts with the reference model, every packet to the host is intact,
    and each connection's packets stay in order (one worker per connection).
    rtc: each worker polls its own queue pair of both ports (af_packet qpairs=3,
    spread by the kernel's fanout hash) and hands frames of connections it does
    not own to their owner; pipeline: an I/O lcore feeds the workers."""
    # lcores on this machine's CPUs: the idle back-off keeps them from starving each other
    rtc = io_mode == "rtc"
    app = App(
        "qdw",
        [
            "--workers",
            "3",
            "--idle-us",
            "20",
            "--stats-interval",
            "1",
            "--unknown",
            "drop",
            "--io-mode",
            io_mode,
        ],
        lcores="0@0,1@1,2@0" if rtc else "0@0,1@1,2@0,3@1",
        qpairs=3 if rtc else 1,
    )
    try:
        host = Host(app)
        suite = "aes-128-gcm"
        n_conn = 12
        keys = {i: keys_for(suite, 100 + i) for i in range(n_conn)}
        dcids = {i: bytes([0xA0 + i]) * 8 for i in range(n_conn)}
        for i in range(n_conn):
            assert (
                host.add_tx(i, suite, keys[i], dcids[i], enc4(sport=7000 + i)).status_name == "ok"
            )
            assert host.add_rx(i, suite, keys[i], dcids[i]).status_name == "ok"
        sent_tx, sent_rx = {}, {}
        rounds = 40
        churn_errors = []

        def churn():
            # while traffic flows: add and remove connections 100.. repeatedly
            h2 = Host(app)
            try:
                for j in range(30):
                    k = keys_for(suite, 500 + j)
                    for d in (W.TX, W.RX):
                        f = (
                            h2.add_tx(100 + j, suite, k, b"\xcc" * 8, enc4())
                            if d == W.TX
                            else h2.add_rx(100 + j, suite, k, bytes([0xC0, j]) + b"\xcc" * 6)
                        )
                        if f.status_name != "ok":
                            churn_errors.append(f.status_name)
                    for d in (W.TX, W.RX):
                        if h2.request(lambda r: W.remove(r, 100 + j, d)).status_name != "ok":
                            churn_errors.append("remove")
            except AssertionError as e:
                churn_errors.append(str(e))

        # the churn thread reads ACKs from the same socket: give it its own view
        t = threading.Thread(target=churn)
        t.start()
        for pn in range(rounds):
            for i in range(n_conn):
                payload = b"%02d:%04d|" % (i, pn) * 4
                host.data(i, pn, ref.build_short_header(dcids[i], pn, pn_len=2) + payload)
                sent_tx[(i, pn)] = payload
                pkt = ref.protect(
                    suite, keys[i], ref.build_short_header(dcids[i], pn, pn_len=2), payload, pn
                )
                app.np.send(net_frame(pkt, sport=9000 + i))
                sent_rx[(i, pn)] = payload
            time.sleep(0.002)
        t.join(60)
        assert not churn_errors, churn_errors
        # network side
        seen_tx = {}
        last = {}
        for f in app.np.recv_all(timeout=2):
            if not is_udp(f):
                continue
            i = Ether(f)[UDP].sport - 7000
            u = ref.unprotect(suite, keys[i], quic_of(f), dcid_len=8)
            assert u.pn > last.get(i, -1), "packets of one connection reordered"
            last[i] = u.pn
            seen_tx[(i, u.pn)] = u.payload
        assert seen_tx == sent_tx
        # host side
        seen_rx = {}
        last = {}
        for f in app.hp.recv_all(timeout=1):
            d = W.decode(f)
            if d is None or d.typ != W.DATA_TO_HOST:
                continue
            assert d.status_name == "ok"
            assert d.pn > last.get(d.index, -1), "packets of one connection reordered"
            last[d.index] = d.pn
            seen_rx[(d.index, d.pn)] = d.quic[1 + 8 + 2 :]
        assert seen_rx == sent_rx
        per_lcore = [app.tel(f"/quicoff/lcore,{lc}") for lc in ((0, 1, 2) if rtc else (1, 2, 3))]
        busy = [c["tx_packets"] + c["rx_packets"] for c in per_lcore]
        assert sum(busy) == 2 * rounds * n_conn
        assert sum(1 for b in busy if b) >= 2, f"steering used one worker only: {busy}"
        assert "workers         3" in app.output and f"io-mode         {io_mode}" in app.output
        if rtc:
            # every worker polled its own queues; what arrived at the wrong one was handed over
            assert "queue 2 of host port 0" in app.output
            assert app.stats()["steered"] > 0

        # --unknown drop: neither an unknown connection nor non-QUIC reaches the host
        app.hp.drain()
        unknown = net_frame(
            ref.protect(
                suite,
                keys_for(suite, 1),
                ref.build_short_header(b"\xee" * 8, 1, pn_len=1),
                b"x" * 40,
                1,
            )
        )
        arp = raw(
            Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="10.0.0.9", pdst="10.0.0.1")
        )
        app.np.send(unknown)
        app.np.send(arp)
        assert app.wait_stat("unknown_dropped", 2) == 2
        assert app.hp.recv_match(lambda f: f in (unknown, arp), 0.5) is None
        # no --compat: compat-format frames are refused
        k = keys_for(suite, 2)
        host.send(W.compat_host(5, 0, k.hp, k.key, k.iv, 0, 8))
        host.send(W.compat_data(0, 1, ref.build_short_header(dcids[0], 1) + b"y" * 30), W.ETH_DATA)
        assert app.wait_stat("compat_rejected", 2) == 2
        assert app.tel("/quicoff/connections")["count"] == 2 * n_conn
    finally:
        rc = app.stop()
    assert rc == 0, app.output[-3000:]
    assert "==== quicoff-dpdk counters ====" in app.output  # --stats-interval 1
    assert app.totals()["tx_packets"] == rounds * n_conn
