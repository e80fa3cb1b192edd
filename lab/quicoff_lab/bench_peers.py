# SPDX-License-Identifier: Apache-2.0
"""The measured paths of ``quicoff bench``: how each is built, run and parsed.

Every runner returns a list of records (dicts) with at least: path, backend,
suite, op, label, payload, header_len, connections, threads, status
("ok" | "failed" | "unsupported" | "unavailable") and, when ok, ns_median,
ns_min, mpps, gbps; otherwise a reason.  Nothing here prints except through
the ``log`` callable it is given.  See docs/bench.md for what each path
measures exactly.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .checkout import repo_root

SUITES = ("aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305")
OPS = ("protect", "unprotect")
DEFAULT_SIZES = ("short-88", "64", "128", "256", "512", "1024", "1400")
QUICK_SIZES = DEFAULT_SIZES
QUICOFF_BACKENDS = ("openssl", "ipsec-mb")
DPDK_DEVICES = ("crypto_aesni_gcm", "crypto_aesni_mb", "crypto_openssl")
DPDK_BIN = "dpdk-test-crypto-perf"

#: every path `quicoff bench` knows, in table order (quicoff columns are
#: added per backend).  "aux" paths are partial costs kept in the JSON only.
PEER_PATHS = (
    "openssl-evp",
    "ipsecmb-bare",
    "dpdk-aesni_gcm",
    "dpdk-aesni_mb",
    "dpdk-openssl",
    "rustls-quic",
    "ngtcp2-gnutls",
)
AUX_PATHS = ("openssl-hp",)
#: whether the path's per-packet work includes header protection
HEADER_PROTECTION = {
    "quicoff": True,
    "openssl-evp": False,
    "ipsecmb-bare": False,
    "dpdk-aesni_gcm": False,
    "dpdk-aesni_mb": False,
    "dpdk-openssl": False,
    "rustls-quic": True,
    "ngtcp2-gnutls": True,
    "openssl-hp": True,
}

#: Debian packages that provide what a path needs (tools/install_deps.sh)
APT_HINT = {
    "ipsecmb-bare": "libipsec-mb-dev",
    "ngtcp2-gnutls": "libngtcp2-crypto-gnutls-dev libngtcp2-dev libgnutls28-dev",
    "dpdk": "dpdk-dev (ships dpdk-test-crypto-perf) librte-crypto-ipsec-mb23 "
    "librte-crypto-openssl23",
}


#: bench/peers/rustls-quic's Cargo.lock is version 4, which needs cargo >= 1.78
#: (rustup's). Debian 12's cargo is 1.65, so on a stock machine the rustls peer
#: is skipped with a note (status "unavailable"), never a failure.
CARGO_MIN = (1, 78)


def usable_cargo() -> Tuple[Optional[str], str]:
    """(the cargo that can build the rustls peer, "") or (None, why not)."""
    home_cargo = Path.home() / ".cargo" / "bin" / "cargo"  # rustup's, often not on PATH
    cargo = shutil.which("cargo") or (str(home_cargo) if home_cargo.is_file() else None)
    if not cargo:
        return None, "no cargo found"
    try:
        out = subprocess.run(
            [cargo, "--version"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return None, "%s --version failed: %s" % (cargo, e)
    m = re.match(r"cargo (\d+)\.(\d+)", out)
    if not m:
        return None, "%s --version said %r" % (cargo, out.strip())
    if (int(m.group(1)), int(m.group(2))) < CARGO_MIN:
        return None, "found cargo %s.%s at %s" % (m.group(1), m.group(2), cargo)
    return cargo, ""


def rustls_skip_note(why: str) -> str:
    """The visible note for a skipped rustls peer (tools/install_deps.sh says the same)."""
    return (
        "skipped: rustls peer of quicoff bench needs cargo >= %d.%d (%s); install Rust "
        "with rustup to measure it" % (CARGO_MIN[0], CARGO_MIN[1], why)
    )


def source_root() -> Optional[Path]:
    """The quicoff checkout with the benchmarks' sources (checkout.repo_root,
    $QUICOFF_SOURCE_DIR honoured), or None."""
    try:
        root = repo_root()
    except FileNotFoundError:
        return None
    return root if (root / "bench" / "bench_protect.c").is_file() else None


def size_info(tok: str) -> Dict:
    """Size token as quicoff-bench takes it -> label, payload, DCID and header length."""
    if tok in ("88", "short-88"):
        return {"label": "short-88", "payload": 47, "dcid_len": 20, "header_len": 25}
    n = int(tok)
    return {"label": str(n), "payload": n, "dcid_len": 8, "header_len": 13}


def finish(rec: Dict) -> Dict:
    """Fill the derived fields of a record the same way for every path."""
    rec.setdefault("status", "ok")
    rec.setdefault("threads", 1)
    rec.setdefault("header_protection", HEADER_PROTECTION.get(rec.get("path"), None))
    ns = rec.get("ns_median")
    if rec["status"] == "ok" and ns:
        # ns_median is per core.  One thread: Mpps and Gbit/s follow from it.  More
        # threads (quicoff-bench --threads): keep the tool's aggregate Mpps/Gbit/s.
        rec["mpps_per_core"] = round(1e3 / ns, 4)
        if rec["threads"] == 1 or not rec.get("mpps"):
            rec["mpps"] = round(1e3 / ns, 4)
            rec["gbps"] = round(rec["payload"] * 8.0 / ns, 4)
    else:
        for k in ("ns_median", "ns_min", "mpps", "gbps"):
            rec.setdefault(k, None)
    return rec


def placeholder(
    path: str,
    backend: str,
    suites: Iterable[str],
    sizes: Iterable[str],
    conns: Iterable[int],
    threads: Iterable[int],
    status: str,
    reason: str,
    ops: Iterable[str] = OPS,
    **extra,
) -> List[Dict]:
    """Records for measurements that did not happen, with the reason."""
    out = []
    for s in suites:
        for z in sizes:
            for c in conns:
                for t in threads:
                    for op in ops:
                        r = dict(
                            path=path,
                            backend=backend,
                            suite=s,
                            op=op,
                            connections=c,
                            threads=t,
                            status=status,
                            reason=reason,
                            **size_info(z),
                        )
                        r.update(extra)
                        out.append(finish(r))
    return out


def tail(text: str, n: int = 6) -> str:
    """The last lines of a tool's output, or its error lines when it has some."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errs = [
        ln
        for ln in lines
        if re.search(r"error|undefined reference|FAILED:|fatal", ln, re.I)
        and not ln.startswith("ninja: build stopped")
    ]
    return " | ".join((errs or lines)[-n:])


@dataclass
class Config:
    root: Path
    build_dir: Path
    suites: Sequence[str]
    sizes: Sequence[str]
    connections: Sequence[int]
    threads: Sequence[int]
    quick: bool
    repeats: Optional[int]
    min_ms: Optional[float]
    cpu: Optional[int]
    backends: Sequence[str] = QUICOFF_BACKENDS
    dpdk_total_ops: Optional[int] = None
    build: bool = True
    log: Callable[[str], None] = print
    notes: List[str] = field(default_factory=list)

    # ---- subprocess helpers ------------------------------------------------
    def pin(self):
        """preexec_fn that pins a child to the measurement CPU."""
        cpu = self.cpu
        if cpu is None:
            return None
        return lambda: os.sched_setaffinity(0, {cpu})

    def timing_args(self) -> List[str]:
        a = ["--quick"] if self.quick else []
        if self.repeats:
            a += ["--repeats", str(self.repeats)]
        if self.min_ms:
            a += ["--min-ms", str(self.min_ms)]
        return a


def run(
    cmd: Sequence[str],
    cfg: Config,
    pin: bool = True,
    timeout: float = 3600,
    env: Optional[Dict[str, str]] = None,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        preexec_fn=cfg.pin() if pin else None,
        env=env,
    )


def json_lines(text: str) -> List[Dict]:
    out = []
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.startswith("{"):
            try:
                out.append(json.loads(ln))
            except ValueError:
                pass
    return out


# ---- building ----------------------------------------------------------------


class Builder:
    """Builds what is missing (meson build dir, peers, cargo) and says what it can't."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.missing: Dict[str, str] = {}  # path -> reason
        # optional paths this machine cannot have (a subset of missing): their
        # records say "unavailable", not "failed" (e.g. rustls-quic without cargo)
        self.unavailable: Dict[str, str] = {}
        self.exe: Dict[str, Path] = {}
        self._reconfigured = False

    def _meson_targets(self) -> Optional[set]:
        r = subprocess.run(
            ["meson", "introspect", str(self.cfg.build_dir), "--targets"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if r.returncode != 0:
            return None
        try:
            return {t["name"] for t in json.loads(r.stdout)}
        except ValueError:
            return None

    def meson(self) -> None:
        cfg = self.cfg
        bd = cfg.build_dir
        want = {
            "quicoff-bench": "bench/quicoff-bench",
            "ipsecmb_bare": "bench/peers/ipsecmb_bare",
            "ngtcp2_bench": "bench/peers/ngtcp2_bench",
        }
        if not shutil.which("meson") or not shutil.which("ninja"):
            reason = (
                "meson/ninja not installed (apt-get install meson ninja-build, "
                "or run tools/install_deps.sh)"
            )
            for k in want:
                self.missing[k] = reason
            return
        if not (bd / "build.ninja").is_file():
            if not cfg.build:
                for k in want:
                    self.missing[k] = "no meson build dir %s (run: meson setup %s)" % (bd, bd)
                return
            cfg.log("building: meson setup %s" % bd)
            r = subprocess.run(
                ["meson", "setup", str(bd)],
                cwd=cfg.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            if r.returncode != 0:
                for k in want:
                    self.missing[k] = "meson setup %s failed: %s" % (bd, tail(r.stdout))
                return
        targets = self._meson_targets() or set()
        libs_now = self._peer_libs_present()
        if cfg.build and any(libs_now[k] and k not in targets for k in libs_now):
            # a library was installed after the build dir was configured
            cfg.log("building: meson setup --reconfigure %s (peer libraries appeared)" % bd)
            subprocess.run(
                ["meson", "setup", "--reconfigure", str(bd)],
                cwd=cfg.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            targets = self._meson_targets() or set()
        for name, rel in want.items():
            exe = bd / rel
            if name not in targets:
                hint = {
                    "ipsecmb_bare": APT_HINT["ipsecmb-bare"],
                    "ngtcp2_bench": APT_HINT["ngtcp2-gnutls"],
                }.get(name, "")
                self.missing[name] = (
                    "not built: its library was not found when %s was "
                    "configured (apt-get install %s, or "
                    "tools/install_deps.sh)" % (bd, hint)
                )
                continue
            if cfg.build:
                r = subprocess.run(
                    ["ninja", "-C", str(bd), rel],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                if r.returncode != 0:
                    self.missing[name] = "ninja -C %s %s failed: %s" % (bd, rel, tail(r.stdout, 8))
                    continue
            if not exe.is_file():
                self.missing[name] = "%s missing (run: ninja -C %s)" % (exe, bd)
                continue
            self.exe[name] = exe

    @staticmethod
    def _peer_libs_present() -> Dict[str, bool]:
        libdirs = [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib",
            "/usr/local/lib",
            "/usr/lib/aarch64-linux-gnu",
        ]
        ipsec = any(
            glob.glob(os.path.join(d, "libIPSec_MB.so*")) for d in libdirs
        ) and os.path.exists("/usr/include/intel-ipsec-mb.h")
        ngtcp2 = (
            subprocess.run(
                ["pkg-config", "--exists", "libngtcp2_crypto_gnutls", "gnutls"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ).returncode
            == 0
            if shutil.which("pkg-config")
            else False
        )
        return {"ipsecmb_bare": ipsec, "ngtcp2_bench": ngtcp2}

    def cargo(self) -> None:
        cfg = self.cfg
        manifest = cfg.root / "bench" / "peers" / "rustls-quic" / "Cargo.toml"
        cargo, why = usable_cargo()
        if not cargo:
            self.missing["rustls-quic"] = self.unavailable["rustls-quic"] = rustls_skip_note(why)
            return
        target = Path(
            os.environ.get("QUICOFF_CARGO_TARGET_DIR")
            or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
            / "quicoff"
            / "rustls-quic-target"
        )
        exe = target / "release" / "rustls-quic-bench"
        if cfg.build:
            if not exe.is_file():
                cfg.log("building: cargo build --release (rustls peer, first time ~1 min)")
            env = dict(os.environ, CARGO_TARGET_DIR=str(target))
            r = subprocess.run(
                [
                    cargo,
                    "build",
                    "--release",
                    "--locked",
                    "--quiet",
                    "--manifest-path",
                    str(manifest),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
            )
            if r.returncode != 0:
                self.missing["rustls-quic"] = "cargo build --release --locked (%s) failed: %s" % (
                    manifest.parent,
                    tail(r.stdout, 8),
                )
                return
        if not exe.is_file():
            self.missing["rustls-quic"] = (
                "%s missing (run quicoff bench without --no-build, "
                "or CARGO_TARGET_DIR=%s cargo build --release "
                "--locked in %s)" % (exe, target, manifest.parent)
            )
            return
        self.exe["rustls-quic"] = exe
        try:  # exact versions for the record
            lock = (manifest.parent / "Cargo.lock").read_text()
            vers = dict(re.findall(r'name = "(rustls|ring)"\nversion = "([^"]+)"', lock))
            self.rustls_backend = "rustls %s (ring %s)" % (
                vers.get("rustls", "?"),
                vers.get("ring", "?"),
            )
        except OSError:
            self.rustls_backend = None

    def dpdk(self) -> None:
        exe = shutil.which(DPDK_BIN)
        if not exe:
            self.missing["dpdk"] = "%s not found (apt-get install %s)" % (
                DPDK_BIN,
                APT_HINT["dpdk"],
            )
        else:
            self.exe["dpdk"] = Path(exe)


# ---- quicoff-bench: quicoff per backend, openssl-evp, openssl-hp ---------------


def quicoff_bench_help(exe: Path) -> str:
    r = subprocess.run(
        [str(exe), "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return r.stdout


def probe_backend(exe: Path, backend: str, cfg: Config):
    """(status, reason) of a quicoff backend: ok, unavailable or failed."""
    r = run(
        [
            str(exe),
            "--backend",
            backend,
            "--suite",
            "aes-128-gcm",
            "--size",
            "64",
            "--repeats",
            "1",
            "--min-ms",
            "1",
            "--no-baseline",
            "--op",
            "protect",
        ],
        cfg,
        timeout=120,
    )
    if r.returncode == 0:
        return "ok", ""
    out = r.stdout + r.stderr
    if "backend_unavailable" in out or "unknown backend" in out.lower():
        return "unavailable", (
            "quicoff-bench --backend %s: backend not built in "
            "(quicoff_table_create: backend_unavailable)" % backend
        )
    return "failed", "quicoff-bench --backend %s probe failed: %s" % (backend, tail(out))


def run_quicoff(
    exe: Path, backend: str, suite: str, baseline: bool, cfg: Config, has_threads: bool
) -> List[Dict]:
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "q.json"
        cmd = [
            str(exe),
            "--json",
            str(out),
            "--backend",
            backend,
            "--suite",
            suite,
            "--size",
            ",".join(cfg.sizes),
            "--connections",
            ",".join(str(c) for c in cfg.connections),
        ] + cfg.timing_args()
        if has_threads:  # the lead's --threads option, when quicoff-bench has it
            cmd += ["--threads", ",".join(str(t) for t in cfg.threads)]
        if not baseline:
            cmd.append("--no-baseline")
        # quicoff-bench pins its threads itself; pin it to the measurement CPU only
        # when it runs one thread
        r = run(cmd, cfg, pin=max(cfg.threads) == 1 or not has_threads)
        recs = []
        if out.is_file():
            try:
                recs = json.loads(out.read_text()).get("records", [])
            except ValueError:
                recs = []
    paths = ["quicoff"] + (["openssl-evp"] if baseline else [])
    if r.returncode != 0 and not recs:
        reason = "quicoff-bench exited %d: %s" % (r.returncode, tail(r.stderr + r.stdout))
        return [
            x
            for p in paths
            for x in placeholder(
                p,
                backend if p == "quicoff" else "openssl",
                [suite],
                cfg.sizes,
                cfg.connections,
                cfg.threads if has_threads else [1],
                "failed",
                reason,
            )
        ]
    res = []
    for rec in recs:
        rec = dict(rec)
        if rec.get("path") == "quicoff":
            rec["backend"] = backend
        if not rec.get("ok", True):
            rec["status"] = "failed"
            rec["reason"] = "quicoff-bench: packets did not round-trip (see its output)"
        rec["source"] = "quicoff-bench"
        res.append(finish(rec))
    ccm = next((x for x in res if x.get("ccm_job_min_len") is not None), None)
    if ccm is not None:
        # the ipsec-mb backend's AES-128-CCM crossover, chosen per CPU (docs/design.md)
        cfg.notes.append(
            "ipsec-mb aes-128-ccm: bursts use the job API from %s B of payload "
            "(bursts of %s; tiers 4+/8+/16+/32+ jobs: %s B; %s)"
            % (
                ccm["ccm_job_min_len"],
                ccm.get("burst"),
                "/".join(map(str, ccm.get("ccm_job_min_len_tiers") or [])),
                ccm.get("ccm_job_min_len_how"),
            )
        )
    if r.returncode != 0:
        cfg.notes.append(
            "quicoff-bench --backend %s --suite %s exited %d: %s"
            % (backend, suite, r.returncode, tail(r.stderr))
        )
    return res


# ---- C and Rust peers (JSON lines) ------------------------------------------


def run_peer(
    path: str, exe: Path, suite: str, cfg: Config, backend_override: Optional[str] = None
) -> List[Dict]:
    cmd = [
        str(exe),
        "--suite",
        suite,
        "--size",
        ",".join(cfg.sizes),
        "--connections",
        ",".join(str(c) for c in cfg.connections),
    ] + cfg.timing_args()
    r = run(cmd, cfg)
    recs = json_lines(r.stdout)
    if not recs:
        return placeholder(
            path,
            "",
            [suite],
            cfg.sizes,
            cfg.connections,
            [1],
            "failed",
            "%s exited %d with no results: %s" % (exe.name, r.returncode, tail(r.stderr)),
        )
    for rec in recs:
        rec["source"] = exe.name
        if backend_override:
            rec["backend"] = backend_override
        finish(rec)
    if r.returncode != 0:
        reason = tail(r.stderr)
        for rec in recs:
            if rec["status"] == "ok":
                continue
            rec.setdefault("reason", reason)
    return recs


# ---- DPDK dpdk-test-crypto-perf ------------------------------------------------

DPDK_ALGO = {
    "aes-128-gcm": ("aes-gcm", 16),
    "aes-256-gcm": ("aes-gcm", 32),
    "aes-128-ccm": ("aes-ccm", 16),
    "chacha20-poly1305": ("chacha20-poly1305", 32),
}


def dpdk_cpu_note(cpus: int) -> str:
    """Why the DPDK crypto-perf peers were not measured with only `cpus` CPUs."""
    return (
        "dpdk-test-crypto-perf needs 2 CPUs (a main and a worker lcore); "
        "this process may use %d" % cpus
    )


def dpdk_lcores(cfg: Config) -> Optional[str]:
    """main lcore, worker lcore: the worker on the measurement CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    worker = cfg.cpu if cfg.cpu in cpus else cpus[-1]
    main = next(c for c in cpus if c != worker)
    return "%d,%d" % (main, worker)


def run_dpdk(
    exe: Path, device: str, suite: str, op: str, sizes: Sequence[str], cfg: Config
) -> List[Dict]:
    """One dpdk-test-crypto-perf run: one device, suite, direction and AAD length.

    The sizes must share a header length (the AAD).  Each size is listed
    `repeats` times (plus one warm-up) so the repeats run in one process."""
    path = "dpdk-" + device.replace("crypto_", "")
    info = [size_info(z) for z in sizes]
    aad = info[0]["header_len"]
    reps = cfg.repeats or (3 if cfg.quick else 5)
    total = cfg.dpdk_total_ops or (100000 if cfg.quick else 1000000)
    bufs = [info[0]["payload"]]  # warm-up, discarded
    for _ in range(reps):  # round robin, so a disturbance does not hit one size's repeats
        bufs += [i["payload"] for i in info]
    lcores = dpdk_lcores(cfg)

    def fail(status, reason):
        return placeholder(path, device, [suite], sizes, [1], [1], status, reason, ops=[op])

    if lcores is None:
        # a property of the machine (or of the affinity it was given), not a
        # fault of the peer: not measured, with the reason, as a missing peer is
        return fail("unavailable", dpdk_cpu_note(len(os.sched_getaffinity(0))))
    algo, keylen = DPDK_ALGO[suite]
    prefix = "quicoff-bench-%d" % os.getpid()
    cmd = [
        str(exe),
        "-v",
        "--no-huge",
        "-m",
        "512",
        "--no-pci",
        "--no-shconf",
        "--file-prefix",
        prefix,
        "--vdev",
        device + "0",
        "-l",
        lcores,
        "--log-level=error",
        "--",
        "--ptest",
        "throughput",
        "--devtype",
        device,
        "--optype",
        "aead",
        "--aead-algo",
        algo,
        "--aead-key-sz",
        str(keylen),
        "--aead-iv-sz",
        "12",
        "--aead-op",
        "encrypt" if op == "protect" else "decrypt",
        "--aead-aad-sz",
        str(aad),
        "--digest-sz",
        "16",
        "--buffer-sz",
        ",".join(str(b) for b in bufs),
        "--burst-sz",
        "32",
        "--total-ops",
        str(total),
        "--csv-friendly",
    ]
    try:
        r = run(cmd, cfg, pin=False, timeout=600)
    except subprocess.TimeoutExpired:
        return fail("failed", "dpdk-test-crypto-perf timed out after 600 s")
    finally:
        for d in ("/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")):
            shutil.rmtree(os.path.join(d, prefix), ignore_errors=True)
    out = r.stdout + "\n" + r.stderr
    m = re.search(r"RTE Version: '([^']+)'", out)
    version = m.group(1) if m else "DPDK"
    rows = []
    for ln in r.stdout.splitlines():
        f = ln.strip().split(",")
        if len(f) == 10 and f[0].isdigit():
            try:
                rows.append((int(f[1]), int(f[3]), int(f[4]), int(f[5]) + int(f[6]), float(f[7])))
            except ValueError:
                pass
    if r.returncode != 0 or len(rows) != len(bufs):
        if "does not support capabilities requested" in out:
            return fail("unsupported", "%s has no %s (%s)" % (device, suite, version))
        return fail(
            "failed",
            "dpdk-test-crypto-perf exited %d: %s"
            % (
                r.returncode,
                tail("\n".join(ln for ln in out.splitlines() if not ln.startswith("#")), 4),
            ),
        )
    rows = rows[1:]  # the warm-up
    recs = []
    for k, i in enumerate(info):
        mine = rows[k :: len(info)]
        bad = [x for x in mine if x[3] or x[2] != total or x[4] <= 0]
        rec = dict(
            path=path,
            backend="%s (%s)" % (device, version),
            suite=suite,
            op=op,
            connections=1,
            threads=1,
            burst=32,
            repeats=reps,
            total_ops=total,
            source="dpdk-test-crypto-perf",
            **i,
        )
        if bad:
            rec.update(
                status="failed",
                reason="failed enqueue/dequeue in %d of %d runs" % (len(bad), len(mine)),
            )
        else:
            ns = sorted(1e3 / x[4] for x in mine)
            rec.update(
                ns_median=round(
                    ns[len(ns) // 2]
                    if len(ns) % 2
                    else (ns[len(ns) // 2 - 1] + ns[len(ns) // 2]) / 2,
                    2,
                ),
                ns_min=round(ns[0], 2),
                ns_max=round(ns[-1], 2),
            )
        recs.append(finish(rec))
    return recs
