#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One suite through the engine (one or more quicoff-bench builds, e.g. the
code before and after a change) against bare intel-ipsec-mb's AEAD, in
interleaved rounds on one pinned CPU (issue 11: "ratios only within one run,
on one pinned core; medians and ranges over at least five interleaved runs").

Each round runs, back to back on the same CPU, every quicoff-bench given
(--backend ipsec-mb, no OpenSSL baseline) and bench/peers/ipsecmb_bare (the
AEAD alone: no header protection, no parsing, no lookup); the figure of an
(exe, size, op) is the median over rounds of each run's median ns per packet,
with the range of those medians. The ratio is engine ns / bare ns, so <= 1.05
means within 1.05x of bare ipsec-mb's AEAD with our header protection,
parsing and lookup included.

  bench/aead_vs_ipsecmb.py --exe new=build/bench/quicoff-bench \\
      [--exe old=PATH] [--bare build/bench/peers/ipsecmb_bare] \\
      [--suite chacha20-poly1305] [--sizes 64,256,512,1400] [--cpu 1] \\
      [--rounds 7] [--repeats 5] [--min-ms 20] [--json FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from quicoff_bench_run import quicoff_records


def run_quicoff(exe, cpu, suite, sizes, repeats, min_ms):
    args = ["--backend", "ipsec-mb", "--suite", suite, "--size", ",".join(sizes)]
    args += ["--repeats", str(repeats), "--min-ms", str(min_ms)]
    return {(r["label"], r["op"]): r["ns_median"] for r in quicoff_records(exe, cpu, args)}


def run_bare(exe, cpu, suite, sizes, repeats, min_ms):
    cmd = ["taskset", "-c", str(cpu), exe, "--suite", suite, "--size", ",".join(sizes)]
    cmd += ["--repeats", str(repeats), "--min-ms", str(min_ms)]
    p = subprocess.run(cmd, check=True, capture_output=True, text=True)
    got = {}
    for ln in p.stdout.splitlines():
        if ln.startswith("{"):
            r = json.loads(ln)
            if r.get("status") == "ok":
                got[(r["label"], r["op"])] = r["ns_median"]
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exe", action="append", required=True, metavar="LABEL=PATH")
    ap.add_argument("--bare", default=os.path.join("build", "bench", "peers", "ipsecmb_bare"))
    ap.add_argument("--suite", default="chacha20-poly1305")
    ap.add_argument("--sizes", default="64,256,512,1400")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-ms", type=float, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    sizes = a.sizes.split(",")
    exes = [e.split("=", 1) for e in a.exe]
    samples = {}
    for rnd in range(a.rounds):
        for label, path in exes:
            for k, ns in run_quicoff(path, a.cpu, a.suite, sizes, a.repeats, a.min_ms).items():
                samples.setdefault((label,) + k, []).append(ns)
        for k, ns in run_bare(a.bare, a.cpu, a.suite, sizes, a.repeats, a.min_ms).items():
            samples.setdefault(("ipsecmb-bare",) + k, []).append(ns)
        print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr)

    def fig(key):
        v = samples.get(key)
        if not v:
            return None
        return statistics.median(v), min(v), max(v)

    labels = [lab for lab, _ in exes]
    print(f"{a.suite}, {a.rounds} rounds, CPU {a.cpu}: median ns/packet (range over rounds)")
    head = "| size | op | bare ipsec-mb | " + " | ".join(f"{lab} | ratio" for lab in labels) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    rows = []
    for size in sizes:
        for op in ("protect", "unprotect"):
            bare = fig(("ipsecmb-bare", size, op))
            cells = [size, op, f"{bare[0]:.1f} ({bare[1]:.1f}-{bare[2]:.1f})" if bare else "-"]
            row = {"size": size, "op": op, "bare": bare}
            for lab in labels:
                f = fig((lab, size, op))
                if f is None:
                    cells += ["-", "-"]
                    continue
                ratio = f[0] / bare[0] if bare else None
                cells += [f"{f[0]:.1f} ({f[1]:.1f}-{f[2]:.1f})", f"{ratio:.2f}" if ratio else "-"]
                row[lab] = f
            rows.append(row)
            print("| " + " | ".join(cells) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {
                    "suite": a.suite,
                    "rounds": a.rounds,
                    "rows": rows,
                    "samples": {"/".join(k): v for k, v in samples.items()},
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
