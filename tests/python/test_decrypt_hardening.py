# SPDX-License-Identifier: Apache-2.0
"""`quicoff decrypt` on the input that broke it (issue 8, items 2 and 3).

Real traffic comes from aioquic (quicoff.capture, or a small loop here for
Version Negotiation, which capture.record's server does not answer), edited
with scapy where the case needs it (a greased short header, IPv4 fragments),
or cut with editcap (snaplen).  Each test says what the old code did.
"""

import hashlib
import os
import shutil
import ssl
import subprocess
import sys

import pytest

import quicoff
from quicoff import capture, ref
from quicoff.decrypt import decrypt_capture, split_datagram
from quicoff.keylog import KeyLog

from scapy.layers.inet import IP, UDP, fragment
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(quicoff.__file__)))
V1, V2 = 0x00000001, 0x6B3343CF


def run_cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "quicoff"] + [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def records_of(pcap, keylog):
    recs = []
    report = decrypt_capture(pcap, None, keylog, on_packet=recs.append)
    return report, recs


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """One short aioquic connection: Initial+Handshake+1-RTT coalesced in the
    client's second datagram."""
    d = tmp_path_factory.mktemp("small")
    spec = capture.ConnectionSpec(upload=3000, download=3000, chunks=2, key_updates=0)
    result = capture.record(d / "in.pcap", d / "keys.log", [spec])
    assert result.connections[0].handshake_completed
    return d, result


def set_payload(pkt, payload):
    """A scapy frame with a new UDP payload and lengths/checksums recomputed."""
    ip = pkt[IP]
    new = (
        Ether(src=pkt.src, dst=pkt.dst)
        / IP(src=ip.src, dst=ip.dst, id=ip.id)
        / UDP(sport=pkt[UDP].sport, dport=pkt[UDP].dport)
        / Raw(payload)
    )
    new.time = pkt.time
    return new


# --------------------------------------------------------------------------
# item 2: a greased short header starting with 0x00 is a packet, not padding


def _greased_zero(small):
    """The capture with the client's coalesced 1-RTT packet re-protected with
    its fixed bit 0 (RFC 9287), 16 PADDING/PING frames in front of its
    frames until the protected first byte is 0x00: 4 PADDING, then k's
    bits (0x00 PADDING, 0x01 PING) where the header-protection sample lies
    (payload bytes 4 - pn_len .. 19 - pn_len), a new sample for each k.  Returns (pcap, frame index, offset of
    the 1-RTT packet, its plaintext payload)."""
    d, result = small
    keylog = KeyLog.from_file(d / "keys.log")
    (random,) = list(keylog.client_randoms())
    pkts = list(rdpcap(str(d / "in.pcap")))
    for index, p in enumerate(pkts):
        data = bytes(p[UDP].payload)
        spans, _ = split_datagram(data)
        # the client's (the server's first flight may also end in a 1-RTT
        # packet, depending on its certificate's signature length)
        if p[UDP].dport == result.server[1] and [s.ptype for s in spans][-2:] == [
            "handshake",
            "1rtt",
        ]:
            break
    else:
        pytest.fail("no Handshake + 1-RTT datagram in the capture")
    off = spans[-1].offset
    # the client's 1-RTT packet: the server's CID (8 bytes), suite aes-128-gcm
    keys = ref.derive_packet_keys("aes-128-gcm", keylog.get(random, "CLIENT_TRAFFIC_SECRET_0"))
    u = ref.unprotect("aes-128-gcm", keys, data[off:], dcid_len=8)
    for k in range(2000):
        header = bytes([u.header[0] & ~0x40 & ~0x20]) + u.header[1:]  # fixed bit, spin 0
        body = bytes(4) + bytes((k >> i) & 1 for i in range(12)) + u.payload
        prot = ref.protect("aes-128-gcm", keys, header, body, u.pn)
        if prot[0] == 0x00:
            break
    else:
        pytest.fail("no 0x00 first byte in 2000 tries")
    pkts[index] = set_payload(pkts[index], data[:off] + prot)
    out = d / ("greased-zero-%d.pcap" % index)
    wrpcap(str(out), pkts)
    return out, index, off, body


def test_split_greased_zero_short_header_is_a_packet(small):
    pcap, index, off, _ = _greased_zero(small)
    data = bytes(rdpcap(str(pcap))[index][UDP].payload)
    assert data[off] == 0x00
    spans, end = split_datagram(data)
    # the old splitter stopped at the 0x00 byte: ["initial", "handshake"], end == off
    assert [s.ptype for s in spans] == ["initial", "handshake", "1rtt"]
    assert (spans[-1].offset, end) == (off, len(data))
    # the reference splitter, which shares the rule
    assert ref.split_coalesced(data, 8)[-1] == (off, len(data))


def test_decrypt_greased_zero_short_header(small):
    """Needs the engine to accept a greased fixed bit (branch grease)."""
    pcap, index, off, body = _greased_zero(small)
    d, _ = small
    report, recs = records_of(pcap, d / "keys.log")
    mine = [r for r in recs if r.frame == index and r.level == "1rtt"]
    assert len(mine) == 1, "the 1-RTT packet after the Handshake packet was not tried"
    assert mine[0].status == "ok", mine[0]
    assert mine[0].plaintext[mine[0].header_len :] == body
    assert report.totals["failed"] == 0 and report.totals["no_keys"] == 0


def test_c_splitter_tries_greased_zero_short_header(small):
    """libquicoff's quicoff_unprotect_datagram (Engine.unprotect) applies the
    same rule (it stops only at an all-zero rest): checked, not changed."""
    pcap, index, off, body = _greased_zero(small)
    d, _ = small
    keylog = KeyLog.from_file(d / "keys.log")
    (random,) = list(keylog.client_randoms())
    data = bytes(rdpcap(str(pcap))[index][UDP].payload)
    spans, _ = split_datagram(data)
    hs = spans[-2]
    assert spans[-1].offset == off
    eng = quicoff.Engine(local_cid_len=8)
    try:
        eng.add_connection(
            "rx",
            "aes-128-gcm",
            hs.dcid,
            level="handshake",
            secret=keylog.get(random, "CLIENT_HANDSHAKE_TRAFFIC_SECRET"),
        )
        eng.add_connection(
            "rx",
            "aes-128-gcm",
            data[off + 1 : off + 9],
            secret=keylog.get(random, "CLIENT_TRAFFIC_SECRET_0"),
        )
        res = eng.unprotect(data[hs.offset :])
    finally:
        eng.close()
    assert [r.status for r in res] == ["ok", "ok"]
    assert bytes(res[1].payload) == body


def test_trailing_zeros_are_padding_and_counted(small):
    d, _ = small
    pkts = list(rdpcap(str(d / "in.pcap")))
    data = bytes(pkts[1][UDP].payload)
    spans, _ = split_datagram(data)
    assert spans[-1].form == "long"
    pkts[1] = set_payload(pkts[1], data + bytes(37))
    wrpcap(str(d / "padded.pcap"), pkts)
    report, recs = records_of(d / "padded.pcap", d / "keys.log")
    assert (report.padding_datagrams, report.padding_bytes) >= (1, 37)
    assert report.totals["failed"] == 0 and report.totals["no_keys"] == 0
    assert "padding: %d bytes" % report.padding_bytes in report.format()
    assert ref.split_coalesced(data + bytes(37))[-1][1] == spans[-1].end


# --------------------------------------------------------------------------
# item 3: Version Negotiation, then a new ClientHello on the same CIDs


def record_vn(pcap, keylog_path, payload_len=5000):
    """aioquic client offering v2 first to an aioquic server that speaks v1
    only; the server side answers the v2 Initial with Version Negotiation
    (aioquic's QuicConnection drops it; its asyncio server would send VN).
    The client retries in v1 with a new ClientHello, same CIDs."""
    from aioquic.buffer import Buffer
    from aioquic.quic import events
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.packet import encode_quic_version_negotiation, pull_quic_header

    cert, key = capture.make_certificate()
    C, S = ("10.0.0.2", 50000), ("10.0.0.1", 4433)
    log, got, sid = [], b"", None
    with open(keylog_path, "w") as kf:
        ccfg = QuicConfiguration(
            is_client=True,
            alpn_protocols=["quicoff"],
            server_name="localhost",
            verify_mode=ssl.CERT_NONE,
            secrets_log_file=kf,
            supported_versions=[V2, V1],
        )
        client = QuicConnection(configuration=ccfg)
        scfg = QuicConfiguration(
            is_client=False, alpn_protocols=["quicoff"], supported_versions=[V1]
        )
        scfg.certificate, scfg.private_key = cert, key
        server = None
        now = 0.0
        client.connect(S, now=now)
        data_out = capture.pattern("vn", payload_len)
        for _ in range(400):
            now += 0.001
            for data, _ in client.datagrams_to_send(now=now):
                log.append((now, C, S, data))
                h = pull_quic_header(Buffer(data=data), host_cid_length=8)
                if server is None and h.version not in scfg.supported_versions:
                    vn = encode_quic_version_negotiation(
                        source_cid=h.destination_cid,
                        destination_cid=h.source_cid,
                        supported_versions=[V1],
                    )
                    log.append((now, S, C, vn))
                    client.receive_datagram(vn, S, now=now)
                    continue
                if server is None:
                    server = QuicConnection(
                        configuration=scfg, original_destination_connection_id=h.destination_cid
                    )
                server.receive_datagram(data, C, now=now)
            if server is not None:
                for data, _ in server.datagrams_to_send(now=now):
                    log.append((now, S, C, data))
                    client.receive_datagram(data, S, now=now)
            for e in iter(client.next_event, None):
                if isinstance(e, events.HandshakeCompleted) and sid is None:
                    sid = client.get_next_available_stream_id()
                    client.send_stream_data(sid, data_out, end_stream=True)
            for e in iter(server.next_event if server else (lambda: None), None):
                if isinstance(e, events.StreamDataReceived):
                    got += e.data
            if got == data_out:
                break
    assert got == data_out, "aioquic did not complete the connection after VN"
    capture._write_pcap(pcap, log, 1.7e9)
    return log


def test_version_negotiation_then_new_client_hello(tmp_path):
    log = record_vn(tmp_path / "vn.pcap", tmp_path / "keys.log")
    versions = [int.from_bytes(d[1:5], "big") for _, _, _, d in log if d[0] & 0x80]
    assert versions[:3] == [V2, 0, V1], "no VN exchange: %r" % versions[:3]
    report, recs = records_of(tmp_path / "vn.pcap", tmp_path / "keys.log")
    # the old code kept the v2 ClientHello's random: every Handshake and
    # 1-RTT packet "without keys"
    assert len(report.connections) == 1
    c = report.connections[0]
    assert (c.failed, c.no_keys, c.other) == (0, 0, 1), report.format()
    assert c.ok == len([r for r in recs if r.level != "vn"]) > 6
    assert {r.level for r in recs} >= {"initial", "handshake", "1rtt", "vn"}


# --------------------------------------------------------------------------
# item 3: -o naming the input


@pytest.mark.parametrize("how", ["same", "relative", "hardlink", "symlink"])
def test_output_that_is_the_input_is_refused(small, tmp_path, how):
    d, _ = small
    src = tmp_path / "in.pcap"
    shutil.copy(d / "in.pcap", src)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    out = {
        "same": src,
        "relative": os.path.relpath(src),
        "hardlink": tmp_path / "link.pcap",
        "symlink": tmp_path / "sym.pcap",
    }[how]
    if how == "hardlink":
        os.link(src, out)
    elif how == "symlink":
        os.symlink(src, out)
    p = run_cli("decrypt", src, "-k", d / "keys.log", "-o", out)
    assert p.returncode != 0, p.stdout
    assert "is the input" in p.stderr and "refusing" in p.stderr, p.stderr
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before, "the input was modified"


def test_unwritable_output_is_named(small, tmp_path):
    """The old message blamed the input ("cannot read in.pcap: Is a directory")."""
    d, _ = small
    p = run_cli("decrypt", d / "in.pcap", "-k", d / "keys.log", "-o", tmp_path)
    assert p.returncode == 2
    assert "cannot write %s" % tmp_path in p.stderr, p.stderr


# --------------------------------------------------------------------------
# item 3: a key log with a UTF-8 BOM


def test_keylog_with_bom_keeps_its_first_secret(small, tmp_path):
    d, _ = small
    text = (d / "keys.log").read_text()
    first_label, random_hex, secret_hex = text.split("\n")[0].split()
    bom = tmp_path / "bom.log"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    log = KeyLog.from_file(bom)
    assert log.get(bytes.fromhex(random_hex), first_label) == bytes.fromhex(secret_hex)
    assert not log.bad_lines
    assert KeyLog.from_text("\ufeff" + text).entries == KeyLog.from_text(text).entries
    report = decrypt_capture(d / "in.pcap", None, bom)
    assert report.totals["no_keys"] == 0 and report.totals["failed"] == 0, report.format()


# --------------------------------------------------------------------------
# item 3: IPv4 fragments


def test_ipv4_fragments_reassembled(small, tmp_path):
    d, _ = small
    pkts = list(rdpcap(str(d / "in.pcap")))
    out, big = [], 0
    for p in pkts:
        if len(p[UDP]) > 600:
            big += 1
            ip = p[IP]
            frags = fragment(IP(src=ip.src, dst=ip.dst, id=ip.id or 4242) / p[UDP], fragsize=296)
            # out of order, as a network may deliver them
            frags = frags[1:] + frags[:1]
            for f in frags:
                e = Ether(src=p.src, dst=p.dst) / f
                e.time = p.time
                out.append(e)
        else:
            out.append(p)
    assert big >= 4
    wrpcap(str(tmp_path / "frag.pcap"), out)
    whole = decrypt_capture(d / "in.pcap", None, d / "keys.log")
    report = decrypt_capture(tmp_path / "frag.pcap", tmp_path / "out.pcap", d / "keys.log")
    # the old code: fragments "not UDP", their packets never counted nor decrypted
    assert report.totals == whole.totals, report.format()
    assert report.reassembled == big and report.ip_fragments == len(out) - len(pkts) + big
    assert report.fragments_incomplete == 0
    assert "reassembled into %d datagrams" % big in report.format()
    # the output: one whole, valid datagram per fragmented one, decrypted
    res = rdpcap(str(tmp_path / "out.pcap"))
    assert len(res) == len(pkts)
    for p in res:
        raw = bytes(p)
        q = Ether(raw)
        del q[IP].chksum, q[UDP].chksum
        assert bytes(Ether(bytes(q))) == raw, "bad checksum in the output"
        assert q[IP].flags == 0 and q[IP].frag == 0


def test_ipv4_fragments_incomplete_written_as_captured(small, tmp_path):
    d, _ = small
    p = rdpcap(str(d / "in.pcap"))[0]
    frags = fragment(IP(src=p[IP].src, dst=p[IP].dst, id=7) / p[UDP], fragsize=296)
    kept = [Ether(src=p.src, dst=p.dst) / f for f in frags[:-1]]  # the last one lost
    wrpcap(str(tmp_path / "lost.pcap"), kept)
    report = decrypt_capture(tmp_path / "lost.pcap", tmp_path / "out.pcap", d / "keys.log")
    assert report.ip_fragments == len(kept) and report.fragments_incomplete == len(kept)
    assert [bytes(x) for x in rdpcap(str(tmp_path / "out.pcap"))] == [bytes(x) for x in kept]


def test_ipv4_fragments_given_up_after_a_timeout(small, tmp_path):
    """A lost fragment must not hold the rest of the capture back to its end:
    after 30 s of capture time its set is given up and written out."""
    from quicoff.decrypt import Decryptor
    from quicoff.pcap_io import CaptureReader

    d, _ = small
    pkts = list(rdpcap(str(d / "in.pcap")))
    p = pkts[0]
    frags = fragment(IP(src=p[IP].src, dst=p[IP].dst, id=9) / p[UDP], fragsize=296)
    kept = []
    for f in frags[:-1]:
        e = Ether(src=p.src, dst=p.dst) / f
        e.time = p.time
        kept.append(e)
    late = Ether() / IP(src="10.0.0.3", dst="10.0.0.4") / UDP(sport=53, dport=53) / Raw(b"x" * 30)
    late.time = p.time + 31
    wrpcap(str(tmp_path / "late.pcap"), kept + [late])
    dec = Decryptor(KeyLog.from_file(d / "keys.log"))
    with open(tmp_path / "late.pcap", "rb") as f:
        items = list(CaptureReader(f))
    for it in items[:-1]:
        assert dec.feed(it) == []  # held back while the datagram may complete
    out = dec.feed(items[-1])
    assert [it.index for it, _ in out] == [it.index for it in items]
    assert dec.report.fragments_incomplete == len(kept)
    dec.finish()
    dec.close()


# --------------------------------------------------------------------------
# item 3: a capture cut by snaplen


def test_snaplen_truncated_datagrams_counted(small, tmp_path):
    editcap = shutil.which("editcap")
    assert editcap, "editcap not found: run tools/install_deps.sh (apt-get install tshark)"
    d, _ = small
    snap = 300
    subprocess.run(
        [editcap, "-s", str(snap), str(d / "in.pcap"), str(tmp_path / "cut.pcap")],
        check=True,
        capture_output=True,
        timeout=30,
    )
    cut = sum(1 for p in rdpcap(str(d / "in.pcap")) if len(p) > snap)
    assert cut >= 4
    p = run_cli("decrypt", tmp_path / "cut.pcap", "-k", d / "keys.log")
    assert p.returncode == 0, p.stderr
    # the old code counted them as "not QUIC" and said nothing
    assert (
        "%d UDP datagrams cut short by the capture's snaplen: %d QUIC packets in them "
        "truncated" % (cut, cut) in p.stdout
    ), p.stdout
    report, recs = records_of(tmp_path / "cut.pcap", d / "keys.log")
    assert (report.truncated_datagrams, report.truncated_packets) == (cut, cut)
    big = {i for i, p in enumerate(rdpcap(str(d / "in.pcap"))) if len(p) > snap}
    assert sorted(r.frame for r in recs if r.status == "truncated") == sorted(big)
    # what is whole before the cut still decrypts: the server's Initial
    # (coalesced with its Handshake packet, which the cut takes)
    whole = [r for r in recs if r.frame in big and r.status == "ok"]
    assert {r.level for r in whole} == {"initial"} and len(whole) >= 2, whole
    # the client's cut first Initial still starts the connection the right way round
    assert report.connections[0].client.endswith(":50000"), report.format()
    assert report.connections[0].suite == "aes-128-gcm"
    # and the cut frames are written as captured
    decrypt_capture(tmp_path / "cut.pcap", tmp_path / "out.pcap", d / "keys.log")
    for i, (a, b) in enumerate(
        zip(rdpcap(str(tmp_path / "cut.pcap")), rdpcap(str(tmp_path / "out.pcap")))
    ):
        if i in big:
            assert bytes(a) == bytes(b)


# --------------------------------------------------------------------------
# item 3: an unsupported QUIC version is named, not "not QUIC"


def test_unsupported_version_named(tmp_path):
    version = 0x709A50C4  # ngtcp2 0.12's QUIC v2 draft
    C, S = ("10.0.0.2", 40000), ("10.0.0.1", 443)

    def frame(src, dst, payload):
        return Ether() / IP(src=src[0], dst=dst[0]) / UDP(sport=src[1], dport=dst[1]) / Raw(payload)

    def long_header(first, dcid, scid, rest):
        return (
            bytes([first])
            + version.to_bytes(4, "big")
            + bytes([len(dcid)])
            + dcid
            + bytes([len(scid)])
            + scid
            + rest
        )

    cid_c, cid_s = os.urandom(8), os.urandom(8)
    pkts = [
        frame(C, S, long_header(0xC0, cid_s, cid_c, os.urandom(1200))),  # client Initial
        frame(S, C, long_header(0xD1, cid_c, cid_s, os.urandom(300))),
        frame(C, S, long_header(0xE1, cid_s, cid_c, os.urandom(80))),
        frame(C, S, bytes([0x41]) + cid_s + os.urandom(60)),  # 1-RTT
        frame(S, C, bytes([0x41]) + cid_c + os.urandom(60)),
        # DNS-like traffic with its top bit set: not QUIC, not counted
        frame(("10.0.0.3", 53), ("10.0.0.4", 5353), bytes([0x81]) + os.urandom(40)),
    ]
    wrpcap(str(tmp_path / "v.pcap"), pkts)
    p = run_cli("decrypt", tmp_path / "v.pcap")
    assert p.returncode == 0, p.stderr
    assert "unsupported version 0x709a50c4: 5 packets" in p.stdout, p.stdout
    report = decrypt_capture(tmp_path / "v.pcap")
    assert report.unsupported_versions == {version: 5}
    assert report.other_frames == 1


# --------------------------------------------------------------------------
# hostile input: mutated, cut and fragmented datagrams never crash decrypt


def test_mutated_and_fragmented_input_never_crashes(small, tmp_path):
    import random

    d, _ = small
    rnd = random.Random(8)
    base = list(rdpcap(str(d / "in.pcap")))
    frames_in = []
    for i in range(200):
        p = rnd.choice(base)
        data = bytearray(bytes(p[UDP].payload))
        for _ in range(rnd.randrange(4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        if rnd.random() < 0.2:
            data = data[: rnd.randrange(len(data) + 1)]
        if rnd.random() < 0.1:
            data = bytes([rnd.choice([0, 0x40, 0x80, 0xC0])]) + bytes(rnd.randrange(30))
        e = (
            Ether(src=p.src, dst=p.dst)
            / IP(src=p[IP].src, dst=p[IP].dst, id=rnd.randrange(8))
            / UDP(sport=p[UDP].sport, dport=p[UDP].dport)
            / Raw(bytes(data))
        )
        pieces = [e]
        if rnd.random() < 0.2:  # fragments of mixed-up IDs, shuffled, some lost
            fr = fragment(e[IP], fragsize=rnd.choice([8, 64, 296]))
            rnd.shuffle(fr)
            pieces = [Ether(src=p.src, dst=p.dst) / f for f in fr[: len(fr) - (rnd.random() < 0.3)]]
        for x in pieces:
            x.time = p.time + i * 0.01
            frames_in.append(x)
    wrpcap(str(tmp_path / "fuzz.pcap"), frames_in)
    report = decrypt_capture(tmp_path / "fuzz.pcap", tmp_path / "out.pcap", d / "keys.log")
    out = rdpcap(str(tmp_path / "out.pcap"))
    # every frame is written, except fragments whose bytes went into a reassembled one
    assert len(out) == len(frames_in) - (
        report.ip_fragments - report.fragments_incomplete - report.reassembled
    )
    assert report.frames == len(frames_in)
