# SPDX-License-Identifier: Apache-2.0
"""quicoff-dpdk on two veth pairs, driven from raw sockets: the DPDK tests
(tests/dpdk) and bench/fwd_cost.py.

    test socket  <-> qdhN1 ==veth== qdhN0 <-> [host port | quicoff-dpdk | net port] <-> qdnN0 ==veth== qdnN1 <-> test socket

Frames are sent and received on the outer ends with raw AF_PACKET sockets;
counters are read through DPDK telemetry (/quicoff/stats), as an operator would.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional

from . import links
from .checkout import repo_root
from .rawsock import PACKET_AUXDATA, PACKET_OUTGOING, SOL_PACKET, open_raw
from .testbed import af_packet_ring_args, dpdk_telemetry, host_ring_args

__all__ = ["find_binary", "Veth", "Port", "Telemetry", "App"]

# the PACKET_AUXDATA status bits of <linux/if_packet.h>
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40


def find_binary() -> Path:
    env = os.environ.get("QUICOFF_DPDK")
    if env:
        return Path(env)
    for b in ("build", "build-dpdk"):
        p = repo_root() / b / "apps" / "dpdk" / "quicoff-dpdk"
        if p.exists():
            return p
    raise FileNotFoundError(
        "quicoff-dpdk not built: meson setup build && ninja -C build "
        "(needs libdpdk-dev), or set QUICOFF_DPDK"
    )


class Veth:
    """A veth pair: `inner` for the application, `outer` for the test."""

    def __init__(self, inner: str, outer: str, mtu: int = 1500):
        self.inner, self.outer = inner, outer
        links.delete_link(inner)
        links.add_veth(inner, outer)
        for ifc in (inner, outer):
            # no IPv6 / ARP chatter from the kernel on the test links
            links.disable_ipv6(ifc)
            # VLAN tags stay in the frames (no tag offload into skb metadata)
            links.ethtool_off(
                ifc, ("rxvlan", "txvlan", "rx-vlan-stag-hw-parse", "tx-vlan-stag-hw-insert")
            )
            links.ip("link", "set", ifc, "arp", "off", "mtu", str(mtu), "up")

    @property
    def mac(self) -> str:
        return Path(f"/sys/class/net/{self.outer}/address").read_text().strip()

    def delete(self) -> None:
        links.delete_link(self.inner)


def _with_vlan(frame: bytes, anc) -> bytes:
    """The kernel untags 802.1Q frames before packet sockets see them; put the
    tag back from PACKET_AUXDATA, as libpcap does."""
    for level, typ, data in anc:
        if level == SOL_PACKET and typ == PACKET_AUXDATA and len(data) >= 20:
            (status,) = struct.unpack_from("=I", data, 0)
            tci, tpid = struct.unpack_from("=HH", data, 16)
            if status & TP_STATUS_VLAN_VALID:
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = 0x8100
                return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
    return frame


class Port:
    """A raw socket on the test side of a veth."""

    def __init__(self, ifname: str):
        self.ifname = ifname
        self.sock = open_raw(ifname, rcvbuf=8 << 20, auxdata=True, blocking=False)
        self.backlog: List[bytes] = []

    def send(self, frame: bytes) -> None:
        self.sock.send(frame)

    def drain(self) -> None:
        self.backlog.clear()
        while self._recv(0.0) is not None:
            pass

    def _recv(self, timeout: float) -> Optional[bytes]:
        end = time.monotonic() + timeout
        while True:
            try:
                data, anc, _flags, addr = self.sock.recvmsg(65535, 256)
                if addr[2] == PACKET_OUTGOING:
                    continue
                return _with_vlan(data, anc)
            except BlockingIOError:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                select.select([self.sock], [], [], left)

    def recv(self, timeout: float = 1.0) -> Optional[bytes]:
        if self.backlog:
            return self.backlog.pop(0)
        return self._recv(timeout)

    def recv_match(self, pred: Callable[[bytes], bool], timeout: float = 2.0) -> Optional[bytes]:
        """The first frame (kept ones first) for which pred is true; others are kept."""
        for i, f in enumerate(self.backlog):
            if pred(f):
                return self.backlog.pop(i)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            f = self._recv(left)
            if f is None:
                return None
            if pred(f):
                return f
            self.backlog.append(f)

    def recv_all(self, timeout: float = 0.5, quiet: float = 0.3) -> List[bytes]:
        """Every frame until none came for `quiet` seconds (`timeout` for the first)."""
        out = self.backlog[:]
        self.backlog.clear()
        f = self._recv(timeout if not out else quiet)
        while f is not None:
            out.append(f)
            f = self._recv(quiet)
        return out

    def close(self) -> None:
        self.sock.close()


class Telemetry:
    """DPDK telemetry of the app started with --file-prefix ``prefix``:
    ``tel("/quicoff/stats")`` is the reply's body."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self, cmd: str):
        return dpdk_telemetry(self.prefix, cmd)[cmd.split(",")[0]]


class App:
    """quicoff-dpdk on two veth pairs (host port 0, network port 1)."""

    def __init__(
        self,
        name: str,
        app_args: List[str],
        lcores: str = "0-1",
        eal_extra: Optional[List[str]] = None,
        start_timeout: float = 30.0,
        qpairs: int = 1,
        mtu: int = 1500,
        framesz_mtu: Optional[int] = None,
        host_mtu: Optional[int] = None,
    ):
        """mtu: of every veth; framesz_mtu: the MTU the af_packet rings are
        sized for (default mtu; smaller to make the PMD cut frames);
        host_mtu: a jumbo host link (its veth and ring; pass --host-mtu too)."""
        self.name = name
        self.prefix = f"qdt_{name}"
        self.host = Veth(f"{name}h0", f"{name}h1", host_mtu or mtu)
        self.net = Veth(f"{name}n0", f"{name}n1", mtu)
        ring = af_packet_ring_args(mtu if framesz_mtu is None else framesz_mtu)
        host_ring = host_ring_args(host_mtu) if host_mtu else ring
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}", ignore_errors=True)
        lc = ["--lcores", lcores] if "@" in lcores else ["-l", lcores]
        self.cmd = [
            str(find_binary()),
            "--no-huge",
            "-m",
            "1024",
            "--no-pci",
            *lc,
            "--file-prefix",
            self.prefix,
            "--log-level",
            "lib.eal:error",
            "--vdev",
            f"net_af_packet0,iface={self.host.inner},qpairs={qpairs}{host_ring}",
            "--vdev",
            f"net_af_packet1,iface={self.net.inner},qpairs={qpairs}{ring}",
            *(eal_extra or []),
            "--",
            "--host-port",
            "0",
            "--net-port",
            "1",
            "--stats-interval",
            "0",
            *app_args,
        ]
        self.lines: List[str] = []
        self.proc = subprocess.Popen(
            self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        self._running = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._running.wait(start_timeout):
            self.stop(force=True)
            raise RuntimeError(
                "quicoff-dpdk did not start (DPDK must be able to run here):\n"
                + "\n".join(self.lines[-40:])
            )
        self.tel = Telemetry(self.prefix)
        self.hp = Port(self.host.outer)
        self.np = Port(self.net.outer)
        self.returncode: Optional[int] = None

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("quicoff-dpdk: running ("):
                self._running.set()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def stats(self) -> dict:
        return self.tel("/quicoff/stats")

    def wait_stat(self, name: str, at_least: int, timeout: float = 3.0) -> int:
        end = time.monotonic() + timeout
        while True:
            v = self.stats()[name]
            if v >= at_least or time.monotonic() > end:
                return v
            time.sleep(0.02)

    def stop(self, sig: int = signal.SIGINT, force: bool = False) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if force else sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        for p in ("hp", "np"):
            if hasattr(self, p):
                getattr(self, p).close()
        self.host.delete()
        self.net.delete()
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}", ignore_errors=True)
        self.returncode = self.proc.returncode
        bad = [ln for ln in self.lines if "runtime error:" in ln or "AddressSanitizer" in ln]
        if bad:  # a sanitizer build (QUICOFF_DPDK=build-asan/...) found something
            raise AssertionError("sanitizer reports:\n" + "\n".join(bad[:20]))
        return self.returncode

    def totals(self) -> dict:
        """Counters of the 'totals' table printed at exit."""
        out, on = {}, False
        for line in self.lines:
            if "==== quicoff-dpdk totals" in line:
                on = True
                continue
            m = re.match(r"^([a-z_]+)\s+(\d+)", line)
            if on and m:
                out[m.group(1)] = int(m.group(2))
        return out
