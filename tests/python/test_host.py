# SPDX-License-Identifier: Apache-2.0
"""quicoff.host.OffloadPort against a scripted offload on an AF_UNIX
SOCK_SEQPACKET pair (whole frames per message, as on the AF_PACKET socket;
no root): request IDs and ACKs, the identical frame re-sent when an answer is
lost, §6's retry answers, timeouts, one outstanding request per entry, STATS,
EVENTs with a gap, data both ways, junk frames.  tests/c/test_host.c does the
same for libquicoff-host; tests/dpdk/test_host_port.py runs both against the
real offload application (root)."""

from __future__ import annotations

import random
import socket
import threading
import time

import pytest

from quicoff import host, wire

HOST_MAC, OFFLOAD_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
KEY = bytes(range(0x11, 0x21))


class FakeOffload(threading.Thread):
    """mode: 'answer', 'lose_first' (run, lose the first answer, answer
    retries from memory), 'forget' (run, lose the answer, run the retry
    again), 'silent'."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock, self.mode, self.frames = sock, "answer", []
        self.installed = set()
        self.last_rid, self.remembered = None, None
        self.stop = False

    def run_request(self, m):
        key = (m.direction, m.index)
        if m.kind == "add":
            if key in self.installed:
                return "exists"
            self.installed.add(key)
        elif m.kind == "remove":
            if key not in self.installed:
                return "unknown_connection"
            self.installed.discard(key)
        elif m.kind == "query" and m.conn and key not in self.installed:
            return "unknown_connection"
        return "ok"

    def answer(self, m, status):
        a = wire.ack_for(m, status)
        if isinstance(a, wire.Stats) and status == "ok":
            a.conn = {"packets": 42} if m.conn else None
            a.table = {"connections": len(self.installed)} if m.table else None
            a.__post_init__()
        self.send(a)

    def send(self, msg):
        self.sock.send(wire.frame(msg, dst=HOST_MAC, src=OFFLOAD_MAC))

    def run(self):
        self.sock.settimeout(0.005)
        while not self.stop:
            try:
                raw = self.sock.recv(65535)
            except socket.timeout:
                continue
            except OSError:
                return
            self.frames.append(raw)
            _eth, m = wire.decode_frame(raw)
            if m.kind not in host.REQUEST_KINDS:
                continue
            retry = m.request_id == self.last_rid
            self.last_rid = m.request_id
            if self.mode == "answer":
                self.answer(m, self.run_request(m))
            elif self.mode == "lose_first":
                if retry:
                    self.answer(m, self.remembered)
                else:
                    self.remembered = self.run_request(m)
            elif self.mode == "forget":
                st = self.run_request(m)
                if retry:
                    self.answer(m, st)


@pytest.fixture
def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fake = FakeOffload(b)
    fake.start()
    port = host.OffloadPort(
        sock=a, src_mac=HOST_MAC, offload_mac=OFFLOAD_MAC, ack_timeout=0.02, max_tries=4
    )
    yield port, fake
    fake.stop = True
    fake.join()
    port.close()
    b.close()


def add(index, direction="rx"):
    return dict(
        index=index,
        direction=direction,
        suite="aes-128-gcm",
        key=KEY,
        iv=KEY[:12],
        hp=KEY,
        dcid=bytes([index]) * 8,
    )


def test_add_acknowledged_then_exists(pair):
    port, fake = pair
    r = port.add(**add(1))
    assert (r.status, r.tries, r.success, r.kind) == ("ok", 1, True, "add")
    raw = fake.frames[0]
    assert raw[:6] == bytes.fromhex("020000000002") and raw[6:12] == bytes.fromhex("020000000001")
    assert KEY in raw
    with pytest.raises(host.OffloadRefused) as e:
        port.add(**add(1))
    assert e.value.reply.status == "exists" and e.value.reply.tries == 1
    assert all(not any(p.frame) for p in port._pending.values())


def test_lost_answer_is_retried_with_the_identical_frame(pair):
    port, fake = pair
    fake.mode = "lose_first"
    r = port.add(**add(2, "tx"))
    # At least one retry; more when the fake's answer to the first one comes
    # later than the next timeout (a loaded machine): every try the same frame.
    assert r.success and r.tries >= 2
    assert 2 <= len(fake.frames) <= r.tries and len(set(fake.frames)) == 1
    assert port.counters["retries"] == r.tries - 1
    fake.mode = "forget"
    r = port.add(**add(3, "tx"))
    assert (r.status, r.success) == ("exists", True) and r.tries >= 2
    r = port.remove(3, "tx")
    assert (r.status, r.success) == ("unknown_connection", True)


def test_no_answer_is_unreachable_after_max_tries(pair):
    port, fake = pair
    fake.mode = "silent"
    with pytest.raises(host.OffloadUnreachable):
        port.add(**add(4))
    time.sleep(0.02)
    assert len(fake.frames) == 4 and port.counters["timeouts"] == 1
    assert port.next_timeout() is None


def test_one_outstanding_request_per_entry_and_queries(pair):
    port, fake = pair
    fake.mode = "silent"
    done = []
    port.submit(wire.Add(**add(5)), done.append)
    with pytest.raises(host.OffloadBusy):
        port.submit(wire.Remove(index=5, direction="rx"))
    port.submit(wire.Remove(index=5, direction="tx"), done.append)  # another entry: pipelined
    fake.mode = "answer"
    end = time.monotonic() + 2
    while len(done) < 2 and time.monotonic() < end:
        time.sleep(0.002)
        port.process()
    assert [r.kind for r in sorted(done, key=lambda r: r.request_id)] == ["add", "remove"]
    assert port.query(5, "rx").msg.conn["packets"] == 42
    assert port.stats()["connections"] == 1
    with pytest.raises(host.OffloadRefused) as e:
        port.query(9, "rx")
    assert e.value.reply.status == "unknown_connection"
    with pytest.raises(ValueError):
        port.submit(wire.DataToOffload(index=1, pn=1, packet=b"x"))


def test_events_and_data_both_ways(pair):
    port, fake = pair
    for seq in (5, 7):
        fake.send(wire.Event(code="key_update", seq=seq, index=1, direction="rx", key_generation=1))
    evs = port.events(timeout=1)
    end = time.monotonic() + 1
    while len(evs) < 2 and time.monotonic() < end:
        evs += port.events(timeout=0.05)
    assert [e.seq for e in evs] == [5, 7] and evs[0].code == "key_update"
    assert port.counters["events_missed"] == 1
    pkts = [(7, 100 + i, b"packet %d" % i) for i in range(3)]
    assert port.send_data(pkts) == 3
    end = time.monotonic() + 1
    while len(fake.frames) < 3 and time.monotonic() < end:
        time.sleep(0.002)
    got = [wire.decode_frame(f)[1] for f in fake.frames]
    assert [(d.kind, d.index, d.pn, d.packet) for d in got] == [
        ("data_to_offload", i, pn, p) for i, pn, p in pkts
    ]
    with pytest.raises(wire.WireError):
        port.send_data([(1, wire.PN_MAX + 1, b"x")])
    fake.send(wire.DataToHost(index=9, pn=77, packet=b"hello host"))
    fake.send(wire.DataToHost(index=9, pn=78, packet=b"again"))
    got = port.recv_data(timeout=1)
    while len(got) < 2:
        got += port.recv_data(timeout=1)
    assert [(d.index, d.pn, d.packet) for d in got] == [(9, 77, b"hello host"), (9, 78, b"again")]
    # data that comes while a request waits is kept
    fake.mode = "lose_first"
    fake.send(wire.DataToHost(index=9, pn=79, packet=b"kept"))
    port.add(**add(11))
    assert [d.pn for d in port.recv_data()] == [79]


def test_junk_frames_are_ignored(pair):
    port, fake = pair
    rnd = random.Random(1)
    for i in range(2000):
        junk = rnd.randbytes(rnd.randrange(0, 200))
        if i % 2 and len(junk) > 16:
            junk = junk[:12] + b"\x88\xb5\x51\x01" + junk[16:]
        fake.sock.send(junk)
        if i % 20 == 19:
            port.process()
    port.process()
    assert port.counters["frames_ignored"] > 0
    assert port.add(**add(12)).success


def test_trains_are_sent_and_counted(pair):
    port, fake = pair
    trains = [
        (7, 200, [b"a" * 100, b"b" * 100, b"c" * 40]),
        (8, 9, [b"single packet train"]),
    ]
    assert port.send_train(trains) == 2
    end = time.monotonic() + 1
    while len(fake.frames) < 2 and time.monotonic() < end:
        time.sleep(0.002)
    got = [wire.decode_frame(f)[1] for f in fake.frames]
    assert [(d.kind, d.index, d.pn, d.packets) for d in got] == [
        ("data_train", i, pn, p) for i, pn, p in trains
    ]
    c = port.counters
    assert (c["data_sent"], c["trains_sent"], c["packets_sent"]) == (2, 2, 4)
    # bad trains: nothing of the call is sent
    for bad in (
        [(7, 1, [b"a" * 10, b"b" * 11])],  # a packet longer than the segment
        [(7, wire.PN_MAX, [b"a", b"b"])],  # the last PN past 2^62-1
        [(7, 1, [])],  # no packet
    ):
        with pytest.raises(wire.WireError):
            port.send_train([(8, 1, [b"ok"])] + bad)
    time.sleep(0.02)
    assert len(fake.frames) == 2 and port.counters["trains_sent"] == 2
