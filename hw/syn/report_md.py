#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Markdown table of a `tools/hw.sh report --json` file, for docs/hw.md
(so the figures there are the measured ones, not retyped)."""

import json
import sys

r = json.load(open(sys.argv[1]))
FPGA_PROTOTYPE = {"lut": 23315, "ff": 7995, "mhz": 83.33, "gbps": 2.67, "lat": 63}
sim, x, e = r["sim"], r["xc7z020"], r["ecp5_85f"]
rx, tx = x.get("quicoff_rx") or {}, x.get("quicoff_tx") or {}
# synthesis of an older RTL than the simulated one is labelled so
old = "" if r.get("synthesis_of_this_rtl", True) else " [older RTL]"
print("| figure | quicoff RTL (DATA_W=128) | FPGA prototype |")
print("|---|---|---|")
print(
    f"| simulation | {sim['tests']} tests, {sim['failed']} failed; {sim['packets']} frames compared "
    f"(RX {sim['rx_frames']}, TX {sim['tx_frames']}, TX->RX {sim['tx_to_rx_frames']}), "
    f"{sim['mismatches']} mismatches; libquicoff checked {sim['libquicoff_checked']} datagrams, "
    f"{sim['libquicoff_disagree']} disagreements | crafted packets |"
)
for k, v in sorted(r["cycles_per_packet"].items(), key=lambda kv: int(kv[0])):
    print(
        f"| cycles per packet, {k}-byte QUIC packet ({r['frame_bytes'][k]}-byte frame), back to back | {v:g} | |"
    )
print(
    f"| latency, 88-byte packet, first byte in to first byte out | {r['latency_cycles_88B']} cycles | {FPGA_PROTOTYPE['lat']} cycles |"
)
t = r.get("tx") or {}
if t.get("cycles_per_packet"):
    c = t["cycles_per_packet"]
    print(
        f"| TX: cycles per packet 64 / 88 / 1,400 B; 88 B latency | "
        f"{c.get('64'):g} / {c.get('88'):g} / {c.get('1400'):g}; {t['latency_cycles_88B']} cycles | |"
    )
if rx:
    print(
        f"| xc7z020 RX{old}: LUT (logic + as RAM) / FF / BRAM36 / DSP (Yosys) | {rx['lut']} ({rx['lut_logic']} + {rx['lut_as_ram']}) / {rx['ff']} / {rx['bram']:g} / {rx['dsp']} | {FPGA_PROTOTYPE['lut']} / {FPGA_PROTOTYPE['ff']} (Vivado) |"
    )
if tx:
    print(
        f"| xc7z020 TX{old}: LUT (logic + as RAM) / FF / BRAM36 / DSP (Yosys) | {tx['lut']} ({tx['lut_logic']} + {tx['lut_as_ram']}) / {tx['ff']} / {tx['bram']:g} / {tx['dsp']} | - |"
    )
if not e.get("routed") and e.get("lut"):
    print(
        f"| LFE5UM-85F RX{old} (with pin harness): placement | does not fit: {e['lut']} LUT4 needed, "
        f"{e.get('lut4_available')} available; {e['ff']} FF, {e['bram_dp16kd']} DP16KD; no routed fmax | - |"
    )
if e.get("fmax_mhz"):
    print(
        f"| LFE5UM-85F RX (with pin harness): fmax after routing / LUT4 / FF / DP16KD | {e['fmax_mhz']} MHz / {e['lut']} / {e['ff']} / {e['bram_dp16kd']} | 83.33 MHz (Zynq-7020) |"
    )
et = r.get("ecp5_85f_tx") or {}
if et.get("fmax_mhz"):
    old_t = "" if et.get("of_this_rtl", True) else " [older RTL]"
    print(
        f"| LFE5UM-85F TX{old_t} (with pin harness): fmax after routing / LUT4 / FF / DP16KD | {et['fmax_mhz']} MHz / {et['lut']} / {et['ff']} / {et['bram_dp16kd']} | - |"
    )
if r.get("gbps_at_fmax"):
    g = r["gbps_at_fmax"]
    print(
        f"| line rate at fmax, 1,400-byte packets (RX) | {g} Gbit/s | {FPGA_PROTOTYPE['gbps']} Gbit/s (32 bit x 83.33 MHz) |"
    )
gt = (r.get("gbps_at_fmax_by_direction") or {}).get("tx")
if gt:
    print(f"| line rate at fmax, 1,400-byte packets (TX) | {gt} Gbit/s | - |")
    if rx:
        print(
            f"| xc7 LUT per Gbit/s (RX) | {rx['lut'] / g:.0f} | {FPGA_PROTOTYPE['lut'] / FPGA_PROTOTYPE['gbps']:.0f} |"
        )
w = r.get("data_w_32")
if w:
    c = w["cycles_per_packet"]
    print(
        f"| DATA_W=32 build: frames compared / mismatches | {w['sim']['packets']} / {w['sim']['mismatches']} | |"
    )
    print(
        f"| DATA_W=32 build: cycles per packet 64 / 88 / 1,400 B; 88 B latency | "
        f"{c.get('64'):g} / {c.get('88'):g} / {c.get('1400'):g}; {w['latency_cycles_88B']} cycles | - / - / -; 63 cycles |"
    )
