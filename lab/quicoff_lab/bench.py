# SPDX-License-Identifier: Apache-2.0
"""``quicoff bench``: quicoff against the fastest QUIC packet crypto, in one run.

Runs, per suite, payload size and direction (see docs/bench.md):

* quicoff with each available backend (build/bench/quicoff-bench --backend X);
* bare OpenSSL EVP (measured by quicoff-bench in the same process);
* bare intel-ipsec-mb (bench/peers/ipsecmb_bare, AEAD only);
* DPDK's dpdk-test-crypto-perf with the aesni_gcm, aesni_mb and openssl vdevs;
* rustls's QUIC packet keys (bench/peers/rustls-quic, ring provider);
* ngtcp2's crypto with GnuTLS (bench/peers/ngtcp2_bench);

then prints a table (ns/packet and the ratio to quicoff's best backend, Mpps
and Gbit/s), writes ``--json`` records and a ``--plot`` PNG.  It builds what
is missing and says exactly what it cannot build.  Exit status: 0 when every
path ran (some may not support a suite), 1 when a path failed, 2 on bad
usage or a missing prerequisite of the command itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import bench_peers as bp

DEFAULT_PLOT = os.path.join("results", "bench", "bench.png")


def _csv(kind):
    def parse(text):
        vals = [v.strip() for v in text.split(",") if v.strip()]
        if not vals:
            raise argparse.ArgumentTypeError("empty list")
        return [kind(v) for v in vals]

    return parse


def _size_token(v: str) -> str:
    if v in ("88", "short-88"):
        return "short-88"
    n = int(v)
    if not 20 <= n <= 16384:
        raise ValueError(v)
    return str(n)


def _suite(v: str) -> str:
    if v not in bp.SUITES:
        raise argparse.ArgumentTypeError("unknown suite %r (one of %s)" % (v, ", ".join(bp.SUITES)))
    return v


def _conns(v: str) -> int:
    n = int(v)
    if n < 1:
        raise ValueError(v)
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="3 short repeats per measurement; the whole run takes < 2 minutes",
    )
    p.add_argument(
        "--suite",
        type=_csv(_suite),
        default=list(bp.SUITES),
        metavar="LIST",
        help="suites (default: all four: %s)" % ",".join(bp.SUITES),
    )
    p.add_argument(
        "--size",
        type=_csv(_size_token),
        default=None,
        metavar="LIST",
        help="payload bytes; 88 or short-88 = the FPGA prototype's 88-byte packet (20-byte "
        "DCID, 47-byte payload). Default: %s" % ",".join(bp.DEFAULT_SIZES),
    )
    p.add_argument(
        "--connections",
        type=_csv(_conns),
        default=[1],
        metavar="LIST",
        help="live connections, e.g. 1,1000000 (quicoff-bench and the C/Rust "
        "peers; DPDK uses one session). Default: 1",
    )
    p.add_argument(
        "--threads",
        type=_csv(_conns),
        default=[1],
        metavar="LIST",
        help="worker threads, passed to quicoff-bench when it has --threads; "
        "the peers measure one thread. Default: 1",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        metavar="R",
        help="repeats per measurement (default 7, quick 3; DPDK 5, quick 3)",
    )
    p.add_argument(
        "--min-ms",
        type=float,
        default=None,
        metavar="MS",
        help="minimum timed work per repeat (default 50, quick 10)",
    )
    p.add_argument(
        "--dpdk-total-ops",
        type=int,
        default=None,
        metavar="N",
        help="operations per DPDK measurement (default 1000000, quick 100000)",
    )
    p.add_argument(
        "--backends",
        type=_csv(str),
        default=list(bp.QUICOFF_BACKENDS),
        metavar="LIST",
        help="quicoff backends to try (default: openssl,ipsec-mb; "
        "absent ones are reported as unavailable)",
    )
    p.add_argument(
        "--paths",
        type=_csv(str),
        default=None,
        metavar="LIST",
        help="run only these paths (quicoff, %s)" % ",".join(bp.PEER_PATHS),
    )
    p.add_argument("--json", metavar="FILE", help="write one record per measurement")
    p.add_argument(
        "--plot",
        metavar="FILE",
        default=DEFAULT_PLOT,
        help="PNG of ns/packet vs payload (default %s)" % DEFAULT_PLOT,
    )
    p.add_argument("--no-plot", action="store_true", help="do not draw the PNG")
    p.add_argument(
        "--active-sweep",
        action="store_true",
        help="connections %s, every one active (uniformly random traffic), quicoff only "
        "unless --paths says otherwise; with the plot also <plot>-connections.png, ns/packet "
        "against active connections (the 10^6 run needs ~5 GB and ~30 s of set-up)"
        % ",".join(map(str, ACTIVE_SWEEP)),
    )
    p.add_argument(
        "--build-dir", metavar="DIR", default=None, help="meson build dir (default: <source>/build)"
    )
    p.add_argument(
        "--no-build", action="store_true", help="do not build anything; report what is missing"
    )
    p.add_argument(
        "--cpu",
        type=int,
        default=None,
        help="CPU to measure on (default: the highest one this process may use)",
    )
    p.set_defaults(func=run)


# ---- progress --------------------------------------------------------------------


class Progress:
    """A plain-text progress bar on stderr (one line per step when not a tty)."""

    def __init__(self, total: float, stream=None):
        self.total = max(total, 1e-9)
        self.done = 0.0
        self.t0 = time.monotonic()
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.label = ""

    def _draw(self, final=False):
        frac = min(self.done / self.total, 1.0)
        width = 30
        bar = "#" * int(frac * width) + "." * (width - int(frac * width))
        el = int(time.monotonic() - self.t0)
        line = "[%s] %3d%% %02d:%02d %s" % (bar, frac * 100, el // 60, el % 60, self.label)
        if self.tty:
            self.stream.write(
                "\r\x1b[K"
                + line[: max(20, os.get_terminal_size(self.stream.fileno()).columns - 1)]
                + ("\n" if final else "")
            )
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def start(self, label: str):
        self.label = label
        self._draw()

    def step(self, weight: float):
        self.done += weight

    def message(self, text: str):
        if self.tty:
            self.stream.write("\r\x1b[K")
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self):
        self.done = self.total
        self.label = "done"
        self._draw(final=True)


# ---- table ------------------------------------------------------------------------


def column_of(rec: Dict) -> str:
    if rec["path"] == "quicoff":
        return "quicoff/" + rec.get("backend", "?")
    return rec["path"]


def _key(rec: Dict) -> Tuple:
    return (rec["connections"], rec.get("threads", 1), rec["suite"], rec["label"], rec["op"])


def columns(records: Sequence[Dict], backends: Sequence[str]) -> List[str]:
    present = {column_of(r) for r in records}
    cols = ["quicoff/" + b for b in backends if "quicoff/" + b in present]
    cols += [p for p in bp.PEER_PATHS if p in present]
    return cols


def add_ratios(records: List[Dict]) -> None:
    """ratio_to_quicoff = ns / (the fastest ok quicoff backend's ns) for the same row."""
    best: Dict[Tuple, float] = {}
    for r in records:
        if r["path"] == "quicoff" and r["status"] == "ok" and r.get("ns_median"):
            k = _key(r)
            best[k] = min(best.get(k, float("inf")), r["ns_median"])
    for r in records:
        b = best.get(_key(r))
        r["ratio_to_quicoff"] = (
            round(r["ns_median"] / b, 4)
            if b and r["status"] == "ok" and r.get("ns_median")
            else None
        )


def _fmt_ns(ns: float) -> str:
    return "%.0f" % ns if ns >= 100 else "%.1f" % ns


def _cell(rec: Optional[Dict], mode: str) -> str:
    if rec is None:
        return ""
    st = rec["status"]
    if st != "ok":
        return {"unsupported": "n/s", "unavailable": "n/a"}.get(st, "FAILED")
    if mode == "ns":
        ratio = rec.get("ratio_to_quicoff")
        return _fmt_ns(rec["ns_median"]) + (" (%.2f)" % ratio if ratio is not None else "")
    return "%.2f / %.2f" % (rec["mpps"], rec["gbps"])


def render_tables(
    records: Sequence[Dict], backends: Sequence[str], sizes: Sequence[str], suites: Sequence[str]
) -> str:
    main = [r for r in records if r["path"] not in bp.AUX_PATHS]
    cols = columns(main, backends)
    by: Dict[Tuple, Dict[str, Dict]] = {}
    for r in main:
        by.setdefault(_key(r), {})[column_of(r)] = r
    labels = [bp.size_info(z)["label"] for z in sizes]
    groups = sorted({(k[0], k[1]) for k in by})
    out = []
    heads = [c + ("" if bp.HEADER_PROTECTION.get(c.split("/")[0]) else " [aead]") for c in cols]
    for conns, threads in groups:
        rows = [
            (s, lab, op)
            for s in suites
            for lab in labels
            for op in bp.OPS
            if (conns, threads, s, lab, op) in by
            and any(x["status"] == "ok" for x in by[(conns, threads, s, lab, op)].values())
        ]
        if not rows:
            continue
        rate = (
            "Mpps / Gbit/s (payload) per core"
            if threads == 1
            else "Mpps / Gbit/s (payload), sum over the %d threads" % threads
        )
        for mode, title in (
            ("ns", "ns/packet per core (ratio to quicoff's best backend)"),
            ("rate", rate),
        ):
            out.append(
                "\n%s -- %d connection%s, %d thread%s\n"
                % (title, conns, "" if conns == 1 else "s", threads, "" if threads == 1 else "s")
            )
            out.append("| suite | size | op | " + " | ".join(heads) + " |")
            out.append("|---|---|---|" + "---:|" * len(cols))
            for s, lab, op in rows:
                cells = by[(conns, threads, s, lab, op)]
                out.append(
                    "| %s | %s | %s | %s |"
                    % (s, lab, op, " | ".join(_cell(cells.get(c), mode) for c in cols))
                )
    out.append(
        "\n[aead] = AEAD only (no header protection, no parsing): a floor, not a "
        "like-for-like QUIC packet.  n/s = the path does not offer the suite; "
        "n/a = quicoff backend not built in; FAILED = see below."
    )
    return "\n".join(out)


def render_problems(records: Sequence[Dict]) -> Tuple[str, int]:
    failed: Dict[Tuple[str, str], int] = {}
    other: Dict[Tuple[str, str, str], set] = {}
    for r in records:
        if r["status"] == "failed":
            k = (column_of(r), r.get("reason", "?"))
            failed[k] = failed.get(k, 0) + 1
        elif r["status"] in ("unsupported", "unavailable"):
            other.setdefault((column_of(r), r["status"], r.get("reason", "")), set()).add(
                r["suite"]
            )
    lines = []
    if failed:
        lines.append("\nFAILED (%d measurements):\n" % sum(failed.values()))
        for (col, reason), n in sorted(failed.items()):
            lines.append("- %s: %s  [%d measurement%s]" % (col, reason, n, "" if n == 1 else "s"))
    if other:
        lines.append("\nNot measured:\n")
        for (col, st, reason), suites in sorted(other.items()):
            lines.append("- %s (%s): %s" % (col, ", ".join(sorted(suites)), reason))
    return "\n".join(lines), sum(failed.values())


# ---- plot --------------------------------------------------------------------------


ACTIVE_SWEEP = (1, 1000, 10000, 100000, 1000000)


def connections_plot_path(path: str) -> str:
    """Where the ns-against-connections plot goes, beside the main plot."""
    root, ext = os.path.splitext(path)
    return root + "-connections" + (ext or ".png")


def plot_connections(records: Sequence[Dict], path: str, title: str) -> bool:
    """quicoff's ns/packet against the number of active connections, one line
    per (backend, suite, operation, size); False (nothing drawn) when the run
    measured fewer than two connection counts."""
    main = [
        r
        for r in records
        if r["path"] == "quicoff" and r["status"] == "ok" and r.get("threads", 1) == 1
    ]
    counts = sorted({r.get("active_connections") or r["connections"] for r in main})
    if len(counts) < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: Dict[Tuple, List[Tuple[int, float]]] = {}
    for r in main:
        key = (r.get("backend", ""), r["suite"], r["op"], r["label"])
        lines.setdefault(key, []).append(
            (r.get("active_connections") or r["connections"], r["ns_median"])
        )
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for key, pts in sorted(lines.items()):
        pts.sort()
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            "-" if key[2] == "protect" else "--",
            marker="o",
            markersize=3,
            label="%s %s %s %s B" % key,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("active connections (uniformly random traffic over all of them)")
    ax.set_ylabel("ns / packet (log), 1 thread")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot(
    records: Sequence[Dict], path: str, backends: Sequence[str], suites: Sequence[str], title: str
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    main = [r for r in records if r["path"] not in bp.AUX_PATHS and r["status"] == "ok"]
    cols = columns(main, backends)
    combos = sorted({(r["connections"], r.get("threads", 1)) for r in main})
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(
        max(len(suites), 1), 2, figsize=(13, 3.4 * max(len(suites), 1) + 0.9), squeeze=False
    )
    legend: Dict[str, object] = {}
    cmap = plt.get_cmap("tab10")
    for i, s in enumerate(suites):
        for j, op in enumerate(bp.OPS):
            ax = axes[i][j]
            for ci, col in enumerate(cols):
                for k, (conns, thr) in enumerate(combos):
                    pts = sorted(
                        (r["payload"], r["ns_median"])
                        for r in main
                        if column_of(r) == col
                        and r["suite"] == s
                        and r["op"] == op
                        and r["connections"] == conns
                        and r.get("threads", 1) == thr
                    )
                    if not pts:
                        continue
                    lab = col + ("" if bp.HEADER_PROTECTION.get(col.split("/")[0]) else " [aead]")
                    if len(combos) > 1:
                        lab += " c=%d t=%d" % (conns, thr)
                    ax.plot(
                        [p[0] for p in pts],
                        [p[1] for p in pts],
                        styles[k % len(styles)],
                        marker="o",
                        markersize=3,
                        color=cmap(ci % 10),
                        linewidth=2.4 if col.startswith("quicoff") else 1.2,
                        label=lab,
                    )
            ax.set_title("%s %s" % (s, op), fontsize=10)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ticks = sorted({r["payload"] for r in main if r["suite"] == s})
            if ticks:
                ax.set_xticks(ticks)
                ax.set_xticklabels([str(t) for t in ticks])
                ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.yaxis.set_minor_formatter(
                matplotlib.ticker.FuncFormatter(
                    lambda v, _pos: "%g" % v if str(int(v))[0] in "25" else ""
                )
            )
            ax.set_xlabel("payload bytes (47 = the 88-byte short-88 packet)", fontsize=8)
            ax.set_ylabel("ns / packet (log)", fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
            ax.tick_params(labelsize=7, which="both")
            if not ax.has_data():
                ax.text(0.5, 0.5, "no successful measurement", ha="center", transform=ax.transAxes)
            for h, lab in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(lab, h)
    if legend:
        fig.legend(
            list(legend.values()),
            list(legend.keys()),
            loc="lower center",
            ncol=min(5, len(legend)),
            fontsize=8,
            frameon=False,
        )
    rows = max(len(suites), 1)
    bottom = (0.35 + 0.22 * ((len(legend) + 4) // 5)) / (3.4 * rows + 0.9)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.35 / (3.4 * rows + 0.9)))
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- the run ------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def run(args) -> int:
    root = bp.source_root()
    if root is None:
        sys.stderr.write(
            "quicoff bench: the quicoff source checkout was not found (it needs "
            "bench/ and meson.build: run it from a checkout, or set "
            "QUICOFF_SOURCE_DIR)\n"
        )
        return 2
    plot_path = None if args.no_plot else args.plot
    if plot_path:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            sys.stderr.write(
                "quicoff bench: --plot needs matplotlib: pip install "
                "'quicoff[bench]' (or pass --no-plot)\n"
            )
            return 2
    allowed = set(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else max(allowed)
    if cpu not in allowed:
        sys.stderr.write(
            "quicoff bench: --cpu %d is not usable by this process (%s)\n" % (cpu, sorted(allowed))
        )
        return 2
    sizes = args.size or list(bp.QUICK_SIZES if args.quick else bp.DEFAULT_SIZES)
    if args.active_sweep:
        args.connections = list(ACTIVE_SWEEP)
        if not args.paths:
            args.paths = ["quicoff"]
    want = set(args.paths) if args.paths else None
    known = {"quicoff"} | set(bp.PEER_PATHS) | {"dpdk"}
    if want and not want <= known:
        sys.stderr.write(
            "quicoff bench: unknown path(s) %s (known: %s)\n"
            % (", ".join(sorted(want - known)), ", ".join(sorted(known)))
        )
        return 2

    def wanted(p: str) -> bool:
        return want is None or p in want or (p.startswith("dpdk-") and "dpdk" in want)

    t_start = time.time()
    prog = Progress(1.0)
    records: List[Dict] = []
    cfg = bp.Config(
        root=root,
        build_dir=Path(args.build_dir) if args.build_dir else root / "build",
        suites=args.suite,
        sizes=sizes,
        connections=args.connections,
        threads=args.threads,
        quick=args.quick,
        repeats=args.repeats,
        min_ms=args.min_ms,
        cpu=cpu,
        backends=args.backends,
        dpdk_total_ops=args.dpdk_total_ops or (100000 if args.quick else None),
        build=not args.no_build,
        log=lambda m: prog.message("quicoff bench: " + m),
    )
    multi_threads = [t for t in args.threads if t != 1]

    # ---- plan: (label, weight, callable returning records) ----
    builder = bp.Builder(cfg)
    jobs: List[Tuple[str, float, Callable[[], List[Dict]]]] = []
    jobs.append(
        ("build: meson/ninja (quicoff-bench, C peers)", 1, lambda: (builder.meson(), [])[1])
    )
    if wanted("rustls-quic"):
        jobs.append(("build: cargo (rustls peer)", 1, lambda: (builder.cargo(), [])[1]))
    builder.dpdk()

    state: Dict = {}

    def quicoff_probe() -> List[Dict]:
        exe = builder.exe.get("quicoff-bench")
        out: List[Dict] = []
        if exe is None:
            reason = builder.missing.get("quicoff-bench", "quicoff-bench not built")
            for be in args.backends[:1]:
                out += bp.placeholder(
                    "quicoff", be, cfg.suites, sizes, cfg.connections, [1], "failed", reason
                )
            out += bp.placeholder(
                "openssl-evp", "openssl", cfg.suites, sizes, cfg.connections, [1], "failed", reason
            )
            state["backends"] = []
            return out
        state["has_threads"] = "--threads" in bp.quicoff_bench_help(exe)
        avail = []
        for be in args.backends:
            st, reason = bp.probe_backend(exe, be, cfg)
            if st == "ok":
                avail.append(be)
            else:
                out += bp.placeholder(
                    "quicoff", be, cfg.suites, sizes, cfg.connections, [1], st, reason
                )
        state["backends"] = avail
        if not avail:
            out += bp.placeholder(
                "openssl-evp",
                "openssl",
                cfg.suites,
                sizes,
                cfg.connections,
                [1],
                "failed",
                "no quicoff backend runs, so quicoff-bench measured nothing",
            )
        return out

    def quicoff_job(be_index: int, suite: str) -> Callable[[], List[Dict]]:
        def job():
            avail = state.get("backends", [])
            if be_index >= len(avail):
                return []
            be = avail[be_index]
            return bp.run_quicoff(
                builder.exe["quicoff-bench"],
                be,
                suite,
                baseline=(be_index == 0) and wanted("openssl-evp"),
                cfg=cfg,
                has_threads=state.get("has_threads", False),
            )

        return job

    if wanted("quicoff") or wanted("openssl-evp"):
        jobs.append(("quicoff: probe backends %s" % ",".join(args.backends), 0.5, quicoff_probe))
        for i in range(len(args.backends)):
            for s in cfg.suites:
                jobs.append(("quicoff-bench (backend #%d) %s" % (i + 1, s), 3, quicoff_job(i, s)))

    def peer_job(path: str, exe_key: str, suite: str):
        def job():
            exe = builder.exe.get(exe_key)
            if exe is None:
                return bp.placeholder(
                    path,
                    "",
                    [suite],
                    sizes,
                    cfg.connections,
                    [1],
                    "unavailable" if exe_key in builder.unavailable else "failed",
                    builder.missing.get(exe_key, "not built"),
                )
            backend = getattr(builder, "rustls_backend", None) if path == "rustls-quic" else None
            return bp.run_peer(path, exe, suite, cfg, backend)

        return job

    for path, key in (
        ("ipsecmb-bare", "ipsecmb_bare"),
        ("rustls-quic", "rustls-quic"),
        ("ngtcp2-gnutls", "ngtcp2_bench"),
    ):
        if wanted(path):
            for s in cfg.suites:
                jobs.append(("%s %s" % (path, s), 1, peer_job(path, key, s)))

    def dpdk_job(dev: str, suite: str, op: str, group: List[str]):
        def job():
            path = "dpdk-" + dev.replace("crypto_", "")
            exe = builder.exe.get("dpdk")
            if exe is None:
                return bp.placeholder(
                    path, dev, [suite], group, [1], [1], "failed", builder.missing["dpdk"], ops=[op]
                )
            return bp.run_dpdk(exe, dev, suite, op, group, cfg)

        return job

    groups: Dict[int, List[str]] = {}
    for z in sizes:
        groups.setdefault(bp.size_info(z)["header_len"], []).append(z)
    for dev in bp.DPDK_DEVICES:
        path = "dpdk-" + dev.replace("crypto_", "")
        if not wanted(path):
            continue
        for s in cfg.suites:
            for op in bp.OPS:
                for g in groups.values():
                    jobs.append(
                        (
                            "%s %s %s %s"
                            % (path, s, op, "+".join(bp.size_info(z)["label"] for z in g)),
                            1,
                            dpdk_job(dev, s, op, g),
                        )
                    )
            big = [c for c in cfg.connections if c != 1]
            if big:
                records.extend(
                    bp.placeholder(
                        path,
                        dev,
                        [s],
                        sizes,
                        big,
                        [1],
                        "unsupported",
                        "dpdk-test-crypto-perf drives one crypto session",
                    )
                )

    # ---- run ----
    prog.total = sum(w for _, w, _ in jobs)
    prog.message(
        "quicoff bench: %s run, %d suite(s) x %d size(s), connections %s, threads %s, "
        "measuring on CPU %d; source %s"
        % (
            "quick" if args.quick else "full",
            len(cfg.suites),
            len(sizes),
            ",".join(map(str, cfg.connections)),
            ",".join(map(str, cfg.threads)),
            cpu,
            root,
        )
    )
    for label, weight, fn in jobs:
        prog.start(label)
        try:
            records.extend(fn())
        except Exception as e:  # a broken path must not hide the others
            prog.message("quicoff bench: %s: internal error: %r" % (label, e))
            records.append(
                bp.finish(
                    dict(
                        path=label.split()[0],
                        backend="",
                        suite="-",
                        op="-",
                        label="-",
                        payload=0,
                        connections=1,
                        status="failed",
                        reason="internal error: %r" % e,
                    )
                )
            )
        prog.step(weight)
        if label.startswith("build: meson"):
            for k, why in builder.missing.items():
                prog.message("quicoff bench: cannot build %s: %s" % (k, why))
        if label.startswith("build: cargo") and "rustls-quic" in builder.unavailable:
            # optional: a note here and under the table ("Not measured"); the run can pass
            prog.message("quicoff bench: " + builder.unavailable["rustls-quic"])
        elif label.startswith("build: cargo") and "rustls-quic" in builder.missing:
            prog.message(
                "quicoff bench: cannot build rustls-quic: %s" % builder.missing["rustls-quic"]
            )
    if "dpdk" in builder.missing and any(
        wanted("dpdk-" + d.replace("crypto_", "")) for d in bp.DPDK_DEVICES
    ):
        prog.message("quicoff bench: %s" % builder.missing["dpdk"])
    prog.close()

    # threads > 1: quicoff-bench's --threads when it has one; the peers are single-threaded
    if multi_threads:
        if not state.get("has_threads"):
            # TODO(issue 3): quicoff-bench --threads (the lead's change) is passed through by
            # bench_peers.run_quicoff as soon as `quicoff-bench --help` lists it.
            msg = (
                "quicoff-bench has no --threads option yet: threads %s not measured "
                "(TODO: passed through automatically once it has one)"
                % ",".join(map(str, multi_threads))
            )
            prog.message("quicoff bench: WARNING: " + msg)
            for be in state.get("backends", []) or args.backends[:1]:
                records.extend(
                    bp.placeholder(
                        "quicoff",
                        be,
                        cfg.suites,
                        sizes,
                        cfg.connections,
                        multi_threads,
                        "unsupported",
                        msg,
                    )
                )
        for path in bp.PEER_PATHS:
            if path != "openssl-evp" or not state.get("has_threads"):
                if any(r["path"] == path for r in records):
                    records.extend(
                        bp.placeholder(
                            path,
                            "",
                            cfg.suites,
                            sizes,
                            [1],
                            multi_threads,
                            "unsupported",
                            "measures one thread",
                        )
                    )

    add_ratios(records)

    title = "quicoff bench (%s run) on %s, %d CPUs; %s" % (
        "quick" if args.quick else "full",
        _cpu_model(),
        os.cpu_count() or 0,
        time.strftime("%Y-%m-%d"),
    )
    print("# " + title)
    print(render_tables(records, args.backends, sizes, cfg.suites))
    problems, nfailed = render_problems(records)
    if problems:
        print(problems)
    for n in cfg.notes:
        print("note: " + n)

    if args.json:
        meta = {
            "tool": "quicoff bench",
            "argv": sys.argv[1:],
            "quick": args.quick,
            "cpu_model": _cpu_model(),
            "cpus": os.cpu_count(),
            "measure_cpu": cpu,
            "suites": list(cfg.suites),
            "sizes": list(sizes),
            "connections": list(cfg.connections),
            "threads": list(cfg.threads),
            "quicoff_backends": state.get("backends"),
            "missing": builder.missing,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t_start)),
            "duration_s": round(time.time() - t_start, 1),
            "notes": cfg.notes,
            "ccm_job_min_len": next(
                (
                    {k: r[k] for k in r if k.startswith("ccm_job_min_len")}
                    for r in records
                    if "ccm_job_min_len" in r
                ),
                None,
            ),
        }
        d = os.path.dirname(args.json)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "records": records}, f, indent=1)
        sys.stderr.write("quicoff bench: wrote %d records to %s\n" % (len(records), args.json))
    if plot_path:
        plot(records, plot_path, args.backends, cfg.suites, title)
        sys.stderr.write("quicoff bench: wrote %s\n" % plot_path)
        conn_path = connections_plot_path(plot_path)
        if plot_connections(records, conn_path, title):
            sys.stderr.write("quicoff bench: wrote %s\n" % conn_path)
    sys.stderr.write(
        "quicoff bench: %.0f s%s\n"
        % (
            time.time() - t_start,
            "; %d measurement(s) FAILED, see above" % nfailed if nfailed else "",
        )
    )
    return 1 if nfailed else 0
