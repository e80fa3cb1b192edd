#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Host CPU per GB of qo-h3-server (integrations/ngtcp2) serving one large
file to Debian's gtlsclient: on loopback, --offload none against inproc;
with --dpdk (root), none, inproc, dpdk (1-RTT packets to the offload in
trains, DATA_TRAIN) and dpdk-no-trains (one DATA_TO_OFFLOAD per packet,
qo-h3-server --offload-trains off), each through a quicoff-dpdk between two
namespaces (lab/quicoff_lab/offload_link.py), so that the four modes cross
the same links (none and inproc through the offload's pass-through, dpdk
through its crypto). The host link is jumbo (--host-mtu, default 65535) so
that trains are as long as a batch; --host-mtu 1500 shows them cut to one
packet.

The host figure is the server process's own user + system time (getrusage
at exit, so the handshake and start-up are in it), divided by the bytes
served; the client's time is not counted. The offload's figure (--dpdk) is
quicoff-dpdk's busy time during the download: the TSC cycles its lcore
spent on frames (telemetry busy_cycles; empty polls are not counted, so a
busy-polling process's 100% CPU does not hide it) over the TSC frequency.
Medians of --rounds rounds, the modes interleaved so that a busy neighbour
hurts all alike. On a shared 2-core machine the client, the server, the
offload and the kernel share the cores: the numbers show where the time
goes, not a capacity.

Run: .venv/bin/python bench/ngtcp2_cpu.py [--size-mb 100] [--rounds 3] [--dpdk]
     [--host-mtu 65535] [--json F]
(after meson setup build && ninja -C build; --dpdk under flock /tmp/quicoff-net.lock)
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lab"))
BUILD = Path(os.environ.get("QUICOFF_BUILD_DIR", ROOT / "build"))
SERVER = BUILD / "integrations" / "ngtcp2" / "qo-h3-server"
MODES = ("none", "inproc")


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(work, mode, name, want_sha, link=None):
    """One download; link: an OffloadLink to cross (server in its host
    namespace, client in its peer namespace), else loopback."""
    if link is not None:
        from quicoff_lab import offload_link as ol

        host, port = ol.HOST_IP, 4433
        srv_ns = lambda argv: ol.in_ns(ol.NS_HOST, *argv)  # noqa: E731
        cli_ns = lambda argv: ol.in_ns(ol.NS_PEER, *argv)  # noqa: E731
        extra = []
        if mode.startswith("dpdk"):
            extra = ["--host-if", ol.HOST_IF]
        if mode == "dpdk-no-trains":
            extra += ["--offload-trains", "off"]
        busy0 = link.offload_busy_s()
    else:
        host, port = "127.0.0.1", free_udp_port()
        srv_ns = cli_ns = lambda argv: argv
        extra = []
    stats = work / ("stats-%s.json" % mode)
    out = work / "dl"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    server = subprocess.Popen(
        srv_ns(
            [
                str(SERVER),
                "-d",
                str(work / "htdocs"),
                "--offload",
                mode.split("-")[0],
                "--once",
                "--stats",
                str(stats),
                *extra,
                host,
                str(port),
                str(work / "key.pem"),
                str(work / "cert.pem"),
            ]
        ),
        stderr=subprocess.PIPE,
    )
    try:
        line = server.stderr.readline().decode(errors="replace")
        if "listening" not in line:
            raise SystemExit("qo-h3-server did not start: %s" % line)
        t0 = time.monotonic()
        subprocess.run(
            cli_ns(
                [
                    "gtlsclient",
                    "-q",
                    "--exit-on-all-streams-close",
                    "--download",
                    str(out),
                    host,
                    str(port),
                    "https://%s:%d/%s" % (host, port, name),
                ]
            ),
            check=True,
            capture_output=True,
            timeout=600,
        )
        wall = time.monotonic() - t0
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=10)
    st = json.loads(stats.read_text())
    h = hashlib.sha256()
    with open(out / name, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != want_sha:
        raise SystemExit("%s: the download's SHA-256 differs" % mode)
    cpu = st["cpu_user_s"] + st["cpu_sys_s"]
    gb = st["bytes_served"] / 1e9
    busy = (link.offload_busy_s() - busy0) if link is not None else None
    if mode.startswith("dpdk") and (st["host_1rtt_aead_calls"] != 0 or st["fallbacks"] != 0):
        raise SystemExit("dpdk: the connection did not stay offloaded: %s" % st)
    return {
        "offload_busy_s": busy,
        "offload_busy_s_per_gb": busy / gb if busy is not None else None,
        "cpu_s": cpu,
        "cpu_user_s": st["cpu_user_s"],
        "cpu_sys_s": st["cpu_sys_s"],
        "host_cpu_s_per_gb": cpu / gb,
        "wall_s": wall,
        "gbit_s": st["bytes_served"] * 8 / wall / 1e9,
        "stack_1rtt_packets_sent": st["stack_1rtt_packets_sent"],
        "host_1rtt_aead_calls": st["host_1rtt_aead_calls"],
        "offload_tx_packets": st["offload_tx_packets"],
        "host_frames_sent": st.get("host_frames_sent", 0),
        "frames_per_packet": st.get("frames_per_packet"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument(
        "--host-mtu",
        type=int,
        default=65535,
        help="--dpdk: the host link's MTU (trains of packets fit it; 1500: one per frame)",
    )
    ap.add_argument(
        "--dpdk",
        action="store_true",
        help="none, inproc and dpdk through quicoff-dpdk between namespaces (root)",
    )
    args = ap.parse_args()
    modes = MODES + ("dpdk", "dpdk-no-trains") if args.dpdk else MODES
    if args.dpdk and os.geteuid() != 0:
        sys.exit("--dpdk needs root (namespaces, veth pairs, DPDK)")
    if not SERVER.exists():
        sys.exit("%s missing: meson setup build && ninja -C build" % SERVER)
    if not shutil.which("gtlsclient"):
        sys.exit("gtlsclient missing: apt-get install ngtcp2-client")
    with tempfile.TemporaryDirectory(prefix="qo-h3-bench-") as tmp:
        work = Path(tmp)
        from quicoff_lab.certs import self_signed

        self_signed(work)
        (work / "htdocs").mkdir()
        name = "f%dm" % args.size_mb
        body = os.urandom(args.size_mb << 20)
        (work / "htdocs" / name).write_bytes(body)
        want = hashlib.sha256(body).hexdigest()
        del body
        os.chmod(tmp, 0o755)  # readable by the namespaces' processes too
        runs = {m: [] for m in modes}
        link = None
        if args.dpdk:
            from quicoff_lab.offload_link import OffloadLink

            link = OffloadLink(host_mtu=args.host_mtu if args.host_mtu != 1500 else None)
        try:
            for r in range(args.rounds):
                for mode in modes:
                    res = one_run(work, mode, name, want, link)
                    runs[mode].append(res)
                    print(
                        "round %d %-14s cpu %.3f s (%.2f s/GB)  wall %.2f s  %.2f Gbit/s  aead %d%s%s"
                        % (
                            r + 1,
                            mode,
                            res["cpu_s"],
                            res["host_cpu_s_per_gb"],
                            res["wall_s"],
                            res["gbit_s"],
                            res["host_1rtt_aead_calls"],
                            "  offload busy %.2f s/GB" % res["offload_busy_s_per_gb"]
                            if link
                            else "",
                            "  frames/packet %.3f" % res["frames_per_packet"]
                            if res["frames_per_packet"] is not None
                            else "",
                        )
                    )
        finally:
            if link:
                link.close()
    summary = {
        m: {
            "host_cpu_s_per_gb": statistics.median(x["host_cpu_s_per_gb"] for x in runs[m]),
            "gbit_s": statistics.median(x["gbit_s"] for x in runs[m]),
        }
        for m in modes
    }
    if args.dpdk:
        for m in modes:
            summary[m]["offload_busy_s_per_gb"] = statistics.median(
                x["offload_busy_s_per_gb"] for x in runs[m]
            )
            if m.startswith("dpdk"):
                summary[m]["frames_per_packet"] = statistics.median(
                    x["frames_per_packet"] for x in runs[m]
                )
    ratio = summary["inproc"]["host_cpu_s_per_gb"] / summary["none"]["host_cpu_s_per_gb"]
    print(
        "median host CPU per GB: none %.2f s, inproc %.2f s (inproc/none %.2f)"
        % (summary["none"]["host_cpu_s_per_gb"], summary["inproc"]["host_cpu_s_per_gb"], ratio)
    )
    result = {
        "size_bytes": args.size_mb << 20,
        "rounds": args.rounds,
        "cpu_count": os.cpu_count(),
        "link": "quicoff-dpdk between namespaces, host link MTU %d" % args.host_mtu
        if args.dpdk
        else "loopback",
        "modes": summary,
        "inproc_over_none": ratio,
        "runs": runs,
    }
    if args.dpdk:
        for m in ("dpdk", "dpdk-no-trains"):
            result["%s_over_none" % m.replace("-", "_")] = (
                summary[m]["host_cpu_s_per_gb"] / summary["none"]["host_cpu_s_per_gb"]
            )
        print(
            "median host CPU per GB: dpdk %.2f s (dpdk/none %.2f, frames/packet %.3f), "
            "dpdk-no-trains %.2f s (%.2f, frames/packet %.3f); offload busy per GB: "
            "none %.2f s, inproc %.2f s, dpdk %.2f s, dpdk-no-trains %.2f s"
            % (
                summary["dpdk"]["host_cpu_s_per_gb"],
                result["dpdk_over_none"],
                summary["dpdk"]["frames_per_packet"],
                summary["dpdk-no-trains"]["host_cpu_s_per_gb"],
                result["dpdk_no_trains_over_none"],
                summary["dpdk-no-trains"]["frames_per_packet"],
                summary["none"]["offload_busy_s_per_gb"],
                summary["inproc"]["offload_busy_s_per_gb"],
                summary["dpdk"]["offload_busy_s_per_gb"],
                summary["dpdk-no-trains"]["offload_busy_s_per_gb"],
            )
        )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
