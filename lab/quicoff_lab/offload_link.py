# SPDX-License-Identifier: Apache-2.0
"""A host and its peer joined through quicoff-dpdk, with real IP on both
ends: for a QUIC stack on the host that drives the offload (qo-h3-server
--offload dpdk) and an unmodified client on the peer.

    namespace qngH                          root                          namespace qngP
    [qngh1] 10.99.0.1 ==veth== [qngh0 | quicoff-dpdk | qngn0] ==veth== [qngn1] 10.99.0.2
                               host port           net port

ARP and the handshake cross the offload's pass-through; the host's stack
opens qngh1 with libquicoff-host for its entries and 1-RTT packets. The
names are fixed: run one at a time (tests/dpdk/test_ngtcp2_offload.py and
bench/ngtcp2_cpu.py --dpdk take /tmp/quicoff-net.lock, or their callers do).
Needs root, iproute2, ethtool and a built quicoff-dpdk.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from typing import List, Optional, Sequence

from .dpdk_app import find_binary
from .testbed import af_packet_ring_args, dpdk_telemetry, host_ring_args

__all__ = ["OffloadLink", "NS_HOST", "NS_PEER", "HOST_IF", "PEER_IF", "HOST_IP", "PEER_IP"]

NS_HOST, NS_PEER = "qngH", "qngP"
HOST_IF, OFF_HOST, OFF_NET, PEER_IF = "qngh1", "qngh0", "qngn0", "qngn1"
HOST_IP, PEER_IP = "10.99.0.1", "10.99.0.2"
PREFIX = "qngd"  # quicoff-dpdk's --file-prefix (telemetry socket)


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def in_ns(ns: str, *argv: str) -> List[str]:
    """argv run inside namespace ns."""
    return ["ip", "netns", "exec", ns, *argv]


class OffloadLink:
    """The two namespaces, the two veth pairs and quicoff-dpdk between them
    (started at once; offload_args are added to its options). host_mtu: a
    jumbo host link (the veth pair's MTU, quicoff-dpdk's --host-mtu and its
    host ring), on which the host's stack sends trains of packets per frame
    (DATA_TRAIN); default 1,500 bytes, where a frame holds one packet."""

    def __init__(self, offload_args: Sequence[str] = (), host_mtu: Optional[int] = None):
        self.down()
        self.offload_args = list(offload_args)
        self.host_mtu = host_mtu
        self.offload: Optional[subprocess.Popen] = None
        self.log: List[str] = []
        _sh("ip", "netns", "add", NS_HOST)
        _sh("ip", "netns", "add", NS_PEER)
        _sh(
            "ip", "link", "add", OFF_HOST, "type", "veth", "peer", "name", HOST_IF, "netns", NS_HOST
        )
        _sh("ip", "link", "add", OFF_NET, "type", "veth", "peer", "name", PEER_IF, "netns", NS_PEER)
        for ns, ifc, ip in ((NS_HOST, HOST_IF, HOST_IP), (NS_PEER, PEER_IF, PEER_IP)):
            _sh(*in_ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"), check=False)
            # the kernel must write real UDP checksums: the frames cross
            # af_packet sockets, where a checksum left to the NIC is lost
            _sh(*in_ns(ns, "ethtool", "-K", ifc, "tx", "off"), check=False)
            _sh(*in_ns(ns, "ip", "addr", "add", ip + "/24", "dev", ifc))
            _sh(*in_ns(ns, "ip", "link", "set", ifc, "up"))
            _sh(*in_ns(ns, "ip", "link", "set", "lo", "up"))
        for ifc in (OFF_HOST, OFF_NET):
            _sh("sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % ifc, check=False)
            _sh("ethtool", "-K", ifc, "rxvlan", "off", "txvlan", "off", "tx", "off", check=False)
            _sh("ip", "link", "set", ifc, "up")
        if host_mtu:
            _sh("ip", "link", "set", OFF_HOST, "mtu", str(host_mtu))
            _sh(*in_ns(NS_HOST, "ip", "link", "set", HOST_IF, "mtu", str(host_mtu)))
        try:
            self.start_offload()
        except BaseException:
            self.close()
            raise

    def start_offload(self) -> None:
        """Starts quicoff-dpdk (again, after stop_offload: an empty table)."""
        shutil.rmtree("/var/run/dpdk/" + PREFIX, ignore_errors=True)
        ring = af_packet_ring_args(1500)
        host_ring, host_opts = ring, []
        if self.host_mtu:
            host_ring = host_ring_args(self.host_mtu)
            host_opts = ["--host-mtu", str(self.host_mtu)]
        self.offload = subprocess.Popen(
            [str(find_binary()), "--no-huge", "-m", "1024", "--no-pci", "-l", "0",
             "--file-prefix", PREFIX, "--log-level", "lib.eal:error",
             "--vdev", "net_af_packet0,iface=%s%s" % (OFF_HOST, host_ring),
             "--vdev", "net_af_packet1,iface=%s%s" % (OFF_NET, ring),
             "--", "--host-port", "0", "--net-port", "1", "--stats-interval", "0",
             "--local-cid-len", "16", *host_opts, *self.offload_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        end = time.monotonic() + 30
        assert self.offload.stdout is not None
        while time.monotonic() < end:
            line = self.offload.stdout.readline()
            self.log.append(line)
            if line.startswith("quicoff-dpdk: running ("):
                return
            if not line and self.offload.poll() is not None:
                break
        raise RuntimeError("quicoff-dpdk did not start:\n" + "".join(self.log[-30:]))

    def offload_stats(self) -> dict:
        """quicoff-dpdk's counters (telemetry /quicoff/stats)."""
        return dpdk_telemetry(PREFIX, "/quicoff/stats")["/quicoff/stats"]

    def offload_busy_s(self) -> float:
        """quicoff-dpdk's busy time so far: the cycles its lcores spent on
        frames (busy_cycles; polls that found nothing are not counted) over
        the TSC frequency."""
        hz = dpdk_telemetry(PREFIX, "/quicoff/options")["/quicoff/options"]["tsc_hz"]
        return self.offload_stats()["busy_cycles"] / hz

    def stop_offload(self, sig: int = signal.SIGINT) -> None:
        p, self.offload = self.offload, None
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p.stdout is not None:
            self.log.append(p.stdout.read())

    @staticmethod
    def down() -> None:
        """Removes the namespaces and links (also what a crashed run left)."""
        for ns in (NS_HOST, NS_PEER):
            _sh("ip", "netns", "del", ns, check=False)
        for ifc in (OFF_HOST, OFF_NET):
            _sh("ip", "link", "del", ifc, check=False)

    def close(self) -> None:
        self.stop_offload()
        self.down()
        shutil.rmtree("/var/run/dpdk/" + PREFIX, ignore_errors=True)

    def __enter__(self) -> "OffloadLink":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
