# SPDX-License-Identifier: Apache-2.0
"""``quicoff demo --stack``: real QUIC stacks on the two-host testbed.

Host A runs an HTTP/3 file server (integrations/ngtcp2's qo-h3-server) in
each of its offload modes, host B an unmodified HTTP/3 client (Debian's
ngtcp2 ``gtlsclient``, and aioquic through lab/quicoff_lab/h3_client.py);
between them the testbed's two quicoff-dpdk and the wire (testbed.py). Per
server, mode and client: a 1 MB and a large download (100 MB, ``--quick``
20 MB) checked by SHA-256 with a key update started by each side during the
transfer, and 50 requests of 1 KB (requests/s). The wire (the veth between
offload A and the wire's bridge) is captured for the whole run; tshark must
decrypt every 1-RTT packet of it with the servers' TLS key log, and no piece
of the served files may be found in it.

Figures per run (the JSON of issue 10, "The JSON"): the server's CPU
(user + system, from its ``--stats``) per GB, offload A's busy time
(quicoff-dpdk's ``busy_cycles``: poll rounds that found work) per GB, the
offload's packet counts against the stack's own 1-RTT counts, the stack's
1-RTT AEAD calls, host frames per packet. docs/demo.md, "Real QUIC stacks".

The modes and clients that exist are listed in SERVERS and CLIENTS: a mode
or a client added to a stack is one entry there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from . import links
from . import testbed as tbm
from .certs import self_signed
from .checkout import repo_root

GB = 1e9
PORT = 4433
SERVER_IP = tbm.IPS["A"]
CLIENT_IP = tbm.IPS["B"]
SMALL_REQUESTS = 50
SMALL_SIZE = 1024
RUN_TIMEOUT = 300.0
HOST_MTU = 65535  # the host links (host <-> offload), the largest a DATA_TRAIN frame can use

#: the JSON keys every run has (issue 10, "The JSON"); more may follow them
RUN_KEYS = (
    "stack",
    "client",
    "mode",
    "both_offloaded",
    "bytes",
    "sha256_ok",
    "key_updates_c2s",
    "key_updates_s2c",
    "offload_tx_packets",
    "offload_rx_packets",
    "stack_1rtt_packets_sent",
    "stack_1rtt_packets_received",
    "host_1rtt_aead_calls",
    "host_cpu_s_per_gb",
    "offload_busy_s_per_gb",
    "frames_per_packet",
)


def _frames_per_packet(st: dict, frames: Optional[int], packets: int) -> Optional[float]:
    """A dpdk run's host -> offload data frames per 1-RTT packet."""
    if st.get("frames_per_packet") is not None:
        return float(st["frames_per_packet"])
    return (frames / packets) if (frames is not None and packets) else None


# ---------------------------------------------------------------------------
# the servers (host A) and clients (host B)


@dataclass
class Server:
    """A server program: its modes and how to start it in one of them."""

    stack: str
    modes: List[str]
    argv: Callable[["Site", str, dict], List[str]]  # (site, mode, options) -> argv
    cid_len: int  # the length of the CIDs it chooses: offload A's --local-cid-len


def _ngtcp2_argv(site: "Site", mode: str, o: dict) -> List[str]:
    argv = [
        os.path.join(site.build_dir, "integrations", "ngtcp2", "qo-h3-server"),
        "-d",
        site.htdocs,
        "--offload",
        mode,
        "--once",
        "--stats",
        o["stats"],
        "--keylog",
        o["keylog"],
    ]
    if o.get("key_update_after"):
        argv += ["--key-update-after", str(o["key_update_after"])]
    if mode == "dpdk":
        argv += ["--host-if", "ho0", "--offload-mac", tbm.MACS["offA_host"]]
    return argv + [SERVER_IP, str(PORT), site.key, site.cert]


def _aioquic_server_argv(site: "Site", mode: str, o: dict) -> List[str]:
    """quicoff.aioquic_server: qo-h3-server's command line and --stats."""
    argv = [sys.executable, "-m", "quicoff.aioquic_server", "-d", site.htdocs]
    argv += ["--offload", mode, "--once", "--stats", o["stats"], "--keylog", o["keylog"]]
    if o.get("key_update_after"):
        argv += ["--key-update-after", str(o["key_update_after"])]
    if mode == "dpdk":
        argv += ["--host-if", "ho0"]
    return argv + [SERVER_IP, str(PORT), site.key, site.cert]


#: stack -> server. A mode that a server gains is one more name in its list.
SERVERS: Dict[str, Server] = {
    "ngtcp2": Server("ngtcp2", ["none", "inproc", "dpdk"], _ngtcp2_argv, cid_len=16),
    # aioquic's default connection_id_length
    "aioquic": Server("aioquic", ["none", "inproc", "dpdk"], _aioquic_server_argv, cid_len=8),
}


@dataclass
class Client:
    """An unmodified HTTP/3 client on host B."""

    name: str
    argv: Callable[["Site", List[str], dict], List[str]]  # (site, urls, options) -> argv
    offloaded: bool = False  # runs through offload B (--offload dpdk)
    cid_len: int = 8  # offloaded: the CIDs it chooses, offload B's --local-cid-len
    one_url: bool = False  # downloads one URL per run: no requests run
    stacks: tuple = ()  # the servers it is run against (empty: all)
    # starts its key update only at a delay after the handshake and closes
    # the connection if its stack refuses it then (gtlsclient's
    # --key-update=Nms): such a run gets updates started by one side only
    timed_key_update: bool = False


def _gtlsclient_argv(site: "Site", urls: List[str], o: dict) -> List[str]:
    argv = [
        shutil.which("gtlsclient") or "gtlsclient",
        "-q",
        "--exit-on-all-streams-close",
        "--download",
        o["download"],
        "--max-data",
        "64M",
        "--max-stream-data-bidi-local",
        "32M",
    ]
    if o.get("key_update_ms"):
        argv.append("--key-update=%dms" % o["key_update_ms"])
    return argv + [SERVER_IP, str(PORT)] + urls


def key_updates(client: Client, size: int, sopts: dict, copts: dict) -> None:
    """Who starts the key updates of a bulk download (a key update in each
    direction is the verdict; the peer's answer updates the other one).

    A client with a byte trigger updates a quarter of the way in and the
    server every half of the file. Each holds a trigger back until RFC 9001
    §6.5 allows the update (three PTOs after the previous one, a packet of
    the current phase acknowledged): ngtcp2 by itself, quicoff's aioquic
    runtime by its own check, the lab's plain aioquic client by starting
    only the connection's first (aioquic alone does not check, and a strict
    peer drops what it sends with keys it cannot have derived yet: the
    download stalls). So whichever side comes first, the other waits.

    gtlsclient has only a timer after the handshake, and when ngtcp2 refuses
    its update then (within three PTOs of the server's) it closes the
    connection mid-download. No timing is safe against a byte trigger on a
    machine of unknown speed, so a run with it has one initiator: the server
    for the short file (the timer could fire after the end), the client's
    timer for the long one (50 ms, long before the end)."""
    server_every = max(size // 2, 64 * 1024)
    if not client.timed_key_update:
        copts["key_update_after"] = size // 4
        sopts["key_update_after"] = server_every
    elif size <= (4 << 20):
        sopts["key_update_after"] = server_every
    else:
        copts["key_update_ms"] = 50


def _aioquic_argv(site: "Site", urls: List[str], o: dict) -> List[str]:
    argv = [sys.executable, "-m", "quicoff_lab.h3_client", "--download", o["download"]]
    argv += ["--stats", o["client_stats"], "--timeout", "60"]
    if o.get("key_update_after"):
        argv += ["--key-update-after", str(o["key_update_after"])]
    return argv + urls


def _offloaded_aioquic_argv(site: "Site", urls: List[str], o: dict) -> List[str]:
    """quicoff.aioquic_client --offload dpdk: host B's own 1-RTT protection
    in offload B (both hosts offloaded)."""
    argv = [sys.executable, "-m", "quicoff.aioquic_client", "--offload", "dpdk"]
    argv += ["--host-if", "ho0", "--download", o["download"], "--timeout", "60"]
    argv += ["--stats", o["client_stats"]]
    if o.get("key_update_after"):
        argv += ["--key-update-after", str(o["key_update_after"])]
    return argv + [SERVER_IP, str(PORT)] + urls


def _offloaded_ngtcp2_argv(site: "Site", urls: List[str], o: dict) -> List[str]:
    """integrations/ngtcp2's qo-h3-client --offload dpdk (one URL)."""
    (url,) = urls
    path = url.split("/", 3)[3]
    argv = [os.path.join(site.build_dir, "integrations", "ngtcp2", "qo-h3-client")]
    argv += ["--offload", "dpdk", "--host-if", "ho0", "--offload-mac", tbm.MACS["offB_host"]]
    argv += ["-o", os.path.join(o["download"], os.path.basename(path))]
    argv += ["--stats", o["client_stats"]]
    if o.get("key_update_after"):
        argv += ["--key-update-after", str(o["key_update_after"])]
    return argv + [SERVER_IP, str(PORT), "/" + path]


#: the clients of host B. One with its own offload (both hosts offloaded) is
#: one more entry with offloaded=True.
CLIENTS: List[Client] = [
    Client("gtlsclient", _gtlsclient_argv, timed_key_update=True),
    Client("aioquic", _aioquic_argv),
    Client("aioquic+offload", _offloaded_aioquic_argv, offloaded=True, cid_len=8),
    # ngtcp2's server only: aioquic refuses its ClientHello (a non-empty
    # legacy_session_id, which RFC 9001 §8.4 forbids in QUIC)
    Client(
        "qo-h3-client+offload",
        _offloaded_ngtcp2_argv,
        offloaded=True,
        cid_len=16,
        one_url=True,
        stacks=("ngtcp2",),
    ),
]


# ---------------------------------------------------------------------------
# the files served


@dataclass
class Site:
    dir: str
    build_dir: str
    sizes: Dict[str, int]
    htdocs: str = ""
    key: str = ""
    cert: str = ""
    digests: Dict[str, str] = field(default_factory=dict)

    def make(self) -> "Site":
        self.htdocs = os.path.join(self.dir, "htdocs")
        os.makedirs(self.htdocs, exist_ok=True)
        self.key = os.path.join(self.dir, "key.pem")
        self.cert = os.path.join(self.dir, "cert.pem")
        self_signed(self.dir)
        files = dict(self.sizes)
        files.update({small_name(i): SMALL_SIZE for i in range(SMALL_REQUESTS)})
        for name, size in files.items():
            path = os.path.join(self.htdocs, name)
            h = hashlib.sha256()
            with open(path, "wb") as f:
                left = size
                while left:
                    chunk = os.urandom(min(left, 1 << 20))
                    h.update(chunk)
                    f.write(chunk)
                    left -= len(chunk)
            self.digests[name] = h.hexdigest()
        return self

    def largest(self) -> str:
        return os.path.join(self.htdocs, max(self.sizes, key=lambda n: self.sizes[n]))


def small_name(i: int) -> str:
    return "small-%02d" % i


def _sha256_file(path: str) -> Optional[str]:
    if not os.path.exists(path):
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------
# offload counters


class OffloadReader:
    """quicoff-dpdk's counters of one side through DPDK telemetry."""

    KEYS = ("busy_cycles", "tx_packets", "rx_packets", "tx_dropped", "rx_dropped")

    def __init__(self, file_prefix: str):
        self.prefix = file_prefix
        opts = tbm.dpdk_telemetry(file_prefix, "/quicoff/options")["/quicoff/options"]
        self.hz = float(opts["tsc_hz"])

    def read(self) -> Dict[str, int]:
        st = tbm.dpdk_telemetry(self.prefix, "/quicoff/stats")["/quicoff/stats"]
        return {k: int(st.get(k, 0)) for k in self.KEYS}


def _delta(a: Dict[str, int], b: Dict[str, int]) -> Dict[str, int]:
    return {k: b[k] - a.get(k, 0) for k in b}


# ---------------------------------------------------------------------------
# the demo


class StackDemo:
    def __init__(self, args, log):
        self.a = args
        self.log = log
        self.quick = bool(args.quick)
        self.out = os.path.join(args.out, "stack")
        self.build_dir = args.build_dir or os.path.join(str(repo_root()), "build")
        self.pcap = os.path.abspath(args.pcap or os.path.join(self.out, "wire.pcap"))
        self.keylog = os.path.abspath(args.keylog or os.path.join(self.out, "keys.log"))
        self.runs: List[dict] = []
        self.notes: List[str] = []

    # -- preconditions -------------------------------------------------------

    def missing(self) -> List[str]:
        need = []
        for tool, pkg in (
            ("gtlsclient", "ngtcp2-client"),
            ("tshark", "tshark"),
            ("tcpdump", "tcpdump"),
            ("openssl", "openssl"),
        ):
            if not shutil.which(tool):
                need.append("%s (apt-get install %s)" % (tool, pkg))
        srv = os.path.join(self.build_dir, "integrations", "ngtcp2", "qo-h3-server")
        if not os.path.exists(srv):
            need.append(
                "%s (built by meson when libngtcp2-dev, libngtcp2-crypto-gnutls-dev, "
                "libnghttp3-dev and libgnutls28-dev are installed)" % srv
            )
        try:
            import aioquic  # noqa: F401
        except ImportError:
            need.append("aioquic (pip install aioquic: the venv's test extra)")
        return need

    # -- one run -------------------------------------------------------------

    def _env(self) -> dict:
        env = dict(os.environ)
        lab = os.path.join(str(repo_root()), "lab")
        env["PYTHONPATH"] = lab + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def _start_server(self, tb, server: Server, mode: str, opts: dict, log_path: str):
        argv = links.in_netns(tb.ns["hA"], server.argv(self.site, mode, opts))
        logf = open(log_path, "wb")
        p = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15:
            with open(log_path, errors="replace") as f:
                text = f.read()
            if "listening" in text:
                return p
            if p.poll() is not None:
                raise RuntimeError("%s server exited: %s" % (server.stack, text[-1500:]))
            time.sleep(0.05)
        p.kill()
        raise RuntimeError("%s server did not start in 15 s" % server.stack)

    def one_run(
        self, tb, server: Server, mode: str, client: Client, kind: str, name: Optional[str]
    ) -> dict:
        """kind "bulk": download `name`, a key update started by each side;
        kind "requests": SMALL_REQUESTS files of SMALL_SIZE on one connection."""
        tag = "%s-%s-%s-%s" % (server.stack, mode, client.name, name or kind)
        work = os.path.join(self.out, "runs", tag)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        names = [name] if kind == "bulk" else [small_name(i) for i in range(SMALL_REQUESTS)]
        size = sum(os.path.getsize(os.path.join(self.site.htdocs, n)) for n in names)
        sopts = {"stats": os.path.join(work, "server.json"), "keylog": self.keylog}
        copts = {
            "download": os.path.join(work, "download"),
            "client_stats": os.path.join(work, "client.json"),
        }
        if kind == "bulk":
            key_updates(client, size, sopts, copts)
        os.makedirs(copts["download"])  # gtlsclient does not make it (and exits 0)
        urls = ["https://%s:%d/%s" % (SERVER_IP, PORT, n) for n in names]
        readers = {s: OffloadReader(tb.offloads[s].file_prefix) for s in ("A", "B")}
        before = {s: r.read() for s, r in readers.items()}
        srv = self._start_server(tb, server, mode, sopts, os.path.join(work, "server.log"))
        t0 = time.monotonic()
        try:
            with open(os.path.join(work, "client.log"), "wb") as clog:
                try:
                    client_rc = subprocess.run(
                        links.in_netns(tb.ns["hB"], client.argv(self.site, urls, copts)),
                        stdout=clog,
                        stderr=subprocess.STDOUT,
                        timeout=RUN_TIMEOUT,
                        env=self._env(),
                    ).returncode
                except subprocess.TimeoutExpired:  # a failed run, not a failed demo
                    client_rc = -1
            elapsed = time.monotonic() - t0
            try:
                srv.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srv.terminate()  # writes its --stats on SIGTERM
                srv.wait(timeout=10)
        finally:
            if srv.poll() is None:
                srv.kill()
                srv.wait()
        time.sleep(0.2)  # let the offloads' counters settle
        after = {s: r.read() for s, r in readers.items()}
        d = {s: _delta(before[s], after[s]) for s in readers}
        try:
            with open(sopts["stats"]) as f:
                st = json.load(f)
        except (OSError, ValueError):
            st = {}
        sha_ok = client_rc == 0 and all(
            _sha256_file(os.path.join(copts["download"], n)) == self.site.digests[n] for n in names
        )
        if not sha_ok:
            with open(os.path.join(work, "client.log"), errors="replace") as f:
                self.log("%s: client exit %d; log ends: %s" % (tag, client_rc, f.read()[-800:]))
        cpu = st.get("cpu_user_s", 0.0) + st.get("cpu_sys_s", 0.0)
        busy = {s: d[s]["busy_cycles"] / readers[s].hz for s in d}
        if mode == "dpdk":  # the offload is offload A: its own counters
            off_tx, off_rx = d["A"]["tx_packets"], d["A"]["rx_packets"]
        else:  # inproc: libquicoff in the server (none: 0)
            off_tx, off_rx = st.get("offload_tx_packets", 0), st.get("offload_rx_packets", 0)
        # host -> offload data frames: qo-h3-server's host_frames_sent, or
        # the aioquic runtime's host port counters (DATA_TO_OFFLOAD + trains)
        frames = st.get("host_frames_sent", st.get("host_port", {}).get("data_sent"))
        run = {
            "stack": server.stack,
            "client": client.name,
            "mode": mode,
            "both_offloaded": client.offloaded and mode == "dpdk",
            "bytes": size,
            "sha256_ok": sha_ok,
            "key_updates_c2s": st.get("key_updates_c2s", 0),
            "key_updates_s2c": st.get("key_updates_s2c", 0),
            "offload_tx_packets": off_tx,
            "offload_rx_packets": off_rx,
            "stack_1rtt_packets_sent": st.get("stack_1rtt_packets_sent", 0),
            "stack_1rtt_packets_received": st.get("stack_1rtt_packets_received", 0),
            "host_1rtt_aead_calls": st.get("host_1rtt_aead_calls", 0),
            "host_cpu_s_per_gb": cpu * GB / size,
            "offload_busy_s_per_gb": busy["A"] * GB / size,
            # host -> offload frames per packet: only where frames exist
            # (dpdk mode). qo-h3-server's --stats has it (DATA_* frames over
            # the 1-RTT packets it handed over, trains counted as one frame);
            # else the frames it sent over the offload's packet count
            "frames_per_packet": _frames_per_packet(st, frames, off_tx) if mode == "dpdk" else None,
            # beyond the keys
            "kind": kind,
            "file": name if kind == "bulk" else "%d x %s" % (len(names), SMALL_SIZE),
            "seconds": elapsed,
            "requests_per_s": (len(names) / elapsed) if kind == "requests" else None,
            "offload_b_busy_s_per_gb": busy["B"] * GB / size,
            "offload_a": d["A"],
            "offload_b": d["B"],
            "server_stats": st,
        }
        assert set(RUN_KEYS) <= set(run)
        self.log(
            "%-34s %s  %7.2f s  cpu %6.2f s/GB  offload A busy %6.2f s/GB  ku c2s %d s2c %d%s"
            % (
                tag,
                "sha256 ok" if sha_ok else "SHA256 BAD",
                elapsed,
                run["host_cpu_s_per_gb"],
                run["offload_busy_s_per_gb"],
                run["key_updates_c2s"],
                run["key_updates_s2c"],
                ("  %.0f req/s" % run["requests_per_s"]) if kind == "requests" else "",
            )
        )
        return run

    # -- the wire ------------------------------------------------------------

    def start_capture(self, tb) -> subprocess.Popen:
        os.makedirs(os.path.dirname(self.pcap), exist_ok=True)
        # wa: the wire's port towards offload A; every packet between the
        # hosts crosses it. -Z root: write the file as root (tcpdump drops
        # to its own user otherwise, which may not write here)
        argv = ["tcpdump", "-i", "wa", "-n", "-s", "0", "-B", "65536", "-U", "-Z", "root"]
        argv += ["-w", self.pcap, "udp"]
        errp = os.path.join(self.out, "tcpdump.log")
        errf = open(errp, "wb")
        p = subprocess.Popen(
            links.in_netns(tb.ns["w"], argv), stdout=errf, stderr=errf, start_new_session=True
        )
        errf.close()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10:
            with open(errp, errors="replace") as f:
                if "listening" in f.read():
                    return p
            if p.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("tcpdump did not start: %s" % open(errp, errors="replace").read())

    def stop_capture(self, p: subprocess.Popen) -> int:
        """Stops tcpdump; returns the packets it says the kernel dropped."""
        time.sleep(0.3)
        p.send_signal(2)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        with open(os.path.join(self.out, "tcpdump.log"), errors="replace") as f:
            m = re.search(r"(\d+) packets? dropped by kernel", f.read())
        return int(m.group(1)) if m else -1

    # -- the whole demo ------------------------------------------------------

    def plan(self) -> List[tuple]:
        bulk = ["1m", "20m"] if self.quick else ["1m", "100m"]
        plan = []
        for server in SERVERS.values():
            for mode in server.modes:
                for client in CLIENTS:
                    if (client.offloaded and mode != "dpdk") or (
                        client.stacks and server.stack not in client.stacks
                    ):
                        continue
                    for name in bulk:
                        plan.append((server, mode, client, "bulk", name))
                    if not client.one_url:
                        plan.append((server, mode, client, "requests", None))
        return plan

    def run(self) -> int:
        need = self.missing()
        if need:
            self.log("--stack needs: " + "; ".join(need))
            return 2
        os.makedirs(self.out, exist_ok=True)
        sizes = {"1m": 1 << 20}
        sizes.update({"20m": 20 << 20} if self.quick else {"100m": 100 << 20})
        self.site = Site(os.path.join(self.out, "site"), self.build_dir, sizes).make()
        for p in (self.keylog,):
            open(p, "w").close()
        plan = self.plan()
        self.log(
            "%d runs: %s x clients %s"
            % (
                len(plan),
                ", ".join("%s (%s)" % (s.stack, "|".join(s.modes)) for s in SERVERS.values()),
                ", ".join(c.name for c in CLIENTS),
            )
        )
        try:
            # jumbo host links: qo-h3-server's DATA_TRAIN frames are capped by
            # its interface's MTU (docs/ngtcp2.md), and at the wire's 9,000
            # bytes a train holds at most six packets
            tb = tbm.Testbed(build_dir=self.build_dir, log_dir=None, host_mtu=HOST_MTU)
        except tbm.TestbedError as e:
            self.log("testbed: %s" % e)
            return 2
        dropped = -1
        # the offloads start steering by the CID lengths of the first run's stacks
        tb.local_cid_len_side["A"] = plan[0][0].cid_len
        if plan[0][2].offloaded:
            tb.local_cid_len_side["B"] = plan[0][2].cid_len
        try:
            with tb:
                self.log(tb.describe())
                self.hosts_ip(tb)
                cap = self.start_capture(tb)
                try:
                    for server, mode, client, kind, name in plan:
                        self.offloads_for(tb, server, client)
                        self.runs.append(self.one_run(tb, server, mode, client, kind, name))
                        tb.check_offloads()
                finally:
                    dropped = self.stop_capture(cap)
        except (tbm.TestbedError, RuntimeError) as e:
            self.log("testbed: %s" % e)
            return 2
        try:
            res = self.results(dropped)  # runs tshark and quicoff decrypt over the capture
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            self.log("wire check of the capture failed: %s" % e)
            return 2
        self.report(res)
        return 0 if all(res["verdicts"].values()) else 1

    def offloads_for(self, tb, server: Server, client: Client) -> None:
        """Restarts the offloads when the stacks of this run choose CIDs of
        other lengths than those the offloads steer by."""
        want = {"A": server.cid_len}
        if client.offloaded:
            want["B"] = client.cid_len
        if all(tb.local_cid_len_side.get(s, tb.local_cid_len) == n for s, n in want.items()):
            return
        tb.local_cid_len_side.update(want)
        self.log("restarting the offloads: --local-cid-len %s" % tb.local_cid_len_side)
        tb.restart_offloads()
        # their logs still hold the last run's "running": wait for telemetry
        t0 = time.monotonic()
        while True:
            try:
                for s in ("A", "B"):
                    OffloadReader(tb.offloads[s].file_prefix).read()
                return
            except (OSError, ValueError, TypeError, KeyError):
                if time.monotonic() - t0 > 30:
                    raise
                time.sleep(0.1)

    @staticmethod
    def hosts_ip(tb) -> None:
        """Addresses on the hosts' interfaces (the testbed itself has none:
        its own traffic is raw Ethernet) and each other's MAC, so no ARP
        round trip is part of a measurement. The offloads pass the stacks'
        plain UDP through unchanged (docs/dpdk.md, "Classification")."""
        for side, peer in (("A", "B"), ("B", "A")):
            ns = tb.ns["h" + side]
            links.ip("addr", "add", tbm.IPS[side] + "/24", "dev", "ho0", ns=ns)
            links.ip(
                "neigh",
                "replace",
                tbm.IPS[peer],
                "lladdr",
                tbm.MACS["host" + peer],
                "dev",
                "ho0",
                "nud",
                "permanent",
                ns=ns,
            )

    # -- results -------------------------------------------------------------

    def results(self, capture_dropped: int) -> dict:
        wire = check_wire(self.pcap, self.keylog, self.site)
        runs = self.runs
        offloaded = [r for r in runs if r["mode"] != "none"]
        bulk = [r for r in runs if r["kind"] == "bulk"]
        verdicts = {
            "sha256_ok": bool(runs) and all(r["sha256_ok"] for r in runs),
            "key_updates_both_ways": bool(bulk)
            and all(r["key_updates_c2s"] >= 1 and r["key_updates_s2c"] >= 1 for r in bulk),
            "no_host_aead_when_offloaded": bool(offloaded)
            and all(r["host_1rtt_aead_calls"] == 0 for r in offloaded),
            "offload_counts_equal_stack": bool(offloaded)
            and all(
                r["offload_tx_packets"] == r["stack_1rtt_packets_sent"]
                and r["offload_rx_packets"] == r["stack_1rtt_packets_received"]
                for r in offloaded
            ),
            "no_served_bytes_on_wire": wire["pieces_found"] == 0 and wire["pieces_checked"] > 0,
            # tshark cannot place a 1-RTT packet that overtook its
            # connection's ServerHello: quicoff decrypt (below) checks those
            "tshark_decrypts_every_1rtt_packet_after_server_hello": wire["short_packets"] > 0
            and wire["undecrypted"] == 0,
            "quicoff_decrypt_decrypts_every_packet": wire["quicoff_decrypt"]["exit"] == 0
            and wire["quicoff_decrypt"]["ok"] > 0,
        }
        return {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "quick": self.quick,
            "runs": runs,
            "verdicts": verdicts,
            "wire_pcap": self.pcap,
            "keylog": self.keylog,
            "served_file": self.site.largest(),
            "wire": dict(wire, capture_dropped=capture_dropped),
            "notes": self.notes,
        }

    def report(self, res: dict) -> None:
        print()
        print(
            "%-7s %-7s %-20s %-9s %9s %8s %10s %10s %7s %9s %9s"
            % (
                "stack",
                "mode",
                "client",
                "file",
                "cpu s/GB",
                "busy s/GB",
                "1rtt sent",
                "offl tx",
                "aead",
                "req/s",
                "s",
            )
        )
        for r in res["runs"]:
            print(
                "%-7s %-7s %-20s %-9s %9.2f %8.2f %10d %10d %7d %9s %9.2f"
                % (
                    r["stack"],
                    r["mode"],
                    r["client"],
                    r["file"].split(" ")[0] + ("x1K" if r["kind"] == "requests" else ""),
                    r["host_cpu_s_per_gb"],
                    r["offload_busy_s_per_gb"],
                    r["stack_1rtt_packets_sent"],
                    r["offload_tx_packets"],
                    r["host_1rtt_aead_calls"],
                    "%.0f" % r["requests_per_s"] if r["requests_per_s"] else "-",
                    r["seconds"],
                )
            )
        w = res["wire"]
        qd = w["quicoff_decrypt"]
        print(
            "\nwire: %d 1-RTT packets, %d not decrypted by tshark (first: frames %s), %d before "
            "their connection's ServerHello (frames %s); quicoff decrypt: %d packets ok, %d "
            "failed, %d without keys; %d pieces of the served files looked for, %d found; "
            "capture dropped %d"
            % (
                w["short_packets"],
                w["undecrypted"],
                ", ".join(w["first_undecrypted"]) or "-",
                w["before_server_hello"],
                ", ".join(w["first_before_server_hello"]) or "-",
                qd["ok"],
                qd["failed"],
                qd["no_keys"],
                w["pieces_checked"],
                w["pieces_found"],
                w["capture_dropped"],
            )
        )
        print("\nverdicts:")
        for k, v in res["verdicts"].items():
            print("  %-36s %s" % (k, "PASS" if v else "FAIL"))
        plot_path = self.a.plot or os.path.join(self.out, "stack_cpu.png")
        if not self.a.no_plots:
            try:
                plot(res, plot_path)
                print("plot: %s" % plot_path)
            except ImportError:
                note = "plot skipped: matplotlib is not installed (pip install matplotlib)"
                res["notes"].append(note)
                print(note)
        path = self.a.json or os.path.join(self.out, "results.json")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
        print("results: %s; wire: %s; key log: %s" % (path, res["wire_pcap"], res["keylog"]))


# ---------------------------------------------------------------------------
# checks of the wire capture (also used by tests/dpdk/test_stack_demo.py)


def tshark_short_packets(pcap: str, keylog: str, port: int = PORT) -> dict:
    """tshark's view of the capture: how many frames hold a 1-RTT (short
    header) packet, and how many of those it could not decrypt with the key
    log. A frame holds at most one 1-RTT packet (it is always last); one
    tshark could not decrypt has a "remaining payload" instead of frames
    (quic.decryption_failed is reported only now and then, not per packet).

    tshark reads the capture once and learns a connection's cipher suite
    from the ServerHello (in the server's Initial): a 1-RTT packet that
    reaches the wire before it (a 0.5-RTT packet that overtook its flight) is
    one tshark cannot decrypt whatever it holds. Those are counted apart
    (``before_server_hello``); quicoff decrypt, which reads the capture
    twice, must decrypt them (and everything else)."""
    want = "quic.short || (udp.srcport==%d && quic.long.packet_type==0)" % port
    p = subprocess.run(
        ["tshark", "-r", pcap, "-o", "tls.keylog_file:%s" % keylog, "-d"]
        # HTTP/3 is not looked at, and dissecting it (100 MB streams) made
        # tshark over a full run's 1.7 GB capture run for over 35 minutes; without
        # it, 5.5x faster on the quick capture, the same QUIC fields
        + ["udp.port==%d,quic" % port, "--disable-protocol", "http3"]
        + ["-Y", want, "-T", "fields", "-E", "occurrence=a", "-e"]
        + ["frame.number", "-e", "udp.srcport", "-e", "udp.dstport", "-e", "quic.header_form"]
        + ["-e", "quic.remaining_payload", "-e", "quic.decryption_failed"]
        + ["-e", "quic.frame_type"],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if p.returncode != 0:
        raise RuntimeError("tshark: %s" % p.stderr[-1000:])
    hello_seen = set()  # client ports whose connection's server Initial went by
    short = 0
    failed: List[str] = []
    early: List[str] = []
    for ln in p.stdout.splitlines():
        f = (ln.split("\t") + [""] * 7)[:7]
        frame, sport, dport, forms, remaining, dfail, ftypes = f
        client = dport if sport == str(port) else sport
        if sport == str(port) and "1" in forms.split(","):
            hello_seen.add(client)  # the filter let it in: a server Initial
        if forms.split(",")[-1] != "0":
            continue
        short += 1
        if remaining or dfail or not ftypes:
            (failed if client in hello_seen else early).append(frame)
    return {
        "short_packets": short,
        "undecrypted": len(failed),
        "first_undecrypted": failed[:5],
        "before_server_hello": len(early),
        "first_before_server_hello": early[:5],
    }


def served_pieces(path: str, every: int, length: int = 64) -> List[bytes]:
    """`length`-byte pieces of a served file, one at each multiple of `every`."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    for off in range(0, max(len(data) - length, 0) + 1, every):
        out.append(data[off : off + length])
    return out


def find_pieces(pcap: str, pieces: List[bytes]) -> int:
    """How many of the pieces occur in the file, read in chunks (a full run's
    capture is a few GB) that overlap by a piece's length."""
    if not pieces:
        return 0
    overlap = max(len(p) for p in pieces) - 1
    left = set(pieces)
    found = 0
    tail = b""
    with open(pcap, "rb") as f:
        for chunk in iter(lambda: f.read(64 << 20), b""):
            buf = tail + chunk
            hits = {p for p in left if p in buf}
            found += len(hits)
            left -= hits
            tail = buf[-overlap:]
    return found


def quicoff_decrypt_strict(pcap: str, keylog: str) -> dict:
    """`quicoff decrypt --strict`: the project's own decrypter (both passes
    over the capture, so a 1-RTT packet that overtook its connection's
    handshake on the wire decrypts too), every packet at every level.
    Its totals: ok, failed, no_keys, other."""
    p = subprocess.run(
        [sys.executable, "-m", "quicoff", "decrypt", "--strict", "--json", "-k", keylog, pcap],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    try:
        totals = json.loads(p.stdout)["totals"]
    except (ValueError, KeyError):
        raise RuntimeError("quicoff decrypt: %s" % (p.stderr or p.stdout)[-1000:]) from None
    return dict(totals, exit=p.returncode)


def check_wire(pcap: str, keylog: str, site: Site) -> dict:
    """tshark decrypts every 1-RTT packet; none of the served files' pieces
    (the 1 MB file's at every 4 KiB, the largest one's at every 64 KiB, one
    of each small file) is in the capture."""
    ts = tshark_short_packets(pcap, keylog)
    pieces: List[bytes] = []
    for name, size in site.sizes.items():
        pieces += served_pieces(os.path.join(site.htdocs, name), 4096 if size <= 1 << 20 else 65536)
    for i in range(SMALL_REQUESTS):
        pieces += served_pieces(os.path.join(site.htdocs, small_name(i)), SMALL_SIZE)
    found = find_pieces(pcap, pieces)
    return dict(
        ts,
        pieces_checked=len(pieces),
        pieces_found=found,
        quicoff_decrypt=quicoff_decrypt_strict(pcap, keylog),
    )


def plot(res: dict, path: str) -> None:
    """Host CPU per GB by mode (the bulk downloads of the largest file), the
    offload's busy time beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    largest = max((r["bytes"] for r in res["runs"] if r["kind"] == "bulk"), default=0)
    rows = [r for r in res["runs"] if r["kind"] == "bulk" and r["bytes"] == largest]
    labels = [
        "%s %s\n%s%s"
        % (r["stack"], r["mode"], r["client"], " (both)" if r["both_offloaded"] else "")
        for r in rows
    ]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(rows)), 4.2))
    ax.bar([i - 0.2 for i in x], [r["host_cpu_s_per_gb"] for r in rows], 0.4, label="server CPU")
    ax.bar(
        [i + 0.2 for i in x],
        [r["offload_busy_s_per_gb"] for r in rows],
        0.4,
        label="offload A busy",
    )
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("seconds per GB served")
    ax.set_title("%d MB download, by mode (shared 2-CPU testbed)" % (largest >> 20), fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(args, log) -> int:
    return StackDemo(args, log).run()
