#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""AES-128-CCM through the engine (ipsec-mb backend) at several crossovers,
against bare intel-ipsec-mb, on one pinned CPU (issue 8 item 11).

The crossover is the payload length from which the backend's bursts use
ipsec-mb's job API (quicoff_ccm_job_min_len(): calibrated per CPU, or
QUICOFF_CCM_JOB_MIN_LEN). Each round runs, back to back on the same CPU,
quicoff-bench once per variant (a variant = a QUICOFF_CCM_JOB_MIN_LEN value,
or "calibrated" for none) and ipsecmb_bare (the AEAD alone: no header
protection, no parsing); the figure of a (variant, size, op) is the median
over rounds of each run's median ns per packet. The ratio is engine ns /
bare ns: the engine also does header protection, parsing, lookup and
counters, so a ratio <= 1.2 here is within 1.2x of bare AEAD + our header
protection with room to spare.

  bench/ccm_crossover.py [--build-dir build] [--cpu N] [--rounds 7]
                         [--sizes 64,128,256,512,1024,1400]
                         [--variants 640,calibrated] [--exe LABEL=PATH]
                         [--burst 32] [--json FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from quicoff_bench_run import quicoff_records


def run_quicoff(exe, cpu, sizes, variant, burst, repeats, min_ms):
    env = dict(os.environ)
    env.pop("QUICOFF_CCM_JOB_MIN_LEN", None)
    if variant.isdigit():
        env["QUICOFF_CCM_JOB_MIN_LEN"] = variant
    args = ["--backend", "ipsec-mb", "--suite", "aes-128-ccm", "--size", ",".join(sizes)]
    args += ["--repeats", str(repeats), "--min-ms", str(min_ms), "--burst", str(burst)]
    recs = quicoff_records(exe, cpu, args, env=env)
    got, crossover = {}, None
    for r in recs:
        got[(r["label"], r["op"])] = r["ns_median"]
        crossover = (r.get("ccm_job_min_len"), r.get("ccm_job_min_len_how"))
    return got, crossover


def run_bare(exe, cpu, sizes, repeats, min_ms, flush_every=None):
    cmd = [
        "taskset",
        "-c",
        str(cpu),
        exe,
        "--suite",
        "aes-128-ccm",
        "--size",
        ",".join(sizes),
        "--repeats",
        str(repeats),
        "--min-ms",
        str(min_ms),
    ]
    env = dict(os.environ)
    if flush_every:
        env["IPSECMB_BARE_FLUSH_EVERY"] = str(flush_every)
    p = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    got = {}
    for ln in p.stdout.splitlines():
        if ln.startswith("{"):
            r = json.loads(ln)
            if r.get("status") == "ok":
                got[(r["label"], r["op"])] = r["ns_median"]
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sizes", default="64,128,256,512,1024,1400")
    ap.add_argument(
        "--variants",
        default="640,calibrated",
        help="QUICOFF_CCM_JOB_MIN_LEN values, or 'calibrated' (none set)",
    )
    ap.add_argument(
        "--exe",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="one more variant: another quicoff-bench (e.g. a build of the code "
        "before a change), run without QUICOFF_CCM_JOB_MIN_LEN",
    )
    ap.add_argument("--burst", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-ms", type=float, default=20)
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    qb = os.path.join(a.build_dir, "bench", "quicoff-bench")
    bare = os.path.join(a.build_dir, "bench", "peers", "ipsecmb_bare")
    sizes = a.sizes.split(",")
    variants = a.variants.split(",")
    exes = {v: qb for v in variants}
    for e in a.exe:
        label, path = e.split("=", 1)
        variants.append(label)
        exes[label] = path
    samples = {}  # (variant, size, op) -> [ns per round]
    crossovers = {}
    for rnd in range(a.rounds):
        for v in variants:
            got, x = run_quicoff(exes[v], a.cpu, sizes, v, a.burst, a.repeats, a.min_ms)
            crossovers.setdefault(v, set()).add(x)
            for (size, op), ns in got.items():
                samples.setdefault((v, size, op), []).append(ns)
        for (size, op), ns in run_bare(bare, a.cpu, sizes, a.repeats, a.min_ms).items():
            samples.setdefault(("ipsecmb-bare", size, op), []).append(ns)
        for (size, op), ns in run_bare(bare, a.cpu, sizes, a.repeats, a.min_ms, a.burst).items():
            samples.setdefault(("ipsecmb-bare-burst", size, op), []).append(ns)
        sys.stderr.write("round %d/%d done\n" % (rnd + 1, a.rounds))

    med = {k: statistics.median(v) for k, v in samples.items()}
    print(
        "AES-128-CCM, ns per packet (median of %d rounds), CPU %d, engine bursts of %d; "
        "bare = ipsec-mb AEAD alone, jobs flushed once per 256-packet pass; bare/%d = "
        "flushed every %d; ratio = engine / bare (engine / bare/%d)"
        % (a.rounds, a.cpu, a.burst, a.burst, a.burst, a.burst)
    )
    for v in variants:
        print(
            "  %s: crossover %s"
            % (v, ", ".join("%s B (%s)" % x for x in sorted(crossovers[v], key=str)))
        )
    head = "%-10s %5s %8s %8s" % ("op", "size", "bare", "bare/%d" % a.burst)
    for v in variants:
        head += " | %12s %11s" % ("eng " + v, "ratio")
    print(head)
    rows = []
    for op in ("protect", "unprotect"):
        for size in sizes:
            b = med.get(("ipsecmb-bare", size, op))
            bb = med.get(("ipsecmb-bare-burst", size, op))
            line = "%-10s %5s %8.1f %8.1f" % (op, size, b or float("nan"), bb or float("nan"))
            row = {"op": op, "size": size, "bare_ns": b, "bare_burst_ns": bb}
            for v in variants:
                e = med.get((v, size, op))
                ratio = e / b if e and b else None
                ratio_b = e / bb if e and bb else None
                line += " | %12.1f %5.2f (%.2f)" % (
                    e or float("nan"),
                    ratio or float("nan"),
                    ratio_b or float("nan"),
                )
                row[v] = {"ns": e, "ratio": ratio, "ratio_burst": ratio_b}
            rows.append(row)
            print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {
                    "cpu": a.cpu,
                    "rounds": a.rounds,
                    "burst": a.burst,
                    "crossovers": {v: sorted(map(list, crossovers[v]), key=str) for v in variants},
                    "rows": rows,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
