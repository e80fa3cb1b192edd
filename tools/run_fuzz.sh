#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a libFuzzer target with clang (ASan + UBSan) in build-fuzz,
# generates its seed corpus, checks every seed passes, then fuzzes for a
# bounded time.  Targets:
#   unprotect  the data path (fuzz/fuzz_unprotect.c); seeds: valid packets of
#              every suite, level and version, coalesced datagrams,
#              zero-length DCIDs
#   wire       the host <-> offload protocol decoder and the data header
#              reader (fuzz/fuzz_wire.c); seeds: the frames of protocol.md §8
#
#   tools/run_fuzz.sh [SECONDS [TARGET]]      (default 60 unprotect)
#
# Exit status non-zero, with the reproducer's path printed, on any crash,
# sanitizer report, failed check or timeout. Reproduce a crash with
#   build-fuzz/fuzz/fuzz_TARGET path/to/crash-file
set -euo pipefail
secs=${1:-60}
target=${2:-unprotect}
case $secs in ''|*[!0-9]*) echo "run_fuzz.sh: SECONDS must be a whole number, got '$secs'" >&2; exit 2;; esac
case $target in unprotect|wire) ;; *) echo "run_fuzz.sh: TARGET is unprotect or wire, got '$target'" >&2; exit 2;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=build-fuzz

fail() { printf '\nrun_fuzz.sh: FAILED: %s\n' "$*" >&2; exit 1; }

command -v clang >/dev/null || fail "clang not found (apt-get install clang libclang-rt-14-dev)"
if [ ! -f "$build/build.ninja" ]; then
    CC=clang meson setup "$build" -Dfuzz=true -Db_lundef=false -Dbuildtype=debugoptimized \
        || fail "meson setup $build"
else
    meson configure "$build" -Dfuzz=true >/dev/null
fi
fuzzer=$build/fuzz/fuzz_$target
# the unprotect target keeps the directory names it always had
suffix=$([ "$target" = unprotect ] && echo "" || echo "-$target")
seeds=$build/fuzz-seeds$suffix
corpus=$build/fuzz-corpus$suffix
artifacts=$build/fuzz-artifacts$suffix
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
if [ "$target" = unprotect ]; then
    ninja -C "$build" fuzz/fuzz_unprotect fuzz/fuzz_unprotect_seeds || fail "build"
    "$build/fuzz/fuzz_unprotect_seeds" "$seeds" || fail "seed generation"
else
    ninja -C "$build" fuzz/fuzz_wire || fail "build"
    # fuzz_wire's first byte picks the entry point: 0 frame, 1 0x88B5 payload,
    # 2 0x88B6 payload.  protocol.md §8: REMOVE, its ACK, DATA_TO_OFFLOAD,
    # compat data_pkt; and a DATA_TO_HOST (Handshake, key phase 1, flags 0x09).
    w() { printf "$2" >"$seeds/$1"; }
    w remove '\x01\x51\x01\x03\x00\x01\x02\x03\x04\x00\x00\x00\x07\x00\x00\x00\x00'
    w ack '\x01\x51\x01\x81\x03\x01\x02\x03\x04\x00\x00\x00\x07\x00\x00\x00\x00'
    w data_to_offload '\x01\x51\x01\x10\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x2a\x00\x04\x00\x00\x40\x11\x22\x33'
    w data_to_host '\x01\x51\x01\x90\x09\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x2a\x00\x04\x00\x31\x40\x11\x22\x33'
    w compat_data '\x02\x00\x07\x00\x00\x00\x00\x00\x00\x00\x2a\x40\x11\x22\x33'
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# 1. every seed once (no mutation): the harness's own checks on valid input
"$fuzzer" -runs=0 "$seeds" >"$build/fuzz-seeds$suffix.log" 2>&1 \
    || { tail -40 "$build/fuzz-seeds$suffix.log"; fail "a seed input fails (log: $build/fuzz-seeds$suffix.log)"; }

# 2. fuzz for $secs seconds (new corpus entries go to $corpus, kept between runs)
log=$build/fuzz$suffix.log
set +e
"$fuzzer" "$corpus" "$seeds" \
    -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
rc=$?
set -e
tail -25 "$log"
if [ $rc -ne 0 ]; then
    crash=$(ls -t "$artifacts" 2>/dev/null | head -1)
    fail "fuzzer exit status $rc; reproducer: $artifacts/${crash:-?} (full log: $log)"
fi
grep -q "Done [0-9]* runs" "$log" || fail "fuzzer did not finish its run (log: $log)"
echo "run_fuzz.sh: ok ($target, $secs s, no crash)"
