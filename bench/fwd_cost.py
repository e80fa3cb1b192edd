#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The offload's own cost per packet, without the namespace testbed.

quicoff-dpdk (run to completion, one lcore) on two veth pairs, frames from a
raw socket on the host side: busy TSC cycles per frame (poll rounds that found
work, /quicoff/stats busy_cycles) for

  pass     the host's own IPv4/UDP frames, passed to the network unchanged
           (RX, classify, TX: the application without crypto)
  protect  v1 DATA_TO_OFFLOAD frames of an AES-128-GCM entry: protected,
           encapsulated in Ethernet/IPv4/UDP (software checksums: af_packet
           offers no offload), sent

and, on the same veth pairs, dpdk-testpmd --forward-mode=io on the protect
frames (--record-core-cycles). protect - pass is what packet protection adds
per packet. Medians of --rounds rounds; JSON with --json.

Caveat for the testpmd column: the sender (a Python loop, ~0.5 Mpps) cannot
fill either forwarder, so both see small RX bursts; quicoff-dpdk buffers TX
(--tx-drain-us, as l2fwd does) and makes one sendto() per 32 frames, testpmd
io makes one per RX burst, and on af_packet a sendto() is most of a small
burst's cost. Compare pass with protect for the crypto's cost; testpmd is
there as the reference the issue names.

Run as root: .venv/bin/python bench/fwd_cost.py [--rounds 3] [--frames 100000] [--json F]
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this checkout's library and tooling (quicoff_lab), also without the venv's .pth
sys.path.insert(0, str(ROOT / "lab"))
sys.path.insert(0, str(ROOT / "python"))

import quicoff.ref as ref  # noqa: E402
from quicoff import wire  # noqa: E402  (host<->offload frames)
from quicoff_lab.demo import QuicoffCycles, TestpmdCycles  # noqa: E402  (busy-cycle readers)
from quicoff_lab.dpdk_app import App, Veth  # noqa: E402  (quicoff-dpdk on veth pairs)
from quicoff_lab.rawsock import open_raw  # noqa: E402
from scapy.all import Ether, IP, UDP, raw  # noqa: E402

SIZES = (64, 1400)
OFFLOAD_MAC = "02:0f:f1:0a:d0:00"  # the app is promiscuous: any destination works
TX_INDEX = 1
DCID = b"\x11" * 8


def add_tx_entry(app: App, host_mac: str) -> str:
    """ADD of an AES-128-GCM TX entry (index TX_INDEX) over the host port;
    the ACK's status name."""
    r = random.Random(1)
    rid = r.randrange(1 << 30)
    add = wire.Add(
        request_id=rid,
        index=TX_INDEX,
        direction="tx",
        suite="aes-128-gcm",
        dcid=DCID,
        key=r.randbytes(16),
        iv=r.randbytes(12),
        hp=r.randbytes(16),
        encap=wire.Encap(
            dst_mac="02:00:00:00:be:ef",
            src_mac="02:00:00:00:a0:01",
            src_ip="192.0.2.1",
            dst_ip="198.51.100.7",
            src_port=4433,
            dst_port=443,
        ),
    )
    app.hp.send(wire.frame(add, OFFLOAD_MAC, host_mac))

    def is_ack(f: bytes) -> bool:
        try:
            msg = wire.decode_frame(f)[1]
        except wire.WireError:
            return False
        return getattr(msg, "kind", "") == "ack" and msg.request_id == rid

    f = app.hp.recv_match(is_ack, 3)
    return wire.decode_frame(f)[1].status if f else "no ACK"


def frames(size: int, host_mac: str) -> dict:
    hdr = ref.build_short_header(DCID, 5, pn_len=4)
    quic = hdr + b"p" * size
    protect = wire.frame(
        wire.DataToOffload(index=TX_INDEX, pn=5, packet=quic), OFFLOAD_MAC, host_mac
    )
    # the pass frame is as long as the protected one will be on the wire
    plen = len(quic) + 16
    passf = raw(
        Ether(src=host_mac, dst="02:00:00:00:00:09")
        / IP(src="198.18.0.1", dst="198.18.0.2")
        / UDP(sport=4433, dport=443)
        / (b"y" * plen)
    )
    return {"pass": passf, "protect": protect}


def blast(ifname: str, frame: bytes, n: int) -> float:
    s = open_raw(ifname, proto=0, rcvbuf=0)  # send only
    t = time.monotonic()
    for _ in range(n):
        s.send(frame)
    el = time.monotonic() - t
    s.close()
    return n / el


def measure(cycles, ifname: str, frame: bytes, n: int) -> dict:
    """n frames from a raw socket on ifname; the forwarder's busy ns per frame."""
    cycles.start()
    kpps = blast(ifname, frame, n) / 1e3
    time.sleep(0.3)
    c = cycles.stop()
    if not c or not c["packets"]:
        return {}
    return {
        "busy_ns_per_packet": c["cycles"] / c["packets"] * 1e9 / c["hz"],
        "received": c["packets"],
        "offered_kpps": kpps,
    }


def quicoff_round(n: int) -> dict:
    app = App("qfc", ["--workers", "1", "--idle-us", "0", "--unknown", "pass"], lcores="0@0")
    out = {}
    try:
        host_mac = app.host.mac
        st = add_tx_entry(app, host_mac)
        if st != "ok":
            raise SystemExit("ADD failed: %s" % st)
        cycles = QuicoffCycles(app.prefix)
        # warm up (page faults in the rings and the pool, caches, CPU clock)
        blast(app.host.outer, frames(64, host_mac)["protect"], n // 4)
        time.sleep(0.2)
        for size in SIZES:
            for kind, f in frames(size, host_mac).items():
                r = measure(cycles, app.host.outer, f, n)
                if r:
                    out["%s-%d" % (kind, size)] = r
    finally:
        app.stop()
    return out


def testpmd_round(n: int) -> dict:
    host, net = Veth("qfch0", "qfch1"), Veth("qfcn0", "qfcn1")
    log_path = "/tmp/qfc-testpmd.log"
    log = open(log_path, "wb")
    p = subprocess.Popen(
        [
            "stdbuf",
            "-oL",
            "dpdk-testpmd",
            "--lcores",
            "0@0,1@0",
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
            "--file-prefix",
            "qfc_tp",
            "--log-level",
            "lib.eal:error",
            "--vdev",
            "net_af_packet0,iface=qfch0",
            "--vdev",
            "net_af_packet1,iface=qfcn0",
            "--",
            "-i",
            "--forward-mode=io",
            "--auto-start",
            "--total-num-mbufs=8192",
            "--nb-cores=1",
            "--record-core-cycles",
        ],
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    out = {}
    try:
        time.sleep(4)
        cycles = TestpmdCycles(p, log_path)
        mac = "02:00:00:00:0a:01"
        blast("qfch1", frames(64, mac)["protect"], n // 4)  # warm up, as for quicoff-dpdk
        time.sleep(0.2)
        for size in SIZES:
            r = measure(cycles, "qfch1", frames(size, mac)["protect"], n)
            if r:
                out["io-%d" % size] = r
    finally:
        try:
            p.stdin.write(b"quit\n")
            p.stdin.flush()
            p.wait(15)
        except Exception:
            p.kill()
        host.delete()
        net.delete()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--frames", type=int, default=100000)
    ap.add_argument("--json")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("fwd_cost: needs root (veth pairs, AF_PACKET)")
    runs = {"quicoff": [], "testpmd": []}
    for r in range(a.rounds):
        runs["quicoff"].append(quicoff_round(a.frames))
        runs["testpmd"].append(testpmd_round(a.frames))
        print("round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)
    med = {}
    for who, rs in runs.items():
        for key in sorted({k for r in rs for k in r}):
            v = [r[key]["busy_ns_per_packet"] for r in rs if key in r]
            med["%s %s" % (who, key)] = {"busy_ns_per_packet": statistics.median(v), "runs": v}
    print("busy ns per packet (medians of %d rounds; one lcore, veth pairs, af_packet):" % a.rounds)
    for k, v in med.items():
        print(
            "  %-22s %7.0f   (runs %s)"
            % (k, v["busy_ns_per_packet"], " / ".join("%.0f" % x for x in v["runs"]))
        )
    for size in SIZES:
        p, q = med.get("quicoff pass-%d" % size), med.get("quicoff protect-%d" % size)
        if p and q:
            print(
                "  %4d B: protection adds %.0f ns per packet (protect %.0f - pass %.0f)"
                % (
                    size,
                    q["busy_ns_per_packet"] - p["busy_ns_per_packet"],
                    q["busy_ns_per_packet"],
                    p["busy_ns_per_packet"],
                )
            )
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"medians": med, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
