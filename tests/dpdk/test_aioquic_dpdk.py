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
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import subprocess
import sys

import pytest

from harness import App
from quicoff_lab import links

pytest.importorskip("aioquic", reason="SKIPPED LOUDLY: aioquic is not installed (the test extra)")

GTLSCLIENT = shutil.which("gtlsclient")
NS_SERVER, NS_PEER = "qaq_server", "qaq_peer"
SERVER_IP, PEER_IP = "10.77.0.1", "10.77.0.2"
PORT = 4433
SIZE = 1 << 20


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
