#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer target with clang (ASan + UBSan) in build-fuzz,
# generates the seed corpus (valid packets of every suite, level and version;
# coalesced datagrams; zero-length DCIDs), checks every seed passes, then
# fuzzes for a bounded time.
#
#   tools/run_fuzz.sh [SECONDS]      (default 60)
#
# Exit status non-zero, with the reproducer's path printed, on any crash,
# sanitizer report, failed check or timeout. Reproduce a crash with
#   build-fuzz/fuzz/fuzz_unprotect path/to/crash-file
set -euo pipefail
secs=${1:-60}
case $secs in ''|*[!0-9]*) echo "run_fuzz.sh: SECONDS must be a whole number, got '$secs'" >&2; exit 2;; esac
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
ninja -C "$build" fuzz/fuzz_unprotect fuzz/fuzz_unprotect_seeds || fail "build"

seeds=$build/fuzz-seeds
corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
"$build/fuzz/fuzz_unprotect_seeds" "$seeds" || fail "seed generation"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# 1. every seed once (no mutation): the harness's own checks on valid input
"$build/fuzz/fuzz_unprotect" -runs=0 "$seeds" >"$build/fuzz-seeds.log" 2>&1 \
    || { tail -40 "$build/fuzz-seeds.log"; fail "a seed input fails (log: $build/fuzz-seeds.log)"; }

# 2. fuzz for $secs seconds (new corpus entries go to $corpus, kept between runs)
log=$build/fuzz.log
set +e
"$build/fuzz/fuzz_unprotect" "$corpus" "$seeds" \
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
echo "run_fuzz.sh: ok ($secs s, no crash)"
