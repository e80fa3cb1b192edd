# SPDX-License-Identifier: Apache-2.0
"""`quicoff decrypt` against ngtcp2 (issue 8, item 1), with tshark as the oracle.

Debian's ngtcp2 examples (`gtlsclient`, `/usr/sbin/gtlsserver`: ngtcp2 with
GnuTLS) talk on loopback while tcpdump records lo; both write their TLS
secrets (SSLKEYLOGFILE).  ngtcp2 greases the fixed bit (RFC 9287), which is
what broke `quicoff decrypt` on these captures.  Then, per packet:

* every QUIC packet tshark decrypts (a frame number and packet number with
  QUIC frames in tshark's dissection) is one `quicoff decrypt` decrypts;
* for AES-128-CCM, which tshark 4.0 cannot decrypt, every packet with keys
  (Initial, Handshake, 1-RTT) decrypts.

Cases: the four TLS 1.3 suites, a key update, resumption with 0-RTT (two
client runs: session + transport-parameter files), Retry (the server's
address validation), IPv6; and the QUIC v2 draft, which quicoff names as
an unsupported version.  Each run is bounded (a 64 KiB file, timeouts),
and the tools are test dependencies: tools/install_deps.sh installs
ngtcp2-client, ngtcp2-server, tcpdump and tshark; a missing one fails.

tcpdump on lo needs CAP_NET_RAW (the test suite runs as root, like the DPDK
tests): the tests are marked root, and tools/test.sh --fast leaves them out.  The tshark cases run the server with --max-gso-dgrams=1: with UDP
GSO, lo carries the unsegmented super-datagram, which tshark does not split;
test_gso_super_datagrams runs it with GSO and checks quicoff against the
downloaded file instead.
"""

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter

import pytest

from quicoff.decrypt import decrypt_capture

# tcpdump on lo: CAP_NET_RAW (the fast tier leaves these out)
pytestmark = pytest.mark.root

GTLSCLIENT = shutil.which("gtlsclient")
GTLSSERVER = shutil.which("gtlsserver") or (
    "/usr/sbin/gtlsserver" if os.access("/usr/sbin/gtlsserver", os.X_OK) else None
)
TCPDUMP = shutil.which("tcpdump") or shutil.which("tcpdump", path="/usr/sbin:/usr/bin")
TSHARK = shutil.which("tshark")
OPENSSL = shutil.which("openssl")

LONG_TYPES_V1 = ("initial", "0rtt", "handshake", "retry")
FILE_SIZE = 65536
TIMEOUT = 20

#: what each case printed, for the report at the end of the run
FIGURES = {}


def require():
    missing = [
        name
        for name, path in (
            ("gtlsclient (ngtcp2-client)", GTLSCLIENT),
            ("gtlsserver (ngtcp2-server)", GTLSSERVER),
            ("tcpdump", TCPDUMP),
            ("tshark", TSHARK),
            ("openssl", OPENSSL),
        )
        if not path
    ]
    assert not missing, "not found: %s -- run tools/install_deps.sh" % ", ".join(missing)


def wait_bound(port, ipv6, proc, timeout=10.0):
    """Until a UDP socket is bound to the port (/proc/net/udp[6]): a client
    started earlier would lose its first Initial and wait a PTO."""
    path = "/proc/net/udp6" if ipv6 else "/proc/net/udp"
    want = ":%04X" % port
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "gtlsserver exited at once (%s)" % proc.returncode
        with open(path) as f:
            # "sl local_address rem_address ...": local is ADDR:PORT in hex
            if any(line.split()[1].endswith(want) for line in f.readlines()[1:]):
                return
        time.sleep(0.02)
    raise AssertionError("gtlsserver did not bind port %d in %.0f s" % (port, timeout))


def free_port(family):
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require()
    d = tmp_path_factory.mktemp("ngtcp2")
    from quicoff_lab.certs import self_signed

    self_signed(d)
    (d / "htdocs").mkdir()
    (d / "htdocs" / "f").write_bytes(os.urandom(FILE_SIZE))
    return d


class Run:
    """One capture: tcpdump on lo, a gtlsserver, one or more gtlsclient runs."""

    def __init__(
        self, site, name, *, ipv6=False, server_args=(), clients=((),), gso=False, path="f"
    ):
        self.dir = site / name
        self.dir.mkdir()
        self.pcap = self.dir / "cap.pcap"
        self.keylog = self.dir / "keys.log"
        family = socket.AF_INET6 if ipv6 else socket.AF_INET
        addr = "::1" if ipv6 else "127.0.0.1"
        port = free_port(family)
        host = "[%s]" % addr if ipv6 else addr
        procs = []
        try:
            # -Z root: tcpdump would drop to its own user, who cannot write
            # here; --immediate-mode: else packets wait in the ring buffer's
            # block and the SIGINT at the end loses them
            # -B: a 32 MiB kernel buffer, so that a 1 MiB burst on a busy
            # machine is not dropped before tcpdump reads it
            dump = subprocess.Popen(
                [
                    TCPDUMP,
                    "-i",
                    "lo",
                    "-U",
                    "--immediate-mode",
                    "-n",
                    "-B",
                    "32768",
                    "-Z",
                    "root",
                    "-w",
                    str(self.pcap),
                    "udp",
                    "port",
                    str(port),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            procs.append(dump)
            ready, _, _ = select.select([dump.stderr], [], [], 10)
            line = dump.stderr.readline().decode(errors="replace") if ready else "(silent 10 s)"
            assert "listening on" in line, "tcpdump: %s" % line
            env = dict(os.environ, SSLKEYLOGFILE=str(self.dir / "server.keys"))
            server = subprocess.Popen(
                [
                    GTLSSERVER,
                    "-q",
                    "-d",
                    str(site / "htdocs"),
                    *(() if gso else ("--max-gso-dgrams=1",)),
                    *server_args,
                    addr,
                    str(port),
                    str(site / "key.pem"),
                    str(site / "cert.pem"),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(server)
            wait_bound(port, ipv6, server)
            env = dict(os.environ, SSLKEYLOGFILE=str(self.dir / "client.keys"))
            self.client_rc = []
            for args in clients:
                p = subprocess.run(
                    [
                        GTLSCLIENT,
                        "-q",
                        "--exit-on-all-streams-close",
                        "--timeout=5s",
                        "--download",
                        str(self.dir),
                        *args,
                        addr,
                        str(port),
                        "https://%s:%d/%s" % (host, port, path),
                    ],
                    env=env,
                    cwd=str(self.dir),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    timeout=TIMEOUT,
                )
                self.client_rc.append(p.returncode)
                assert p.returncode == 0, "gtlsclient %s: exit %d %s" % (
                    args,
                    p.returncode,
                    p.stderr[-2000:],
                )
                got = (self.dir / path).read_bytes()
                assert got == (site / "htdocs" / path).read_bytes(), "download differs"
                (self.dir / path).unlink()
            time.sleep(0.3)  # the server's last packets
            # and tcpdump's: SIGINT ends it without reading what the kernel
            # still holds for it (a busy machine, a 1 MiB burst): wait until
            # the file stops growing (bounded)
            deadline, last = time.monotonic() + 5, -1
            while time.monotonic() < deadline and self.pcap.stat().st_size != last:
                last = self.pcap.stat().st_size
                time.sleep(0.2)
        finally:
            for p in reversed(procs):
                if p.poll() is None:
                    p.send_signal(signal.SIGINT if p is procs[0] else signal.SIGTERM)
                    try:
                        p.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
        # "N packets dropped by kernel": a capture that lost packets
        self.tcpdump_says = dump.stderr.read().decode(errors="replace")
        m = re.search(r"(\d+) packets? dropped by kernel", self.tcpdump_says)
        self.dropped = int(m.group(1)) if m else 0
        keys = b"".join(
            (self.dir / f).read_bytes()
            for f in ("client.keys", "server.keys")
            if (self.dir / f).exists()
        )
        self.keylog.write_bytes(keys)

    # -- the oracle -----------------------------------------------------------
    def tshark_packets(self):
        """{(frame number, level, packet number): decrypted?} as tshark sees them
        (a level, as packet numbers repeat across the coalesced packets' spaces)."""
        # --no-duplicate-keys: tshark's JSON repeats the "quic" key for the
        # coalesced packets of a datagram; merged, they come as a list
        p = subprocess.run(
            [
                TSHARK,
                "-r",
                str(self.pcap),
                "-o",
                "tls.keylog_file:%s" % self.keylog,
                "-T",
                "json",
                "-J",
                "quic",
                "--no-duplicate-keys",
            ],
            capture_output=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr.decode(errors="replace")
        out = {}
        # one entry per frame, in order: frame numbers from 1 (quicoff's indexes from 0)
        for number, frame in enumerate(json.loads(p.stdout or b"[]"), 1):
            quic = frame["_source"]["layers"].get("quic")
            if quic is None:
                continue
            for pkt in quic if isinstance(quic, list) else [quic]:
                pn = _find(pkt, "quic.packet_number")
                if pn is None:
                    continue  # padding, VN, Retry
                ltype = _find(pkt, "quic.long.packet_type")
                level = "1rtt" if ltype is None else LONG_TYPES_V1[int(ltype)]
                out[(number, level, int(pn))] = _find(pkt, "quic.frame") is not None
        return out

    def quicoff_packets(self):
        recs = []
        report = decrypt_capture(self.pcap, None, self.keylog, on_packet=recs.append)
        return report, recs


def capture(site, name, **kw):
    """A Run whose capture is complete: tcpdump on a loaded machine can drop
    packets ("N packets dropped by kernel"), and a capture with holes is no
    fair input for any decrypter. Such a run is made again (twice at most);
    a third incomplete one fails the test with tcpdump's own words."""
    for attempt in range(3):
        run = Run(site, name if attempt == 0 else "%s-again%d" % (name, attempt), **kw)
        if run.dropped == 0:
            return run
    raise AssertionError("tcpdump dropped packets in 3 captures: %s" % run.tcpdump_says)


def _find(tree, key):
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k == key:
                return v
            found = _find(v, key)
            if found is not None:
                return found
    elif isinstance(tree, list):
        for v in tree:
            found = _find(v, key)
            if found is not None:
                return found
    return None


def compare(run, name, *, tshark_can=True, levels_all=False):
    """Checks quicoff against tshark; returns the figures."""
    report, recs = run.quicoff_packets()
    ok = {(r.frame + 1, r.level, r.pn) for r in recs if r.category == "ok"}
    assert len(ok) == sum(r.category == "ok" for r in recs)
    by_level = Counter((r.level, r.status) for r in recs)
    t = run.tshark_packets()
    t_ok = {k for k, v in t.items() if v}
    # greased: the fixed bit (0x40) of the decrypted first byte is 0 (RFC 9287)
    greased = Counter(
        r.direction
        for r in recs
        if r.category == "ok" and r.plaintext and not r.plaintext[0] & 0x40
    )
    figures = dict(
        quicoff_ok=len(ok),
        quicoff_packets=len(recs),
        tshark_ok=len(t_ok),
        tshark_packets=len(t),
        suite=[c.suite for c in report.connections],
        levels=dict(by_level),
        greased=dict(greased),
    )
    FIGURES[name] = figures
    missing = sorted(t_ok - ok)
    assert not missing, "%s: tshark decrypts %d packets quicoff does not (frame, pn): %s\n%s" % (
        name,
        len(missing),
        missing[:20],
        report.format(),
    )
    if tshark_can:
        assert t_ok, "%s: tshark decrypted nothing (key log?)" % name
    if levels_all:
        bad = [
            (r.frame + 1, r.level, r.pn, r.status)
            for r in recs
            if r.level in ("initial", "handshake", "0rtt", "1rtt") and r.category != "ok"
        ]
        assert not bad, "%s: not decrypted: %s\n%s" % (name, bad[:20], report.format())
    assert report.connections, report.format()
    return report, recs, figures


SUITES = {
    "aes-128-gcm": "AES-128-GCM",
    "aes-256-gcm": "AES-256-GCM",
    "chacha20-poly1305": "CHACHA20-POLY1305",
    "aes-128-ccm": "AES-128-CCM",
}


def ciphers(gnutls_name):
    return "--ciphers=NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+%s" % gnutls_name


@pytest.mark.parametrize("suite", list(SUITES))
def test_suite(site, suite):
    run = capture(site, "suite-" + suite, clients=((ciphers(SUITES[suite]),),))
    ccm = suite == "aes-128-ccm"
    report, recs, _ = compare(run, suite, tshark_can=not ccm, levels_all=ccm)
    assert [c.suite for c in report.connections] == [suite]
    # ngtcp2 greases the fixed bit: the case this test exists for
    assert report.totals["ok"] > 10


def test_key_update(site):
    run = capture(site, "key-update", clients=(("--key-update=1ms", "--delay-stream=50ms"),))
    report, recs, _ = compare(run, "key-update")
    c = report.connections[0]
    assert c.key_updates["c2s"] >= 1 and c.key_updates["s2c"] >= 1, report.format()
    assert {r.key_phase for r in recs if r.level == "1rtt" and r.category == "ok"} == {0, 1}


def test_resumption_0rtt(site):
    d = site / "resume-files"
    d.mkdir()
    files = ("--session-file=%s" % (d / "session"), "--tp-file=%s" % (d / "tp"))
    run = capture(site, "resumption-0rtt", clients=(files, files))
    report, recs, _ = compare(run, "resumption-0rtt")
    assert len(report.connections) == 2, report.format()
    zero = [r for r in recs if r.level == "0rtt"]
    assert zero and all(r.category == "ok" for r in zero), zero


def test_retry(site):
    run = capture(site, "retry", server_args=("-V",))
    report, recs, _ = compare(run, "retry")
    assert any(r.level == "retry" for r in recs), "no Retry in the capture"


def test_ipv6(site):
    run = capture(site, "ipv6", ipv6=True)
    report, recs, _ = compare(run, "ipv6")
    assert report.connections[0].client.startswith("[::1]")


def test_unsupported_version_named(site):
    """ngtcp2 0.12's QUIC v2 draft (0x709a50c4), which quicoff has no salts
    for: every datagram is counted under its version in the summary (the old
    code called them "not QUIC" and said nothing)."""
    run = capture(site, "v2draft", clients=(("-v", "v2draft"),))
    report, recs = run.quicoff_packets()
    frames = report.frames
    assert frames > 10 and not report.connections
    # an unknown version's long header has no Length we can trust: one per datagram
    assert report.unsupported_versions == {0x709A50C4: frames}, report.format()
    assert "unsupported version 0x709a50c4: %d packets" % frames in report.format()
    FIGURES["v2draft"] = dict(
        quicoff_ok=0,
        quicoff_packets=len(recs),
        tshark_ok=0,
        tshark_packets=len(run.tshark_packets()),
        suite=[],
        levels={},
        greased={},
    )


def _h3_body(stream: bytes) -> bytes:
    """The DATA frames' payload of an HTTP/3 response stream (RFC 9114 §7.1:
    type, length, payload; HEADERS and any other frame skipped)."""
    from quicoff.frames import decode_varint

    body, pos = [], 0
    while pos < len(stream):
        ftype, pos = decode_varint(stream, pos)
        flen, pos = decode_varint(stream, pos)
        if ftype == 0x00:
            body.append(stream[pos : pos + flen])
        pos += flen
    return b"".join(body)


@pytest.mark.parametrize("case", ["ipv4", "ipv6", "key-update"])
def test_gso_super_datagrams(site, tmp_path, case):
    """ngtcp2's server with UDP GSO on (its default): tcpdump on lo records
    the unsegmented buffers, several 1-RTT packets behind one UDP header.
    tshark cannot decrypt them, so it is no oracle here; the downloaded
    file is: its bytes are random, and the response stream reassembled from
    the packets quicoff decrypted must carry all of it.  Every 1-RTT packet
    decrypts, and the output holds one frame per segment.  (Before the
    split, about 45 buffers of a 1 MiB download failed to authenticate.)
    Over IPv6, and with a key update (then GSO buffers of both phases)."""
    from quicoff import frames as qframes
    from quicoff.pcap_io import CaptureReader, parse_udp

    body = os.urandom(1 << 20)
    (site / "htdocs" / "big").write_bytes(body)
    clients = (("--key-update=1ms",),) if case == "key-update" else ((),)
    run = capture(site, "gso-" + case, gso=True, path="big", ipv6=case == "ipv6", clients=clients)
    recs = []
    out = tmp_path / "plain.pcap"
    report = decrypt_capture(run.pcap, out, run.keylog, on_packet=recs.append)
    with open(run.pcap, "rb") as f:
        payloads = [parse_udp(it.data, it.linktype).payload for it in CaptureReader(f)]
    big = [p for p in payloads if len(p) > 1500]
    assert big, "no GSO buffer in the capture (server did not batch?)"
    bad = [(r.frame + 1, r.level, r.pn, r.status) for r in recs if r.category != "ok"]
    assert not bad, "%d not decrypted: %s\n%s" % (len(bad), bad[:10], report.format())
    assert report.gso_datagrams == len(big), report.format()
    # the response: stream 0, server to client
    stream = qframes.Reassembler()
    for r in recs:
        if r.direction == "s2c" and r.level == "1rtt":
            for fr in qframes.iter_frames(r.plaintext[r.header_len :]):
                if isinstance(fr, qframes.Stream) and fr.stream_id == 0:
                    stream.add(fr.offset, fr.data, fr.fin)
    assert stream.complete and not stream.conflict, (stream.ranges, run.tcpdump_says)
    assert _h3_body(stream.contiguous()) == body
    # the output: one frame per segment; no segment over the largest plain datagram
    with open(out, "rb") as f:
        written = [parse_udp(it.data, it.linktype).payload for it in CaptureReader(f)]
    assert len(written) == len(payloads) - report.gso_datagrams + report.gso_segments
    assert max(len(p) for p in written) <= 1500
    assert (
        "GSO: %d datagrams split into %d packets" % (report.gso_datagrams, report.gso_segments)
        in report.format()
    )
    if case == "key-update":
        c = report.connections[0]
        assert c.key_updates["c2s"] >= 1 and c.key_updates["s2c"] >= 1, report.format()
        assert {
            r.key_phase
            for r in recs
            if r.level == "1rtt"
            and r.frame + 1 in {i + 1 for i, p in enumerate(payloads) if len(p) > 1500}
        } == {0, 1}
    FIGURES["gso-" + case] = dict(
        quicoff_ok=report.totals["ok"],
        quicoff_packets=len(recs),
        tshark_ok=0,
        tshark_packets=0,
        suite=[],
        levels={},
        greased={},
        gso="GSO %d -> %d" % (report.gso_datagrams, report.gso_segments),
    )


def test_zz_greased_packets_were_decrypted(capsys):
    """The runs above exercised RFC 9287 greasing: ngtcp2 decides per
    endpoint and connection whether to clear the fixed bit, so any one case
    may not, but all of them together do (both directions).  Prints the
    per-case figures (with -s)."""
    assert FIGURES, "run the whole module"
    with capsys.disabled():
        for name, f in FIGURES.items():
            print(
                "\n%-18s tshark %4d/%-4d quicoff %4d/%-4d greased c>s %-3d s>c %-3d %s %s"
                % (
                    name,
                    f["tshark_ok"],
                    f["tshark_packets"],
                    f["quicoff_ok"],
                    f["quicoff_packets"],
                    f["greased"].get("c2s", 0),
                    f["greased"].get("s2c", 0),
                    f["suite"],
                    f.get("gso", ""),
                )
            )
    total = Counter()
    for f in FIGURES.values():
        total.update(f["greased"])
    assert total["c2s"] and total["s2c"], total
