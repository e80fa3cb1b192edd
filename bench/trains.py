#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Frames per packet host -> offload, and the sending host's CPU per packet,
for one DATA_TO_OFFLOAD frame per packet against DATA_TRAIN frames
(docs/protocol.md §4.2.1), through libquicoff-host against quicoff-dpdk.

quicoff-dpdk (run to completion, one lcore) on two veth pairs whose host link
has a jumbo MTU (65535, --host-mtu 65535); build/bench/quicoff-bench-trains-host
(C, libquicoff-host) installs one AES-128-GCM TX entry and sends --packets
packets of --size bytes, as single-packet frames (32 per sendmmsg) and as
trains of --train packets (8 trains per sendmmsg, default: as many as fit
in 64 KB). Per mode: the host library's counters (data frames, packets),
frames per packet, the sender's CPU (user + sys) per packet, and what the
offload protected and sent (its tx_packets; on a shared 2-vCPU machine it
may not keep up, which the sender's figures do not depend on). Medians of
--rounds rounds; JSON with --json.

Run as root: .venv/bin/python bench/trains.py [--packets 200000] [--size 1200] [--json F]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lab"))
sys.path.insert(0, str(ROOT / "python"))

from quicoff_lab.dpdk_app import App  # noqa: E402  (quicoff-dpdk on veth pairs)

SENDER = ROOT / "build" / "bench" / "quicoff-bench-trains-host"


def run_mode(app: App, mode: str, packets: int, size: int, train: int) -> dict:
    before = app.stats()
    r = subprocess.run(
        [str(SENDER), app.host.outer, mode, str(packets), str(size), str(train)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # let the offload drain what it has, then read what it protected
    last, end = -1, time.monotonic() + 10
    while time.monotonic() < end:
        now = app.stats()["tx_packets"]
        if now == last:
            break
        last = now
        time.sleep(0.3)
    after = app.stats()
    out["offload_tx_packets"] = after["tx_packets"] - before["tx_packets"]
    out["offload_host_rx_frames"] = after["host_rx"] - before["host_rx"]
    out["offload_busy_cycles_per_packet"] = (after["busy_cycles"] - before["busy_cycles"]) / max(
        1, out["offload_tx_packets"]
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=200000)
    ap.add_argument("--size", type=int, default=1200, help="bytes of each plaintext packet")
    ap.add_argument("--train", type=int, default=0, help="packets per train (0: most in 64 KB)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/trains.py needs root (veth pairs, AF_PACKET, DPDK)", file=sys.stderr)
        return 2
    if not SENDER.exists():
        print("build the tree first: meson setup build && ninja -C build", file=sys.stderr)
        return 2
    # the frame's packets: at most 65344 - 14 - 24 bytes on quicoff-dpdk's
    # af_packet host ring (lab/quicoff_lab/dpdk_app.py)
    train = a.train or (65344 - 14 - 24) // a.size
    app = App("qdb", ["--workers", "1", "--host-mtu", "65535"], lcores="0", host_mtu=65535)
    rows = {"single": [], "train": []}
    try:
        for _ in range(a.rounds):
            for mode in rows:
                rows[mode].append(run_mode(app, mode, a.packets, a.size, train))
    finally:
        app.stop()

    def med(mode, key):
        return statistics.median(r[key] for r in rows[mode])

    summary = {
        mode: {
            "frames_per_packet": med(mode, "frames_per_packet"),
            "host_cpu_ns_per_packet": med(mode, "host_cpu_ns_per_packet"),
            "offload_tx_packets": med(mode, "offload_tx_packets"),
            "offload_busy_cycles_per_packet": med(mode, "offload_busy_cycles_per_packet"),
        }
        for mode in rows
    }
    result = {
        "packets": a.packets,
        "packet_size": a.size,
        "train": train,
        "rounds": a.rounds,
        "summary": summary,
        "host_cpu_ratio_train_vs_single": summary["train"]["host_cpu_ns_per_packet"]
        / summary["single"]["host_cpu_ns_per_packet"],
        "runs": rows,
    }
    print(
        "%-7s %18s %22s %20s %26s"
        % (
            "mode",
            "frames/packet",
            "host CPU ns/packet",
            "offload tx_packets",
            "offload cycles/packet",
        )
    )
    for mode, s in summary.items():
        print(
            "%-7s %18.4f %22.1f %20d %26.0f"
            % (
                mode,
                s["frames_per_packet"],
                s["host_cpu_ns_per_packet"],
                s["offload_tx_packets"],
                s["offload_busy_cycles_per_packet"],
            )
        )
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
