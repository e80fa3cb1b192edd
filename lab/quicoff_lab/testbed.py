# SPDX-License-Identifier: Apache-2.0
"""A two-host testbed that needs no NIC: network namespaces and veth pairs.

The DPU prototype's testbed (docs/glossary.md: two servers, each with an
offload card, one link between the cards), in namespaces::

    host A          offload A                 wire                 offload B          host B
    [ho0] <-veth-> [host0 | net0] <-veth-> [wa  (bridge)  wb] <-veth-> [net0 | host0] <-veth-> [ho0]

* The offloads (build/apps/dpdk/quicoff-dpdk) run inside their namespaces
  (``ip netns exec``) with net_af_packet vdevs on host0 and net0.
* The wire is a Linux bridge, or the tampering bridge of tools/qo_traffic.c
  (``Testbed.set_wire("tamper", every=k)``).
* Nothing is routed and no address is assigned to an interface: hosts and
  offloads speak raw Ethernet; the IP addresses inside the packets are from
  the benchmarking ranges (198.18.0.0/15, 2001:2::/48) and exist only in these
  namespaces.  IPv6 is switched off on every veth, so the kernel adds no
  traffic of its own.

Everything created carries the prefix ``qotb-<pid>-``; it is removed on exit,
on exceptions and on SIGINT/SIGTERM (context manager + signal handlers +
atexit), and :func:`cleanup_leftovers` removes what a crashed run left
(namespaces of dead pids, their processes, their DPDK runtime directories).

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from quicoff import wire

from . import links
from .checkout import build_dir as default_build_dir
from .rawsock import ETH_P_ALL, SO_ATTACH_FILTER, open_raw_in_netns

__all__ = [
    "Testbed",
    "TestbedError",
    "cleanup_leftovers",
    "list_leftovers",
    "PREFIX",
    "find_dpdk_app",
    "dpdk_telemetry",
    "ns_socket",
]

PREFIX = "qotb-"
LINK_MTU = 9000  # every veth of the testbed; quicoff-dpdk gets --net-mtu LINK_MTU


def af_packet_ring_args(mtu: int) -> str:
    """net_af_packet vdev arguments for frames of an MTU (docs/dpdk.md, "MTU
    and jumbo frames"). The PMD's default framesz (2,048) cuts longer frames;
    framesz must hold the TPACKET header (~66 bytes before the frame), the
    Ethernet header and tags, and the MTU: MTU + 128, rounded up to 1 KiB (the
    mbuf data room quicoff-dpdk sizes from --net-mtu by the same rule).
    blocksz is a multiple of both framesz and the page size."""
    import math

    framesz = -(-(mtu + 128) // 1024) * 1024
    framesz = max(framesz, 2048)
    blocksz = framesz * 4096 // math.gcd(framesz, 4096)
    return ",framesz=%d,blocksz=%d" % (framesz, blocksz)


def host_ring_args(host_mtu: int) -> str:
    """net_af_packet vdev arguments for a jumbo host link (quicoff-dpdk's
    --host-mtu). Past 60,000 bytes: net_af_packet wants a frame (framesz
    less its 32-byte header room) to fit the mbuf's data room, which
    quicoff-dpdk caps at 65407 for --host-mtu, and reads frame i at
    i * framesz, so framesz must divide blocksz (a multiple of the page
    size): 65408 (511 x 128) in blocks of 32 frames (511 pages), frames up
    to 65344 bytes (framesz less the 64 bytes before the frame)."""
    if host_mtu > 60000:
        return ",framesz=65408,blocksz=2093056"
    return af_packet_ring_args(host_mtu)


_NAME_RE = re.compile(r"^qotb-(\d+)-")
DPDK_RUN_DIR = "/var/run/dpdk"

# deterministic MACs (locally administered)
MACS = {
    "hostA": "02:51:0a:00:00:01",
    "offA_host": "02:51:0a:00:00:02",
    "offA_net": "02:51:0a:00:00:03",
    "wire_a": "02:51:0c:00:00:01",
    "wire_b": "02:51:0c:00:00:02",
    "offB_net": "02:51:0b:00:00:03",
    "offB_host": "02:51:0b:00:00:02",
    "hostB": "02:51:0b:00:00:01",
}
# addresses inside the packets only (RFC 2544 / RFC 5180 benchmarking ranges)
IPS = {"A": "198.18.0.1", "B": "198.18.0.2"}
IPS6 = {"A": "2001:2::a", "B": "2001:2::b"}
UDP_PORT = {"A": 4433, "B": 4434}


#: what the testbed raises: a failed command of its plumbing, or a testbed
#: that cannot be (no root, an offload that does not start)
TestbedError = links.LinkError
_run = links.run
_netns_list = links.netns_list


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def list_leftovers(all_runs: bool = False) -> List[str]:
    """Namespaces named qotb-<pid>-* whose pid is gone (or all, with all_runs)."""
    out = []
    for ns in _netns_list():
        m = _NAME_RE.match(ns)
        if m and (all_runs or not _pid_alive(int(m.group(1)))):
            out.append(ns)
    return out


def cleanup_leftovers(all_runs: bool = False) -> List[str]:
    """Removes what crashed runs left: their namespaces (and the processes and
    veths in them) and their DPDK runtime directories.  Returns the names."""
    gone = list_leftovers(all_runs)
    for ns in gone:
        links.kill_netns_procs(ns)
        _run(["ip", "netns", "del", ns], check=False)
    if os.path.isdir(DPDK_RUN_DIR):
        for d in os.listdir(DPDK_RUN_DIR):
            m = _NAME_RE.match(d)
            if m and (all_runs or not _pid_alive(int(m.group(1)))):
                shutil.rmtree(os.path.join(DPDK_RUN_DIR, d), ignore_errors=True)
                gone.append(os.path.join(DPDK_RUN_DIR, d))
    return gone


def ns_socket(ns: str, iface: str, proto: int = ETH_P_ALL) -> socket.socket:
    """A raw socket on ``iface`` of namespace ``ns`` with a large receive
    buffer that does not see its own frames (rawsock.open_raw_in_netns)."""
    return open_raw_in_netns(ns, iface, proto, ignore_outgoing=True)


_BPF_KEEP: list = []


def _attach_no_data_filter(sock: socket.socket) -> None:
    """Classic BPF on a signaling socket: drop v1 DATA_TO_HOST frames (type
    byte 0x90 at frame offset 16), so that replies are not buried under data."""
    import ctypes
    import struct as _st

    prog = [
        (0x30, 0, 0, 16),  # ldb [16]: the v1 Type byte (Ethernet 14 + 2)
        (0x15, 1, 0, wire.KINDS["data_to_host"]),  # jeq DATA_TO_HOST, drop
        (0x06, 0, 0, 0xFFFF),  # ret #65535
        (0x06, 0, 0, 0),
    ]  # drop: ret #0
    buf = ctypes.create_string_buffer(b"".join(_st.pack("HBBI", *i) for i in prog))
    fprog = _st.pack("HL", len(prog), ctypes.addressof(buf))
    _BPF_KEEP.append(buf)  # the kernel copies it; kept anyway until exit
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def _drain(sock: socket.socket) -> None:
    sock.setblocking(False)
    try:
        while True:
            sock.recv(65536)
    except (BlockingIOError, OSError):
        pass
    sock.setblocking(True)


def find_dpdk_app(build_dir: Optional[str] = None) -> Optional[str]:
    """build/apps/dpdk/quicoff-dpdk, or $QUICOFF_DPDK_APP when set; None
    when it is not built."""
    env = os.environ.get("QUICOFF_DPDK_APP")
    if env:
        cands = [env]
    else:
        cands = [os.path.join(str(default_build_dir(build_dir)), "apps", "dpdk", "quicoff-dpdk")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def dpdk_telemetry(file_prefix: str, command: str, timeout: float = 2.0):
    """One DPDK telemetry command (e.g. "/ethdev/stats,0") of the DPDK process
    started with --file-prefix file_prefix; the parsed JSON reply."""
    path = os.path.join(DPDK_RUN_DIR, file_prefix, "dpdk_telemetry.v2")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    try:
        s.connect(path)
        info = json.loads(s.recv(16384).decode())
        s.send(command.encode())
        reply = s.recv(int(info.get("max_output_len", 16384)) + 1024)
        return json.loads(reply.decode())
    finally:
        s.close()


@dataclass
class Port:
    ns: str
    iface: str
    mac: str


@dataclass
class Offload:
    """One offload process (quicoff-dpdk) and how to read its counters."""

    side: str  # "A" or "B"
    ns: str
    kind: str  # "dpdk": quicoff-dpdk
    proc: Optional[subprocess.Popen] = None
    argv: List[str] = field(default_factory=list)
    log_path: str = ""
    file_prefix: str = ""
    host_port: Optional[Port] = None
    net_port: Optional[Port] = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 40) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stats(self) -> dict:
        """The offload's counters (C library names where it has them)."""
        return dpdk_app_stats(self)


def _flatten(d, out, prefix=""):
    if isinstance(d, dict):
        for k, v in d.items():
            _flatten(v, out, prefix + str(k) + ".")
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        out[prefix[:-1]] = d
    return out


#: the telemetry command of quicoff-dpdk's counters; the first that answers wins
DPDK_STATS_COMMANDS = ["/quicoff/stats", "/quicoff/counters", "/quicoff/total"]


def dpdk_app_stats(off: Offload) -> dict:
    """Counters of a quicoff-dpdk instance through DPDK telemetry: the app's
    own command (see DPDK_STATS_COMMANDS), summed over lcores when per-lcore,
    plus the ports' ethdev stats.  Names are flattened ("auth_failed", ...)."""
    out: dict = {}
    try:
        cmds = dpdk_telemetry(off.file_prefix, "/").get("/", [])
    except OSError:
        return out
    for c in DPDK_STATS_COMMANDS + [c for c in cmds if c.startswith("/quicoff/")]:
        if c not in cmds:
            continue
        try:
            reply = dpdk_telemetry(off.file_prefix, c)
        except OSError:
            continue
        body = reply.get(c, reply)
        flat = _flatten(body, {})
        # per-lcore blocks: sum the leaf names
        for k, v in flat.items():
            leaf = k.rsplit(".", 1)[-1]
            if "." in k and not k.startswith(("total.", "totals.")):
                out.setdefault("_sum." + leaf, 0)
                out["_sum." + leaf] += v
            out[leaf if k.startswith(("total.", "totals.")) or "." not in k else k] = v
        if flat:
            out["_command"] = c
            break
    for leaf in [k for k in out if k.startswith("_sum.")]:
        out.setdefault(leaf[5:], out[leaf])
    for port in (0, 1):
        try:
            st = dpdk_telemetry(off.file_prefix, "/ethdev/stats,%d" % port)
            out["port%d" % port] = st.get("/ethdev/stats", st)
        except (OSError, ValueError):
            pass
    return out


class Testbed:
    """``with Testbed() as tb: ...`` brings the namespaces, veths and wire up,
    starts the two offloads, and takes everything down again, whatever
    happens.  The offloads are quicoff-dpdk (``offload``: "auto" or "dpdk",
    the same); without it built the testbed says so, unless
    start_offloads=False (the plumbing alone)."""

    def __init__(
        self,
        offload: str = "auto",
        build_dir: Optional[str] = None,
        workers: int = 1,
        crypto: str = "inline",
        local_cid_len: int = 8,
        app_args: Optional[List[str]] = None,
        log_dir: Optional[str] = None,
        mem_mb: int = 1024,
        start_offloads: bool = True,
        verbose: bool = False,
        unknown: str = "pass",
        idle_us: int = 20,
        io_mode: str = "rtc",
        host_mtu: Optional[int] = None,
    ):
        """host_mtu: the two host links' MTU (veths, quicoff-dpdk's
        --host-mtu and its host ring) when larger than LINK_MTU, so that a
        stack's DATA_TRAIN frames carry long trains; the wire stays at
        LINK_MTU."""
        if os.geteuid() != 0:
            raise TestbedError("the testbed needs root (network namespaces, veth pairs)")
        for tool in ("ip",):
            if not shutil.which(tool):
                raise TestbedError("%s (iproute2) is not installed" % tool)
        self.build_dir = str(default_build_dir(build_dir))
        app = find_dpdk_app(self.build_dir)
        if offload not in ("auto", "dpdk"):
            raise TestbedError("offload must be quicoff-dpdk ('auto' or 'dpdk'), not %r" % offload)
        if start_offloads and not app:
            raise TestbedError(
                "quicoff-dpdk is not built (%s/apps/dpdk/quicoff-dpdk): "
                "meson setup build && ninja -C build" % self.build_dir
            )
        self.offload_kind = "dpdk"
        self.app = app
        self.workers = workers
        # quicoff-dpdk --io-mode: rtc, each worker polls its own queue pair of
        # both ports (af_packet qpairs=workers); pipeline, an I/O lcore feeds them
        if io_mode not in ("rtc", "pipeline"):
            raise TestbedError("io_mode must be rtc or pipeline, not %r" % io_mode)
        self.io_mode = io_mode
        self.crypto = crypto
        self.local_cid_len = local_cid_len
        self.app_args = list(app_args or [])
        self.mem_mb = mem_mb
        self.host_mtu = host_mtu
        self.start_offloads = start_offloads
        self.verbose = verbose
        self.unknown = unknown
        # quicoff-dpdk --idle-us: the lcores of both offloads share the CPUs with
        # each other, the traffic tools and the wire; busy-polling ones would
        # take whole time slices from the thread with work to do (docs/dpdk.md)
        self.idle_us = idle_us
        # per-side override of idle_us (the bench busy-polls offload A only)
        self.idle_us_side: Dict[str, int] = {}
        # per-side override of local_cid_len (demo --stack: each host's QUIC
        # stack chooses its own CID length)
        self.local_cid_len_side: Dict[str, int] = {}
        self.tag = "%s%d-%s" % (PREFIX, os.getpid(), os.urandom(2).hex())
        self.ns = {k: "%s-%s" % (self.tag, k) for k in ("hA", "oA", "w", "oB", "hB")}
        self._own_log_dir = log_dir is None
        self.log_dir = log_dir or tempfile.mkdtemp(prefix=self.tag + "-")
        os.makedirs(self.log_dir, exist_ok=True)
        self.created: List[str] = []
        self.procs: List[subprocess.Popen] = []
        self.offloads: Dict[str, Offload] = {}
        self.wire_mode = "none"
        self.wire_proc: Optional[subprocess.Popen] = None
        self.wire_stats_path = os.path.join(self.log_dir, "wire.json")
        self._old_handlers = {}
        self._sig_socks: Dict[str, socket.socket] = {}
        self._down = False
        self.host_a = Port(self.ns["hA"], "ho0", MACS["hostA"])
        self.host_b = Port(self.ns["hB"], "ho0", MACS["hostB"])

    # -- context ------------------------------------------------------------

    def __enter__(self):
        self._install_signals()
        atexit.register(self.down)
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return

        def handler(sig, frame):
            # unwind through the with-block (which calls down()); a second
            # signal while unwinding is ignored so cleanup finishes.
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(s, signal.SIG_IGN)
            raise KeyboardInterrupt("signal %d" % sig)

        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[s] = signal.signal(s, handler)
            except (ValueError, OSError):
                pass

    def _restore_signals(self):
        for s, h in self._old_handlers.items():
            try:
                signal.signal(s, h)
            except (ValueError, OSError, TypeError):
                pass
        self._old_handlers.clear()

    # -- bring up -----------------------------------------------------------

    _ip = staticmethod(links.ip)

    def exec_argv(self, ns_key: str, argv: List[str]) -> List[str]:
        return links.in_netns(self.ns[ns_key], argv)

    def run_in(self, ns_key: str, argv: List[str], check=True, timeout=30):
        return _run(self.exec_argv(ns_key, argv), check=check, timeout=timeout)

    def up(self):
        cleanup_leftovers()
        for k, ns in self.ns.items():
            try:
                _run(["ip", "netns", "add", ns])
            except TestbedError as e:
                raise TestbedError("cannot create network namespace %s: %s" % (ns, e)) from e
            self.created.append(ns)
            self._ip("link", "set", "lo", "up", ns=ns)
            for conf in ("all", "default"):
                links.disable_ipv6(conf, ns=ns)
        pairs = [  # (ns1, if1, mac1, ns2, if2, mac2)
            ("hA", "ho0", MACS["hostA"], "oA", "host0", MACS["offA_host"]),
            ("oA", "net0", MACS["offA_net"], "w", "wa", MACS["wire_a"]),
            ("w", "wb", MACS["wire_b"], "oB", "net0", MACS["offB_net"]),
            ("oB", "host0", MACS["offB_host"], "hB", "ho0", MACS["hostB"]),
        ]
        for n1, i1, m1, n2, i2, m2 in pairs:
            links.add_veth(i1, i2, ns=self.ns[n1], peer_ns=self.ns[n2], mac=m1, peer_mac=m2)
        host_ifs = {(self.ns["hA"], "ho0"), (self.ns["oA"], "host0")}
        host_ifs |= {(self.ns["oB"], "host0"), (self.ns["hB"], "ho0")}
        for n, i in [(p[0], p[1]) for p in pairs] + [(p[3], p[4]) for p in pairs]:
            ns = self.ns[n]
            mtu = self.host_mtu if self.host_mtu and (ns, i) in host_ifs else LINK_MTU
            self._ip("link", "set", i, "up", "promisc", "on", "mtu", str(mtu), ns=ns)
            if shutil.which("ethtool"):
                links.ethtool_off(i, ("tso", "gso", "gro", "tx", "rx"), ns=ns)
        self.set_wire("bridge")
        if self.start_offloads:
            self.start_offload("A")
            self.start_offload("B")
            self.wait_offloads()
        return self

    # -- the wire -------------------------------------------------------------

    def set_wire(
        self,
        mode: str = "bridge",
        every: int = 0,
        max_tamper: int = 0,
        direction: str = "ab",
        tool: Optional[List[str]] = None,
    ):
        """ "bridge": a Linux bridge between wa and wb; "tamper": the
        qo_traffic bridge, flipping a byte in every ``every``-th UDP datagram
        (at most max_tamper, direction "ab", "ba" or "both")."""
        from .traffic import traffic_tool

        ns = self.ns["w"]
        self._stop_wire()
        if mode == "bridge":
            self._ip(
                "link",
                "add",
                "br0",
                "type",
                "bridge",
                "stp_state",
                "0",
                "forward_delay",
                "0",
                ns=ns,
            )
            self._ip("link", "set", "br0", "up", ns=ns)
            for i in ("wa", "wb"):
                self._ip("link", "set", i, "master", "br0", ns=ns)
        elif mode == "tamper":
            tool = tool or traffic_tool(self.build_dir)
            argv = list(tool) + [
                "bridge",
                "--a",
                "wa",
                "--b",
                "wb",
                "--tamper-every",
                str(every),
                "--tamper-dir",
                direction,
                "--stats",
                self.wire_stats_path,
            ]
            if max_tamper:
                argv += ["--tamper-max", str(max_tamper)]
            try:
                os.unlink(self.wire_stats_path)
            except OSError:
                pass
            self.wire_proc = self._spawn("w", argv, "wire.log")
            t = time.monotonic()
            while not os.path.exists(self.wire_stats_path):
                if self.wire_proc.poll() is not None or time.monotonic() - t > 10:
                    raise TestbedError("tamper bridge did not start: " + self._tail("wire.log"))
                time.sleep(0.02)
        else:
            raise ValueError("wire mode %r" % mode)
        self.wire_mode = mode

    def wire_stats(self) -> dict:
        try:
            with open(self.wire_stats_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def _stop_wire(self):
        ns = self.ns["w"]
        if self.wire_mode == "bridge":
            self._ip("link", "del", "br0", ns=ns, check=False)
        if self.wire_proc is not None:
            self._terminate(self.wire_proc)
            self.wire_proc = None
        self.wire_mode = "none"

    # -- processes ------------------------------------------------------------

    def _spawn(
        self, ns_key: str, argv: List[str], log_name: str, env=None, stdin_pipe: bool = False
    ) -> subprocess.Popen:
        """A process in a namespace, its output to log_name.  stdin_pipe:
        an open pipe as stdin (testpmd exits at end of input)."""
        log = open(os.path.join(self.log_dir, log_name), "ab")
        p = subprocess.Popen(
            self.exec_argv(ns_key, argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        log.close()
        self.procs.append(p)
        return p

    def _tail(self, log_name: str, n: int = 30) -> str:
        try:
            with open(os.path.join(self.log_dir, log_name), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    @staticmethod
    def _terminate(p: subprocess.Popen, grace: float = 5.0):
        if p.poll() is not None:
            return
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 2.0)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            try:
                p.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    @staticmethod
    def offload_cpu(side: str) -> int:
        """The CPU every lcore of offload `side` is pinned to: A on 0, B on 1
        (when there is one), so the two offloads do not share a CPU."""
        return 0 if side == "A" else (1 if (os.cpu_count() or 1) > 1 else 0)

    def offload_argv(self, side: str) -> Offload:
        ns = self.ns["o" + side]
        other = "B" if side == "A" else "A"
        off = Offload(
            side=side,
            ns=ns,
            kind=self.offload_kind,
            log_path=os.path.join(self.log_dir, "offload%s.log" % side),
            file_prefix="%s-%s" % (self.tag, side),
            host_port=Port(ns, "host0", MACS["off%s_host" % side]),
            net_port=Port(ns, "net0", MACS["off%s_net" % side]),
        )
        cpu = self.offload_cpu(side)
        rtc = self.io_mode == "rtc"
        nl = self.workers + (0 if rtc else 1)
        qp = self.workers if rtc else 1
        lcores = ",".join("%d@%d" % (i, cpu) for i in range(nl))
        off.argv = (
            [
                self.app,
                "--lcores",
                lcores,
                "--no-huge",
                "-m",
                str(self.mem_mb),
                "--no-pci",
                "--file-prefix",
                off.file_prefix,
                "--log-level",
                "lib.eal:5",
                # rings sized for LINK_MTU frames: the default framesz
                # would cut them, and a cut frame is dropped (truncated_dropped)
                "--vdev",
                "net_af_packet0,iface=host0,qpairs=%d%s"
                % (
                    qp,
                    host_ring_args(self.host_mtu)
                    if self.host_mtu
                    else af_packet_ring_args(LINK_MTU),
                ),
                "--vdev",
                "net_af_packet1,iface=net0,qpairs=%d%s" % (qp, af_packet_ring_args(LINK_MTU)),
                "--",
                "--host-port",
                "0",
                "--net-port",
                "1",
                "--net-mtu",
                str(LINK_MTU),
            ]
            + (["--host-mtu", str(self.host_mtu)] if self.host_mtu else [])
            + [
                "--workers",
                str(self.workers),
                "--io-mode",
                self.io_mode,
                "--crypto",
                self.crypto,
            ]
            + (
                # crypto_aesni_mb does all four QUIC AEADs (aesni_gcm, the
                # app's default, only AES-GCM: the demo mixes suites)
                ["--cryptodev", "crypto_aesni_mb"] if self.crypto == "lookaside" else []
            )
            + [
                "--local-cid-len",
                str(self.local_cid_len_side.get(side, self.local_cid_len)),
                "--unknown",
                self.unknown,
                "--stats-interval",
                "0",
                "--idle-us",
                str(self.idle_us_side.get(side, self.idle_us)),
                "--compat",
                # the static encapsulation of compat-format entries
                "--encap-src-mac",
                MACS["off%s_net" % side],
                "--encap-dst-mac",
                MACS["off%s_net" % other],
                "--encap-src-ip",
                IPS[side],
                "--encap-dst-ip",
                IPS[other],
                "--encap-sport",
                str(UDP_PORT[side]),
                "--encap-dport",
                str(UDP_PORT[other]),
            ]
            + self.app_args
        )
        return off

    def start_offload(self, side: str) -> Offload:
        off = self.offload_argv(side)
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        off.proc = self._spawn("o" + side, off.argv, os.path.basename(off.log_path), env=env)
        self.offloads[side] = off
        return off

    def wait_offloads(self, timeout: float = 30.0):
        """Until both offloads answer (stats file / telemetry socket); raises
        with the log when one exits or does not come up."""
        t = time.monotonic()
        pending = dict(self.offloads)
        while pending:
            for side, off in list(pending.items()):
                if not off.alive():
                    raise TestbedError(
                        "offload %s (%s) exited with %s:\n%s"
                        % (side, off.kind, off.proc.returncode, off.log_tail())
                    )
                sock = os.path.join(DPDK_RUN_DIR, off.file_prefix, "dpdk_telemetry.v2")
                ready = os.path.exists(sock) and self._dpdk_ready(off)
                if ready:
                    del pending[side]
            if pending and time.monotonic() - t > timeout:
                side = next(iter(pending))
                raise TestbedError(
                    "offload %s did not come up in %.0f s:\n%s"
                    % (side, timeout, pending[side].log_tail())
                )
            time.sleep(0.05)

    @staticmethod
    def _dpdk_ready(off: Offload) -> bool:
        try:
            dpdk_telemetry(off.file_prefix, "/ethdev/list")
        except (OSError, ValueError):
            return False
        # the app prints "quicoff-dpdk: running (...)" once its lcores run
        tail = off.log_tail(200).lower()
        return "running" in tail or "ready" in tail

    def stop_offloads(self):
        for off in self.offloads.values():
            if off.proc is not None:
                self._terminate(off.proc)

    def stop_offload(self, side: str):
        """Stops one offload (the bench measures offload A alone)."""
        off = self.offloads.pop(side, None)
        if off is not None and off.proc is not None:
            self._terminate(off.proc)

    def restart_offloads(self):
        self.stop_offloads()
        self.offloads.clear()
        self.start_offload("A")
        self.start_offload("B")
        self.wait_offloads()

    # -- connections ----------------------------------------------------------

    def host_socket(self, side: str, proto: int = ETH_P_ALL) -> socket.socket:
        port = self.host_a if side == "A" else self.host_b
        return ns_socket(port.ns, port.iface, proto)

    def encap(self, src: str) -> dict:
        """Encapsulation of packets that offload ``src`` sends to the other."""
        dst = "B" if src == "A" else "A"
        return {
            "src_mac": MACS["off%s_net" % src],
            "dst_mac": MACS["off%s_net" % dst],
            "src_ip": IPS[src],
            "dst_ip": IPS[dst],
            "src_port": UDP_PORT[src],
            "dst_port": UDP_PORT[dst],
        }

    def signal(self, side: str, frames: List[bytes], proto=None, timeout: float = 2.0) -> list:
        """Sends signaling frames from host ``side`` to its offload; returns
        the replies the protocol waits for (v1 ACKs), [] for compat."""
        s = self._sig_socks.get(side)
        if s is None:
            s = self._sig_socks[side] = self.host_socket(side, wire.ETHERTYPE_SIGNAL)
            _attach_no_data_filter(s)
        else:
            _drain(s)
        out = []
        for fr in frames:
            s.send(fr)
            if proto is not None and getattr(proto, "wants_ack", False):
                try:
                    out.append(proto.wait_ack(s, fr, timeout))
                except TimeoutError as e:
                    self.check_offloads()
                    raise TimeoutError("%s (offload %s is running)" % (e, side)) from None
        if frames:
            self.check_offloads()
        return out

    def check_offloads(self):
        """Raises TestbedError (with the log) if an offload has exited."""
        for side, off in self.offloads.items():
            if off.proc is not None and not off.alive():
                rc = off.proc.returncode
                why = (
                    "killed by signal %d%s" % (-rc, " (segmentation fault)" if rc == -11 else "")
                    if rc < 0
                    else "exit status %d" % rc
                )
                raise TestbedError(
                    "offload %s (%s) died: %s; its log ends:\n%s"
                    % (side, off.kind, why, off.log_tail(15))
                )

    def install(self, flows, proto, update_keys: bool = False) -> list:
        """Installs each flow: its TX entry in the sender's offload, its RX
        entry in the receiver's.  Returns the v1 ACKs (if any)."""
        replies = []
        for fl in flows:
            src = "A" if fl.direction == "ab" else "B"
            dst = "B" if src == "A" else "A"
            sp = self.host_a if src == "A" else self.host_b
            dp = self.host_a if dst == "A" else self.host_b
            so, do = MACS["off%s_host" % src], MACS["off%s_host" % dst]
            replies += self.signal(src, proto.add_tx(fl, self.encap(src), so, sp.mac), proto)
            replies += self.signal(dst, proto.add_rx(fl, self.encap(dst), do, dp.mac), proto)
        if not getattr(proto, "wants_ack", False):
            time.sleep(0.3)  # compat has no acknowledgement: let the offloads take it in
        return replies

    def prepare_key_update(self, flows, proto) -> list:
        """What the offloads need before the flows' key update (v1: nothing,
        they derive the next keys from the secret; compat has no key update
        and raises ValueError for a flow with one)."""
        replies = []
        for fl in flows:
            src = "A" if fl.direction == "ab" else "B"
            dst = "B" if src == "A" else "A"
            for side, role in ((src, "tx"), (dst, "rx")):
                hp = self.host_a if side == "A" else self.host_b
                replies += self.signal(
                    side, proto.key_update(fl, role, MACS["off%s_host" % side], hp.mac), proto
                )
        if not getattr(proto, "wants_ack", False):
            time.sleep(0.2)
        return replies

    # -- take down ----------------------------------------------------------

    def down(self):
        if self._down:
            return
        self._down = True
        for sk in self._sig_socks.values():
            sk.close()
        self._sig_socks.clear()
        try:
            atexit.unregister(self.down)
        except Exception:
            pass
        for p in reversed(self.procs):
            try:
                self._terminate(p)
            except Exception:
                pass
        for ns in reversed(self.created):
            links.kill_netns_procs(ns, grace=2.0)
            _run(["ip", "netns", "del", ns], check=False)
        for side in ("A", "B"):
            shutil.rmtree(
                os.path.join(DPDK_RUN_DIR, "%s-%s" % (self.tag, side)), ignore_errors=True
            )
        if self._own_log_dir and not os.environ.get("QUICOFF_KEEP_LOGS"):
            shutil.rmtree(self.log_dir, ignore_errors=True)
        self._restore_signals()

    # -- helpers ------------------------------------------------------------

    def resources(self) -> Dict[str, List[str]]:
        """What of this testbed exists now (for tests: empty after down())."""
        return {
            "netns": [n for n in _netns_list() if n.startswith(self.tag)],
            "dpdk": [
                d
                for d in (os.listdir(DPDK_RUN_DIR) if os.path.isdir(DPDK_RUN_DIR) else [])
                if d.startswith(self.tag)
            ],
            "procs": [str(p.pid) for p in self.procs if p.poll() is None],
        }

    def describe(self) -> str:
        kind = "quicoff-dpdk (%s, %d worker%s, %s, %s crypto, --idle-us %d)" % (
            self.app,
            self.workers,
            "s" if self.workers != 1 else "",
            "run to completion" if self.io_mode == "rtc" else "pipeline",
            self.crypto,
            self.idle_us,
        )
        return (
            "testbed %s: hostA[%s] - offloadA - wire(%s) - offloadB - hostB[%s]; offloads: %s"
            % (self.tag, self.ns["hA"], self.wire_mode, self.ns["hB"], kind)
        )


if __name__ == "__main__":  # python -m quicoff_lab.testbed [--cleanup-all]
    gone = cleanup_leftovers(all_runs="--cleanup-all" in sys.argv)
    print("removed: %s" % (", ".join(gone) or "nothing"))
