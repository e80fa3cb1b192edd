# SPDX-License-Identifier: Apache-2.0
"""``quicoff demo``: the offload on a two-host testbed that needs no NIC.

Builds what is missing, brings up the namespace testbed (lab/quicoff_lab/
testbed.py: host A - offload A - wire - offload B - host B, the DPU
prototype's testbed, docs/glossary.md), installs connections through the host<->offload protocol (mixed
suites, both directions, a multipath connection with two path IDs, a key
update in mid-stream), then:

1. checks: traffic both ways at a low rate, every payload byte compared;
2. sweeps: throughput per suite and packet size (A -> B at full speed, as
   the DPU prototype measured it), then latency and jitter at rising offered
   load;
3. tampers: the wire flips a byte in every k-th datagram; offload B must drop
   each one and count it (auth_failures), and nothing corrupted reaches host B;
4. optionally (``--bench``) compares the offload's forwarding rate with DPDK
   testpmd io-forwarding over the same ports.

Prints a table with a progress bar while it runs, writes ``--json`` and PNG
plots into results/demo/, and removes everything it created, also on Ctrl-C.
Exit status: 0 all verdicts pass, 1 a verdict failed, 2 the testbed could
not be brought up.  See docs/demo.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Optional

from . import testbed as tbm
from . import traffic as tr
from .checkout import repo_root

SUITES4 = ("aes-128-gcm", "aes-256-gcm", "chacha20-poly1305", "aes-128-ccm")


def _csv(kind):
    def parse(text):
        return [kind(v) for v in text.split(",") if v.strip()]

    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="fewer sizes, suites and load steps; under three minutes",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        help="seconds per measurement step (default 3, --quick 1.5)",
    )
    p.add_argument(
        "--sizes",
        type=_csv(int),
        default=None,
        help="QUIC payload sizes, bytes (default 64,128,256,512,1024,1400)",
    )
    p.add_argument(
        "--suites",
        type=_csv(str),
        default=None,
        help="suites of the throughput sweep (default all four)",
    )
    p.add_argument(
        "--loads",
        type=_csv(float),
        default=None,
        help="offered load steps as fractions of the measured maximum",
    )
    p.add_argument(
        "--offload",
        choices=("auto", "dpdk"),
        default="auto",
        help="the offloads: quicoff-dpdk (the only one; 'auto' is the same)",
    )
    p.add_argument("--protocol", choices=("v1", "compat"), default="v1")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument(
        "--io-mode",
        choices=("rtc", "pipeline"),
        default="rtc",
        help="quicoff-dpdk --io-mode: run to completion on each worker (default), "
        "or an I/O lcore feeding the workers",
    )
    p.add_argument("--crypto", choices=("inline", "lookaside"), default="inline")
    p.add_argument(
        "--idle-us",
        type=int,
        default=20,
        help="quicoff-dpdk --idle-us: its lcores yield the CPU after 256 empty polls "
        "(they share 2 CPUs with the other offload, the tools and the wire); "
        "0 = busy-poll",
    )
    p.add_argument("--tamper-every", type=int, default=10, help="flip a byte in every k-th packet")
    p.add_argument("--tamper-count", type=int, default=50, help="packets to tamper with")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument(
        "--out",
        default=os.path.join("results", "demo"),
        help="directory of the plots (and results.json)",
    )
    p.add_argument("--no-build", action="store_true", help="do not build what is missing")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument(
        "--bench",
        action="store_true",
        help="also: forwarding rate vs DPDK testpmd io-forwarding, same ports",
    )
    p.add_argument("--build-dir", default=None)
    p.add_argument(
        "--keep-logs", action="store_true", help="keep the offloads' logs (printed path)"
    )
    p.add_argument(
        "--stack",
        action="store_true",
        help="instead: real QUIC stacks (qo-h3-server in each offload mode, unmodified "
        "gtlsclient and aioquic clients) through the testbed, measured (docs/demo.md)",
    )
    p.add_argument("--pcap", metavar="FILE", help="--stack: the wire capture (pcap)")
    p.add_argument("--keylog", metavar="FILE", help="--stack: the TLS key log of the servers")
    p.add_argument("--plot", metavar="FILE", help="--stack: the CPU-per-GB plot (PNG)")
    p.set_defaults(func=run)


# ---------------------------------------------------------------------------
# building


def _repo() -> str:
    return str(repo_root())


def ensure_built(build_dir: str, log) -> None:
    """meson setup (if needed) + ninja: the library, tools/qo_traffic and,
    when its sources exist, apps/dpdk/quicoff-dpdk."""
    if not shutil.which("meson") or not shutil.which("ninja"):
        log("meson/ninja not installed: using what is built")
        return
    repo = _repo()
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        log("configuring %s (meson setup)" % build_dir)
        subprocess.run(
            ["meson", "setup", build_dir], cwd=repo, check=True, stdout=subprocess.DEVNULL
        )
    want = [os.path.join("tools", "qo_traffic")]
    if os.path.isdir(os.path.join(repo, "apps", "dpdk")):
        want.append(os.path.join("apps", "dpdk", "quicoff-dpdk"))
    missing = [t for t in want if not os.path.exists(os.path.join(build_dir, t))]
    # ninja is cheap when nothing changed; always run it so the binaries are current
    p = subprocess.run(
        ["ninja", "-C", build_dir],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if p.returncode != 0:
        log("build failed (ninja -C %s); last lines:\n%s" % (build_dir, p.stdout[-2000:]))
        if missing:
            log("continuing with what exists")
    elif missing:
        log("built: " + ", ".join(t for t in missing if os.path.exists(os.path.join(build_dir, t))))


# ---------------------------------------------------------------------------
# progress and table


class Progress:
    def __init__(self, total_s: float, stream=sys.stderr):
        self.total = max(total_s, 1.0)
        self.done = 0.0
        self.t0 = time.monotonic()
        self.stream = stream
        self.tty = stream.isatty()
        self.label = ""

    def step(self, seconds: float, label: str):
        self.label = label
        self.draw()
        return self

    def advance(self, seconds: float):
        self.done = min(self.total, self.done + seconds)
        self.draw()

    def draw(self):
        frac = self.done / self.total
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        line = "[%s] %3d%%  %5.0fs  %s" % (bar, frac * 100, time.monotonic() - self.t0, self.label)
        if self.tty:
            self.stream.write("\r\033[K" + line[:110])
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def clear(self):
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


_COLS = (
    ("suite", 18),
    ("size B", 6),
    ("offered kpps", 12),
    ("delivered kpps", 14),
    ("loss %", 7),
    ("Gbit/s", 7),
    ("p50 us", 8),
    ("p99 us", 8),
    ("jitter us", 9),
    ("checked", 8),
    ("mismatch", 8),
    ("auth fail", 9),
)


def _fmt_table(rows: List[dict]) -> str:
    """offered: what the sender put on the host link ("max": as fast as it
    could, not paced); delivered: unique packets the receiving host got,
    each checked byte for byte; auth fail: what the receiving offload counted
    as failing authentication in that step (0 unless tampered)."""

    def line(vals):
        return "  ".join(
            ("%-*s" if i == 0 else "%*s") % (w, v) for i, ((_, w), v) in enumerate(zip(_COLS, vals))
        )

    lines = [line([h for h, _ in _COLS])]
    for r in rows:
        sent = "%.1f" % (r.get("sent_pps", 0) / 1e3)
        af = r.get("rx_offload_auth_failures")
        vals = (
            r["suite"],
            r["size"],
            ("max " + sent) if not r["offered_pps"] else sent,
            "%.1f" % r["kpps"],
            "%.2f" % r["loss_pct"],
            "%.3f" % r["gbps"],
            "%.0f" % (r["latency_p50_ns"] / 1e3),
            "%.0f" % (r["latency_p99_ns"] / 1e3),
            "%.1f" % (r["jitter_ns"] / 1e3),
            r["payloads_checked"],
            r["mismatches"],
            "-" if af is None else af,
        )
        lines.append(line(vals))
    return "\n".join(lines)


OVERLOAD_NOTE = """\
  offered = what host A sent ("max": unpaced, as fast as it could); delivered = what reached host B,
  every payload byte checked. "max" offers far more than this testbed forwards: two offloads' lcores,
  the traffic tools, the bridge and the veths share %d CPU(s), so delivered kpps is the capacity and
  the excess is dropped on the way (mostly the kernel's veth backlog and the af_packet rings, see
  docs/demo.md): loss, not corruption (mismatch 0) nor authentication failures (auth fail 0)."""


# ---------------------------------------------------------------------------
# the run


class Demo:
    def __init__(self, args, log):
        self.args = args
        self.log = log
        self.proto = tr.host_protocol(args.protocol)
        # the compat format has no key update: with --protocol compat
        # the key update of the check runs on a connection of its own, in v1
        self.ku_proto = self.proto if self.proto.key_updates else tr.V1Protocol()
        self.flow_proto: Dict[int, tr.HostProtocol] = {}
        self.tool: List[str] = []  # tools/qo_traffic, found once it is built (run)
        self.flows: List[tr.Flow] = []
        self.pn_next: Dict[int, int] = {}
        self.rx_high: Dict[int, int] = {}  # highest PN host B (A) received, per flow
        self.counters: Dict[str, dict] = {}  # offload side -> counters at the last read
        self.key_pn0: Dict[int, int] = {}  # per flow: first PN sent with its current keys
        self.results: dict = {"verdicts": {}, "rekeys": 0}

    # -- connections -----------------------------------------------------

    def make_flows(self, suites) -> None:
        """The demo's connections.  A->B: one per suite of the sweep, plus a
        multipath connection with path IDs 0 and 1 (one DCID and entry per
        path); B->A: two suites; with --protocol compat, one A->B v1
        connection for the key update.  Indexes: TX 1.., RX 101..

        4-byte packet numbers: the senders get no ACKs, and a max-rate step
        loses tens of thousands of packets in a row when a lcore is
        descheduled; with 2 bytes offload B decodes PNs only within +-32768 of
        the largest it saw, and one longer run desynchronises the connection
        for good (every later packet "fails authentication"; traffic.Flow)."""
        rnd = os.urandom
        cid = self.tb_local_cid_len
        fid = 0

        def add(name, suite, direction, path_id=None, ku=None, proto=None):
            nonlocal fid
            fl = tr.Flow(
                id=fid,
                name=name,
                suite=suite,
                dcid=rnd(cid),
                secret=rnd(48 if suite == "aes-256-gcm" else 32),
                tx_index=1 + fid,
                rx_index=101 + fid,
                direction=direction,
                path_id=path_id,
                pn_start=0,
                pn_len=4,
                key_update_pn=ku,
            )
            fid += 1
            self.flows.append(fl)
            self.pn_next[fl.id] = 0
            self.key_pn0[fl.id] = 0
            self.rx_high[fl.id] = -1
            self.flow_proto[fl.id] = proto or self.proto
            return fl

        for s in suites:
            add("ab-" + s, s, "ab")
        for s in ("chacha20-poly1305", "aes-128-ccm"):
            add("ba-" + s, s, "ba")
        mp_secret = rnd(32)
        for path in (0, 1):
            fl = add("ab-multipath-path%d" % path, "aes-128-gcm", "ab", path_id=path)
            fl.secret = mp_secret  # one connection, one key schedule, two paths
        if self.ku_proto is not self.proto:
            add("ab-key-update-" + self.ku_proto.name, "aes-128-gcm", "ab", proto=self.ku_proto)

    # RFC 9001 §6.6 confidentiality limits: packets one key may protect
    CONFIDENTIALITY_LIMIT = {
        "aes-128-gcm": 1 << 23,
        "aes-256-gcm": 1 << 23,
        "aes-128-ccm": int(2**21.5),
        "chacha20-poly1305": 1 << 62,
    }

    def rekey(self, tb, flows: List[tr.Flow]) -> None:
        """New keys for ``flows``, as a QUIC stack starts afresh before a key
        reaches its usage limit: a new random secret per connection (the paths
        of the multipath connection share theirs), installed on both offloads
        (ADD with REPLACE; compat replaces anyway), PNs continuing, key phase
        0. Without it the offloads would refuse, correctly, every packet past
        the limit (key_exhausted): AES-128-CCM reaches it after 2.97 M packets,
        a few max-rate steps."""
        groups: Dict[bytes, List[tr.Flow]] = {}
        for f in flows:
            groups.setdefault(f.secret, [])
        for f in self.flows:  # every flow of a connection, asked for or not
            if f.secret in groups and f not in groups[f.secret]:
                groups[f.secret].append(f)
        todo = []
        for old, group in groups.items():
            new = os.urandom(len(old))
            for f in group:
                f.secret = new
                f.key_update_pn = None  # the new keys start at phase 0
                f.pn_start = self.pn_next[f.id]
                self.key_pn0[f.id] = self.pn_next[f.id]
                todo.append(f)
        self.install(tb, todo)
        self.results["rekeys"] += len(groups)

    def rekey_before(
        self, tb, flows: List[tr.Flow], rate: float, duration: float, count: int = 0
    ) -> None:
        """Rekeys the flows that this step could push past half their key's
        limit (unpaced: assume up to 1 Mpps per flow)."""
        worst = count or int((rate or 1e6) * duration) + 1000
        stale = [
            f
            for f in flows
            if self.pn_next[f.id] - self.key_pn0[f.id] + worst
            > self.CONFIDENTIALITY_LIMIT[f.suite] // 2
        ]
        if stale:
            self.rekey(tb, stale)

    def proto_of(self, flow: tr.Flow) -> tr.HostProtocol:
        return self.flow_proto.get(flow.id, self.proto)

    def install(self, tb, flows: List[tr.Flow]) -> list:
        """Installs ``flows``, each with its protocol; the v1 ACKs."""
        acks = []
        for proto in dict.fromkeys((self.proto, self.ku_proto)):
            mine = [f for f in flows if self.proto_of(f) is proto]
            if mine:
                acks += tb.install(mine, proto)
        return acks

    def flows_of(self, direction=None, suite=None, names=None, proto=None) -> List[tr.Flow]:
        """The flows of protocol ``proto`` (default: --protocol) that match."""
        proto = proto or self.proto
        out = []
        for f in self.flows:
            if self.proto_of(f) is not proto:
                continue
            if direction and f.direction != direction:
                continue
            if suite and (f.suite != suite or f.path_id is not None):
                continue
            if names and f.name not in names:
                continue
            out.append(f)
        return out

    # -- one measurement -------------------------------------------------

    def measure(
        self, tb, flows: List[tr.Flow], size: int, rate: float, duration: float, count: int = 0
    ) -> dict:
        """Sends ``flows`` (all of one direction) for ``duration`` s at
        ``rate`` pps (0 = as fast as possible) and checks what arrives."""
        direction = flows[0].direction
        src, dst = (tb.host_a, tb.host_b) if direction == "ab" else (tb.host_b, tb.host_a)
        side = "A" if direction == "ab" else "B"
        proto = self.proto_of(flows[0])
        self.rekey_before(tb, flows, rate, duration, count)
        for f in flows:
            f.pn_start = self.pn_next[f.id]
        path = os.path.join(
            tb.log_dir, "flows-%s-%d.txt" % (direction, int(time.monotonic() * 1e3))
        )
        tr.write_flows_file(path, flows, proto, tbm.MACS["off%s_host" % side], src.mac)
        rx = tr.Receiver(self.tool, dst.ns, dst.iface, path, proto.rx_format)
        time.sleep(0.3)
        tx = tr.Sender(
            self.tool, src.ns, src.iface, path, size=size, rate=rate, duration=duration, count=count
        )
        s = tx.wait(timeout=duration + 30)
        time.sleep(0.6 if rate else 1.0)  # what is in flight
        rx.stop()
        r = rx.wait(timeout=10)
        # the longest run of a flow's packets lost in a row, as the receiving
        # offload saw it: inside this step, or from the last one received before
        max_gap = 0
        for f in flows:
            fs = s["flows"][str(f.id)]
            fr = r["flows"][str(f.id)]
            if fr.get("pn_lowest", -1) >= 0:
                max_gap = max(
                    max_gap,
                    fr.get("max_gap", 0),
                    fr["pn_lowest"] - max(self.rx_high[f.id], f.pn_start - 1) - 1,
                )
                self.rx_high[f.id] = max(self.rx_high[f.id], fr["pn_highest"])
            self.pn_next[f.id] = fs["pn_next"]
        # what the receiving offload counted in this step (drained: it stopped moving)
        delta = self.counters_step(tb, "B" if direction == "ab" else "A")
        sent = s["sent"]
        unique = r["unique"]
        elapsed = max((s["end_ns"] - s["start_ns"]) / 1e9, 1e-6)
        rx_span = max((r["last_ns"] - r["first_ns"]) / 1e9, 1e-6) if unique > 1 else elapsed
        kpps = unique / max(elapsed, rx_span) / 1e3
        hdr = 1 + len(flows[0].dcid) + flows[0].pn_len
        wire = 14 + 20 + 8 + hdr + size + 16  # Ethernet/IPv4/UDP/QUIC + tag, no FCS
        lat = r.get("latency_ns", {})
        return {
            "direction": direction,
            "size": size,
            "offered_pps": rate,
            "sent": sent,
            "sent_pps": sent / elapsed,
            "received": unique,
            "dups": r["dups"],
            "lost": max(sent - unique, 0),
            "loss_pct": 100.0 * max(sent - unique, 0) / max(sent, 1),
            "kpps": kpps,
            "gbps": kpps * 1e3 * wire * 8 / 1e9,
            "goodput_gbps": kpps * 1e3 * size * 8 / 1e9,
            "wire_frame_bytes": wire,
            "latency_p50_ns": lat.get("p50", 0),
            "latency_p99_ns": lat.get("p99", 0),
            "latency_mean_ns": lat.get("mean", 0),
            "latency_max_ns": lat.get("max", 0),
            "jitter_ns": r.get("jitter_ns", 0),
            "payloads_checked": r["checked"],
            "mismatches": r["mismatches"],
            "first_mismatch": r.get("first_mismatch", ""),
            "unknown_conn": r.get("unknown_conn", 0),
            "flows": [f.name for f in flows],
            "rx_offload": "B" if direction == "ab" else "A",
            "rx_offload_auth_failures": delta.get("auth_failures"),
            "rx_offload_counters_delta": delta,
            "max_pn_gap": max_gap,
            "pn_len": flows[0].pn_len,
            "per_flow": {
                f.name: {
                    "sent": s["flows"][str(f.id)]["sent"],
                    "received": r["flows"][str(f.id)]["received"],
                }
                for f in flows
            },
        }

    # -- counters --------------------------------------------------------

    def offload_counters(self, tb, side: str) -> dict:
        """Offload ``side``'s table counters: v1 QUERY on the host port
        (both the real app and the stand-in answer it), else its own stats."""
        out = {}
        if isinstance(self.proto, tr.V1Protocol):
            hp = tb.host_a if side == "A" else tb.host_b
            for _ in range(3):
                q = self.proto.query(tbm.MACS["off%s_host" % side], hp.mac)
                try:
                    m = tb.signal(side, [q], self.proto, timeout=5.0)[0]
                    out.update(m.get("table", {}))
                    out["_via"] = "v1 QUERY"
                    break
                except TimeoutError:
                    continue
        if not out and tb.offloads[side].kind == "dpdk":
            try:
                t = tbm.dpdk_telemetry(tb.offloads[side].file_prefix, "/quicoff/table")
                out.update({k: v for k, v in tbm._flatten(t.get("/quicoff/table", t), {}).items()})
                out["_via"] = "telemetry /quicoff/table"
            except (OSError, ValueError):
                pass
        if not out:
            st = tb.offloads[side].stats()
            eng = st.get("engine", st)
            out.update({k: v for k, v in eng.items() if isinstance(v, (int, float))})
            out["_via"] = "stats"
        return out

    def counters_settled(self, tb, side: str, timeout: float = 5.0) -> dict:
        """Offload ``side``'s counters once they stop moving: read every 0.2 s
        until two reads agree (nothing left in its queues or in the veths), at
        most ``timeout`` s.  Every read is kept in self.counters."""
        keys = (
            "rx_packets",
            "tx_packets",
            "auth_failures",
            "unknown_connection",
            "malformed",
            "key_phase_unavailable",
        )
        prev = self.offload_counters(tb, side)
        t = time.monotonic()
        while time.monotonic() - t < timeout:
            time.sleep(0.2)
            cur = self.offload_counters(tb, side)
            if all(cur.get(k) == prev.get(k) for k in keys):
                prev = cur
                break
            prev = cur
        self.counters[side] = prev
        return prev

    def counters_step(self, tb, side: str) -> dict:
        """What offload ``side`` counted since the last read (settled)."""
        before = self.counters.get(side) or {}
        after = self.counters_settled(tb, side)
        return {
            k: v - before.get(k, 0)
            for k, v in after.items()
            if isinstance(v, (int, float)) and k in before and k not in ("connections",)
        }

    # -- phases ------------------------------------------------------------

    def run(self) -> int:
        a = self.args
        quick = a.quick
        dur = a.duration if a.duration is not None else (1.5 if quick else 3.0)
        sizes = a.sizes or ([64, 256, 1024, 1400] if quick else [64, 128, 256, 512, 1024, 1400])
        suites = a.suites or (["aes-128-gcm", "aes-256-gcm"] if quick else list(SUITES4))
        loads = a.loads or (
            [0.1, 0.5, 0.9, 1.2] if quick else [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.2]
        )
        for s in suites:
            if s not in SUITES4:
                self.log("unknown suite %s" % s)
                return 2
        n_steps = 2 + len(sizes) * len(suites) + len(loads) + 1
        n_steps += self.ku_proto is not self.proto  # compat: the v1 key-update check
        bench_s = self.BENCH_ROUNDS * (4 * (dur + 1.6) + 8) if a.bench else 0
        prog = Progress(n_steps * (dur + 1.6) + 10 + bench_s)
        build_dir = a.build_dir or os.path.join(_repo(), "build")
        if not a.no_build:
            prog.step(0, "building")
            ensure_built(build_dir, self.log)
        try:
            self.tool = tr.traffic_tool(build_dir)
        except FileNotFoundError as e:
            self.log("demo: %s" % e)
            return 2
        res = self.results
        res.update(
            started=time.strftime("%Y-%m-%dT%H:%M:%S"),
            quick=quick,
            step_seconds=dur,
            protocol=self.proto.name,
            traffic_tool=" ".join(self.tool),
        )
        try:
            tb = tbm.Testbed(
                offload=a.offload,
                build_dir=build_dir,
                workers=a.workers,
                io_mode=a.io_mode,
                crypto=a.crypto,
                start_offloads=True,
                idle_us=a.idle_us,
                log_dir=None if not a.keep_logs else os.path.join(a.out, "logs"),
            )
        except tbm.TestbedError as e:
            self.log("testbed: %s" % e)
            return 2
        self.tb_local_cid_len = tb.local_cid_len
        t_start = time.monotonic()
        try:
            with tb:
                res["testbed"] = tb.describe()
                res["offload"] = tb.offload_kind
                self.log(tb.describe())
                self.make_flows(suites)
                prog.step(0, "installing %d entries" % (2 * len(self.flows)))
                acks = self.install(tb, self.flows)
                bad = [m for m in acks if m.get("status_name") not in ("ok",)]
                res["signaling"] = {
                    "requests": 2 * len(self.flows),
                    "acked_ok": sum(1 for m in acks if m.get("status_name") == "ok"),
                    "errors": [m.get("status_name") for m in bad],
                }
                if bad:
                    self.log("signaling errors: %s" % res["signaling"]["errors"])
                for side in ("A", "B"):  # the baselines of the per-step counters
                    self.counters_settled(tb, side)
                self.phase_check(tb, prog, dur)
                self.phase_sweep(tb, prog, dur, sizes, suites)
                self.phase_load(tb, prog, dur, loads)
                self.phase_tamper(tb, prog)
                if a.bench:
                    self.phase_bench(tb, prog, dur)
                res["offload_counters"] = {s: self.offload_counters(tb, s) for s in ("A", "B")}
        except KeyboardInterrupt:
            prog.clear()
            self.log("interrupted: everything created was removed")
            return 130
        except (tbm.TestbedError, TimeoutError, RuntimeError) as e:
            prog.clear()
            self.log("FAILED: %s" % e)
            self.log("everything created was removed")
            return 2
        finally:
            prog.clear()
        res["seconds"] = round(time.monotonic() - t_start, 1)
        res["leftovers"] = tb.resources()
        return self.report()

    def phase_check(self, tb, prog, dur):
        """Both directions, every flow, a key update in mid-stream (A->B
        aes-128-gcm flips its key phase halfway; with --protocol compat, which
        has no key update, on the extra v1 connection, checked after them)."""
        res = self.results
        # a rate every offload keeps up with on a 2-core machine: this phase
        # is about identity, the sweep below about speed
        rate = 3000
        checks = []
        steps = [("ab", self.proto), ("ba", self.proto)]
        if self.ku_proto is not self.proto:
            steps.append(("ab", self.ku_proto))
        for direction, proto in steps:
            flows = self.flows_of(direction, proto=proto)
            n = max(int(rate * dur), 1500)
            ku = None
            if direction == "ab" and proto is self.ku_proto:
                ku = flows[0]
                ku.key_update_pn = self.pn_next[ku.id] + n // (2 * len(flows))
            prog.step(
                0,
                "check %s%s: %d flows, %d pkt%s"
                % (
                    direction.upper(),
                    "" if proto is self.proto else " (%s)" % proto.name,
                    len(flows),
                    n,
                    ", key update" if ku else "",
                ),
            )
            m = self.measure(tb, flows, 200, rate, n / rate + 5, count=n)
            prog.advance(dur + 1.6)
            m["protocol"] = proto.name
            m["key_update"] = {"flow": ku.name, "at_pn": ku.key_update_pn} if ku else None
            checks.append(m)
        res["check"] = checks
        ok = all(c["mismatches"] == 0 and c["lost"] == 0 for c in checks)
        res["verdicts"]["payload_identity_both_directions"] = ok
        # the key update: packets after the flip arrived (they could only with generation 1)
        for c in checks:
            ku = c["key_update"]
            if ku:
                pf = c["per_flow"][ku["flow"]]
                res["verdicts"]["key_update_mid_stream"] = pf["received"] == pf["sent"] > 0
        mp = [c["per_flow"][k] for c in checks for k in c["per_flow"] if "multipath" in k]
        res["verdicts"]["multipath_two_paths"] = len(mp) == 2 and all(
            p["received"] == p["sent"] > 0 for p in mp
        )

    @staticmethod
    def tb_kind(tb):
        return tb.offload_kind

    def phase_sweep(self, tb, prog, dur, sizes, suites):
        rows = []
        for suite in suites:
            flows = self.flows_of("ab", suite=suite)
            for size in sizes:
                prog.step(0, "throughput %s %dB" % (suite, size))
                m = self.measure(tb, flows, size, 0, dur)
                m["suite"] = suite
                rows.append(m)
                prog.advance(dur + 1.6)
        self.results["throughput"] = rows

    def phase_load(self, tb, prog, dur, loads):
        """Latency and jitter at rising offered load: first
        suite, 512 B (or the nearest swept size), as fractions of the maximum
        the sweep measured."""
        rows = self.results.get("throughput", [])
        suite = rows[0]["suite"] if rows else "aes-128-gcm"
        sizes = sorted({r["size"] for r in rows if r["suite"] == suite}) or [512]
        size = min(sizes, key=lambda s: abs(s - 512))
        peak = max([r["kpps"] for r in rows if r["suite"] == suite and r["size"] == size] or [10])
        flows = self.flows_of("ab", suite=suite)
        out = []
        for f in loads:
            rate = max(peak * 1e3 * f, 100.0)
            prog.step(0, "load %.0f%% of %.1f kpps" % (f * 100, peak))
            m = self.measure(tb, flows, size, rate, dur)
            m["suite"] = suite
            m["load_fraction"] = f
            out.append(m)
            prog.advance(dur + 1.6)
        self.results["load"] = out

    def phase_tamper(self, tb, prog):
        """The wire flips a byte in every k-th datagram A->B; offload B must
        drop and count each (auth_failures), host B must see none of them."""
        a = self.args
        k, n = a.tamper_every, a.tamper_count
        prog.step(0, "tamper: every %d-th packet, %d packets" % (k, n))
        # exactly the tamper phase: offload B's counters once the earlier
        # phases have drained (they stopped moving), and again once this one has
        before = dict(self.counters_settled(tb, "B"))
        tb.set_wire("tamper", every=k, max_tamper=n, direction="ab")
        try:
            flows = self.flows_of("ab")
            total = k * n + k
            rate = 3000
            m = self.measure(tb, flows, 200, rate, total / rate + 5, count=total)  # settles B
            time.sleep(0.3)
            wire = tb.wire_stats()
        finally:
            tb.set_wire("bridge")
        after = self.counters.get("B") or self.counters_settled(tb, "B")
        prog.advance(3)
        tampered = int(wire.get("tampered", 0))
        counted = int(after.get("auth_failures", 0)) - int(before.get("auth_failures", 0))
        t = {
            "every": k,
            "tampered_sent": tampered,
            "tampered_dropped_counted": counted,
            "counter": "auth_failures (offload B, %s)" % after.get("_via", "?"),
            "sent": m["sent"],
            "delivered": m["received"],
            "lost": m["lost"],
            "mismatches": m["mismatches"],
            "payloads_checked": m["payloads_checked"],
            "per_flow": m["per_flow"],
            "max_pn_gap": m["max_pn_gap"],
            "offload_b_before": before,
            "offload_b_after": after,
            "wire": wire,
        }
        self.results["tamper"] = t
        self.results["verdicts"]["tampered_dropped_and_counted"] = (
            tampered > 0 and counted == tampered and m["lost"] == tampered and m["mismatches"] == 0
        )

    # -- benchmark ---------------------------------------------------------

    BENCH_SIZES = (64, 1400)

    def _bench_restart(self, tb):
        tb.restart_offloads()
        self.counters.clear()  # fresh counters too
        # fresh entries (PN decoding starts from here) with fresh keys: a new
        # table must not restart the usage count of a key already used
        self.rekey(tb, self.flows)

    BENCH_ROUNDS = 3

    def phase_bench(self, tb, prog, dur):
        """quicoff-dpdk vs dpdk-testpmd io-forwarding on offload A's ports:
        64- and 1400-byte payloads from host A at full speed, frames counted
        where they leave offload A (the wire's bridge), CPU time from /proc.
        Same conditions for both: the one forwarding lcore pinned to the same
        CPU, offload B stopped, busy-polling (quicoff-dpdk --idle-us 0, as
        testpmd does); the traffic phases keep the demo's --idle-us.
        BENCH_ROUNDS rounds, each quicoff then testpmd, so both see the same
        drift of this shared machine; medians per size and kind, and the ratio
        of the medians."""
        prog.step(0, "bench: quicoff vs testpmd")
        bench = {
            "sizes": list(self.BENCH_SIZES),
            "quicoff_idle_us": 0,
            "rounds": self.BENCH_ROUNDS,
            "runs": {"quicoff": [], "testpmd": []},
        }
        flows = self.flows_of("ab", suite="aes-128-gcm")
        testpmd = shutil.which("dpdk-testpmd")
        if not testpmd:
            bench["testpmd_error"] = "dpdk-testpmd not installed (Debian package dpdk)"
        for _ in range(self.BENCH_ROUNDS):
            bench["runs"]["quicoff"].append(self._bench_quicoff(tb, flows, dur))
            prog.advance(2 * (dur + 1.6) + 4)
            if testpmd and "testpmd_error" not in bench:
                try:
                    bench["runs"]["testpmd"].append(
                        self._bench_testpmd(tb, flows, dur, testpmd, bench)
                    )
                except tbm.TestbedError as e:  # a benchmark, not a verdict
                    bench["testpmd_error"] = str(e).splitlines()[0]
            prog.advance(2 * (dur + 1.6) + 4)
        self._bench_restart(tb)  # back to the demo's --idle-us, both offloads
        bench["ratio"] = {}
        for kind in ("quicoff", "testpmd"):
            med = bench[kind] = {}
            for size in self.BENCH_SIZES:
                runs = [
                    r[str(size)] for r in bench["runs"][kind] if r.get(str(size), {}).get("kpps")
                ]
                if not runs:
                    continue
                m = dict(sorted(runs, key=lambda r: r["kpps"])[len(runs) // 2])
                m["kpps_runs"] = [r["kpps"] for r in runs]
                cpu = [r["ns_per_packet_cpu"] for r in runs if r.get("ns_per_packet_cpu")]
                m["ns_per_packet_cpu"] = statistics.median(cpu) if cpu else None
                busy = [r["ns_per_packet_busy"] for r in runs if r.get("ns_per_packet_busy")]
                m["ns_per_packet_busy"] = statistics.median(busy) if busy else None
                m["ns_per_packet_busy_runs"] = busy
                med[str(size)] = m
        if "testpmd_error" in bench:
            bench["testpmd"] = {"error": bench["testpmd_error"]}
        for size in self.BENCH_SIZES:
            qs, ts = bench["quicoff"].get(str(size), {}), bench["testpmd"].get(str(size), {})
            if qs.get("kpps") and ts.get("kpps"):
                bench["ratio"][str(size)] = qs["kpps"] / ts["kpps"]
            # the one-core forwarding capacity, from busy cycles per packet:
            # what each would forward if the traffic source kept up
            if qs.get("ns_per_packet_busy") and ts.get("ns_per_packet_busy"):
                bench.setdefault("capacity_ratio", {})[str(size)] = (
                    ts["ns_per_packet_busy"] / qs["ns_per_packet_busy"]
                )
        self.results["bench"] = bench

    def _bench_quicoff(self, tb, flows, dur) -> dict:
        tb.idle_us_side["A"] = 0
        try:
            self._bench_restart(tb)
        finally:
            tb.idle_us_side.pop("A", None)
        # offload A alone, as testpmd will be: offload B would take CPU time
        # from the traffic tools and the bridge that count for both
        tb.stop_offload("B")
        out = {}
        off = tb.offloads["A"]
        cycles = QuicoffCycles(off.file_prefix) if off.kind == "dpdk" else None
        self._bench_warmup(tb, flows, off.proc)
        for size in self.BENCH_SIZES:
            out[str(size)] = self._bench_one(tb, flows, off.proc, dur, size, cycles)
            out[str(size)]["what"] = "%s offload A (protect, aes-128-gcm, %s, --idle-us 0)" % (
                tb.offload_kind,
                tb.io_mode,
            )
        return out

    def _bench_testpmd(self, tb, flows, dur, testpmd, bench) -> dict:
        tb.stop_offloads()
        # the same CPU as offload A's lcores: testpmd's forwarding lcore
        # busy-polls it; its main lcore only waits on stdin
        cpu = tb.offload_cpu("A")
        # stdbuf: its answers to "show fwd stats all" reach the log at once
        argv = [
            "stdbuf",
            "-oL",
            testpmd,
            "--lcores",
            "0@%d,1@%d" % (cpu, cpu),
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
            "--file-prefix",
            "%s-tp" % tb.tag,
            "--vdev",
            "net_af_packet0,iface=host0",
            "--vdev",
            "net_af_packet1,iface=net0",
            "--",
            "-i",
            "--forward-mode=io",
            "--auto-start",
            "--total-num-mbufs=8192",
            "--nb-cores=1",
            "--record-core-cycles",
        ]
        p = tb._spawn("oA", argv, "testpmd.log", stdin_pipe=True)
        bench["testpmd_argv"] = argv
        try:
            t = time.monotonic()
            while not _testpmd_ready("%s-tp" % tb.tag):
                if p.poll() is not None or time.monotonic() - t > 30:
                    raise tbm.TestbedError(
                        "dpdk-testpmd did not start (exit %s): %s"
                        % (p.poll(), tb._tail("testpmd.log", 3).replace("\n", " | "))
                    )
                time.sleep(0.2)
            time.sleep(0.5)
            out = {}
            cycles = TestpmdCycles(p, os.path.join(tb.log_dir, "testpmd.log"))
            self._bench_warmup(tb, flows, p)
            for size in self.BENCH_SIZES:
                out[str(size)] = self._bench_one(tb, flows, p, dur, size, cycles)
                out[str(size)]["what"] = "dpdk-testpmd --forward-mode=io (no crypto)"
            return out
        finally:
            tb._terminate(p)
            shutil.rmtree(os.path.join(tbm.DPDK_RUN_DIR, "%s-tp" % tb.tag), ignore_errors=True)

    def _bench_warmup(self, tb, flows, proc):
        """Half a second of traffic, not measured: a freshly started forwarder
        first touches its mbuf pool and rings (4 KiB pages without hugepages:
        thousands of page faults) and its caches are cold."""
        self._bench_one(tb, flows, proc, 0.5, 64)

    def _bench_one(self, tb, flows, proc, dur, size=64, cycles=None) -> dict:
        """One size at full speed. ``cycles``: the forwarder's busy-cycle
        counter (a QuicoffCycles or TestpmdCycles), started and read around
        the traffic.
        The traffic source and the counting bridge run on the other CPU(s)
        (taskset): on the forwarder's CPU they would preempt it inside its busy
        rounds, and the kernel work they cause (the bridge's delivery into the
        next namespace, its IP stack) would count as the forwarder's."""
        fwd_cpu = tb.offload_cpu("A")
        others = [c for c in sorted(os.sched_getaffinity(0)) if c != fwd_cpu]
        tool = (
            ["taskset", "-c", ",".join(map(str, others))]
            if others and shutil.which("taskset")
            else []
        ) + list(self.tool)
        tb.set_wire("tamper", every=0, tool=tool)  # the counting bridge
        try:
            w0 = tb.wire_stats()
            c0 = _cpu_seconds(proc.pid) if proc else 0
            if cycles:
                cycles.start()
            path = os.path.join(tb.log_dir, "flows-bench.txt")
            for f in flows:
                f.pn_start = self.pn_next[f.id]
            tr.write_flows_file(path, flows, self.proto, tbm.MACS["offA_host"], tb.host_a.mac)
            t0 = time.monotonic()
            s = tr.Sender(
                tool, tb.host_a.ns, tb.host_a.iface, path, size=size, rate=0, duration=dur
            ).wait(dur + 30)
            t1 = time.monotonic()
            for f in flows:
                self.pn_next[f.id] = s["flows"][str(f.id)]["pn_next"]
            time.sleep(0.5)
            w1 = tb.wire_stats()
            c1 = _cpu_seconds(proc.pid) if proc else 0
            cyc = cycles.stop() if cycles else None
        finally:
            tb.set_wire("bridge")
        fwd = int(w1.get("forwarded_ab", 0)) - int(w0.get("forwarded_ab", 0))
        secs = max(t1 - t0, 1e-6)
        cpu = max(c1 - c0, 0.0)
        out = {
            "size": size,
            "sent": s["sent"],
            "forwarded": fwd,
            "kpps": fwd / secs / 1e3,
            "cpu_seconds": cpu,
            "ns_per_packet_cpu": (cpu * 1e9 / fwd) if fwd else None,
        }
        if cyc and cyc.get("packets"):
            # busy cycles: only poll rounds that found packets, so this is the
            # forwarder's own cost per packet, whatever the traffic source managed
            out.update(
                busy_cycles=cyc["cycles"],
                io_packets=cyc["packets"],
                tsc_hz=cyc["hz"],
                cycles_per_packet=cyc["cycles"] / cyc["packets"],
                ns_per_packet_busy=cyc["cycles"] / cyc["packets"] * 1e9 / cyc["hz"],
            )
        return out

    # -- report --------------------------------------------------------------

    def report(self) -> int:
        a, res = self.args, self.results
        rows = res.get("throughput", [])
        checked = sum(
            r["payloads_checked"] for k in ("check", "throughput", "load") for r in res.get(k, [])
        )
        checked += res.get("tamper", {}).get("payloads_checked", 0)
        mism = sum(
            r["mismatches"] for k in ("check", "throughput", "load") for r in res.get(k, [])
        ) + res.get("tamper", {}).get("mismatches", 0)
        res["payloads_checked"] = checked
        res["mismatches"] = mism
        res["verdicts"]["no_mismatches"] = mism == 0 and checked > 0
        # nothing but the tampered packets may fail authentication
        af = [
            r.get("rx_offload_auth_failures")
            for k in ("check", "throughput", "load")
            for r in res.get(k, [])
        ]
        if af and all(x is not None for x in af):
            res["auth_failures_untampered"] = sum(af)
            res["verdicts"]["no_auth_failures_untampered"] = sum(af) == 0
        res["verdicts"]["nothing_left_behind"] = not any(res.get("leftovers", {}).values())
        t = res.get("tamper", {})
        res["tampered_sent"] = t.get("tampered_sent", 0)
        res["tampered_dropped_counted"] = t.get("tampered_dropped_counted", 0)
        print()
        print("quicoff demo: %s" % res.get("testbed", ""))
        print()
        print(
            "Throughput A -> B (protect at offload A, unprotect at offload B), per packet size, "
            "offered at max rate:"
        )
        print(_fmt_table(rows))
        if rows:
            print(OVERLOAD_NOTE % (os.cpu_count() or 1))
        if res.get("load"):
            print()
            print(
                "Latency and jitter vs offered load (paced, as fractions of the delivered maximum):"
            )
            print(_fmt_table(res["load"]))
        steps = [r for k in ("check", "throughput", "load") for r in res.get(k, [])]
        if steps:
            gap = max(r.get("max_pn_gap", 0) for r in steps)
            pnl = min(r.get("pn_len", 4) for r in steps)
            print()
            print(
                "longest run of one flow's packets lost in a row: %d (offload B decodes a %d-byte "
                "packet number within +-%d of the largest it saw)" % (gap, pnl, 1 << (8 * pnl - 1))
            )
        if res.get("bench"):
            b = res["bench"]
            print()
            print(
                "Forwarding, same ports, same CPU, offload B stopped; medians of %d rounds:"
                % b.get("rounds", 1)
            )
            for size in b.get("sizes", ()):
                for k in ("quicoff", "testpmd"):
                    v = b.get(k, {})
                    if "error" in v:
                        print("  %4d B  %-8s %s" % (size, k, v["error"]))
                        continue
                    v = v.get(str(size), {})
                    if v:
                        print(
                            "  %4d B  %-8s %8.1f kpps (runs %s)  busy %s ns/packet  (%s)"
                            % (
                                size,
                                k,
                                v["kpps"],
                                "/".join("%.0f" % x for x in v.get("kpps_runs", [])),
                                "%.0f" % v["ns_per_packet_busy"]
                                if v.get("ns_per_packet_busy")
                                else "-",
                                v.get("what", ""),
                            )
                        )
                r = b.get("ratio", {}).get(str(size))
                c = b.get("capacity_ratio", {}).get(str(size))
                if r is not None:
                    print(
                        "  %4d B  quicoff / testpmd: forwarded %.2f%s"
                        % (
                            size,
                            r,
                            "" if c is None else ", one-core capacity (busy ns/packet) %.2f" % c,
                        )
                    )
            print(
                "  busy ns/packet: cycles of poll rounds that found packets / packets received "
                "(testpmd --record-core-cycles); forwarded: what reached the wire, bounded here "
                "by the traffic source sharing the 2 CPUs"
            )
        print()
        print("payloads checked byte for byte: %d, mismatches: %d" % (checked, mism))
        if res.get("rekeys"):
            print(
                "connections given new keys before a key reached half its RFC 9001 usage limit: "
                "%d times" % res["rekeys"]
            )
        if t:
            print(
                "tampered on the wire: %d, dropped and counted by offload B: %d (%s)"
                % (t["tampered_sent"], t["tampered_dropped_counted"], t["counter"])
            )
        for name, ok in res["verdicts"].items():
            print("  %-36s %s" % (name, "PASS" if ok else "FAIL"))
        os.makedirs(a.out, exist_ok=True)
        if not a.no_plots:
            try:
                res["plots"] = plot(res, a.out)
                print("plots: " + ", ".join(res["plots"]))
            except ImportError:
                print("plots skipped: matplotlib is not installed (pip install matplotlib)")
        for path in filter(None, (a.json, os.path.join(a.out, "results.json"))):
            d = os.path.dirname(path)
            if d:
                os.makedirs(d, exist_ok=True)
            with open(path, "w") as f:
                json.dump(res, f, indent=1, default=str)
        if a.json:
            print("results: %s" % a.json)
        return 0 if all(res["verdicts"].values()) else 1


class QuicoffCycles:
    """quicoff-dpdk's busy_cycles and received frames (both ports), from telemetry."""

    def __init__(self, file_prefix: str):
        self.prefix = file_prefix
        self.hz = tbm.dpdk_telemetry(file_prefix, "/quicoff/options")["/quicoff/options"]["tsc_hz"]

    def _read(self):
        st = tbm.dpdk_telemetry(self.prefix, "/quicoff/stats")["/quicoff/stats"]
        return st["busy_cycles"], st["host_rx"] + st["net_rx"]

    def start(self):
        self.c0, self.p0 = self._read()

    def stop(self) -> dict:
        c1, p1 = self._read()
        return {"cycles": c1 - self.c0, "packets": p1 - self.p0, "hz": self.hz}


class TestpmdCycles:
    """testpmd --record-core-cycles in interactive mode: "clear fwd stats all"
    before, "show fwd stats all" after, and its "CPU cycles/packet" line:
    busy cycles (rounds that received packets) over all ports' RX packets."""

    LINE = re.compile(
        r"CPU cycles/packet=[\d.]+ \(total cycles=(\d+) / total io packets=(\d+)\) "
        r"at (\d+) MHz"
    )

    def __init__(self, proc, log_path: str):
        self.proc, self.log = proc, log_path

    def _cmd(self, line: str):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def start(self):
        self._cmd("clear fwd stats all")

    def stop(self) -> Optional[dict]:
        seen = os.path.getsize(self.log)
        self._cmd("show fwd stats all")
        end = time.monotonic() + 5
        while time.monotonic() < end:
            with open(self.log, "rb") as f:
                f.seek(seen)
                m = self.LINE.search(f.read().decode(errors="replace"))
            if m:
                return {
                    "cycles": int(m.group(1)),
                    "packets": int(m.group(2)),
                    "hz": int(m.group(3)) * 1e6,
                }
            time.sleep(0.1)
        return None


def _testpmd_ready(prefix: str) -> bool:
    """Both ports up (DPDK telemetry of the testpmd with that file prefix)."""
    try:
        for port in (0, 1):
            st = tbm.dpdk_telemetry(prefix, "/ethdev/link_status,%d" % port)
            if st.get("/ethdev/link_status", {}).get("status") != "UP":
                return False
        return True
    except (OSError, ValueError):
        return False


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its threads (lcores), seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def plot(res: dict, out: str) -> List[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    rows = res.get("throughput", [])
    who = "quicoff-dpdk" if res.get("offload") == "dpdk" else "STAND-IN offload (Python)"
    if rows:
        for key, ylabel, name in (
            ("gbps", "Gbit/s (Ethernet frames on the wire)", "throughput_gbps.png"),
            ("kpps", "kpps", "throughput_kpps.png"),
        ):
            fig, ax = plt.subplots(figsize=(7, 4.2))
            for suite in dict.fromkeys(r["suite"] for r in rows):
                rr = sorted((r for r in rows if r["suite"] == suite), key=lambda r: r["size"])
                ax.plot([r["size"] for r in rr], [r[key] for r in rr], marker="o", label=suite)
            ax.set_xlabel("QUIC payload, bytes")
            ax.set_ylabel(ylabel)
            ax.set_title("A -> B through two offloads (%s)" % who, fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend()
            fig.tight_layout()
            p = os.path.join(out, name)
            fig.savefig(p, dpi=110)
            plt.close(fig)
            paths.append(p)
    load = res.get("load", [])
    if load:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        x = [r["sent_pps"] / 1e3 for r in load]
        ax.plot(x, [r["latency_p50_ns"] / 1e3 for r in load], marker="o", label="latency p50")
        ax.plot(x, [r["latency_p99_ns"] / 1e3 for r in load], marker="s", label="latency p99")
        ax.plot(x, [r["jitter_ns"] / 1e3 for r in load], marker="^", label="jitter (RFC 3550)")
        ax.set_xlabel("offered load, kpps (%s, %d B)" % (load[0]["suite"], load[0]["size"]))
        ax.set_ylabel("microseconds")
        ax.set_yscale("log")
        ax2 = ax.twinx()
        ax2.plot(x, [r["loss_pct"] for r in load], color="grey", linestyle="--", label="loss %")
        ax2.set_ylabel("loss %")
        ax.set_title("Latency and jitter vs offered load (%s)" % who, fontsize=10)
        ax.grid(True, alpha=0.3)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
        fig.tight_layout()
        p = os.path.join(out, "latency_jitter.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def run(args) -> int:
    if os.geteuid() != 0:
        sys.stderr.write("quicoff demo: needs root (network namespaces); try sudo\n")
        return 2

    def log(msg):
        sys.stderr.write("\r\033[K" if sys.stderr.isatty() else "")
        sys.stderr.write("quicoff demo: %s\n" % msg)
        sys.stderr.flush()

    if args.stack:
        from . import stack_demo

        if not args.no_build:
            ensure_built(args.build_dir or os.path.join(_repo(), "build"), log)
        return stack_demo.run(args, log)
    return Demo(args, log).run()
