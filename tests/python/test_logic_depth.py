# SPDX-License-Identifier: Apache-2.0
"""hw/syn/logic_depth.py on small hand-made ECP5 netlists: the paths it
ranks first are the deepest ones, carry chains and LUT-RAM reads count, and
a combinational loop does not hang it."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("logic_depth", ROOT / "hw/syn/logic_depth.py")
assert spec and spec.loader
logic_depth = importlib.util.module_from_spec(spec)
spec.loader.exec_module(logic_depth)


def ff(d, q):
    return {"type": "TRELLIS_FF", "port_directions": {"DI": "input", "Q": "output"},
            "connections": {"DI": [d], "Q": [q]}}  # fmt: skip


def lut(a, z):
    return {"type": "LUT4", "port_directions": {"A": "input", "B": "input", "Z": "output"},
            "connections": {"A": [a], "B": ["0"], "Z": [z]}}  # fmt: skip


def ccu(cin, a, s, cout):
    return {"type": "CCU2C",
            "port_directions": {"CIN": "input", "A0": "input", "S0": "output", "COUT": "output"},
            "connections": {"CIN": [cin], "A0": [a], "S0": [s], "COUT": [cout]}}  # fmt: skip


def netlist(tmp_path, cells, names):
    mod = {"cells": cells, "netnames": {n: {"bits": [b]} for n, b in names.items()}}
    p = tmp_path / "n.json"
    p.write_text(json.dumps({"modules": {"top": mod}}))
    return p


def rows(tmp_path, cells, names, capsys):
    p = netlist(tmp_path, cells, names)
    out = tmp_path / "paths.json"
    argv = sys.argv
    sys.argv = ["logic_depth", str(p), "--top", "top", "--json", str(out)]
    try:
        assert logic_depth.main() == 0
    finally:
        sys.argv = argv
    capsys.readouterr()
    return json.loads(out.read_text())["paths"]


def test_deepest_first_and_levels_counted(tmp_path, capsys):
    cells = {
        # short: a -> 1 LUT -> short_reg
        "fa": ff(10, 2), "l1": lut(2, 3), "short_reg": ff(3, 11),
        # deep: b -> 3 LUTs -> deep_reg
        "fb": ff(12, 4), "l2": lut(4, 5), "l3": lut(5, 6), "l4": lut(6, 7), "deep_reg": ff(7, 13),
    }  # fmt: skip
    names = {"a": 2, "b": 4, "short_mid": 3, "deep_mid": 7}
    r = rows(tmp_path, cells, names, capsys)
    assert [x["to"] for x in r] == ["deep_reg", "short_reg"]
    assert (r[0]["lut_levels"], r[0]["from"]) == (3, "b")
    assert (r[1]["lut_levels"], r[1]["from"]) == (1, "a")
    assert r[0]["estimate_ns"] > r[1]["estimate_ns"]


def test_carry_chain_cheaper_along_than_through_luts(tmp_path, capsys):
    # 8 carry cells chained: in at the first, out at the last's sum
    cells = {"src": ff(1, 20)}
    cin = 20
    for i in range(8):
        cells["c%d" % i] = ccu(cin, "0", 100 + i, 40 + i)
        cin = 40 + i
    cells["dst"] = ff(107, 2)
    cells["src2"] = ff(1, 60)
    for i in range(8):
        cells["m%d" % i] = lut(60 + i, 61 + i)
    cells["dst2"] = ff(68, 3)
    names = {"carry_in": 20, "lut_in": 60}
    r = {x["to"]: x for x in rows(tmp_path, cells, names, capsys)}
    assert r["dst"]["carry_cells"] == 8 and r["dst"]["from"] == "carry_in"
    assert r["dst2"]["lut_levels"] == 8
    assert r["dst"]["estimate_ns"] < r["dst2"]["estimate_ns"]


def test_combinational_loop_terminates(tmp_path, capsys):
    cells = {"f": ff(3, 1), "x": lut(1, 2), "y": lut(2, 3), "z": lut(3, 2)}
    r = rows(tmp_path, cells, {"q": 1}, capsys)
    assert r and r[0]["to"] == "f"


def test_area_charges_fan_in_to_the_registers_it_feeds(tmp_path, capsys):
    # two LUTs only into reg_a; one shared LUT into both; a carry cell (2 LUT4)
    # into reg_b; a LUT feeding nothing
    cells = {
        "src": ff(1, 2),
        "la1": lut(2, 3), "la2": lut(3, 4), "reg_a": ff(4, 20),
        "shared": lut(2, 5), "ma": lut(5, 6), "reg_a_2": ff(6, 21),
        "mb": ccu(5, "0", 7, 8), "reg_b": ff(7, 22),
        "dead": lut(2, 9),
    }  # fmt: skip
    p = netlist(tmp_path, cells, {"x": 2})
    out = tmp_path / "area.json"
    argv = sys.argv
    sys.argv = ["logic_depth", str(p), "--top", "top", "--area", "--json", str(out)]
    try:
        assert logic_depth.main() == 0
    finally:
        sys.argv = argv
    capsys.readouterr()
    got = {r["to"]: r["lut4"] for r in json.loads(out.read_text())["area"]}
    # reg_a and reg_a_2 are one family (indices and _N suffixes dropped): la1, la2, ma, half of shared
    assert got["reg_a"] == 3.5
    assert got["reg_b"] == 2.5  # the carry cell's 2 and half of shared
    assert got["(no register)"] == 1
    assert sum(got.values()) == 7  # every LUT4 unit charged once


def test_area_survives_a_combinational_loop(tmp_path):
    cells = {"f": ff(3, 1), "x": lut(1, 2), "y": lut(2, 3), "z": lut(3, 2)}
    total = logic_depth.area(cells)
    assert sum(total.values()) == 3 and total["f"] > 0
