# SPDX-License-Identifier: Apache-2.0
"""qo-h3-server --offload dpdk: ngtcp2's 1-RTT protection in the real
quicoff-dpdk, served to Debian's UNMODIFIED gtlsclient (docs/ngtcp2.md).

    namespace qngH                         root                         namespace qngP
    qo-h3-server  [qngh1] ==veth== [qngh0 | quicoff-dpdk | qngn0] ==veth== [qngn1]  gtlsclient, tcpdump
    10.99.0.1                      host port          net port                      10.99.0.2

(lab/quicoff_lab/offload_link.py). The handshake crosses the offload's pass-through as ordinary UDP (and ARP);
1-RTT packets go host -> offload as DATA_TRAIN (runs of packets) or
DATA_TO_OFFLOAD and offload -> host as DATA_TO_HOST. The host link is jumbo
(MTU 65535: trains) but in one test, which keeps 1,500 bytes (one packet per
frame). The capture is taken on the network side (qngn1), where the
peer sees the wire.

* 1 MB with a server key update (on both host links) and 20 MB with a client
  key update, SHA-256 equal; the stack made no 1-RTT AEAD call; the
  offload's packet counts (QUERY before REMOVE) equal ngtcp2's 1-RTT
  packets; one DATA_TO_OFFLOAD frame per 1-RTT packet on the 1,500-byte
  link, fewer frames than packets in trains (frames_per_packet < 1; < 0.5
  for the 20 MB download); tshark decrypts every 1-RTT packet of the capture
  with the server's key log and none of the file's bytes are on it;
* a connection the offload refuses (a table of one entry: the RX ADD is
  answered table_full) downloads on ngtcp2's own crypto;
* quicoff-dpdk stopped (SIGSTOP) or killed (SIGKILL, then a fresh one on the
  same links) in the middle of a 20 MB download: the server notices, falls
  back to ngtcp2's keys, the download completes, and the capture holds no
  plaintext 1-RTT packet (every one decrypts, and no file bytes);
* the other way round, qo-h3-client --offload dpdk on the offloaded host
  downloads 20 MB from qo-h3-server on the peer (ngtcp2 to ngtcp2).

The interface and namespace names are fixed: run it under
`flock /tmp/quicoff-net.lock` when others may run network tests too.
"""

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from quicoff_lab.offload_link import (
    HOST_IF,
    HOST_IP,
    NS_HOST,
    NS_PEER,
    PEER_IF,
    PEER_IP,
    OffloadLink,
)
from quicoff_lab.offload_link import in_ns as _ns

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("QUICOFF_BUILD_DIR", ROOT / "build"))
SERVER = BUILD / "integrations" / "ngtcp2" / "qo-h3-server"
GTLSCLIENT = shutil.which("gtlsclient")
TSHARK = shutil.which("tshark")
TCPDUMP = shutil.which("tcpdump")
OPENSSL = shutil.which("openssl")
PORT = 4433
SIZES = {"1m": 1 << 20, "20m": 20 << 20}
TIMEOUT = 180
# the host link of most tests: jumbo, so the server's packets leave in
# trains (DATA_TRAIN); one test keeps a 1,500-byte link (None)
JUMBO = 65535


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    for what, path in (("gtlsclient", GTLSCLIENT), ("tshark", TSHARK), ("tcpdump", TCPDUMP)):
        assert path, "%s not found: bash tools/install_deps.sh installs it" % what
    if not SERVER.exists():
        if (BUILD / "build.ninja").exists():
            subprocess.run(["ninja", "-C", str(BUILD), "integrations/ngtcp2/qo-h3-server"],
                           check=True, capture_output=True)  # fmt: skip
        assert SERVER.exists(), (
            "%s missing: it is built when libngtcp2-dev, libngtcp2-crypto-gnutls-dev, "
            "libnghttp3-dev and libgnutls28-dev are installed" % SERVER
        )
    d = tmp_path_factory.mktemp("h3dpdk")
    from quicoff_lab.certs import self_signed

    self_signed(d)  # fmt: skip
    (d / "htdocs").mkdir()
    for name, size in SIZES.items():
        (d / "htdocs" / name).write_bytes(os.urandom(size))
    return d


@pytest.fixture
def bed_factory():
    beds = []

    def make(offload_args=(), host_mtu=JUMBO):
        b = OffloadLink(offload_args, host_mtu=host_mtu)
        beds.append(b)
        return b

    yield make
    for b in beds:
        b.close()


class Download:
    """qo-h3-server --offload dpdk --once in qngH, tcpdump and gtlsclient in
    qngP; wait() ends them and returns the server's stats."""

    def __init__(self, site, tmp, name, server_args=(), client_args=()):
        self.site, self.tmp, self.name = site, tmp, name
        self.stats = tmp / "stats.json"
        self.keylog = tmp / "keys.log"
        self.pcap = tmp / "wire.pcap"
        self.out = tmp / "dl"
        self.out.mkdir()
        self.tcpdump = subprocess.Popen(
            _ns(NS_PEER, TCPDUMP, "-U", "-Z", "root", "-i", PEER_IF, "-s", "0", "-w",
                str(self.pcap), "udp"),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        # tcpdump says "listening on" once it captures
        ready, _, _ = select.select([self.tcpdump.stderr], [], [], 10)
        assert ready and b"listening" in self.tcpdump.stderr.readline(), "tcpdump did not start"
        self.server = subprocess.Popen(
            _ns(NS_HOST, str(SERVER), "-d", str(site / "htdocs"), "--offload", "dpdk",
                "--host-if", HOST_IF, "--once", "--stats", str(self.stats),
                "--keylog", str(self.keylog), *server_args, HOST_IP, str(PORT),
                str(site / "key.pem"), str(site / "cert.pem")),
            stderr=subprocess.PIPE,
        )  # fmt: skip
        ready, _, _ = select.select([self.server.stderr], [], [], 10)
        line = self.server.stderr.readline().decode(errors="replace") if ready else "(silent)"
        assert "listening" in line and "offload dpdk" in line, line
        os.set_blocking(self.server.stderr.fileno(), False)
        self.err = b""
        self.client = subprocess.Popen(
            _ns(NS_PEER, GTLSCLIENT, "-q", "--exit-on-all-streams-close", "--download",
                str(self.out), *client_args, HOST_IP, str(PORT),
                "https://%s:%d/%s" % (HOST_IP, PORT, name)),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def server_said(self, text, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            chunk = self.server.stderr.read()
            if chunk:
                self.err += chunk
            if text.encode() in self.err:
                return True
            time.sleep(0.05)
        return False

    def downloaded(self):
        p = self.out / self.name
        return p.stat().st_size if p.exists() else 0

    def wait(self):
        try:
            out, _ = self.client.communicate(timeout=TIMEOUT)
            assert self.client.returncode == 0, out[-3000:]
            self.server.wait(timeout=30)
        finally:
            for p in (self.client, self.server):
                if p.poll() is None:
                    p.terminate()
                    p.wait(10)
            time.sleep(0.3)  # the last datagrams reach the capture
            self.tcpdump.send_signal(signal.SIGINT)
            self.tcpdump.wait(10)
        os.set_blocking(self.server.stderr.fileno(), True)
        self.err += self.server.stderr.read()
        assert self.server.returncode == 0, self.err.decode(errors="replace")
        got = (self.out / self.name).read_bytes()
        want = (self.site / "htdocs" / self.name).read_bytes()
        assert hashlib.sha256(got).digest() == hashlib.sha256(want).digest(), "SHA-256 differs"
        return json.loads(self.stats.read_text())


def check_wire(dl, min_server_1rtt):
    """Standard QUIC on the network side: tshark decrypts every 1-RTT packet
    with the server's key log (a plaintext one would not decrypt), and none
    of the file's 64-byte pieces is on it."""
    p = subprocess.run(
        [TSHARK, "-r", str(dl.pcap), "-o", "tls.keylog_file:%s" % dl.keylog,
         "-d", "udp.port==%d,quic" % PORT, "-Y", "quic.short", "-T", "fields",
         "-E", "occurrence=a", "-e", "udp.srcport", "-e", "quic.frame_type"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    from_server = [ln for ln in lines if ln.split("\t")[0] == str(PORT)]
    undecrypted = [ln for ln in lines if ln.split("\t")[1:2] in ([], [""])]
    assert len(from_server) >= min_server_1rtt, "%d 1-RTT packets from the server" % len(
        from_server
    )
    assert not undecrypted, "tshark cannot decrypt %d of %d 1-RTT packets" % (
        len(undecrypted),
        len(lines),
    )
    wire = dl.pcap.read_bytes()
    body = (dl.site / "htdocs" / dl.name).read_bytes()
    step = 4096 if len(body) <= SIZES["1m"] else 64 * 1024
    leaked = [off for off in range(0, len(body), step) if body[off : off + 64] in wire]
    assert not leaked, "file bytes in plaintext on the wire at offsets %s" % leaked[:5]


def check_offloaded(st, trains=True):
    """Every 1-RTT packet went to the offload: on a 1,500-byte host link
    (trains=False) no two full-size packets in one frame, so at least a frame
    per 1,452 bytes served (a run of small packets, acknowledgements of
    consecutive PNs, may share one: seen once in ~900 packets); in fewer
    frames than packets on a jumbo one (frames_per_packet < 1: trains formed)."""
    sent, received = st["stack_1rtt_packets_sent"], st["stack_1rtt_packets_received"]
    assert sent > 0 and received > 0, st
    assert st["host_1rtt_aead_calls"] == 0, st
    assert st["offload_tx_packets"] == sent, st
    assert st["offload_rx_packets"] == received, st
    assert st["host_packets_handed"] == sent, st
    assert st["frames_per_packet"] == pytest.approx(st["host_frames_sent"] / sent, abs=1e-4)
    if trains:
        assert st["host_frames_sent"] < sent and st["frames_per_packet"] < 1, st
    else:
        assert st["bytes_served"] // 1452 <= st["host_frames_sent"] <= sent, st
    assert st["offload_tx_failures"] == 0 and st["offload_rx_failures"] == 0, st
    assert st["fallbacks"] == 0, st


def test_1mb_through_quicoff_dpdk_with_a_server_key_update_on_a_1500_byte_host_link(
    site, tmp_path, bed_factory
):
    """A host link of 1,500 bytes takes one packet per frame: the server's
    frames are DATA_TO_OFFLOAD, one per packet, as without trains."""
    bed = bed_factory(host_mtu=None)
    dl = Download(site, tmp_path, "1m", server_args=("--key-update-after", str(256 * 1024)))
    st = dl.wait()
    assert st["bytes_served"] == SIZES["1m"]
    assert st["key_updates_s2c"] >= 1, st
    check_offloaded(st, trains=False)
    o = bed.offload_stats()
    assert o["tx_packets"] == st["offload_tx_packets"], o
    assert o["tx_dropped"] == 0, o
    check_wire(dl, 700)


def test_1mb_in_trains_with_a_server_key_update(site, tmp_path, bed_factory):
    """Trains across a key update: the offload protects each packet of a
    train with the key phase its header carries."""
    bed = bed_factory()
    dl = Download(site, tmp_path, "1m", server_args=("--key-update-after", str(256 * 1024)))
    st = dl.wait()
    assert st["bytes_served"] == SIZES["1m"]
    assert st["key_updates_s2c"] >= 1, st
    check_offloaded(st)
    o = bed.offload_stats()
    assert o["tx_packets"] == st["offload_tx_packets"], o
    assert o["tx_dropped"] == 0, o
    check_wire(dl, 700)


def test_20mb_through_quicoff_dpdk_with_a_client_key_update(site, tmp_path, bed_factory):
    bed_factory()
    dl = Download(site, tmp_path, "20m", client_args=("--key-update=20ms",))
    st = dl.wait()
    assert st["key_updates_c2s"] >= 1, st
    assert st["key_updates_s2c"] >= 1, st  # the server answers with its own phase
    # the offload took the peer's new phase itself and said so
    assert st["offload_key_update_events"] >= 1, st
    check_offloaded(st)
    # a bulk download: most batches are runs of full-size packets
    assert st["frames_per_packet"] < 0.5, st
    check_wire(dl, 14000)


def test_refused_connection_keeps_ngtcp2_crypto(site, tmp_path, bed_factory):
    """A table of one entry: the TX ADD fits, the RX ADD is table_full; the
    server removes the TX entry and the connection never uses the null AEAD."""
    bed = bed_factory(("--capacity", "1"))
    dl = Download(site, tmp_path, "1m")
    st = dl.wait()
    assert b"ADD rx: refused table_full" in dl.err, dl.err
    assert st["offload_refused"] == 1 and st["fallbacks"] == 1, st
    assert st["host_frames_sent"] == 0 and st["offload_tx_packets"] == 0, st
    sent, received = st["stack_1rtt_packets_sent"], st["stack_1rtt_packets_received"]
    assert st["host_1rtt_aead_calls"] == sent + received, st
    o = bed.offload_stats()
    assert o["tx_packets"] == 0 and o["rx_packets"] == 0, o
    check_wire(dl, 700)


@pytest.mark.parametrize("fault", ["sigstop", "sigkill"])
def test_offload_lost_mid_transfer_falls_back_without_plaintext(site, tmp_path, bed_factory, fault):
    """SIGSTOP (then SIGCONT) or SIGKILL (then a fresh quicoff-dpdk, which
    knows no entry) once 4 MB have arrived: the server's QUERY after the
    DATA_TO_HOST silence goes unanswered (or answered unknown_connection)
    and the connection goes on with ngtcp2's own keys to the end."""
    bed = bed_factory()
    dl = Download(site, tmp_path, "20m", server_args=("--offload-silence-ms", "200"))
    end = time.monotonic() + 60
    while dl.downloaded() < 4 << 20 and time.monotonic() < end:
        time.sleep(0.02)
    assert dl.downloaded() >= 4 << 20, "the download did not start"
    pid = bed.offload.pid
    if fault == "sigstop":
        os.kill(pid, signal.SIGSTOP)
    else:
        bed.stop_offload(signal.SIGKILL)
    try:
        assert dl.server_said("stopped answering", 20), dl.err
    finally:
        if fault == "sigstop":
            os.kill(pid, signal.SIGCONT)
        else:
            bed.start_offload()
    st = dl.wait()
    assert st["offload_lost"] == 1 and st["fallbacks"] == 1, st
    assert st["host_1rtt_aead_calls"] > 0, st
    assert st["host_frames_sent"] > 0, st
    check_wire(dl, 14000)


CLIENT = BUILD / "integrations" / "ngtcp2" / "qo-h3-client"


def test_qo_h3_client_offloaded_downloads_from_qo_h3_server(site, tmp_path, bed_factory):
    """The client side of the seam: qo-h3-client --offload dpdk on the
    offloaded host downloads 20 MB from qo-h3-server (--offload inproc, on
    the peer) with a key update of its own: ngtcp2 to ngtcp2, neither making
    a 1-RTT AEAD call, the client's offload counting exactly its packets."""
    assert CLIENT.exists(), "%s missing: built beside qo-h3-server" % CLIENT
    bed_factory()
    pcap, keylog = tmp_path / "wire.pcap", tmp_path / "keys.log"
    tcpdump = subprocess.Popen(
        _ns(NS_PEER, TCPDUMP, "-U", "-Z", "root", "-i", PEER_IF, "-s", "0", "-w", str(pcap),
            "udp"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    ready, _, _ = select.select([tcpdump.stderr], [], [], 10)
    assert ready and b"listening" in tcpdump.stderr.readline(), "tcpdump did not start"
    server = subprocess.Popen(
        _ns(NS_PEER, str(SERVER), "-d", str(site / "htdocs"), "--offload", "inproc", "--once",
            "--stats", str(tmp_path / "server.json"), PEER_IP, str(PORT),
            str(site / "key.pem"), str(site / "cert.pem")),
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        ready, _, _ = select.select([server.stderr], [], [], 10)
        assert ready and b"listening" in server.stderr.readline(), "qo-h3-server did not start"
        client = subprocess.run(
            _ns(NS_HOST, str(CLIENT), "--offload", "dpdk", "--host-if", HOST_IF,
                "-o", str(tmp_path / "20m"), "--stats", str(tmp_path / "client.json"),
                "--keylog", str(keylog), "--key-update-after", str(5 << 20),
                PEER_IP, str(PORT), "/20m"),
            capture_output=True, timeout=TIMEOUT,
        )  # fmt: skip
        assert client.returncode == 0, client.stderr[-3000:]
        server.wait(timeout=30)
    finally:
        for p in (server,):
            if p.poll() is None:
                p.terminate()
                p.wait(10)
        time.sleep(0.3)
        tcpdump.send_signal(signal.SIGINT)
        tcpdump.wait(10)
    got = (tmp_path / "20m").read_bytes()
    want = (site / "htdocs" / "20m").read_bytes()
    assert hashlib.sha256(got).digest() == hashlib.sha256(want).digest(), "SHA-256 differs"
    cs = json.loads((tmp_path / "client.json").read_text())
    ss = json.loads((tmp_path / "server.json").read_text())
    assert cs["key_updates_c2s"] >= 1, cs
    assert cs["host_1rtt_aead_calls"] == 0 and ss["host_1rtt_aead_calls"] == 0, (cs, ss)
    assert cs["offload_tx_packets"] == cs["stack_1rtt_packets_sent"] > 0, cs
    assert cs["host_packets_handed"] == cs["stack_1rtt_packets_sent"], cs
    # the client stops reading once it has the body and closes; what the
    # server sent before it saw the CONNECTION_CLOSE (ACKs, control frames,
    # as many as were in flight then: more on a loaded machine, 21 seen) the
    # offload still opens, and the QUERY counts it; it never opens more than
    # the server's stack sent
    late = cs["offload_rx_packets"] - cs["stack_1rtt_packets_received"]
    assert cs["stack_1rtt_packets_received"] > 0 and late >= 0, cs
    assert cs["offload_rx_packets"] <= ss["stack_1rtt_packets_sent"], (cs, ss)
    assert cs["fallbacks"] == 0, cs
    # the network side: standard QUIC, decrypted with the client's key log
    p = subprocess.run(
        [TSHARK, "-r", str(pcap), "-o", "tls.keylog_file:%s" % keylog,
         "-d", "udp.port==%d,quic" % PORT, "-Y", "quic.short", "-T", "fields",
         "-E", "occurrence=a", "-e", "quic.frame_type"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = p.stdout.splitlines()
    assert len(lines) >= 14000 and all(lines), "tshark decrypts %d of %d 1-RTT packets" % (
        len([ln for ln in lines if ln]),
        len(lines),
    )
