# SPDX-License-Identifier: Apache-2.0
"""qo-h3-server (integrations/ngtcp2) serves files to Debian's unmodified
ngtcp2 HTTP/3 client (`gtlsclient`) on loopback, with its 1-RTT packet
protection in libquicoff (--offload inproc) or in ngtcp2 (--offload none).

* 1 MB and 20 MB downloads in each mode, checked by SHA-256, with a key
  update during each transfer: the server starts one (1 MB), the client
  starts one (20 MB);
* inproc: the stack made no 1-RTT AEAD call, and libquicoff protected and
  unprotected exactly the 1-RTT packets ngtcp2 sealed and opened; none: the
  stack made one real AEAD call per 1-RTT packet;
* the wire is standard QUIC: a capture (recorded by a UDP relay between
  client and server, so no root is needed) decrypts in tshark with the
  server's key log, every 1-RTT packet of it, and none of the served file's
  64-byte pieces taken at every 4 KiB appears on it in plaintext.
"""

import hashlib
import json
import os
import select
import shutil
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("QUICOFF_BUILD_DIR", ROOT / "build"))
SERVER = BUILD / "integrations" / "ngtcp2" / "qo-h3-server"
GTLSCLIENT = shutil.which("gtlsclient")
TSHARK = shutil.which("tshark")
OPENSSL = shutil.which("openssl")
MODES = ("none", "inproc")
SIZES = {"1m": 1 << 20, "20m": 20 << 20}
TIMEOUT = 120


def _have_ngtcp2_libs():
    return (
        subprocess.run(
            [
                "pkg-config",
                "--exists",
                "libngtcp2",
                "libngtcp2_crypto_gnutls",
                "libnghttp3",
                "gnutls",
            ]
        ).returncode
        == 0
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not _have_ngtcp2_libs():
        pytest.skip(
            "SKIPPED LOUDLY: qo-h3-server is not built without libngtcp2-dev, "
            "libngtcp2-crypto-gnutls-dev, libnghttp3-dev and libgnutls28-dev"
        )
    assert SERVER.exists(), "%s missing: build with meson setup build && ninja -C build" % SERVER
    assert GTLSCLIENT, "gtlsclient not found: apt-get install ngtcp2-client"
    assert OPENSSL, "openssl not found"
    d = tmp_path_factory.mktemp("h3")
    from quicoff_lab.certs import self_signed

    self_signed(d)
    (d / "htdocs").mkdir()
    for name, size in SIZES.items():
        (d / "htdocs" / name).write_bytes(os.urandom(size))
    return d


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Relay:
    """A UDP relay between the client and the server that records every
    datagram both ways in a pcap (raw IPv4), as the wire would show it."""

    def __init__(self, server_port, pcap):
        self.server = ("127.0.0.1", server_port)
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind(("127.0.0.1", 0))
        for s in (self.front, self.back):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.port = self.front.getsockname()[1]
        self.client = None
        self.records = []  # (time, from_client, payload)
        self.pcap = pcap
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            ready, _, _ = select.select([self.front, self.back], [], [], 0.1)
            for s in ready:
                data, addr = s.recvfrom(65536)
                if s is self.front:
                    self.client = addr
                    self.records.append((time.time(), True, data))
                    self.back.sendto(data, self.server)
                elif self.client:
                    self.records.append((time.time(), False, data))
                    self.front.sendto(data, self.client)

    def close(self):
        self.stop = True
        self.thread.join()
        self.front.close()
        self.back.close()
        cport = self.client[1] if self.client else 1
        with open(self.pcap, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))  # LINKTYPE_RAW
            for t, from_client, data in self.records:
                sport, dport = (cport, self.port) if from_client else (self.port, cport)
                udp = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
                ip = struct.pack(
                    "!BBHHHBBH4s4s",
                    0x45,
                    0,
                    20 + len(udp),
                    0,
                    0,
                    64,
                    17,
                    0,
                    socket.inet_aton("127.0.0.1"),
                    socket.inet_aton("127.0.0.1"),
                )
                frame = ip + udp
                sec = int(t)
                f.write(struct.pack("<IIII", sec, int((t - sec) * 1e6), len(frame), len(frame)))
                f.write(frame)


def download(site, tmp, mode, name, *, server_args=(), client_args=(), relay=False):
    """One qo-h3-server --once and one gtlsclient run; returns (stats, sha ok, relay)."""
    port = free_udp_port()
    stats = tmp / ("stats-%s-%s.json" % (mode, name))
    keylog = tmp / ("keys-%s-%s.log" % (mode, name))
    out = tmp / ("dl-%s-%s" % (mode, name))
    out.mkdir()
    server = subprocess.Popen(
        [
            str(SERVER),
            "-d",
            str(site / "htdocs"),
            "--offload",
            mode,
            "--once",
            "--stats",
            str(stats),
            "--keylog",
            str(keylog),
            *server_args,
            "127.0.0.1",
            str(port),
            str(site / "key.pem"),
            str(site / "cert.pem"),
        ],
        stderr=subprocess.PIPE,
    )
    rel = None
    try:
        ready, _, _ = select.select([server.stderr], [], [], 10)
        line = server.stderr.readline().decode(errors="replace") if ready else "(silent 10 s)"
        assert "listening" in line, "qo-h3-server: %s" % line
        if relay:
            rel = Relay(port, tmp / ("wire-%s-%s.pcap" % (mode, name)))
        cport = rel.port if rel else port
        client = subprocess.run(
            [
                GTLSCLIENT,
                "-q",
                "--exit-on-all-streams-close",
                "--download",
                str(out),
                *client_args,
                "127.0.0.1",
                str(cport),
                "https://127.0.0.1:%d/%s" % (cport, name),
            ],
            capture_output=True,
            timeout=TIMEOUT,
        )
        assert client.returncode == 0, client.stdout[-2000:] + client.stderr[-2000:]
        server.wait(timeout=TIMEOUT)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=10)
        if rel:
            rel.close()
    err = server.stderr.read().decode(errors="replace")
    assert server.returncode == 0, err
    got = (out / name).read_bytes() if (out / name).exists() else b""
    want = (site / "htdocs" / name).read_bytes()
    ok = hashlib.sha256(got).digest() == hashlib.sha256(want).digest()
    return json.loads(stats.read_text()), ok, keylog, rel


def check_counters(mode, st):
    sent, received = st["stack_1rtt_packets_sent"], st["stack_1rtt_packets_received"]
    assert sent > 0 and received > 0, st
    if mode == "inproc":
        assert st["host_1rtt_aead_calls"] == 0, st
        assert st["offload_tx_packets"] == sent, st
        assert st["offload_rx_packets"] == received, st
        assert st["offload_tx_failures"] == 0 and st["offload_rx_failures"] == 0, st
    else:
        assert st["host_1rtt_aead_calls"] == sent + received, st
        assert st["offload_tx_packets"] == 0 and st["offload_rx_packets"] == 0, st


@pytest.mark.parametrize("mode", MODES)
def test_1mb_with_a_server_key_update(site, tmp_path, mode):
    st, ok, _, _ = download(
        site, tmp_path, mode, "1m", server_args=("--key-update-after", str(256 * 1024))
    )
    assert ok, "SHA-256 of the download differs"
    assert st["bytes_served"] == SIZES["1m"]
    assert st["key_updates_s2c"] >= 1, st
    check_counters(mode, st)


@pytest.mark.parametrize("mode", MODES)
def test_20mb_with_a_client_key_update(site, tmp_path, mode):
    st, ok, _, _ = download(site, tmp_path, mode, "20m", client_args=("--key-update=20ms",))
    assert ok, "SHA-256 of the download differs"
    assert st["key_updates_c2s"] >= 1, st
    # the server answers the peer's update with its own phase (RFC 9001 §6.2)
    assert st["key_updates_s2c"] >= 1, st
    check_counters(mode, st)


def tshark_1rtt(pcap, keylog, port):
    """One line per 1-RTT packet tshark sees: source port, then the frame
    types it decrypted (none when it could not)."""
    p = subprocess.run(
        [
            TSHARK,
            "-r",
            str(pcap),
            "-o",
            "tls.keylog_file:%s" % keylog,
            "-d",
            "udp.port==%d,quic" % port,
            "-Y",
            "quic.short",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-e",
            "udp.srcport",
            "-e",
            "quic.frame_type",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


@pytest.mark.parametrize("mode", MODES)
def test_wire_is_standard_quic_without_plaintext(site, tmp_path, mode):
    assert TSHARK, "tshark not found: apt-get install tshark"
    st, ok, keylog, rel = download(
        site,
        tmp_path,
        mode,
        "1m",
        server_args=("--key-update-after", str(256 * 1024)),
        relay=True,
    )
    assert ok, "SHA-256 of the download differs"
    check_counters(mode, st)
    lines = tshark_1rtt(rel.pcap, keylog, rel.port)
    from_server = [ln for ln in lines if ln.split("\t")[0] == str(rel.port)]
    decrypted = [ln for ln in lines if ln.split("\t")[1:2] != [""]]
    assert len(from_server) >= 700, "tshark sees %d 1-RTT packets from the server" % len(
        from_server
    )
    assert len(decrypted) == len(lines), "tshark decrypts %d of %d 1-RTT packets" % (
        len(decrypted),
        len(lines),
    )
    # no plaintext of the file on the wire
    wire = rel.pcap.read_bytes()
    body = (site / "htdocs" / "1m").read_bytes()
    leaked = [off for off in range(0, len(body), 4096) if body[off : off + 64] in wire]
    assert not leaked, "file bytes in plaintext on the wire at offsets %s" % leaked[:5]


def test_dpdk_mode_needs_the_host_interface(site):
    """--offload dpdk without --host-if: a usage error that says what is
    missing (the mode itself runs in tests/dpdk/test_ngtcp2_offload.py)."""
    p = subprocess.run(
        [
            str(SERVER),
            "--offload",
            "dpdk",
            "127.0.0.1",
            str(free_udp_port()),
            str(site / "key.pem"),
            str(site / "cert.pem"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2 and "dpdk needs --host-if" in p.stderr, p.stderr


CLIENT = BUILD / "integrations" / "ngtcp2" / "qo-h3-client"


@pytest.mark.parametrize("client_mode", MODES)
def test_qo_h3_client_downloads_from_qo_h3_server(site, tmp_path, client_mode):
    """qo-h3-client (the seam on the client side) against qo-h3-server
    --offload inproc on loopback, a key update started by the client: with
    both in inproc, ngtcp2 talks to ngtcp2 and neither makes a 1-RTT AEAD
    call (both offloaded through the DPDK offload: tests/dpdk/test_ngtcp2_offload.py)."""
    assert CLIENT.exists(), "%s missing: built beside qo-h3-server" % CLIENT
    port = free_udp_port()
    server = subprocess.Popen(
        [str(SERVER), "-d", str(site / "htdocs"), "--offload", "inproc", "--once",
         "--stats", str(tmp_path / "server.json"), "127.0.0.1", str(port),
         str(site / "key.pem"), str(site / "cert.pem")],
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        ready, _, _ = select.select([server.stderr], [], [], 10)
        assert ready and b"listening" in server.stderr.readline(), "qo-h3-server did not start"
        client = subprocess.run(
            [str(CLIENT), "--offload", client_mode, "-o", str(tmp_path / "1m"),
             "--stats", str(tmp_path / "client.json"), "--key-update-after", str(256 * 1024),
             "127.0.0.1", str(port), "/1m"],
            capture_output=True, timeout=TIMEOUT,
        )  # fmt: skip
        assert client.returncode == 0, client.stderr[-3000:]
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(10)
    got = (tmp_path / "1m").read_bytes()
    assert (
        hashlib.sha256(got).digest()
        == hashlib.sha256((site / "htdocs" / "1m").read_bytes()).digest()
    )
    cs = json.loads((tmp_path / "client.json").read_text())
    ss = json.loads((tmp_path / "server.json").read_text())
    assert cs["status"] == 200 and cs["bytes"] == SIZES["1m"], cs
    assert cs["key_updates_c2s"] >= 1 and ss["key_updates_c2s"] >= 1, (cs, ss)
    assert ss["host_1rtt_aead_calls"] == 0, ss
    sent, received = cs["stack_1rtt_packets_sent"], cs["stack_1rtt_packets_received"]
    if client_mode == "inproc":
        assert cs["host_1rtt_aead_calls"] == 0, cs
        assert cs["offload_tx_packets"] == sent and cs["offload_rx_packets"] == received, cs
    else:
        assert cs["host_1rtt_aead_calls"] == sent + received, cs
