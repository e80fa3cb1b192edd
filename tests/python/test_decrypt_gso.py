# SPDX-License-Identifier: Apache-2.0
"""`quicoff decrypt` on UDP GSO buffers built by hand (quicoff.ref protects
the packets), appended to a short aioquic capture as the server's:

* a buffer of 4 x 1,200-byte datagrams and a shorter last one;
* a buffer whose middle segment was tampered with: that segment alone
  fails, and is written byte for byte as captured;
* one large datagram that is not GSO (one packet): decrypted whole, no split;
* garbage: random bytes behind a short header carrying the DCID, the same
  with the DCID planted every 40 bytes (many plausible sizes: bounded
  work), and random bytes with no known DCID;

each with its exact counts and output frames.  The real thing (ngtcp2 on
loopback) is test_decrypt_ngtcp2.py::test_gso_super_datagrams.  With the
client's CID 8 bytes, and empty (the size cannot be told by the DCID, only
by the tag).
"""

import os
import time

import pytest

from quicoff import capture, ref
from quicoff import gso
from quicoff.decrypt import Decryptor, decrypt_capture, split_datagram
from quicoff.keylog import KeyLog
from quicoff.pcap_io import CaptureReader, parse_udp

pytest.importorskip("scapy")
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap


@pytest.fixture(scope="module", params=[8, 0], ids=["cid8", "cid0"])
def conn(request, tmp_path_factory):
    """A short aioquic connection; what is needed to forge the server's 1-RTT
    packets: suite, keys, the client's CID, the next packet number."""
    d = tmp_path_factory.mktemp("gso")
    spec = capture.ConnectionSpec(
        upload=2000, download=2000, chunks=1, key_updates=0, client_cid_len=request.param
    )
    result = capture.record(d / "in.pcap", d / "keys.log", [spec])
    assert result.connections[0].handshake_completed
    recs = []
    base = decrypt_capture(d / "in.pcap", None, d / "keys.log", on_packet=recs.append)
    assert base.totals["failed"] == 0 and base.totals["no_keys"] == 0, base.format()
    suite = base.connections[0].suite
    keylog = KeyLog.from_file(d / "keys.log")
    (random,) = list(keylog.client_randoms())
    keys = ref.derive_packet_keys(suite, keylog.get(random, "SERVER_TRAFFIC_SECRET_0"))
    s2c = [r for r in recs if r.direction == "s2c" and r.level == "1rtt"]
    pkts = list(rdpcap(str(d / "in.pcap")))
    template = [p for p in pkts if p[UDP].sport == result.server[1]][-1]
    # the client's CID: a server 1-RTT packet's DCID (its plaintext header)
    dcid = s2c[-1].plaintext[1 : 1 + request.param]
    return dict(
        dir=d,
        base=base,
        suite=suite,
        keys=keys,
        dcid=dcid,
        pkts=pkts,
        template=template,
        pn=max(r.pn for r in s2c) + 1,
    )


def packet(c, size, pn):
    """A protected 1-RTT packet of exactly ``size`` bytes (PING, PADDING)."""
    header = bytes([0x43]) + c["dcid"] + pn.to_bytes(4, "big")
    body = b"\x01" + bytes(size - len(header) - 16 - 1)
    return ref.protect(c["suite"], c["keys"], header, body, pn), header + body


def frame(c, payload, dt):
    t = c["template"]
    f = (
        Ether(src=t.src, dst=t.dst)
        / IP(src=t[IP].src, dst=t[IP].dst)
        / UDP(sport=t[UDP].sport, dport=t[UDP].dport)
        / Raw(payload)
    )
    f.time = t.time + dt
    return f


def decrypt(c, name, payloads):
    """The capture with ``payloads`` appended as server datagrams; decrypted.
    Returns (report, records of the new frames, UDP payloads of the output
    frames after the original ones)."""
    path = c["dir"] / (name + ".pcap")
    wrpcap(str(path), c["pkts"] + [frame(c, p, 0.001 * (i + 1)) for i, p in enumerate(payloads)])
    out = c["dir"] / (name + "-out.pcap")
    recs = []
    report = decrypt_capture(path, out, c["dir"] / "keys.log", on_packet=recs.append)
    n = len(c["pkts"])
    with open(out, "rb") as f:
        written = [parse_udp(it.data, it.linktype).payload for it in CaptureReader(f)]
    assert written[:n] == [parse_udp(p, 1).payload for p in _raw(c)]  # untouched part
    return report, [r for r in recs if r.frame >= n], written[n:]


def _raw(c):
    """The original frames as decrypt writes them (its own output of the base)."""
    if "raw" not in c:
        out = c["dir"] / "base-out.pcap"
        decrypt_capture(c["dir"] / "in.pcap", out, c["dir"] / "keys.log")
        with open(out, "rb") as f:
            c["raw"] = [it.data for it in CaptureReader(f)]
    return c["raw"]


def delta(c, report):
    b = c["base"].totals
    return {k: v - b[k] for k, v in report.totals.items()}


def gso_counts(report):
    # (getattr: the guards below also run against a decrypt without the split)
    return getattr(report, "gso_datagrams", 0), getattr(report, "gso_segments", 0)


def test_gso_buffer_with_a_shorter_last_segment(conn):
    c = conn
    sizes = [1200, 1200, 1200, 1200, 517]
    segs = [packet(c, s, c["pn"] + i) for i, s in enumerate(sizes)]
    buf = b"".join(p for p, _ in segs)
    report, recs, written = decrypt(c, "gso", [buf])
    assert delta(c, report) == dict(ok=5, failed=0, no_keys=0, other=0), report.format()
    assert gso_counts(report) == (1, 5), report.format()
    assert "GSO: 1 datagrams split into 5 packets" in report.format()
    assert [r.pn for r in recs] == [c["pn"] + i for i in range(5)]
    assert all(r.status == "ok" and r.frame == recs[0].frame for r in recs)
    # one output frame per segment, each the plaintext (header unprotected, tag dropped)
    assert written == [plain for _, plain in segs]


def test_gso_tampered_middle_segment_fails_alone(conn):
    c = conn
    sizes = [1200, 1200, 1200, 700]
    segs = [packet(c, s, c["pn"] + 10 + i) for i, s in enumerate(sizes)]
    bad = bytearray(segs[2][0])
    bad[600] ^= 0x01
    buf = segs[0][0] + segs[1][0] + bytes(bad) + segs[3][0]
    report, recs, written = decrypt(c, "tampered", [buf])
    assert delta(c, report) == dict(ok=3, failed=1, no_keys=0, other=0), report.format()
    assert gso_counts(report) == (1, 4), report.format()
    assert [r.status for r in recs] == ["ok", "ok", "auth_failed", "ok"]
    assert written == [segs[0][1], segs[1][1], bytes(bad), segs[3][1]]


def test_gso_buffer_waiting_for_keys(conn):
    """The buffer captured before the server's Initial (reordered): its
    connection has no suite yet, so it waits; the ServerHello releases it,
    then it is split, and its segments are written where it was."""
    c = conn
    sizes = [1200, 1200, 900]
    segs = [packet(c, s, c["pn"] + 30 + i) for i, s in enumerate(sizes)]
    path = c["dir"] / "early.pcap"
    early = frame(c, b"".join(p for p, _ in segs), 0)
    early.time = c["pkts"][0].time
    wrpcap(str(path), c["pkts"][:1] + [early] + c["pkts"][1:])
    recs, written = [], []
    dec = Decryptor(KeyLog.from_file(c["dir"] / "keys.log"), on_packet=recs.append)
    try:
        with open(path, "rb") as f:
            for i, item in enumerate(CaptureReader(f)):
                written += [d if d is not None else it.data for it, d in dec.feed(item)]
                if i == 1:
                    # the client's Initial and the buffer are in: the buffer waits
                    assert [r.frame for r in recs] == [0] and len(written) == 1
        written += [d if d is not None else it.data for it, d in dec.finish()]
    finally:
        dec.close()
    report = dec.report
    assert delta(c, report) == dict(ok=3, failed=0, no_keys=0, other=0), report.format()
    assert gso_counts(report) == (1, 3), report.format()
    assert [(r.pn, r.status) for r in recs if r.frame == 1] == [
        (c["pn"] + 30 + i, "ok") for i in range(3)
    ]
    written = [parse_udp(d, 1).payload for d in written]
    raw = [parse_udp(p, 1).payload for p in _raw(c)]
    assert written == raw[:1] + [plain for _, plain in segs] + raw[1:]


def test_large_datagram_that_is_not_gso_is_not_split(conn):
    c = conn
    pkt, plain = packet(c, 3000, c["pn"] + 20)
    report, recs, written = decrypt(c, "large", [pkt])
    assert gso_counts(report) == (0, 0), report.format()
    assert delta(c, report) == dict(ok=1, failed=0, no_keys=0, other=0), report.format()
    assert written == [plain]


def test_garbage_fails_whole_in_bounded_time(conn):
    c = conn
    rnd = os.urandom(60000)
    head = bytes([0x43]) + c["dcid"]
    planted = bytearray(head + rnd)
    for p in range(40, len(planted) - len(head), 40):
        planted[p : p + len(head)] = head  # a "packet start" every 40 bytes
    # and zeros: with an empty DCID, every size is plausible
    garbage = [
        head + rnd[:5000],
        bytes(planted),
        head + bytes(64000),
        bytes([0x40 | (rnd[0] & 0x3F)]) + rnd,
    ]
    t0 = time.monotonic()
    report, recs, written = decrypt(c, "garbage", garbage)
    elapsed = time.monotonic() - t0
    assert gso_counts(report) == (0, 0), report.format()
    if c["dcid"]:
        # the last one's DCID is no CID of the connection: no keys
        assert delta(c, report) == dict(ok=0, failed=3, no_keys=1, other=0), report.format()
    else:
        # an empty CID: every short header of the flow is the connection's
        assert delta(c, report) == dict(ok=0, failed=4, no_keys=0, other=0), report.format()
    assert len(recs) == 4
    assert written == garbage  # byte for byte, one frame each
    # the work: the whole packet, then at most MAX_TRIALS sizes, per datagram
    # (the base capture fails nothing); the cid0 run reaches the bound
    fails = sum(e["auth_failures"] for e in report.engines.values())
    tried = delta(c, report)["failed"]
    assert tried < fails <= tried * (1 + gso.MAX_TRIALS), fails
    assert elapsed < 10, elapsed


def test_candidate_sizes_bounded_and_ordered():
    """gso.candidate_sizes alone: a hint comes first if plausible; with an
    empty DCID and all-zero bytes every size is plausible, yet the scan is
    bounded (sizes >= len/MAX_SEGMENTS) and the caller takes MAX_TRIALS."""
    dcid = b"\xaa" * 8
    seg = [bytes([0x41]) + dcid + os.urandom(1191) for _ in range(3)]
    data = b"".join(seg) + bytes([0x41]) + dcid + os.urandom(300)
    # multiples pass the filter too (only the tag tells them apart)
    assert list(gso.candidate_sizes(data, 0, dcid)) == [1200, 2400, 3600]
    assert next(gso.candidate_sizes(data, 0, dcid, hints=(1200,))) == 1200
    assert list(gso.candidate_sizes(data, 0, dcid, hints=(2400, 1300))) == [2400, 1200, 3600]
    zeros = bytes(65000)
    t0 = time.monotonic()
    sizes = list(gso.candidate_sizes(zeros, 0, b""))
    assert time.monotonic() - t0 < 5
    assert sizes[:301] == list(range(1200, 1501))  # the likely ones first
    assert sorted(sizes) == list(range(-(-65000 // gso.MAX_SEGMENTS), 65000))
    assert [len(s) for s in gso.segments(data, 1200)] == [1200, 1200, 1200, 309]
    # an ordinary datagram's split is unchanged (one short packet to the end)
    assert [(p.offset, p.end) for p in split_datagram(data)[0]] == [(0, len(data))]


def test_mutated_gso_buffers_never_crash_and_lose_nothing(conn):
    """300 GSO buffers with random damage (bytes flipped anywhere, DCIDs and
    segment starts included; cut short; lengthened): no exception, every
    frame written (one per segment when split), every packet counted."""
    import random

    c = conn
    rng = random.Random(8)
    good = b"".join(
        packet(c, s, c["pn"] + 100 + i)[0] for i, s in enumerate([1200, 1200, 1200, 1200, 333])
    )
    bufs = []
    for _ in range(300):
        b = bytearray(good)
        for _ in range(rng.choice([1, 1, 2, 5])):
            op = rng.random()
            if op < 0.6:
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            elif op < 0.8:
                del b[rng.randrange(1, len(b)) :]
            else:
                b += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000)))
        bufs.append(bytes(b))
    report, recs, written = decrypt(c, "mutated", bufs)
    n = len(c["pkts"])
    assert len(written) == len(bufs) - report.gso_datagrams + report.gso_segments
    assert {r.frame for r in recs} == set(range(n, n + len(bufs)))  # each one accounted
    assert sum(delta(c, report).values()) == len(recs)
    assert report.gso_datagrams > 0 and report.totals["failed"] > 0, report.format()
