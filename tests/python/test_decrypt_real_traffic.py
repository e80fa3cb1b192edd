# SPDX-License-Identifier: Apache-2.0
"""`quicoff decrypt` on real QUIC traffic: the data plane end to end.

aioquic (a real QUIC + TLS 1.3 stack) runs clients and a server in this
process (quicoff.capture: datagrams exchanged in memory on a simulated
clock); every datagram it sends is recorded, byte for byte, to a pcap
(Ethernet/IP/UDP built by scapy) and its TLS secrets to a key log.  Then
`python -m quicoff decrypt` runs the capture through the C engine, and the
checks read the *output pcap* with scapy and an independent header parser:

* every packet decrypted (no failures, nothing without keys);
* key updates were followed: 1-RTT packets of key phase 1 and, after a
  second update, phase 0 again, in both directions;
* STREAM frames of the decrypted payloads reassemble to exactly what the
  applications sent (and aioquic's peers received);
* the output opens in scapy (valid lengths and checksums) and in tshark;
* tshark, decrypting the original capture itself, sees the same packet
  numbers and key phases;
* a capture with one byte flipped in one 1-RTT packet: exactly one failure.
"""

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

import quicoff

try:
    import quicoff._quicoff
except ImportError as exc:  # pragma: no cover - the build is broken
    pytest.fail("quicoff._quicoff does not import: %s" % exc, pytrace=False)

import aioquic  # noqa: F401  (a test dependency: pip install -e .[test])
import scapy.all  # noqa: F401  (every Scapy layer, for the dissection of what rdpcap reads)

from aioquic.buffer import Buffer
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

from quicoff import capture, frames
from quicoff.decrypt import decrypt_capture

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(quicoff.__file__)))
TSHARK = shutil.which("tshark")
EDITCAP = shutil.which("editcap")


def require(tool, path):
    """tshark/editcap are test dependencies (tools/install_deps.sh installs
    them): a missing one fails the test loudly instead of skipping it."""
    assert path, "%s not found: run tools/install_deps.sh (apt-get install tshark)" % tool


SUITES = ["aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"]
V1, V2 = 0x00000001, 0x6B3343CF
LONG_TYPES = {
    V1: ("initial", "0rtt", "handshake", "retry"),
    V2: ("retry", "initial", "0rtt", "handshake"),
}


def run_cli(*args, check=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run(
        [sys.executable, "-m", "quicoff"] + [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if check and p.returncode != 0:
        raise AssertionError("quicoff %s: exit %d\n%s%s" % (args, p.returncode, p.stdout, p.stderr))
    return p


# --------------------------------------------------------------------------
# reading the output back, independently of quicoff.decrypt


def varint(data, pos):
    buf = Buffer(data=bytes(data[pos : pos + 8]))
    value = buf.pull_uint_var()
    return value, pos + buf.tell()


def plaintext_packets(payload, short_dcid_len):
    """[(level, first_byte, pn, frames_payload)] of a decrypted UDP payload."""
    out = []
    off = 0
    while off < len(payload):
        first = payload[off]
        if not first & 0x80:
            if out and first == 0:
                break  # padding after coalesced packets
            pn_off = off + 1 + short_dcid_len
            pn_len = (first & 0x03) + 1
            pn = int.from_bytes(payload[pn_off : pn_off + pn_len], "big")
            out.append(("1rtt", first, pn, payload[pn_off + pn_len :]))
            break
        version = int.from_bytes(payload[off + 1 : off + 5], "big")
        if version not in LONG_TYPES:
            break  # Version Negotiation
        level = LONG_TYPES[version][(first >> 4) & 3]
        if level == "retry":
            out.append(("retry", first, None, b""))
            break
        p = off + 6 + payload[off + 5]
        p += 1 + payload[p]
        if level == "initial":
            tlen, p = varint(payload, p)
            p += tlen
        length, pn_off = varint(payload, p)
        pn_len = (first & 0x03) + 1
        pn = int.from_bytes(payload[pn_off : pn_off + pn_len], "big")
        out.append((level, first, pn, payload[pn_off + pn_len : pn_off + length]))
        off = pn_off + length
    return out


def udp_of(pkt):
    ip = pkt[IP] if IP in pkt else pkt[IPv6]
    return ip.src, pkt[UDP].sport, ip.dst, pkt[UDP].dport, bytes(pkt[UDP].payload)


def read_decrypted(out_pcap, result):
    """{(client_port, direction): [(frame_index, level, first, pn, payload)]} from the output."""
    server_port = result.server[1]
    by_port = {c.client[1]: c for c in result.connections}
    out = defaultdict(list)
    for i, pkt in enumerate(rdpcap(str(out_pcap))):
        src, sport, dst, dport, payload = udp_of(pkt)
        d = "s2c" if sport == server_port else "c2s"
        port = dport if d == "s2c" else sport
        spec = by_port[port].spec
        dcid_len = spec.server_cid_len if d == "c2s" else spec.client_cid_len
        for level, first, pn, body in plaintext_packets(payload, dcid_len):
            out[(port, d)].append((i, level, first, pn, body))
    return out


def reassemble(packets):
    """{stream_id: bytes} from the STREAM frames of 0-RTT/1-RTT payloads."""
    streams = {}
    for _, level, _, _, body in packets:
        if level not in ("0rtt", "1rtt"):
            continue
        for f in frames.parse_frames(body):
            if isinstance(f, frames.Stream):
                streams.setdefault(f.stream_id, frames.Reassembler()).add(f.offset, f.data, f.fin)
    out = {}
    for sid, r in streams.items():
        assert r.complete, "stream %d has holes: %s" % (sid, r.ranges)
        assert not r.conflict
        out[sid] = r.contiguous()
    return out


# --------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def suites_run(tmp_path_factory):
    """One connection per cipher suite, two key updates each (client, then server)."""
    d = tmp_path_factory.mktemp("suites")
    specs = [
        capture.ConnectionSpec(
            suite=s, upload=40000 + 1000 * i, download=50000 + 1000 * i, key_updates=2, chunks=10
        )
        for i, s in enumerate(SUITES)
    ]
    result = capture.record(d / "in.pcap", d / "keys.log", specs)
    for c in result.connections:
        assert c.handshake_completed and c.closed, c
        assert c.received == c.sent, "aioquic itself did not deliver the data"
        assert c.key_updates_requested == {"c2s": 1, "s2c": 1}
    p = run_cli(
        "decrypt", "--keylog", d / "keys.log", d / "in.pcap", "-o", d / "out.pcap", "--json"
    )
    summary = json.loads(p.stdout)
    return d, result, summary


@pytest.fixture(scope="module")
def features_run(tmp_path_factory):
    """QUIC v2, Retry, 0-RTT, a CID change, a ClientHello over two Initials,
    CIDs of 4, 8, 16 and 20 bytes -- over IPv6."""
    d = tmp_path_factory.mktemp("features")
    specs = [
        capture.ConnectionSpec(suite="aes-128-gcm", version=capture.VERSION_2, key_updates=3),
        capture.ConnectionSpec(
            suite="chacha20-poly1305",
            retry=True,
            key_updates=2,
            client_cid_len=4,
            server_cid_len=16,
        ),
        capture.ConnectionSpec(suite="aes-256-gcm", zero_rtt=2500, key_updates=1),
        capture.ConnectionSpec(
            suite="aes-128-gcm",
            change_cid=True,
            big_client_hello=True,
            key_updates=2,
            server_cid_len=20,
        ),
    ]
    result = capture.record(d / "in.pcap", d / "keys.log", specs, server=("fd00::1", 443))
    for c in result.connections:
        assert c.handshake_completed and c.received == c.sent
    report = decrypt_capture(d / "in.pcap", d / "out.pcap", d / "keys.log")
    return d, result, report


# --------------------------------------------------------------------------
# the three cipher suites


def test_every_packet_decrypted(suites_run):
    d, result, summary = suites_run
    conns = summary["connections"]
    assert [c["suite"] for c in conns] == SUITES
    assert summary["totals"]["failed"] == 0
    assert summary["totals"]["no_keys"] == 0
    assert summary["unattributed"] == 0 and summary["other_frames"] == 0
    n_frames = len(result.datagrams)
    assert summary["frames"] == summary["quic_datagrams"] == n_frames
    # the C data plane did it: its counters account for every packet and key update
    engines = summary["engines"].values()
    assert sum(e["rx_packets"] for e in engines) == summary["totals"]["ok"]
    assert sum(e["auth_failures"] + e["malformed"] for e in engines) == 0
    assert sum(e["key_updates"] for e in engines) == sum(
        sum(c["key_updates"].values()) for c in summary["connections"]
    )
    out = read_decrypted(d / "out.pcap", result)
    for c, rec in zip(conns, result.connections):
        assert c["client"] == "%s:%d" % rec.client
        assert c["failed"] == 0 and c["no_keys"] == 0 and c["other"] == 0
        n = len(out[(rec.client[1], "c2s")]) + len(out[(rec.client[1], "s2c")])
        assert c["ok"] == n > 50
        assert set(c["levels"]) == {"initial", "handshake", "1rtt"}


def test_key_updates_followed(suites_run):
    d, result, summary = suites_run
    out = read_decrypted(d / "out.pcap", result)
    for c, rec in zip(summary["connections"], result.connections):
        # a client-initiated and a server-initiated update: both directions move twice
        assert c["key_updates"] == {"c2s": 2, "s2c": 2}
        for direction in ("c2s", "s2c"):
            phases = [
                (first >> 2) & 1
                for _, level, first, _, _ in out[(rec.client[1], direction)]
                if level == "1rtt"
            ]
            # 0...0 1...1 0...0: generations 0, 1, 2 in order, each decrypted
            changes = [i for i in range(1, len(phases)) if phases[i] != phases[i - 1]]
            assert phases[0] == 0 and len(changes) == 2, phases
            assert phases.count(1) >= 1


def test_stream_data_is_what_was_sent(suites_run):
    d, result, _ = suites_run
    out = read_decrypted(d / "out.pcap", result)
    for rec in result.connections:
        for direction in ("c2s", "s2c"):
            streams = reassemble(out[(rec.client[1], direction)])
            sent = {sid: data for (dd, sid), data in rec.sent.items() if dd == direction}
            assert streams == sent


def test_output_opens_in_scapy(suites_run):
    d, result, _ = suites_run
    before = rdpcap(str(d / "in.pcap"))
    after = rdpcap(str(d / "out.pcap"))
    assert len(after) == len(before) == len(result.datagrams)
    for a, b, (t, src, dst, data) in zip(after, before, result.datagrams):
        assert float(a.time) == pytest.approx(float(b.time))
        assert udp_of(a)[:4] == (src[0], src[1], dst[0], dst[1])
        payload = udp_of(a)[4]
        # each QUIC packet lost its 16-byte tag, nothing else
        n_packets = len(plaintext_packets(payload, 8))
        assert len(payload) == len(data) - 16 * n_packets
        # lengths and checksums as scapy computes them
        assert a[IP].len == len(a[IP])
        assert a[UDP].len == 8 + len(payload)
        rebuilt = a.__class__(bytes(a))
        del rebuilt[IP].chksum
        del rebuilt[UDP].chksum
        rebuilt = rebuilt.__class__(bytes(rebuilt))
        assert rebuilt[IP].chksum == a[IP].chksum
        assert rebuilt[UDP].chksum == a[UDP].chksum


def test_output_opens_in_tshark(suites_run):
    require("tshark", TSHARK)
    d, result, _ = suites_run
    p = subprocess.run(
        [
            TSHARK,
            "-n",
            "-r",
            str(d / "out.pcap"),
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "udp.length",
            "-e",
            "udp.srcport",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    rows = [line.split("\t") for line in p.stdout.splitlines() if line.strip()]
    assert len(rows) == len(result.datagrams)
    after = rdpcap(str(d / "out.pcap"))
    for row, pkt in zip(rows, after):
        assert int(row[1]) == pkt[UDP].len
        assert int(row[2]) == pkt[UDP].sport


def test_tshark_agrees_on_the_original(suites_run):
    require("tshark", TSHARK)
    """Wireshark's own QUIC decryption of the input: same packet numbers and key phases."""
    d, result, _ = suites_run
    p = subprocess.run(
        [
            TSHARK,
            "-n",
            "-r",
            str(d / "in.pcap"),
            "-o",
            "tls.keylog_file:%s" % (d / "keys.log"),
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "quic.packet_number",
            "-e",
            "quic.key_phase",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    theirs = {}
    for line in p.stdout.splitlines():
        cols = line.split("\t")
        pns = [int(x) for x in cols[1].split(",") if x]
        kps = [int(x) for x in cols[2].split(",") if x] if len(cols) > 2 else []
        theirs[int(cols[0]) - 1] = (pns, kps)
    out = read_decrypted(d / "out.pcap", result)
    ours = defaultdict(lambda: ([], []))
    for packets in out.values():
        for i, level, first, pn, _ in packets:
            ours[i][0].append(pn)
            if level == "1rtt":
                ours[i][1].append((first >> 2) & 1)
    # tshark prints full packet numbers; the output carries the truncated ones
    for i, (pns, kps) in theirs.items():
        mine_pns, mine_kps = ours[i]
        assert len(pns) == len(mine_pns), i
        for full, trunc in zip(pns, mine_pns):
            assert full % 256 == trunc % 256, (i, pns, mine_pns)
        assert kps == mine_kps, (i, kps, mine_kps)


def test_function_api_and_records(suites_run, tmp_path):
    d, result, summary = suites_run
    records = []
    report = decrypt_capture(d / "in.pcap", None, d / "keys.log", on_packet=records.append)
    assert report.totals == summary["totals"]
    assert len(records) == sum(c["ok"] for c in summary["connections"])
    updated = [r for r in records if r.key_updated]
    assert len(updated) == 2 * 2 * len(SUITES)
    assert all(r.level == "1rtt" and r.status == "ok" for r in updated)
    for r in records:
        assert r.plaintext is not None and 0 < r.header_len < len(r.plaintext) + 1


# --------------------------------------------------------------------------
# tampering


def test_tampered_packet_is_the_one_failure(suites_run, tmp_path):
    d, result, summary = suites_run
    pkts = rdpcap(str(d / "in.pcap"))
    victim_port = result.connections[1].client[1]
    candidates = [
        i
        for i, p in enumerate(pkts)
        if p[UDP].sport == victim_port and not bytes(p[UDP].payload)[0] & 0x80
    ]
    i = candidates[len(candidates) // 2]
    data = bytearray(bytes(pkts[i][UDP].payload))
    data[len(data) // 2] ^= 0x10  # a ciphertext byte of a 1-RTT packet
    pkts[i][UDP].remove_payload()
    pkts[i][UDP].add_payload(Raw(bytes(data)))
    wrpcap(str(tmp_path / "tampered.pcap"), pkts)

    p = run_cli(
        "decrypt",
        "-k",
        d / "keys.log",
        tmp_path / "tampered.pcap",
        "-o",
        tmp_path / "out.pcap",
        "--json",
    )
    tampered = json.loads(p.stdout)
    for before, after in zip(summary["connections"], tampered["connections"]):
        if after["client"].endswith(":%d" % victim_port):
            assert after["failed"] == 1
            assert after["ok"] == before["ok"] - 1
            assert after["levels"]["1rtt"]["auth_failed"] == 1
        else:
            assert after == before
        assert after["no_keys"] == 0
        assert after["key_updates"] == before["key_updates"]
    # the failed packet is written as it came
    out = rdpcap(str(tmp_path / "out.pcap"))
    assert bytes(out[i][UDP].payload) == bytes(data)
    # --strict turns failures into exit status 1
    p = run_cli(
        "decrypt", "-k", d / "keys.log", tmp_path / "tampered.pcap", "--strict", check=False
    )
    assert p.returncode == 1


# --------------------------------------------------------------------------
# v2, Retry, 0-RTT, CID change, split ClientHello, CID lengths, IPv6


def test_features(features_run):
    d, result, report = features_run
    assert report.totals["failed"] == 0 and report.totals["no_keys"] == 0
    # the 0-RTT spec adds the connection that got the ticket, recorded first
    specs = [c.spec for c in result.connections]
    by_client = {c.client: c for c in report.connections}
    assert len(report.connections) == 5
    for rec in result.connections:
        c = by_client["[%s]:%d" % rec.client]
        assert c.suite == rec.spec.suite
        assert c.version == ("v2" if rec.spec.version == V2 else "v1")
        assert c.failed == 0 and c.no_keys == 0
        n = rec.spec.key_updates
        if n:
            assert c.key_updates == {"c2s": n, "s2c": n}
        if rec.spec.retry:
            assert c.other == 1 and c.levels["retry"] == {"unprotected": 1}
        if rec.spec.zero_rtt:
            assert rec.early_data_accepted
            assert c.levels["0rtt"]["ok"] >= 2
    assert any(s.zero_rtt for s in specs)
    out = read_decrypted(d / "out.pcap", result)
    for rec in result.connections:
        for direction in ("c2s", "s2c"):
            streams = reassemble(out[(rec.client[1], direction)])
            sent = {sid: data for (dd, sid), data in rec.sent.items() if dd == direction}
            assert streams == sent, (rec.spec, direction)


def test_features_output_checksums_ipv6(features_run):
    d, result, report = features_run
    for a in rdpcap(str(d / "out.pcap")):
        assert IPv6 in a
        rebuilt = a.__class__(bytes(a))
        # the payload as Raw: with quicoff's scapy QUIC layers bound (after
        # test_scapy_layers), re-serialising a dissected plaintext packet
        # need not give back its bytes, and the checksum would cover others
        payload = bytes(rebuilt[UDP].payload)
        rebuilt[UDP].remove_payload()
        rebuilt[UDP].add_payload(Raw(payload))
        del rebuilt[UDP].chksum
        rebuilt = rebuilt.__class__(bytes(rebuilt))
        assert rebuilt[UDP].chksum == a[UDP].chksum
        assert a[IPv6].plen == len(a[UDP])


def test_pcapng_with_embedded_secrets(features_run, tmp_path):
    require("editcap", EDITCAP)
    """pcapng in, pcapng out; the key log inside the file (Decryption Secrets Block)."""
    d, result, report = features_run
    ng = tmp_path / "in.pcapng"
    subprocess.run(
        [
            EDITCAP,
            "-F",
            "pcapng",
            "--inject-secrets",
            "tls,%s" % (d / "keys.log"),
            str(d / "in.pcap"),
            str(ng),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    p = run_cli("decrypt", ng, "-o", tmp_path / "out.pcapng", "--json")
    summary = json.loads(p.stdout)
    assert summary["totals"] == report.totals
    with open(tmp_path / "out.pcapng", "rb") as f:
        assert f.read(4) == b"\x0a\x0d\x0d\x0a"
    a = rdpcap(str(tmp_path / "out.pcapng"))
    b = rdpcap(str(d / "out.pcap"))
    assert [bytes(x) for x in a] == [bytes(x) for x in b]


# --------------------------------------------------------------------------
# the command line


def test_cli_without_keylog_decrypts_initials_only(suites_run):
    d, result, summary = suites_run
    p = run_cli("decrypt", d / "in.pcap")
    assert "aes-256-gcm" in p.stdout and "chacha20-poly1305" in p.stdout
    s = json.loads(run_cli("decrypt", d / "in.pcap", "--json").stdout)
    for c in s["connections"]:
        assert c["levels"]["initial"] == {"ok": c["ok"]}
        assert c["failed"] == 0 and c["no_keys"] > 0
    assert run_cli("decrypt", d / "in.pcap", "--strict", check=False).returncode == 1


def test_cli_unreadable_input(tmp_path, suites_run):
    d, _, _ = suites_run
    p = run_cli("decrypt", tmp_path / "missing.pcap", check=False)
    assert p.returncode == 2 and "missing.pcap" in p.stderr
    (tmp_path / "junk.pcap").write_bytes(b"this is not a capture file")
    p = run_cli("decrypt", tmp_path / "junk.pcap", check=False)
    assert p.returncode == 2 and "not a pcap" in p.stderr
    p = run_cli("decrypt", "-k", tmp_path / "nokeys.log", d / "in.pcap", check=False)
    assert p.returncode == 2 and "key log" in p.stderr
    p = run_cli(check=False)
    assert p.returncode == 2


def test_late_packet_of_the_old_key_phase(suites_run, tmp_path):
    """A phase-0 packet captured after the first phase-1 one (reordering on the
    path): it still decrypts, with the previous generation's keys."""
    d, result, summary = suites_run
    out = read_decrypted(d / "out.pcap", result)
    port = result.connections[0].client[1]
    ones = [(i, first) for i, level, first, _, _ in out[(port, "c2s")] if level == "1rtt"]
    first_new = next(k for k, (_, first) in enumerate(ones) if first & 0x04)
    late, new = ones[first_new - 1][0], ones[first_new][0]
    pkts = rdpcap(str(d / "in.pcap"))
    order = list(range(len(pkts)))
    order.remove(late)
    order.insert(order.index(new) + 1, late)  # right after the update
    wrpcap(str(tmp_path / "reordered.pcap"), [pkts[i] for i in order])
    report = decrypt_capture(tmp_path / "reordered.pcap", None, d / "keys.log")
    assert report.totals == summary["totals"]
    assert report.connections[0].key_updates == {"c2s": 2, "s2c": 2}


def test_sender_skipping_a_generation(tmp_path):
    """The server takes the client's key update and at once makes its own,
    sending nothing in between: its packets go from generation g to g+2 with
    the same key phase bit.  A receiver that follows the connection as a whole
    copes (aioquic's client does); a direction followed on its own has to try
    generation g+2 when g fails (tshark 4.0 does not)."""
    specs = [
        capture.ConnectionSpec(suite="aes-128-gcm", eager_server_update=True, key_updates=1),
        capture.ConnectionSpec(suite="chacha20-poly1305", eager_server_update=True, key_updates=3),
    ]
    result = capture.record(tmp_path / "in.pcap", tmp_path / "keys.log", specs)
    for c in result.connections:
        assert c.handshake_completed and c.received == c.sent
    records = []
    report = decrypt_capture(
        tmp_path / "in.pcap", tmp_path / "out.pcap", tmp_path / "keys.log", on_packet=records.append
    )
    assert report.totals["failed"] == report.totals["no_keys"] == 0
    # one client update + the server's eager answer: generation 2 in both directions;
    # client, server, client updates + two eager answers: generation 5
    assert [c.key_updates for c in report.connections] == [
        {"c2s": 2, "s2c": 2},
        {"c2s": 5, "s2c": 5},
    ]
    # the server's phase bit never changed on connection 1, yet its keys did
    out = read_decrypted(tmp_path / "out.pcap", result)
    port = result.connections[0].client[1]
    assert {
        (first >> 2) & 1 for _, level, first, _, _ in out[(port, "s2c")] if level == "1rtt"
    } == {0}
    for rec in result.connections:
        for direction in ("c2s", "s2c"):
            streams = reassemble(out[(rec.client[1], direction)])
            assert streams == {sid: data for (dd, sid), data in rec.sent.items() if dd == direction}


def test_zero_length_connection_ids(tmp_path):
    """Zero-length CIDs: short headers carry no DCID, so the engine finds the
    connection by local address.  (aioquic then trips over its own
    NEW_CONNECTION_ID frames and closes; what was sent must still decrypt.)"""
    specs = [
        capture.ConnectionSpec(server_cid_len=0, upload=3000, download=3000),
        capture.ConnectionSpec(client_cid_len=0, upload=3000, download=3000),
    ]
    result = capture.record(tmp_path / "in.pcap", tmp_path / "keys.log", specs)
    records = []
    report = decrypt_capture(
        tmp_path / "in.pcap", None, tmp_path / "keys.log", on_packet=records.append
    )
    assert len(report.connections) == 2
    assert report.totals["failed"] == report.totals["no_keys"] == 0
    assert report.unattributed == 0
    # connection 1: client -> server 1-RTT without a DCID; 2: server -> client
    assert any(r.connection == 1 and r.direction == "c2s" and r.level == "1rtt" for r in records)
    assert any(r.connection == 2 and r.direction == "s2c" and r.level == "1rtt" for r in records)
    assert report.connections[1].odcid == ""
    assert len(result.datagrams) == report.quic_datagrams


def test_other_link_layers_and_pcap_flavours(suites_run, tmp_path):
    """Raw IP, Linux cooked (SLL), BSD loopback, VLAN-tagged Ethernet, nanosecond pcap."""
    from scapy.layers.l2 import CookedLinux, Dot1Q, Ether, Loopback

    d, result, summary = suites_run
    pkts = rdpcap(str(d / "in.pcap"))
    variants = {
        "raw": ([p[IP] for p in pkts], 101),
        "sll": (
            [CookedLinux(pkttype=0, lladdrtype=1, lladdrlen=6, proto=0x0800) / p[IP] for p in pkts],
            113,
        ),
        "null": ([Loopback(type=2) / p[IP] for p in pkts], 0),
        "vlan": (
            [Ether(src=p[Ether].src, dst=p[Ether].dst) / Dot1Q(vlan=7) / p[IP] for p in pkts],
            1,
        ),
    }
    expect = dict(summary["totals"])
    for name, (frames_, linktype) in variants.items():
        for f, p in zip(frames_, pkts):
            f.time = p.time
        path = tmp_path / ("%s.pcap" % name)
        wrpcap(str(path), frames_, linktype=linktype)
        with open(path, "rb") as f:
            head = f.read(24)
        assert linktype in (
            int.from_bytes(head[20:24], "little"),
            int.from_bytes(head[20:24], "big"),
        ), name
        report = decrypt_capture(path, tmp_path / ("%s.out.pcap" % name), d / "keys.log")
        assert report.totals == expect, name
        out = rdpcap(str(tmp_path / ("%s.out.pcap" % name)))
        # the same UDP payloads as the Ethernet run, in the same frames
        ref = rdpcap(str(d / "out.pcap"))
        assert [bytes(a[UDP].payload) for a in out] == [bytes(b[UDP].payload) for b in ref], name
    if EDITCAP:
        ns = tmp_path / "ns.pcap"
        subprocess.run(
            [EDITCAP, "-F", "nsecpcap", str(d / "in.pcap"), str(ns)],
            check=True,
            capture_output=True,
            timeout=60,
        )
        with open(ns, "rb") as f:
            assert f.read(4) in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
        report = decrypt_capture(ns, tmp_path / "ns.out.pcap", d / "keys.log")
        assert report.totals == expect
        a, b = rdpcap(str(tmp_path / "ns.out.pcap")), rdpcap(str(d / "out.pcap"))
        assert [float(x.time) for x in a] == pytest.approx([float(x.time) for x in b])
        assert [bytes(x) for x in a] == [bytes(x) for x in b]
