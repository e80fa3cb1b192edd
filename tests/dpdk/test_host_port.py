# SPDX-License-Identifier: Apache-2.0
"""The host libraries against the real quicoff-dpdk (veth pairs, root):
libquicoff-host through tests/dpdk/host_driver.c (a scripted host built on
it), quicoff.host.OffloadPort, and ``quicoff ctl``.

Each drives the same story over the host interface: ADD both directions,
DATA_TO_OFFLOAD packets that leave protected on the network side (they
decrypt with quicoff.ref, and neither the plaintext nor any key byte is on
the network side), a protected packet from the network that reaches the host
as DATA_TO_HOST, key updates both ways (the peer's, reported by an EVENT; the
host's, by UPDATE), a tampered packet and a packet too big for the network
reported by EVENTs, REMOVE, and a
request sent while the offload is stopped (SIGSTOP), which the library
re-sends with the same request ID until it is answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scapy.all import IP, UDP, Ether, Raw, raw

from harness import App
from quicoff import host, ref, wire

ROOT = Path(__file__).resolve().parents[2]
SUITE = "aes-128-gcm"
NEXT_HOP_MAC = "02:00:00:00:be:ef"
TX_DCID = bytes.fromhex("a1a2a3a4a5a6a7a8")  # the peer's CID (in packets we send)
RX_DCID = bytes.fromhex("b1b2b3b4b5b6b7b8")  # ours (in packets the peer sends)


def keys_for(direction: str, gen: int) -> ref.PacketKeys:
    """host_driver.c's keys_for(): AES-128-GCM, a function of (direction, generation)."""
    d = 0 if direction == "tx" else 1
    key = bytes(((d * 0x40 + gen * 0x10 + i) ^ 0xA5) & 0xFF for i in range(16))
    iv = bytes(((d * 0x40 + gen * 0x10 + i) ^ 0x5A) & 0xFF for i in range(12))
    hp = bytes(((d * 0x40 + i) ^ 0x3C) & 0xFF for i in range(16))
    return ref.PacketKeys(key, iv, hp)


ALL_KEY_BYTES = [
    b
    for d in ("tx", "rx")
    for g in (0, 1)
    for b in (keys_for(d, g).key, keys_for(d, g).iv, keys_for(d, g).hp)
]


def encap() -> wire.Encap:
    return wire.Encap(
        dst_mac=NEXT_HOP_MAC,
        src_mac="02:00:00:00:a0:01",
        src_ip="192.0.2.1",
        dst_ip="198.51.100.7",
        src_port=4433,
        dst_port=443,
    )


def net_frame(quic: bytes) -> bytes:
    return raw(
        Ether(src="02:00:00:00:70:01", dst="02:00:00:00:a0:01")
        / IP(src="198.51.100.7", dst="192.0.2.1")
        / UDP(sport=443, dport=4433)
        / Raw(quic)
    )


def peer_packet(pn: int, gen: int, payload: bytes, tamper: bool = False) -> bytes:
    k0, k = keys_for("rx", 0), keys_for("rx", gen)
    k = ref.PacketKeys(k.key, k.iv, k0.hp)  # HP keys never change (RFC 9001 §6)
    hdr = ref.build_short_header(RX_DCID, pn, pn_len=2, key_phase=gen & 1)
    pkt = bytearray(ref.protect(SUITE, k, hdr, payload, pn))
    if tamper:
        pkt[-3] ^= 1
    return bytes(pkt)


def our_packet(pn: int, key_phase: int = 0) -> tuple:
    hdr = ref.build_short_header(TX_DCID, pn, pn_len=2, key_phase=key_phase)
    return hdr, b"PLAINTEXT of packet %d. " % pn * 12


def protected_on_network(app: App, n: int) -> list:
    out = []
    end = time.monotonic() + 3
    while len(out) < n and time.monotonic() < end:
        f = app.np.recv_match(lambda f: UDP in Ether(f), max(0.0, end - time.monotonic()))
        if f is not None:
            out.append(f)
    return out


def check_protected(frames: list, sent: list, gen: int = 0) -> None:
    """Each frame decrypts (quicoff.ref) to what was sent; no plaintext and no
    key byte string is on the network side."""
    k0, k = keys_for("tx", 0), keys_for("tx", gen)
    k = ref.PacketKeys(k.key, k.iv, k0.hp)
    assert len(frames) == len(sent)
    for f, (pn, hdr, payload) in zip(frames, sent):
        p = Ether(f)
        assert p.dst == NEXT_HOP_MAC and (p[IP].src, p[IP].dst) == ("192.0.2.1", "198.51.100.7")
        u = ref.unprotect(SUITE, k, bytes(p[UDP].payload), dcid_len=8)
        assert (u.pn, u.header, u.payload, u.key_phase) == (pn, hdr, payload, gen & 1)
        assert payload[:16] not in f
        assert not any(kb in f for kb in ALL_KEY_BYTES), "key bytes on the network side"


class AppPaused:
    """quicoff-dpdk stopped (SIGSTOP) until resumed: a request sent meanwhile
    gets no ACK in time, so the host re-sends it with the same request ID;
    once resumed the offload runs it once and answers the copies from its
    memory of recent requests (docs/protocol.md §6).  (A tc rule dropping
    the ACKs would lose them outright, but the test machines' kernels lack
    tc's action modules; the lost-and-forgotten cases are in tests/c/test_host.c
    and tests/python/test_host.py.)"""

    def __init__(self, app: App):
        self.app = app
        os.kill(app.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.app.proc.pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def app():
    a = App("qdp", ["--workers", "1"], lcores="0")
    yield a
    assert a.stop() == 0, a.output[-3000:]


# The first wait for an ACK. The library's default (20 ms) suits an offload
# that answers in microseconds; on a test machine loaded by other work the
# app's lcore can be descheduled for longer than that, and the retry that
# follows, harmless in itself, would fail the assertions that a request went
# through at its first try. The tests that want a retry pause the app for
# longer than this (AppPaused).
ACK_MS = 250
PAUSE_S = 3 * ACK_MS / 1000


@pytest.fixture
def fresh(app):
    app.hp.drain()
    app.np.drain()
    yield app
    # whatever a failed test left installed must not fail the next one
    with host.OffloadPort(app.host.outer, ack_timeout=ACK_MS / 1000) as port:
        for index in range(16):
            for direction in ("tx", "rx"):
                try:
                    port.remove(index, direction)
                except host.OffloadRefused:
                    pass


def _driver_path() -> Path:
    p = ROOT / "build" / "tests" / "c" / "host_driver"
    if (ROOT / "build" / "build.ninja").exists():
        subprocess.run(["ninja", "-C", str(ROOT / "build"), "tests/c/host_driver"], check=True,
                       capture_output=True)  # fmt: skip
    if not p.exists():
        pytest.fail("tests/c/host_driver not built: meson setup build && ninja -C build")
    return p


class Driver:
    """tests/dpdk/host_driver.c: one command line in, one JSON line out."""

    def __init__(self, ifname: str):
        self.proc = subprocess.Popen(
            [str(_driver_path()), ifname, str(ACK_MS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert self.read() == {"ready": True}

    def write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "host_driver exited"
        return json.loads(line)

    def __call__(self, line: str) -> dict:
        self.write(line)
        return self.read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(10) == 0


def test_c_host_library_drives_quicoff_dpdk(fresh):
    app = fresh
    d = Driver(app.host.outer)
    try:
        r = d("add tx 1 " + TX_DCID.hex())
        assert (r["result"], r["status"], r["tries"]) == ("ok", "ok", 1), r
        assert d("add rx 1 %s next" % RX_DCID.hex())["result"] == "ok"
        again = d("add rx 1 " + RX_DCID.hex())
        assert (again["result"], again["status"]) == ("refused", "exists")

        # host -> offload -> network: one batch of three
        sent = [(pn, *our_packet(pn)) for pn in (0, 1, 2)]
        r = d("send 1 " + " ".join("%d %s" % (pn, (h + p).hex()) for pn, h, p in sent))
        assert (r["result"], r["sent"]) == ("ok", 3)
        check_protected(protected_on_network(app, 3), sent)

        # network -> offload -> host
        payload = b"from the peer " * 10
        app.np.send(net_frame(peer_packet(5, 0, payload)))
        r = d("recv 1 3000")
        assert len(r["data"]) == 1, r
        got = r["data"][0]
        hdr = ref.build_short_header(RX_DCID, 5, pn_len=2)
        assert (got["index"], got["pn"], got["status"], got["key_phase"]) == (1, 5, "ok", 0)
        assert bytes.fromhex(got["hex"]) == hdr + payload

        # the peer's key update: data in key phase 1 and an EVENT key_update
        app.np.send(net_frame(peer_packet(6, 1, b"new phase " * 8)))
        r = d("recv 1 3000")
        assert r["data"] and r["data"][0]["key_phase"] == 1 and r["data"][0]["pn"] == 6
        r = d("events 1 3000")
        ev = [e for e in r["events"] if e["code"] == "key_update"]
        assert ev and ev[0]["index"] == 1 and ev[0]["key_generation"] == 1 and ev[0]["pn"] == 6

        # a tampered packet: dropped, reported
        app.np.send(net_frame(peer_packet(7, 1, b"forged " * 8, tamper=True)))
        r = d("events 1 3000")
        assert any(e["code"] == "auth_failed" and e["index"] == 1 for e in r["events"]), r
        assert d("recv 1 300")["data"] == []

        # the host's key update: UPDATE installs generation 1 and rolls to it
        r = d("roll tx 1 1")
        assert (r["result"], r["status"]) == ("ok", "ok"), r
        sent = [(pn, *our_packet(pn, 1)) for pn in (3, 4)]
        d("send 1 " + " ".join("%d %s" % (pn, (h + p).hex()) for pn, h, p in sent))
        check_protected(protected_on_network(app, 2), sent, gen=1)
        r = d("query tx 1")
        assert (r["result"], r["packets"], r["key_generation"]) == ("ok", 5, 1), r

        # too big for the network once protected and encapsulated: EVENT too_big
        hdr = ref.build_short_header(TX_DCID, 9, pn_len=2, key_phase=1)
        big = hdr + bytes(1500 - 20 - 8 - 16 + 1 - len(hdr))  # IPv4 length 1501
        d("send 1 9 " + big.hex())
        r = d("events 1 3000")
        tb = [e for e in r["events"] if e["code"] == "too_big"]
        assert tb and (tb[0]["index"], tb[0]["mtu"], tb[0]["pn"]) == (1, 1500, 9), r
        assert protected_on_network(app, 1) == []

        # REMOVE; again: unknown_connection at the first try is a refusal
        assert d("remove tx 1")["result"] == "ok"
        assert d("remove rx 1")["result"] == "ok"
        r = d("remove tx 1")
        assert (r["result"], r["status"], r["tries"]) == ("refused", "unknown_connection", 1)

        # no ACK for a while: the library re-sends the identical request
        paused = AppPaused(app)
        try:
            d.write("add tx 2 " + TX_DCID.hex())
            time.sleep(PAUSE_S)
        finally:
            paused.resume()
        r = d.read()
        assert r["result"] == "ok" and r["success"] and r["tries"] >= 2, r
        assert d("query tx 2")["result"] == "ok"
        assert app.stats()["sig_retried"] >= 1
        st = d("stats")
        assert st["retries"] >= 1 and st["timeouts"] == 0
        assert d("remove tx 2")["result"] == "ok"
    finally:
        d.close()


def test_python_offload_port_drives_quicoff_dpdk(fresh):
    app = fresh
    with host.OffloadPort(app.host.outer, ack_timeout=ACK_MS / 1000) as port:
        ktx, krx, krx1 = keys_for("tx", 0), keys_for("rx", 0), keys_for("rx", 1)
        r = port.add(index=3, direction="tx", suite=SUITE, key=ktx.key, iv=ktx.iv, hp=ktx.hp,
                     dcid=TX_DCID, encap=encap())  # fmt: skip
        assert (r.status, r.tries) == ("ok", 1)
        port.add(index=3, direction="rx", suite=SUITE, key=krx.key, iv=krx.iv, hp=krx.hp,
                 dcid=RX_DCID, next_key=krx1.key, next_iv=krx1.iv)  # fmt: skip
        with pytest.raises(host.OffloadRefused) as e:
            port.add(index=3, direction="rx", suite=SUITE, key=krx.key, iv=krx.iv, hp=krx.hp,
                     dcid=RX_DCID)  # fmt: skip
        assert e.value.reply.status == "exists"

        sent = [(pn, *our_packet(pn)) for pn in (0, 1, 2)]
        assert port.send_data([(3, pn, h + p) for pn, h, p in sent]) == 3
        check_protected(protected_on_network(app, 3), sent)

        payload = b"from the peer " * 10
        app.np.send(net_frame(peer_packet(5, 0, payload)))
        got = port.recv_data(timeout=3)
        assert [(x.index, x.pn, x.status, x.key_phase) for x in got] == [(3, 5, "ok", 0)]
        assert got[0].packet == ref.build_short_header(RX_DCID, 5, pn_len=2) + payload

        app.np.send(net_frame(peer_packet(6, 1, b"new phase " * 8)))
        got = port.recv_data(timeout=3)
        assert got and got[0].key_phase == 1
        evs = port.events(timeout=3)
        ku = [e for e in evs if e.code == "key_update"]
        assert ku and ku[0].index == 3 and ku[0].key_generation == 1 and ku[0].pn == 6

        ktx1 = keys_for("tx", 1)
        r = port.update(index=3, direction="tx", key_generation=1, key=ktx1.key, iv=ktx1.iv,
                        roll_generation=1)  # fmt: skip
        assert r.status == "ok"
        sent = [(pn, *our_packet(pn, 1)) for pn in (3, 4)]
        port.send_data([(3, pn, h + p) for pn, h, p in sent])
        check_protected(protected_on_network(app, 2), sent, gen=1)
        conn = port.query(3, "tx").msg.conn
        assert (conn["packets"], conn["key_generation"]) == (5, 1)
        assert port.stats()["connections"] >= 2

        port.remove(3, "tx")
        port.remove(3, "rx")
        with pytest.raises(host.OffloadRefused):
            port.remove(3, "tx")

        paused = AppPaused(app)
        done: list = []
        try:
            port.submit(
                wire.Add(index=4, direction="tx", suite=SUITE, key=ktx.key, iv=ktx.iv,
                         hp=ktx.hp, dcid=TX_DCID, encap=encap()),
                done.append,
            )  # fmt: skip
            end = time.monotonic() + PAUSE_S
            while time.monotonic() < end:
                port.process()
                time.sleep(0.005)
        finally:
            paused.resume()
        end = time.monotonic() + 3
        while not done and time.monotonic() < end:
            port.process()
            time.sleep(0.005)
        assert done and done[0].success and done[0].tries >= 2, done
        port.remove(4, "tx")


def ctl(app: App, *args: str) -> tuple:
    r = subprocess.run(
        [sys.executable, "-m", "quicoff", "ctl", "-i", app.host.outer, "--json", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
        timeout=60,
    )
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None


def test_quicoff_ctl_list_show_stats_remove(fresh):
    app = fresh
    with host.OffloadPort(app.host.outer, ack_timeout=ACK_MS / 1000) as port:
        for i in (5, 9):
            k = keys_for("tx", 0)
            port.add(index=i, direction="tx", suite=SUITE, key=k.key, iv=k.iv, hp=k.hp,
                     dcid=TX_DCID, encap=encap())  # fmt: skip
        k = keys_for("rx", 0)
        port.add(index=9, direction="rx", suite=SUITE, key=k.key, iv=k.iv, hp=k.hp, dcid=RX_DCID)
        sent = [(pn, *our_packet(pn)) for pn in (0, 1)]
        port.send_data([(9, pn, h + p) for pn, h, p in sent])
        protected_on_network(app, 2)

    rc, out = ctl(app, "list", "--indices", "0-15")
    assert rc == 0
    entries = {(e["direction"], e["index"]): e for e in out["entries"]}
    assert set(entries) == {("tx", 5), ("tx", 9), ("rx", 9)}
    assert entries[("tx", 9)]["packets"] == 2 and entries[("tx", 5)]["packets"] == 0

    rc, out = ctl(app, "show", "tx", "9")
    assert rc == 0 and out["conn"]["packets"] == 2 and out["index"] == 9

    rc, out = ctl(app, "stats")
    assert rc == 0 and out["table"]["connections"] == 3 and out["table"]["tx_packets"] >= 2

    rc, out = ctl(app, "remove", "tx", "9")
    assert rc == 0 and out["removed"] and out["status"] == "ok"
    rc, out = ctl(app, "show", "tx", "9")
    assert rc == 1 and out["error"] == "unknown_connection"
    rc, out = ctl(app, "list", "--indices", "0-15", "--direction", "tx")
    assert [(e["direction"], e["index"]) for e in out["entries"]] == [("tx", 5)]

    # human-readable
    r = subprocess.run(
        [sys.executable, "-m", "quicoff", "ctl", "-i", app.host.outer, "list", "--indices", "0-15"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
    )
    assert r.returncode == 0 and "2 entries" in r.stdout and "rx" in r.stdout
    for d, i in (("tx", 5), ("rx", 9)):
        assert ctl(app, "remove", d, str(i))[0] == 0
