#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The deepest register-to-register paths of a Yosys synth_ecp5 netlist, in
minutes instead of the hours nextpnr needs to place and route the RX core.

Reads the JSON netlist (`synth_ecp5 -json`), walks the combinational cells
(LUT4, PFUMX/L6MUX21, CCU2C carry chains, LUT-RAM reads) between sequential
ones (flip-flops, block RAM, I/O) and prints, per register family (a signal
name without its indices), the worst path's depth and where it starts. The
delay is a rough model, to rank paths and to see what a change buys before
routing, not a timing figure: nextpnr's routed fmax is the one reported.

    python3 hw/syn/logic_depth.py hw/syn/out/ecp5_rx.json [--families 30] [--json OUT]

With --area it ranks the same families by the logic in their fan-in
instead: every LUT4, carry cell and LUT-RAM cell is charged to the
registers and memories it feeds (through other combinational cells), split
evenly when it feeds several, in nextpnr's LUT4 units (a CCU2C is 2, a
TRELLIS_DPR16X4 4). That says which block the LUTs are spent on before
cutting area. --lutram-sink treats LUT RAM as a sink too (its write is
clocked): the logic feeding a LUT-RAM array is charged to it, and its own
cells to "LUTRAM <name>", instead of both passing through its asynchronous
read to whatever reads it (the TX core keeps most per-slot fields there).
"""

import argparse
import collections
import json
import re
import sys

# Rough ECP5 delays in ns, routing included (a LUT4 and its net; a PFUMX or
# L6MUX21 after its LUTs; a carry cell along the chain and into or out of
# it; a LUT-RAM read from its address).
LUT_NS, MUX_NS, CARRY_NS, CARRY_IO_NS, LUTRAM_NS = 1.35, 0.35, 0.1, 1.35, 2.0
SEQUENTIAL = {"TRELLIS_FF", "DP16KD", "MULT18X18D", "ALU54B", "TRELLIS_IO", "DCCA", "EHXPLLL"}
IGNORED = {"$scopeinfo"}


def bits(conns, ports):
    return [b for p in ports for b in conns.get(p, []) if isinstance(b, int)]


def load(path, top):
    mod = json.load(open(path))["modules"][top]
    names = {}
    for name, net in mod["netnames"].items():
        for b in net["bits"]:
            if isinstance(b, int) and (b not in names or len(name) < len(names[b])):
                names[b] = name
    return mod["cells"], names


def edges(cells):
    """out bit -> [(cell, in bits, ns, kind)] of the combinational cells."""
    fanin = collections.defaultdict(list)
    for cname, c in cells.items():
        kind = c["type"]
        if kind in SEQUENTIAL or kind in IGNORED:
            continue
        dirs, conns = c["port_directions"], c["connections"]
        ins = [p for p in conns if dirs[p] == "input"]
        outs = [(p, b) for p in conns if dirs[p] == "output" for b in bits(conns, [p])]
        if kind == "CCU2C":
            cin = bits(conns, ["CIN"])
            data = bits(conns, [p for p in ins if p != "CIN"])
            for p, b in outs:
                fanin[b].append((cname, cin, CARRY_NS if p == "COUT" else CARRY_IO_NS / 2, kind))
                fanin[b].append((cname, data, CARRY_IO_NS, kind))
        elif kind == "TRELLIS_DPR16X4":  # written at the clock, read through RAD
            for _, b in outs:
                fanin[b].append((cname, bits(conns, ["RAD"]), LUTRAM_NS, kind))
        else:
            ns = MUX_NS if kind in ("PFUMX", "L6MUX21") else LUT_NS
            for _, b in outs:
                fanin[b].append((cname, bits(conns, ins), ns, kind))
    return fanin


def arrival(fanin):
    """Latest arrival per bit over the combinational DAG (sources at 0), and
    the edge it came by; a combinational loop is cut where it closes."""
    t, via, state = {}, {}, {}
    for root in list(fanin):
        stack = [(root, 0)]
        while stack:
            b, i = stack.pop()
            if i == 0:
                if b in t:
                    continue
                state[b] = "open"
            preds = [x for (_, ins, _, _) in fanin.get(b, []) for x in ins]
            while i < len(preds) and (preds[i] in t or state.get(preds[i]) == "open"):
                i += 1
            if i < len(preds):
                stack.append((b, i + 1))
                stack.append((preds[i], 0))
                continue
            best, edge = 0.0, None
            for cname, ins, ns, kind in fanin.get(b, []):
                for x in ins:
                    v = t.get(x, 0.0) + ns
                    if v > best:
                        best, edge = v, (cname, x, kind)
            t[b], via[b] = best, edge
            state[b] = "done"
    return t, via


# nextpnr's LUT4 count per cell: a carry cell is two LUT4s, a 16x4 LUT RAM
# four (nextpnr adds its write-port cells apart)
LUT4_UNITS = {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 4}


def area(cells):
    """{family: LUT4 units of the combinational cells feeding it}; a cell
    feeding several families is split evenly, one feeding none is charged to
    '(no register)'."""
    consumers = collections.defaultdict(list)
    outs = {}
    for cname, c in cells.items():
        if c["type"] in IGNORED:
            continue
        dirs, conns = c["port_directions"], c["connections"]
        outs[cname] = bits(conns, [p for p in conns if dirs[p] == "output"])
        for b in bits(conns, [p for p in conns if dirs[p] == "input"]):
            consumers[b].append(cname)
    reach = {}  # combinational cell -> frozenset of the families it feeds

    def succ(cname):
        return [m for b in outs[cname] for m in consumers[b]]

    for root in outs:
        if root in reach or cells[root]["type"] in SEQUENTIAL:
            continue
        stack = [(root, 0)]
        reach[root] = None  # open: a loop is cut where it closes
        while stack:
            cname, i = stack.pop()
            nxt = succ(cname)
            while i < len(nxt) and (cells[nxt[i]]["type"] in SEQUENTIAL or nxt[i] in reach):
                i += 1
            if i < len(nxt):
                stack.append((cname, i + 1))
                reach[nxt[i]] = None
                stack.append((nxt[i], 0))
                continue
            fams = set()
            for m in nxt:
                if cells[m]["type"] in SEQUENTIAL:
                    fams.add(family(m))
                elif reach.get(m):
                    fams |= reach[m]
            reach[cname] = frozenset(fams)
    total = collections.Counter()
    for cname, fams in reach.items():
        units = LUT4_UNITS.get(cells[cname]["type"], 0)
        if not units:
            continue
        for f in fams or ("(no register)",):
            total[f] += units / max(len(fams), 1)
    return total


def family(cell):
    base = cell.split("_TRELLIS")[0].split("_DP16KD")[0]
    return re.sub(r"\[\d+\]|_\d+$|\.\d+", "", base)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("netlist")
    ap.add_argument("--top", default="qo_pnr_wrap")
    ap.add_argument("--families", type=int, default=25)
    ap.add_argument("--json")
    ap.add_argument("--area", action="store_true", help="rank families by the LUT4s feeding them")
    ap.add_argument(
        "--lutram-sink",
        action="store_true",
        help="with --area: LUT RAM is a sink, its cells charged to 'LUTRAM <name>'",
    )
    a = ap.parse_args()
    cells, names = load(a.netlist, a.top)
    if a.area:
        if a.lutram_sink:
            SEQUENTIAL.add("TRELLIS_DPR16X4")
        total = area(cells)
        if a.lutram_sink:
            for cname, c in cells.items():
                if c["type"] == "TRELLIS_DPR16X4":
                    total["LUTRAM " + cname.rsplit(".", 2)[0]] += LUT4_UNITS["TRELLIS_DPR16X4"]
        ranked = [{"to": f, "lut4": round(v, 1)} for f, v in total.most_common()]
        for r in ranked[: a.families]:
            print("%9.0f LUT4  %s" % (r["lut4"], r["to"]))
        print("%9.0f LUT4  in all (a CCU2C counts 2, a TRELLIS_DPR16X4 4, as nextpnr counts them)"
              % sum(total.values()))  # fmt: skip
        if a.json:
            json.dump({"netlist": a.netlist, "area": ranked}, open(a.json, "w"), indent=1)
        return 0
    fanin = edges(cells)
    t, via = arrival(fanin)
    worst = {}
    for cname, c in cells.items():
        if c["type"] not in SEQUENTIAL:
            continue
        for p, bs in c["connections"].items():
            if c["port_directions"][p] != "input":
                continue
            for b in bs:
                if isinstance(b, int) and t.get(b, 0.0) > worst.get(family(cname), (0.0,))[0]:
                    worst[family(cname)] = (t[b], cname, p, b)
    rows = []
    for fam, (ns, cname, port, b) in sorted(worst.items(), key=lambda kv: -kv[1][0]):
        path, x, seen = [], b, {b}
        while via.get(x) and via[x][1] not in seen:  # a loop was cut where it closed
            cell, x, kind = via[x]
            seen.add(x)
            path.append(kind)
        counts = collections.Counter(path)
        rows.append({"to": fam, "port": port, "estimate_ns": round(ns, 1),
                     "lut_levels": counts["LUT4"] + counts["TRELLIS_DPR16X4"],
                     "mux_levels": counts["PFUMX"] + counts["L6MUX21"], "carry_cells": counts["CCU2C"],
                     "from": names.get(x, "?")})  # fmt: skip
    for r in rows[: a.families]:
        print("%6.1f ns  %3d LUT + %2d mux levels, %3d carry cells  %-40s <- %s"
              % (r["estimate_ns"], r["lut_levels"], r["mux_levels"], r["carry_cells"], r["to"][:40],
                 r["from"][:50]))  # fmt: skip
    if rows:
        print("model: LUT4 %.2f ns, PFUMX/L6MUX21 %.2f, carry %.2f along a chain, %.2f in or out, "
              "LUT-RAM read %.2f (routing included; rough)"
              % (LUT_NS, MUX_NS, CARRY_NS, CARRY_IO_NS, LUTRAM_NS))  # fmt: skip
    if a.json:
        json.dump({"netlist": a.netlist, "paths": rows}, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
