# SPDX-License-Identifier: Apache-2.0
"""quicoff-dpdk's control path on veth pairs: what a request changes, and what
a failed one must not (issue 8 items 4, 7, 8b).

- ADD + REPLACE is atomic: a failing one (invalid_argument, exists) leaves the
  live entry exactly as it was; a successful one is never seen by the data
  path as "no entry";
- every request is answered: a direction byte > 1 gets an ACK (direction 0xFF,
  invalid_argument) and a counter; key / IV / HP / secret TLVs of a wrong
  length get the status docs/protocol.md §5.1 gives;
- compat mode keeps the DPU prototype's RX table (keyed by DCID: a DCID
  re-sent under another index gets the new keys; a second path's DCID is kept
  beside the first), sends a compat host compat frames only, and decodes PNs
  as RFC 9000 A.3 does rather than as the prototype's printed code did.

Compat frames are built with the compat format's own Scapy classes
(quicoff.scapy_layers: signaling_peer, signaling_host, quic); packets are
protected by quicoff.ref (pure Python), the golden model.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from scapy.all import IP, UDP, Ether, Raw, raw

import hostside
import offload_frames as W
from harness import App
from quicoff import ref
from quicoff.scapy_layers import compat_key_field, quic, signaling_peer

NEXT_HOP_MAC = "02:00:00:00:be:ef"
PEER_MAC = "02:00:00:00:70:01"
SUITE = "aes-128-gcm"


def keys(seed: int, n: int = 16) -> ref.PacketKeys:
    r = random.Random(seed)
    return ref.PacketKeys(r.randbytes(n), r.randbytes(12), r.randbytes(n))


def net_frame(quic_bytes: bytes) -> bytes:
    return raw(
        Ether(src=PEER_MAC, dst="02:00:00:00:a0:01")
        / IP(src="198.51.100.7", dst="192.0.2.1")
        / UDP(sport=443, dport=4433)
        / Raw(quic_bytes)
    )


def enc4() -> bytes:
    return W.encap_tlv(NEXT_HOP_MAC, "02:00:00:00:a0:01", "192.0.2.1", "198.51.100.7", 4433, 443)


def compat_quic_header(dcid: bytes, pn: int) -> bytes:
    """The compat format's quic class, with a header that means what it writes
    (protocol.md §3.5: Pn_len=1 = a 2-byte PN)."""
    return raw(quic(Pn_len=1, DCID=int.from_bytes(dcid, "big"), Pn=pn & 0xFFFF))


def compat_signaling_peer(
    index: int, k: ref.PacketKeys, dcid: bytes, path_id: int = 0, full_pn: int = 0
) -> bytes:
    """signaling_peer, as the DPU prototype's host sends it."""
    return raw(
        signaling_peer(
            Index=index,
            Algo=0,
            Hp_key=compat_key_field(k.hp),
            Quic_key=compat_key_field(k.key),
            IV=int.from_bytes(k.iv, "big"),
            Path_id=path_id,
            DCID=int.from_bytes(dcid, "big"),
            Full_pn=full_pn,
        )
    )


def peer_packet(
    k: ref.PacketKeys, dcid: bytes, pn: int, payload: bytes, path_id: int = 0, compat: bool = False
) -> bytes:
    hdr = compat_quic_header(dcid, pn) if compat else ref.build_short_header(dcid, pn, pn_len=2)
    if compat:
        return ref.protect(
            SUITE, k, hdr, payload, pn, path_id=path_id, nonce_layout="multipath-path-id-le"
        )
    return ref.protect(SUITE, k, hdr, payload, pn)


class Host(hostside.Host):
    def add_rx(self, index, k, dcid, **kw) -> str:
        return self.request(
            lambda r: W.add(r, index, W.RX, SUITE, k.key, k.iv, k.hp, dcid=dcid, **kw)
        ).status_name

    def add_tx(self, index, k, dcid, encap=None, **kw) -> str:
        return self.request(
            lambda r: W.add(r, index, W.TX, SUITE, k.key, k.iv, k.hp, dcid=dcid, encap=encap, **kw)
        ).status_name

    def conn_stats(self, index, direction=W.RX) -> dict:
        s = self.request(lambda r: W.query(r, index, direction))
        assert s.typ == W.STATS and s.status_name == "ok", s.status_name
        return s.conn_stats()

    def next_data(self, timeout: float = 2.0):
        return self.next_data_frame(timeout)

    def rx_ok(self, k, dcid, pn, index, compat=False, path_id=0) -> bool:
        """A peer's packet reaches the host decrypted with this index."""
        payload = b"p%d" % pn * 8
        self.app.np.send(net_frame(peer_packet(k, dcid, pn, payload, path_id, compat)))
        d = self.next_data(1.0)
        if d is None:
            return False
        if compat:
            return d.typ == -1 and (d.index, d.pn) == (index, pn) and d.quic.endswith(payload)
        return (
            d.typ == W.DATA_TO_HOST
            and d.status_name == "ok"
            and (d.index, d.pn) == (index, pn)
            and d.quic.endswith(payload)
        )


@pytest.fixture(scope="module")
def app():
    a = App(
        "qdc",
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
        ],
        lcores="0",
    )
    yield a
    rc = a.stop(__import__("signal").SIGTERM)
    assert rc == 0, a.output[-3000:]


@pytest.fixture
def host(app):
    app.hp.drain()
    app.np.drain()
    return Host(app)


# ---------------------------------------------------------------- item 4: atomic REPLACE


def test_failed_replace_keeps_the_live_entry(host):
    ka, kb, kc = keys(401), keys(402), keys(403)
    da, db, dc = b"\x41" * 8, b"\x42" * 8, b"\x43" * 8
    assert host.add_rx(40, ka, da) == "ok"
    assert host.add_rx(41, kb, db) == "ok"
    assert host.rx_ok(ka, da, 1, 40)
    before = host.conn_stats(40)
    assert before["packets"] == 1 and before["largest_pn"] == 1

    # a 5-byte RX DCID (the table parses 8): invalid_argument, the entry stays
    assert host.add_rx(40, kc, b"\x43" * 5, replace=True) == "invalid_argument"
    assert host.conn_stats(40) == before, "a failed REPLACE changed the entry"
    assert host.rx_ok(ka, da, 2, 40), "the live entry is gone after a failed REPLACE"
    # the DCID of another entry: exists, both entries stay
    assert host.add_rx(40, kc, db, replace=True) == "exists"
    assert host.rx_ok(ka, da, 3, 40), "the live entry is gone after REPLACE -> exists"
    assert host.rx_ok(kb, db, 1, 41), "the other entry was touched"
    s = host.conn_stats(40)
    assert (s["packets"], s["largest_pn"]) == (3, 3), "counters / PN state not kept"

    # and a REPLACE that works: new DCID and keys, the old DCID is unknown
    assert host.add_rx(40, kc, dc, replace=True) == "ok"
    assert host.rx_ok(kc, dc, 1, 40)
    assert host.conn_stats(40)["packets"] == 1, "a replaced entry starts afresh"
    before = host.app.stats()["rx_unknown_connection"]
    host.app.np.send(net_frame(peer_packet(ka, da, 4, b"old" * 10)))
    assert host.app.wait_stat("rx_unknown_connection", before + 1) == before + 1


def test_failed_tx_replace_keeps_sending(host):
    k = keys(410)
    dcid = b"\x44" * 8
    assert host.add_tx(42, k, dcid, enc4()) == "ok"
    # a key generation on a Handshake entry: the library refuses it
    # (invalid_argument); the entry is kept
    assert (
        host.add_tx(42, keys(411), dcid, enc4(), replace=True, level=3, key_generation=1)
        == "invalid_argument"
    )
    hdr = ref.build_short_header(dcid, 7, pn_len=2)
    host.send(W.data_to_offload(42, 7, hdr + b"still here" * 4))
    f = host.app.np.recv_match(lambda f: UDP in Ether(f), 2)
    assert f is not None, "the TX entry is gone after a failed REPLACE"
    u = ref.unprotect(SUITE, k, bytes(Ether(f)[UDP].payload), dcid_len=8)
    assert u.payload == b"still here" * 4


def test_replace_under_traffic_never_unknown(host):
    """Packets of one DCID arrive while the host re-installs its entry again and
    again (ADD + REPLACE, same DCID and keys): every one is decrypted, none
    meets "no entry" (the old code removed, waited for the workers, then added)."""
    k, dcid, idx = keys(420), b"\x45" * 8, 43
    assert host.add_rx(idx, k, dcid) == "ok"
    frames = [net_frame(peer_packet(k, dcid, pn, b"t" * 40)) for pn in range(1500)]
    before = host.app.stats()

    def peer():
        for f in frames:
            host.app.np.send(f)
            time.sleep(0.0003)

    t = threading.Thread(target=peer)
    t.start()
    replaces = 0
    try:
        while t.is_alive():
            assert host.add_rx(idx, k, dcid, replace=True) == "ok"
            replaces += 1
    finally:
        t.join()
    after = host.app.wait_stat("rx_packets", before["rx_packets"] + len(frames))
    s = host.app.stats()
    assert replaces >= 10, replaces
    assert s["rx_unknown_connection"] == before["rx_unknown_connection"], (
        "packets met no entry while it was being replaced (%d replaces)" % replaces
    )
    assert after - before["rx_packets"] == len(frames)


# ---------------------------------------------------------------- item 7: every request answered


@pytest.mark.parametrize("kind", ["add", "remove", "query", "update"])
def test_bad_direction_is_answered(host, kind):
    k = keys(430)
    build = {
        "add": lambda r: W.add(r, 44, 2, SUITE, k.key, k.iv, k.hp, dcid=b"\x46" * 8),
        "remove": lambda r: W.remove(r, 44, 7),
        "query": lambda r: W.query(r, 44, 3),
        "update": lambda r: W.update(r, 44, 0x80, drop_old=True),
    }[kind]
    before = host.app.stats()
    a = host.request(build)
    assert a.typ == W.ACK and a.status_name == "invalid_argument"
    assert a.direction == 0xFF and a.index == 44
    after = host.app.stats()
    assert after["sig_bad_direction"] == before["sig_bad_direction"] + 1
    assert after["acks_sent"] == before["acks_sent"] + 1


@pytest.mark.parametrize(
    "what,suite,n,want",
    [
        # a length the registry does not allow for the TLV: malformed
        ("key", "aes-128-gcm", 20, "malformed"),
        ("iv", "aes-128-gcm", 11, "malformed"),
        ("hp", "aes-128-gcm", 24, "malformed"),
        ("secret", "aes-128-gcm", 40, "malformed"),
        # an allowed length that is not the suite's: invalid_argument
        ("key", "aes-128-gcm", 32, "invalid_argument"),
        ("hp", "aes-256-gcm", 16, "invalid_argument"),
        ("secret", "aes-128-gcm", 48, "invalid_argument"),
        ("secret", "aes-256-gcm", 32, "invalid_argument"),
    ],
)
def test_key_tlv_lengths_answer_as_documented(host, what, suite, n, want):
    """docs/protocol.md §5.1: the answers to key / IV / HP / secret TLVs of a
    wrong length."""
    kl = 32 if suite in ("aes-256-gcm", "chacha20-poly1305") else 16
    vals = {"key": bytes(kl), "iv": bytes(12), "hp": bytes(kl)}
    if what == "secret":
        t = (
            W.tlv(W.T_SUITE, bytes([W.SUITES[suite]]))
            + W.tlv(W.T_DCID, b"\x47" * 8)
            + W.tlv(W.T_SECRET, bytes(n))
        )
        a = host.request(lambda r: W.sig_header(W.ADD, 0, r, 45, W.RX, t))
    else:
        vals[what] = bytes(n)
        a = host.request(
            lambda r: W.add(
                r, 45, W.RX, suite, vals["key"], vals["iv"], vals["hp"], dcid=b"\x47" * 8
            )
        )
    assert a.typ == W.ACK and a.status_name == want


# ---------------------------------------------------------------- item 8b: compat RX table


def test_compat_dcid_resent_under_another_index_gets_the_new_keys(host):
    """The compat RX table is keyed by DCID: a signaling_peer for a DCID
    already installed (under index 50) installs the new keys, under the new
    index (51)."""
    k1, k2, dcid = keys(501), keys(502), b"\x50" * 8
    host.send(compat_signaling_peer(50, k1, dcid))
    time.sleep(0.2)
    assert host.rx_ok(k1, dcid, 1, 50, compat=True)
    host.send(compat_signaling_peer(51, k2, dcid))
    time.sleep(0.2)
    assert host.rx_ok(k2, dcid, 2, 51, compat=True), "the new keys were not installed"
    before = host.app.stats()["auth_failures"]
    host.app.np.send(net_frame(peer_packet(k1, dcid, 3, b"o" * 30, compat=True)))
    assert host.next_data(0.5) is None, "the old keys still decrypt"
    assert host.app.stats()["auth_failures"] >= before


def test_compat_second_path_keeps_both_dcids(host):
    """A second path of one connection (same index, new DCID, another path ID):
    both DCIDs stay, each with its path's nonce."""
    k, d1, d2 = keys(510), b"\x51" * 8, b"\x52" * 8
    host.send(compat_signaling_peer(52, k, d1, path_id=0))
    host.send(compat_signaling_peer(52, k, d2, path_id=1))
    time.sleep(0.2)
    assert host.rx_ok(k, d2, 1, 52, compat=True, path_id=1), "the second path"
    assert host.rx_ok(k, d1, 2, 52, compat=True, path_id=0), "the first path's DCID is gone"
    conns = host.app.tel("/quicoff/connections")
    assert conns["rx"].count(52) == 2, conns


def test_compat_frames_do_not_take_a_v1_hosts_entries(host):
    """A compat signaling_peer naming the index or the DCID of an entry a v1 ADD
    installed is refused: the v1 entry keeps working, as v1."""
    k, kc = keys(540), keys(541)
    dv, dc = b"\x55" * 8, b"\x56" * 8
    assert host.add_rx(55, k, dv) == "ok"
    before = host.app.stats()["sig_failed"]
    host.send(compat_signaling_peer(55, kc, dc))  # its index
    host.send(compat_signaling_peer(57, kc, dv))  # its DCID
    assert host.app.wait_stat("sig_failed", before + 2) == before + 2
    assert host.rx_ok(k, dv, 1, 55), "the v1 entry was taken over"
    assert host.conn_stats(55)["packets"] == 1
    unknown = host.app.stats()["rx_unknown_connection"]
    host.app.np.send(net_frame(peer_packet(kc, dc, 1, b"c" * 30, compat=True)))
    assert host.app.wait_stat("rx_unknown_connection", unknown + 1) == unknown + 1


def test_compat_pn_decoding_follows_rfc9000_not_the_prototype_code(host):
    """The DPU prototype's printed decode_pkt_nr() computes expected_pn -
    pn_hwin in uint64_t: for the first packets it wraps and adds pn_win.
    quicoff follows RFC 9000 A.3 (protocol.md §3.7)."""

    def prototype_decode_pkt_nr(
        largest_pn, truncated_pn, pn_nbits
    ):  # verbatim, uint64_t arithmetic
        m = (1 << 64) - 1
        expected_pn = (largest_pn + 1) & m
        pn_win = 1 << pn_nbits
        pn_hwin = pn_win // 2
        pn_mask = pn_win - 1
        candidate_pn = (expected_pn & ~pn_mask & m) | truncated_pn
        if candidate_pn <= (expected_pn - pn_hwin) & m and candidate_pn < (1 << 62) - pn_hwin:
            return candidate_pn + pn_win
        if candidate_pn > expected_pn + pn_hwin and candidate_pn >= pn_win:
            return candidate_pn - pn_win
        return candidate_pn

    assert prototype_decode_pkt_nr(0, 1, 16) == 65537  # what the prototype would give
    assert ref.decode_pn(0, 1, 16) == 1  # RFC 9000 A.3
    k, dcid = keys(520), b"\x53" * 8
    host.send(compat_signaling_peer(53, k, dcid, full_pn=0))
    time.sleep(0.2)
    assert host.rx_ok(k, dcid, 1, 53, compat=True), "PN 1 after Full_pn 0 is 1 (RFC 9000 A.3)"


def test_compat_host_gets_no_v1_events_until_it_speaks_v1():
    """A compat host cannot parse v1 frames: the unknown-connection EVENT
    (which names no compat entry) is not sent until the host has sent a v1
    frame; it is counted instead (events_not_v1)."""
    a = App("qdv", ["--workers", "1", "--compat"], lcores="0")
    try:
        h = Host(a)
        k, dcid = keys(530), b"\x54" * 8
        h.send(compat_signaling_peer(54, k, dcid))
        time.sleep(0.2)
        unknown = net_frame(peer_packet(keys(531), b"\xee" * 8, 1, b"u" * 30))
        a.np.send(unknown)
        assert a.hp.recv_match(lambda f: f == unknown, 2) == unknown  # passed on unchanged
        frames = a.hp.recv_all(timeout=0.5)
        assert not [f for f in frames if (d := W.decode(f)) is not None and d.typ == W.EVENT], (
            "a v1 EVENT went to a compat host"
        )
        assert a.wait_stat("events_not_v1", 1) == 1
        # the host speaks v1 (any request): events from now on
        s = h.request(lambda r: W.query(r, 0xFFFFFFFF, W.RX, conn=False, table=True))
        assert s.typ == W.STATS
        time.sleep(0.15)  # past the event rate limit
        a.np.send(unknown)
        ev = a.hp.recv_match(
            lambda f: (d := W.decode(f)) is not None and d.typ == W.EVENT and d.flags == 4, 2
        )
        assert ev is not None, "no unknown_connection EVENT to a v1 host"
    finally:
        assert a.stop() == 0
