# SPDX-License-Identifier: Apache-2.0
"""aioquic_server --offload dpdk through a real quicoff-dpdk (root, veth pairs,
network namespaces; run under ``flock /tmp/quicoff-net.lock``):

    [ns server] qaqh1 ==veth== qaqh0 <-> [host port | quicoff-dpdk | net port] <-> qaqn0 ==veth== qaqn1 [ns peer]

The server's UDP socket and its host port (OffloadPort) share qaqh1: the
handshake leaves as ordinary UDP through quicoff-dpdk's pass-through; then
the 1-RTT entries are ADDed over the host port, aioquic's plaintext 1-RTT
packets go out as DATA_TO_OFFLOAD and the peer's come back as DATA_TO_HOST.
The UNMODIFIED Debian gtlsclient in the peer namespace downloads 1 MB, with
the server's key updates (UPDATE; the client follows each, so the offload sees
the peer's new phase too), SHA-256 checked; aioquic makes no 1-RTT AEAD call, and the offload's counts of the
entries (QUERY, before REMOVE) equal aioquic's 1-RTT packet counts.

And the offload lost in the middle of a 20 MB download (lab/quicoff_lab/
offload_link.py's bed, the one of tests/dpdk/test_ngtcp2_offload.py, which can
kill and restart quicoff-dpdk): stopped (SIGSTOP, then SIGCONT) or killed
(SIGKILL, then a fresh one that knows no entry). The server notices (silence,
then an unanswered QUERY), goes on with aioquic's own 1-RTT keys, the
download completes (SHA-256), and a capture on the peer's side decrypts in
tshark with the key log, every 1-RTT packet, and holds none of the file.
These tests come first in the module: the module's other bed (a second
quicoff-dpdk polling the same core) is not up yet while they run.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest

from harness import App
from quicoff_lab import links
from quicoff_lab import offload_link as fault_bed
from quicoff_lab.offload_link import OffloadLink
from quicoff_lab.offload_link import in_ns as _ns

pytest.importorskip("aioquic", reason="SKIPPED LOUDLY: aioquic is not installed (the test extra)")

GTLSCLIENT = shutil.which("gtlsclient")
NS_SERVER, NS_PEER = "qaq_server", "qaq_peer"
SERVER_IP, PEER_IP = "10.77.0.1", "10.77.0.2"
PORT = 4433
SIZE = 1 << 20


TSHARK = shutil.which("tshark")
TCPDUMP = shutil.which("tcpdump")
BIG = 20 << 20


def _certs(d):
    from quicoff_lab.certs import self_signed

    self_signed(d)  # fmt: skip


@pytest.fixture(scope="module")
def big_site(tmp_path_factory):
    for what, path in (("gtlsclient", GTLSCLIENT), ("tshark", TSHARK), ("tcpdump", TCPDUMP)):
        assert path, "%s not found: bash tools/install_deps.sh installs it" % what
    d = tmp_path_factory.mktemp("aioquic_fault")
    _certs(d)
    (d / "htdocs").mkdir()
    (d / "htdocs" / "20m").write_bytes(os.urandom(BIG))
    return d


@pytest.mark.parametrize("fault", ["sigstop", "sigkill"])
def test_offload_lost_mid_download_falls_back_to_aioquics_keys(big_site, tmp_path, fault):
    """SIGSTOP (then SIGCONT) or SIGKILL (then a fresh quicoff-dpdk) once
    4 MB have arrived: after --offload-silence-ms of silence the server's
    QUERY of the RX entry goes unanswered, the connection goes on with
    aioquic's own 1-RTT keys to the end, and no plaintext reaches the wire."""
    # aioquic's CIDs are 8 bytes (the bed's default is ngtcp2's 16; the last option wins)
    bed = OffloadLink(("--local-cid-len", "8"))
    stats, keylog, pcap, out = (tmp_path / n for n in ("stats.json", "keys.log", "wire.pcap", "dl"))
    out.mkdir()
    procs = []
    try:
        tcpdump = subprocess.Popen(
            _ns(fault_bed.NS_PEER, TCPDUMP, "-U", "-Z", "root", "-i", fault_bed.PEER_IF, "-s", "0", "-w",
                str(pcap), "udp"),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        procs.append(tcpdump)
        ready, _, _ = select.select([tcpdump.stderr], [], [], 10)
        assert ready and b"listening" in tcpdump.stderr.readline(), "tcpdump did not start"
        server = subprocess.Popen(
            _ns(fault_bed.NS_HOST, sys.executable, "-m", "quicoff.aioquic_server",
                "-d", str(big_site / "htdocs"), "--offload", "dpdk", "--host-if", fault_bed.HOST_IF,
                "--once", "--stats", str(stats), "--keylog", str(keylog),
                "--offload-silence-ms", "200", fault_bed.HOST_IP, str(PORT),
                str(big_site / "key.pem"), str(big_site / "cert.pem")),
            stderr=subprocess.PIPE,
        )  # fmt: skip
        procs.append(server)
        ready, _, _ = select.select([server.stderr], [], [], 30)
        line = server.stderr.readline().decode(errors="replace") if ready else "(silent 30 s)"
        assert "listening" in line and "offload dpdk" in line, line
        os.set_blocking(server.stderr.fileno(), False)
        client = subprocess.Popen(
            _ns(fault_bed.NS_PEER, GTLSCLIENT, "-q", "--exit-on-all-streams-close", "--download",
                str(out), fault_bed.HOST_IP, str(PORT), "https://%s:%d/20m" % (fault_bed.HOST_IP, PORT)),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        procs.append(client)
        got = out / "20m"
        end = time.monotonic() + 90
        while (not got.exists() or got.stat().st_size < 4 << 20) and time.monotonic() < end:
            time.sleep(0.02)
        assert got.exists() and got.stat().st_size >= 4 << 20, "the download did not start"
        assert got.stat().st_size < BIG, "the download ended before the fault"
        pid = bed.offload.pid
        if fault == "sigstop":
            os.kill(pid, signal.SIGSTOP)
        else:
            bed.stop_offload(signal.SIGKILL)
        err = b""
        try:
            end = time.monotonic() + 20
            while b"offload lost" not in err and time.monotonic() < end:
                err += server.stderr.read() or b""
                time.sleep(0.05)
            assert b"offload lost" in err and b"stopped answering" in err, err
        finally:
            if fault == "sigstop":
                os.kill(pid, signal.SIGCONT)
            else:
                bed.start_offload()
        cout, _ = client.communicate(timeout=180)
        assert client.returncode == 0, cout[-3000:]
        server.wait(timeout=30)
        os.set_blocking(server.stderr.fileno(), True)
        err += server.stderr.read()
        assert server.returncode == 0, err.decode(errors="replace")
    finally:
        for p in procs[:0:-1]:
            if p.poll() is None:
                p.terminate()
                p.wait(10)
        time.sleep(0.3)  # the last datagrams reach the capture
        procs[0].send_signal(signal.SIGINT)
        procs[0].wait(10)
        bed.close()
    want = (big_site / "htdocs" / "20m").read_bytes()
    st = json.loads(stats.read_text())
    assert hashlib.sha256(got.read_bytes()).digest() == hashlib.sha256(want).digest(), (
        "SHA-256 differs (%d bytes received): %s" % (got.stat().st_size, st)
    )
    assert st["offload_lost"] == 1 and st["fallbacks"] == 1, st
    assert st["host_1rtt_aead_calls"] > 0, st  # aioquic's own keys after the fallback
    assert st["offload_tx_failures"] == 0, st
    check_wire(pcap, keylog, want, 14000)


def _opens(packet: bytes, dcid: bytes, secret: bytes) -> bool:
    """The server's 1-RTT packet opens with its generation-0 secret (any
    suite): it is protected, not null-sealed."""
    import quicoff

    for suite in ("aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"):
        with quicoff.Engine(local_cid_len=len(dcid)) as engine:
            try:
                engine.add_connection("rx", suite, dcid, secret=secret)
            except Exception:  # a secret of another length: not this suite
                continue
            (r,) = engine.unprotect_burst([packet])
            if r.ok:
                return True
    return False


def check_wire(pcap, keylog, body, min_server_1rtt):
    """Standard QUIC on the network side: tshark decrypts every 1-RTT packet
    with the key log, and none of the file's 64-byte pieces is on it. The
    server's first 1-RTT packet can reach the wire before the Handshake
    packet aioquic wrote in front of it (the offload sends it as its own
    datagram, the Handshake part goes by UDP through the pass-through):
    tshark, which has not seen the handshake end yet, cannot open it; such
    packets are opened here with the key log's secret instead."""
    p = subprocess.run(
        [TSHARK, "-r", str(pcap), "-o", "tls.keylog_file:%s" % keylog,
         "-d", "udp.port==%d,quic" % PORT, "-Y", "quic.short", "-T", "fields",
         "-E", "occurrence=a", "-E", "separator=/t", "-e", "udp.srcport", "-e", "quic.frame_type",
         "-e", "quic.dcid", "-e", "udp.payload"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [ln.split("\t") + ["", "", "", ""] for ln in p.stdout.splitlines()]
    from_server = [r for r in rows if r[0] == str(PORT)]
    assert len(from_server) >= min_server_1rtt, "%d 1-RTT packets from the server" % len(
        from_server
    )
    secrets = [
        bytes.fromhex(ln.split()[2])
        for ln in keylog.read_text().splitlines()
        if ln.startswith("SERVER_TRAFFIC_SECRET_0 ")
    ]
    assert len(secrets) == 1, "one connection's secrets expected in the key log"
    undecrypted = [r for r in rows if not r[1]]
    for r in undecrypted:
        packet = bytes.fromhex(r[3].replace(":", ""))
        dcid = bytes.fromhex(r[2].replace(":", ""))
        assert r[0] == str(PORT) and _opens(packet, dcid, secrets[0]), (
            "tshark cannot decrypt %d of %d 1-RTT packets, and this one does not open "
            "with the server's key either: %s" % (len(undecrypted), len(rows), r[:3])
        )
    assert len(undecrypted) <= 2, "%d 1-RTT packets tshark cannot decrypt" % len(undecrypted)
    wire = pcap.read_bytes()
    leaked = [off for off in range(0, len(body), 64 * 1024) if body[off : off + 64] in wire]
    assert not leaked, "file bytes in plaintext on the wire at offsets %s" % leaked[:5]


def _mac(ns: str, ifc: str) -> str:
    out = links.ip("-j", "link", "show", ifc, ns=ns).stdout
    return json.loads(out)[0]["address"]


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    assert GTLSCLIENT, "gtlsclient not found: apt-get install ngtcp2-client"
    for ns in (NS_SERVER, NS_PEER):
        links.ip("netns", "del", ns, check=False)
        links.ip("netns", "add", ns)
    app = App("qaq", ["--workers", "1"], lcores="0")
    try:
        for ifc, ns, addr in (
            (app.host.outer, NS_SERVER, SERVER_IP),
            (app.net.outer, NS_PEER, PEER_IP),
        ):
            links.ip("link", "set", ifc, "netns", ns)
            links.ip("addr", "add", addr + "/24", "dev", ifc, ns=ns)
            links.ip("link", "set", ifc, "up", ns=ns)
            # the kernel's UDP checksums complete in the frame: quicoff-dpdk
            # forwards what af_packet hands it, and the peer's kernel checks them
            links.ethtool_off(ifc, ("tx",), ns=ns)
        # the veths have ARP off (harness): static neighbours, as a NIC's host would learn them
        links.ip(
            "neigh",
            "replace",
            PEER_IP,
            "lladdr",
            _mac(NS_PEER, app.net.outer),
            "dev",
            app.host.outer,
            "nud",
            "permanent",
            ns=NS_SERVER,
        )
        links.ip(
            "neigh",
            "replace",
            SERVER_IP,
            "lladdr",
            _mac(NS_SERVER, app.host.outer),
            "dev",
            app.net.outer,
            "nud",
            "permanent",
            ns=NS_PEER,
        )
        d = tmp_path_factory.mktemp("aioquic_dpdk")
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                str(d / "key.pem"),
                "-out",
                str(d / "cert.pem"),
                "-days",
                "2",
                "-subj",
                "/CN=localhost",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        (d / "htdocs").mkdir()
        (d / "htdocs" / "1m").write_bytes(os.urandom(SIZE))
        yield app, d
    finally:
        rc = app.stop()
        for ns in (NS_SERVER, NS_PEER):
            links.ip("netns", "del", ns, check=False)
        assert rc == 0, app.output[-3000:]


def test_gtlsclient_downloads_through_quicoff_dpdk(bed, tmp_path):
    app, site = bed
    stats, keylog, out = tmp_path / "stats.json", tmp_path / "keys.log", tmp_path / "dl"
    out.mkdir()
    server = subprocess.Popen(
        links.in_netns(
            NS_SERVER,
            [
                sys.executable,
                "-m",
                "quicoff.aioquic_server",
                "-d",
                str(site / "htdocs"),
                "--offload",
                "dpdk",
                "--host-if",
                app.host.outer,
                "--once",
                "--stats",
                str(stats),
                "--keylog",
                str(keylog),
                "--key-update-after",
                str(256 * 1024),
                SERVER_IP,
                str(PORT),
                str(site / "key.pem"),
                str(site / "cert.pem"),
            ],
        ),
        stderr=subprocess.PIPE,
    )
    try:
        ready, _, _ = select.select([server.stderr], [], [], 30)
        line = server.stderr.readline().decode(errors="replace") if ready else "(silent 30 s)"
        assert "listening" in line, "aioquic_server: %s" % line
        client = subprocess.run(
            links.in_netns(
                NS_PEER,
                [
                    GTLSCLIENT,
                    "-q",
                    "--exit-on-all-streams-close",
                    "--download",
                    str(out),
                    SERVER_IP,
                    str(PORT),
                    "https://%s:%d/1m" % (SERVER_IP, PORT),
                ],
            ),
            capture_output=True,
            timeout=120,
        )
        assert client.returncode == 0, client.stdout[-2000:] + client.stderr[-2000:]
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=10)
    err = server.stderr.read().decode(errors="replace")
    assert server.returncode == 0, err + app.output[-2000:]
    got = (out / "1m").read_bytes() if (out / "1m").exists() else b""
    want = (site / "htdocs" / "1m").read_bytes()
    st = json.loads(stats.read_text())
    assert hashlib.sha256(got).digest() == hashlib.sha256(want).digest(), (
        "SHA-256 differs (%d bytes received): %s" % (len(got), st)
    )
    sent, received = st["stack_1rtt_packets_sent"], st["stack_1rtt_packets_received"]
    assert st["fallback_connections"] == 0, st
    assert sent > 700 and received > 0, st
    assert st["host_1rtt_aead_calls"] == 0, st
    # the offload's own counts of the entries (QUERY before REMOVE)
    assert st["offload_tx_packets"] == sent, st
    assert st["offload_rx_packets"] == received + st["offload_rx_unread"], st
    assert st["offload_tx_failures"] == 0 and st["offload_rx_failures"] == 0, st
    # (not also gtlsclient's --key-update: when its timer fires while the
    # server's update is in progress, ngtcp2 refuses it, ERR_INVALID_STATE,
    # and gtlsclient then closes the connection with NO_ERROR mid-transfer)
    assert st["key_updates_s2c"] >= 1 and st["key_updates_c2s"] >= 1, st
