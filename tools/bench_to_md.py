#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn quicoff-bench --json output into Markdown tables.

    quicoff-bench --json run.json
    tools/bench_to_md.py run.json                 # one table per connection count
    tools/bench_to_md.py run.json --compare other.json   # run-to-run change in %

One row per (suite, size, connections, threads), with engine and bare-EVP
medians for protect and unprotect, the ratio engine / EVP, and the
header-protection mask cost per suite.  With --threads runs, one table per
(connections, threads): ns are per core, Mpps and Gbit/s aggregate, and
"scaling" is aggregate Mpps / the 1-thread Mpps of the same run.
Standard library only.
"""

import argparse
import json
import sys
from collections import OrderedDict


def load(path):
    with open(path) as f:
        doc = json.load(f)
    return doc.get("meta", {}), doc["records"]


def index(records):
    """(path, suite, label, (connections, threads), op) -> record."""
    return {
        (r["path"], r["suite"], r["label"], (r["connections"], r.get("threads", 1)), r["op"]): r
        for r in records
    }


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def tables(meta, records, out):
    idx = index(records)
    rows = OrderedDict()
    for r in records:
        if r["path"] == "quicoff":
            rows.setdefault(((r["connections"], r.get("threads", 1)), r["suite"], r["label"]), r)
    by_conns = OrderedDict()
    for key in rows:
        by_conns.setdefault(key[0], []).append(key)

    for conns, keys in by_conns.items():
        n, thr = conns
        multi = thr > 1
        out.write(
            f"\n**{n} connection{'s' if n != 1 else ''}"
            + (f", {thr} threads" if multi else "")
            + "** "
            + (
                "(ns per packet per core: median, min in parentheses; Mpps and Gbit/s "
                "aggregate)\n\n"
                if multi
                else "(ns per packet: median, min in parentheses)\n\n"
            )
        )
        out.write(
            "| suite | size | packet B | protect ns | EVP seal ns | ratio | "
            "unprotect ns | EVP open ns | ratio | Mpps prot/unprot | Gbit/s prot/unprot |"
            + (" scaling prot/unprot |\n" if multi else "\n")
        )
        out.write(
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
            + ("---:|\n" if multi else "\n")
        )
        for _, suite, label in keys:
            cells = []
            first = rows[(conns, suite, label)]
            for op in ("protect", "unprotect"):
                e = idx.get(("quicoff", suite, label, conns, op))
                v = idx.get(("openssl-evp", suite, label, conns, op))
                cells.append(f"{fmt(e['ns_median'])} ({fmt(e['ns_min'])})" if e else "-")
                cells.append(f"{fmt(v['ns_median'])} ({fmt(v['ns_min'])})" if v else "-")
                cells.append(fmt(e.get("ratio_to_evp") if e else None, 2))
            p = idx.get(("quicoff", suite, label, conns, "protect"))
            u = idx.get(("quicoff", suite, label, conns, "unprotect"))
            cells.append(f"{fmt(p['mpps'] if p else None, 2)} / {fmt(u['mpps'] if u else None, 2)}")
            cells.append(f"{fmt(p['gbps'] if p else None, 2)} / {fmt(u['gbps'] if u else None, 2)}")
            if multi:
                cells.append(
                    f"{fmt(p.get('scaling') if p else None, 2)} / "
                    f"{fmt(u.get('scaling') if u else None, 2)}"
                )
            out.write(
                f"| {suite} | {label} | {first['packet_len']} | " + " | ".join(cells) + " |\n"
            )

    hp = [r for r in records if r["path"] == "openssl-hp"]
    if hp:
        out.write("\n**Header-protection mask, bare OpenSSL (one context)**\n\n")
        out.write(
            "| suite | cipher | ns (protect run) | ns (unprotect run) |\n|---|---|---:|---:|\n"
        )
        seen = OrderedDict()
        for r in hp:
            seen.setdefault(r["suite"], {})[r["op"]] = r
        for suite, ops in seen.items():
            p, u = ops.get("protect"), ops.get("unprotect")
            cipher = (p or u).get("hp_cipher", "")
            out.write(
                f"| {suite} | {cipher} | "
                f"{fmt(p['ns_median']) + ' (' + fmt(p['ns_min']) + ')' if p else '-'} | "
                f"{fmt(u['ns_median']) + ' (' + fmt(u['ns_min']) + ')' if u else '-'} |\n"
            )


def compare(a_records, b_records, out):
    a, b = index(a_records), index(b_records)
    out.write("\n| path | suite | size | conns | threads | op | run A ns | run B ns | B vs A |\n")
    out.write("|---|---|---|---:|---:|---|---:|---:|---:|\n")
    for key, ra in a.items():
        rb = b.get(key)
        if not rb or not ra["ns_median"]:
            continue
        d = 100.0 * (rb["ns_median"] - ra["ns_median"]) / ra["ns_median"]
        out.write(
            f"| {key[0]} | {key[1]} | {key[2]} | {key[3][0]} | {key[3][1]} | {key[4]} | "
            f"{ra['ns_median']:.1f} | {rb['ns_median']:.1f} | {d:+.1f}% |\n"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="output of quicoff-bench --json")
    ap.add_argument("--compare", metavar="JSON", help="a second run: print per-record change")
    args = ap.parse_args()
    meta, records = load(args.json)
    out = sys.stdout
    if meta:
        out.write(
            f"CPU: {meta.get('cpu')}; {meta.get('openssl')}; "
            f"{meta.get('repeats')} repeats x {meta.get('min_ms_per_repeat')} ms; "
            f"burst {meta.get('burst')}; pinned CPU {meta.get('pinned_cpu')}\n"
        )
    if args.compare:
        _, other = load(args.compare)
        compare(records, other, out)
    else:
        tables(meta, records, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
