#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test of quicoff: C unit tests, Python tests (reference model,
# bindings, differential, real aioquic traffic, the namespace testbed), the
# quicoff-dpdk application on veth pairs, the sanitizer builds
# (ASan+UBSan, TSan) and a bounded libFuzzer run. Python runs in the
# virtual environment tools/install_deps.sh makes (.venv). Fails loudly: every stage
# that fails is named at the end and the exit status is non-zero.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
FUZZ_SECONDS=${QUICOFF_FUZZ_SECONDS:-120}
FUZZ_WIRE_SECONDS=${QUICOFF_FUZZ_WIRE_SECONDS:-30}

failed=()
passed=0
run() {
    local name=$1; shift
    printf '\n======== %s\n' "$name"
    local t0=$SECONDS
    if "$@"; then
        printf -- '-------- %s: ok (%ss)\n' "$name" $((SECONDS - t0))
        passed=$((passed + 1))
    else
        printf -- '-------- %s: FAILED (%ss)\n' "$name" $((SECONDS - t0))
        failed+=("$name")
    fi
}

bash tools/install_deps.sh || { echo "FAILED: installing dependencies"; exit 1; }
# from here on python3, pip, pytest and quicoff are the venv's ($PY is its python)
. tools/venv.sh || { echo "FAILED: the virtual environment (tools/venv.sh)"; exit 1; }

run "C build"            bash -c 'meson setup build --reconfigure >/dev/null 2>&1 || meson setup build; ninja -C build'
run "C tests"            meson test -C build --print-errorlogs
run "Python tests"       $PY -m pytest -q tests/python
run "DPDK app tests"     $PY -m pytest -q tests/dpdk
run "sanitizers"         bash tools/run_sanitizers.sh
run "RTL (cocotb, bounded)" env PYTHON="$(command -v "$PY")" bash tools/hw.sh test
run "fuzz (${FUZZ_SECONDS}s)" bash tools/run_fuzz.sh "$FUZZ_SECONDS"
run "fuzz wire (${FUZZ_WIRE_SECONDS}s)" bash tools/run_fuzz.sh "$FUZZ_WIRE_SECONDS" wire

echo
[ ${#failed[@]} -gt 0 ] && echo "FAILED stages: ${failed[*]}"
echo "stages: $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
