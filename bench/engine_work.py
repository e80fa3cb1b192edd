#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The engine's own work per packet (issue 11, part 1): quicoff-bench's
figure minus the crypto floor's, taken in the same round on one pinned CPU.

quicoff-bench-crypto-floor times the crypto alone, through the backend
calls the engine makes (docs/benchmarks.md, "Small packets: the engine
around the crypto"). Each round runs it and quicoff-bench back to back on
the same CPU, alternating which goes first, and takes each one's minimum
over its windows: on a CPU that other jobs or a noisy host share, a window
a time slice fell into reads slow, and the VM's own speed drifts between
minutes, so a minimum taken now is compared only with one taken beside it.
A round's engine work is engine minimum - floor minimum; the figure is the
median over rounds, with the range.

  bench/engine_work.py [--build-dir build] [--cpu N] [--rounds 15]
                       [--suite aes-128-gcm] [--sizes 64,short-88,1400]
                       [--repeats 31] [--min-ms 2] [--json FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from quicoff_bench_run import quicoff_records


def engine_minima(exe, cpu, suite, sizes, repeats, min_ms):
    """{(size label, op): ns_min} from one quicoff-bench run, one connection."""
    args = ["--suite", suite, "--size", ",".join(sizes), "--connections", "1"]
    args += ["--repeats", str(repeats), "--min-ms", str(min_ms)]
    # quicoff-bench labels the 88-byte packet "short-88" (given as 88 or short-88)
    return {(r["label"], r["op"]): r["ns_min"] for r in quicoff_records(exe, cpu, args)}


def floor_minima(exe, cpu, suite, repeats, min_ms):
    """{(size label, op): ns} from one quicoff-bench-crypto-floor --min run."""
    cmd = ["taskset", "-c", str(cpu), exe, "--suite", suite, "--min"]
    cmd += ["--repeats", str(repeats), "--min-ms", str(min_ms)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    figures = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) == 3 and cols[0] != "size":
            figures[(cols[0], "protect")] = float(cols[1])
            figures[(cols[0], "unprotect")] = float(cols[2])
    if not figures:
        sys.exit(f"engine_work: no figures in {exe}'s output:\n{out}")
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--suite", default="aes-128-gcm")
    ap.add_argument("--sizes", default="64,short-88,1400")
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--min-ms", type=float, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    sizes = a.sizes.split(",")
    bench = os.path.join(a.build_dir, "bench", "quicoff-bench")
    floor = os.path.join(a.build_dir, "bench", "quicoff-bench-crypto-floor")
    for exe in (bench, floor):
        if not os.access(exe, os.X_OK):
            sys.exit(f"engine_work: {exe} not built (meson compile -C {a.build_dir})")

    rounds = []
    for r in range(a.rounds):
        engine = floor_ns = None
        for which in ("engine", "floor") if r % 2 == 0 else ("floor", "engine"):
            if which == "engine":
                engine = engine_minima(bench, a.cpu, a.suite, sizes, a.repeats, a.min_ms)
            else:
                floor_ns = floor_minima(floor, a.cpu, a.suite, a.repeats, a.min_ms)
        rounds.append({"engine": engine, "floor": floor_ns})

    rows = []
    print(
        f"engine work = quicoff-bench min - crypto floor min, ns per packet, {a.suite}, "
        f"CPU {a.cpu}, {a.rounds} rounds (median [range])"
    )
    print(f"{'size':10s} {'op':10s} {'engine':>8s} {'floor':>8s} {'work':>8s}  range")
    for size in sizes:
        label = "short-88" if size in ("88", "short-88") else size
        for op in ("protect", "unprotect"):
            key = (label, op)
            pairs = [
                (x["engine"][key], x["floor"][key])
                for x in rounds
                if key in x["engine"] and key in x["floor"]
            ]
            if not pairs:
                continue
            work = [e - f for e, f in pairs]
            row = {
                "suite": a.suite,
                "size": label,
                "op": op,
                "rounds": len(pairs),
                "engine_ns_min_median": statistics.median(e for e, _ in pairs),
                "floor_ns_min_median": statistics.median(f for _, f in pairs),
                "work_ns_median": statistics.median(work),
                "work_ns_low": min(work),
                "work_ns_high": max(work),
            }
            rows.append(row)
            print(
                f"{label:10s} {op:10s} {row['engine_ns_min_median']:8.2f} "
                f"{row['floor_ns_min_median']:8.2f} {row['work_ns_median']:8.2f}  "
                f"[{row['work_ns_low']:.2f}, {row['work_ns_high']:.2f}]"
            )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {
                    "tool": "engine_work",
                    "cpu": a.cpu,
                    "rows": rows,
                    "rounds": [
                        {k: {f"{s} {o}": v for (s, o), v in x[k].items()} for k in x}
                        for x in rounds
                    ],
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
