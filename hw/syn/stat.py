#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads Yosys `stat -json` output and nextpnr's --report JSON; prints one
JSON object with the figures tools/hw.sh reports (no number is typed in)."""

import json
import re
import sys

XC7_LUT = re.compile(r"^\$?_?LUT[1-6]$|^LUT[1-6]$")


def xc7(path, top):
    d = json.load(open(path))
    mods = d["modules"]
    out = {}
    for name, m in mods.items():
        cells = m.get("num_cells_by_type", {})
        lut = sum(v for k, v in cells.items() if re.fullmatch(r"LUT[1-6]", k))
        ff = sum(v for k, v in cells.items() if re.fullmatch(r"FD[A-Z]*", k))
        bram = sum(v for k, v in cells.items() if k.startswith("RAMB36")) + 0.5 * sum(
            v for k, v in cells.items() if k.startswith("RAMB18")
        )
        lutram_cells = {
            k: v for k, v in cells.items() if re.fullmatch(r"RAM(32|64|128|256)[XM0-9A-Z]*", k)
        }
        # LUTs per distributed-RAM primitive (7-series: RAM32M/RAM64M use 4, RAMxX1D 2, RAMxX1S 1..)
        per = {
            "RAM32M": 4,
            "RAM64M": 4,
            "RAM32M16": 8,
            "RAM64M8": 8,
            "RAM32X1D": 2,
            "RAM64X1D": 2,
            "RAM128X1D": 4,
            "RAM256X1S": 4,
            "RAM32X1S": 1,
            "RAM64X1S": 1,
            "RAM128X1S": 2,
        }
        lutram = sum(v * per.get(k, 1) for k, v in lutram_cells.items())
        dsp = sum(v for k, v in cells.items() if k.startswith("DSP48"))
        carry = sum(v for k, v in cells.items() if k.startswith("CARRY"))
        mux = sum(v for k, v in cells.items() if k in ("MUXF7", "MUXF8"))
        out[name.lstrip("\\")] = {
            "lut": lut,
            "lutram_luts": lutram,
            "ff": ff,
            "bram36": bram,
            "dsp": dsp,
            "carry4": carry,
            "muxf": mux,
        }
    # how many times each module is instantiated below the top(s): quicoff_rx
    # has one qo_frame_buf per frame slot, so a module's cells count that often
    inst = dict.fromkeys(mods, 0)

    def walk(name, k):
        inst[name] += k
        for t, c in mods[name].get("num_cells_by_type", {}).items():
            if mod(t):
                walk(mod(t), k * c)

    def mod(t):
        # a cell names a plain module without the leading backslash of its
        # module's key (`qo_w512_in` vs `\qo_w512_in`), a derived one with it
        return t if t in mods else ("\\" + t if "\\" + t in mods else None)

    subs = {mod(t) for m in mods.values() for t in m.get("num_cells_by_type", {}) if mod(t)}
    for name in mods:
        if name not in subs:
            walk(name, 1)
    for name in mods:
        out[name.lstrip("\\")]["instances"] = inst[name]
    return out


def ecp5(report):
    d = json.load(open(report))
    fm = d.get("fmax", {})
    clk = max(fm.values(), key=lambda v: v["achieved"]) if fm else {}
    util = d.get("utilization", {})
    crit = d.get("critical_paths", [])
    path = []
    if crit:
        p = crit[0]
        for seg in p.get("path", []):
            path.append(
                "%s %s -> %s (%.2f ns)"
                % (
                    seg.get("type"),
                    seg.get("from", {}).get("cell", "?"),
                    seg.get("to", {}).get("cell", "?"),
                    seg.get("delay", 0),
                )
            )
    return {
        "fmax_mhz": round(clk.get("achieved", 0.0), 2),
        "constraint_mhz": clk.get("constraint"),
        "lut4": util.get("TRELLIS_COMB", {}).get("used"),
        "ff": util.get("TRELLIS_FF", {}).get("used"),
        "dp16kd": util.get("DP16KD", {}).get("used"),
        "mult18": util.get("MULT18X18D", {}).get("used"),
        "lut4_available": util.get("TRELLIS_COMB", {}).get("available"),
        "critical_path": path[:6] + (["..."] if len(path) > 12 else []) + path[-6:]
        if len(path) > 12
        else path,
    }


def ecp5_log(log):
    """When nextpnr stops before routing (e.g. the design does not fit), the
    utilisation it printed is still the measured demand."""
    out = {"fmax_mhz": None, "routed": False}
    txt = open(log).read()
    for cell, key in (
        ("TRELLIS_COMB", "lut4"),
        ("TRELLIS_FF", "ff"),
        ("DP16KD", "dp16kd"),
        ("TRELLIS_RAMW", "ramw"),
    ):
        m = re.findall(r"%s:\s+(\d+)/\s*(\d+)" % cell, txt)
        if m:
            out[key], out[key + "_available"] = int(m[-1][0]), int(m[-1][1])
    err = re.findall(r"ERROR: (.*)", txt)
    out["error"] = err[-1] if err else None
    out["fits"] = bool(out.get("lut4")) and out["lut4"] <= out.get("lut4_available", 0)
    return out


def ecp5_synth(path):
    """Yosys `stat -json` after synth_ecp5 (no place and route): the cells
    the netlist asks the device for. LUT4 counts logic only; nextpnr's
    TRELLIS_COMB adds the carry chains' and LUT-RAMs' LUTs."""
    d = json.load(open(path))
    cells = d.get("design", {}).get("num_cells_by_type") or {}
    if not cells:
        for m in d["modules"].values():
            for k, v in m.get("num_cells_by_type", {}).items():
                cells[k] = cells.get(k, 0) + v
    return {
        "lut4": cells.get("LUT4", 0),
        "ccu2c": cells.get("CCU2C", 0),
        "dpr16x4": cells.get("TRELLIS_DPR16X4", 0),
        "ff": cells.get("TRELLIS_FF", 0),
        "dp16kd": cells.get("DP16KD", 0),
        "mult18": cells.get("MULT18X18D", 0),
    }


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "ecp5log":
        print(json.dumps(ecp5_log(sys.argv[2]), indent=1))
    elif kind == "ecp5synth":
        print(json.dumps(ecp5_synth(sys.argv[2]), indent=1))
    elif kind == "xc7":
        print(json.dumps(xc7(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""), indent=1))
    else:
        print(json.dumps(ecp5(sys.argv[2]), indent=1))
