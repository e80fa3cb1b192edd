#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the tests of quicoff in one of two tiers (tools/test.sh --help).
# The default runs every test: C unit tests, Python tests (reference model,
# bindings, differential, real aioquic traffic, the namespace testbed), the
# lint stage (tools/lint.sh: ruff, mypy, clang-format; --fast runs it too),
# the quicoff-dpdk application on veth pairs, the sanitizer builds
# (ASan+UBSan, TSan) and a bounded libFuzzer run. Python runs in the
# virtual environment tools/install_deps.sh makes (.venv). Fails loudly: every stage
# that fails is named at the end and the exit status is non-zero; every stage
# or test group a tier leaves out is named too, with the reason.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

usage() {
    cat <<'EOF_USAGE'
usage: bash tools/test.sh [--fast] [--fuzz-seconds N] [--fuzz-wire-seconds N] [--list] [--help]

With no option: every test (what .ci/run and the README run; needs root):
  C build and unit tests, all Python tests, the lint stage, the quicoff-dpdk
  tests on veth pairs, the sanitizer builds (ASan+UBSan, TSan) and a bounded
  libFuzzer run of each fuzz target.

  --fast                  the developer tier: no root needed, under two minutes
                          on a 2-core machine. Runs the C build, the C unit tests,
                          the Python tests not marked root, netns or slow
                          (pytest -m "not root and not netns and not slow"; the
                          markers are described in pyproject.toml) and the lint
                          stage (bash tools/lint.sh: ruff check, ruff format
                          --check, mypy, clang-format; --fix formats). Leaves out
                          the quicoff-dpdk tests (root, veth pairs, DPDK), the
                          sanitizer builds and fuzzing (minutes each), and says so.
  --fuzz-seconds N        seconds of fuzzing the data path (fuzz_unprotect);
                          default $QUICOFF_FUZZ_SECONDS, else 120. 0 leaves the
                          stage out.
  --fuzz-wire-seconds N   the same for the protocol decoder (fuzz_wire);
                          default $QUICOFF_FUZZ_WIRE_SECONDS, else 30.
  --list                  print the stages the options select and those left
                          out (with why); run nothing, install nothing.
  --help                  this text.

The exit status is non-zero when any stage fails; the stages that failed and
those left out (with why) are listed at the end.
EOF_USAGE
}

FAST=0
LIST=0
FUZZ_SECONDS=${QUICOFF_FUZZ_SECONDS:-120}
FUZZ_WIRE_SECONDS=${QUICOFF_FUZZ_WIRE_SECONDS:-30}
while [ $# -gt 0 ]; do
    case $1 in
        --fast) FAST=1 ;;
        --fuzz-seconds|--fuzz-wire-seconds)
            [ $# -ge 2 ] || { echo "test.sh: $1 needs a number of seconds" >&2; exit 2; }
            [ "$1" = --fuzz-seconds ] && FUZZ_SECONDS=$2 || FUZZ_WIRE_SECONDS=$2
            shift ;;
        --fuzz-seconds=*) FUZZ_SECONDS=${1#*=} ;;
        --fuzz-wire-seconds=*) FUZZ_WIRE_SECONDS=${1#*=} ;;
        --list) LIST=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "test.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
for v in "$FUZZ_SECONDS" "$FUZZ_WIRE_SECONDS"; do
    case $v in ''|*[!0-9]*) echo "test.sh: fuzzing seconds must be a whole number, got '$v'" >&2; exit 2;; esac
done

failed=()
passed=0
run() {
    local name=$1; shift
    if [ "$LIST" = 1 ]; then
        printf 'runs: %s\n' "$name"
        return
    fi
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
# full NAME WHY CMD...: a stage of the default tier only. --fast (or a zero
# fuzzing time) leaves it out, and says so now and at the end, with WHY.
left_out=()
full() {
    local name=$1 why=$2; shift 2
    if [ "$FAST" = 1 ]; then
        skip "$name" "$why"
    else
        run "$name" "$@"
    fi
}
skip() {
    if [ "$LIST" = 1 ]; then
        printf 'leaves out: %s (%s)\n' "$1" "$2"
    else
        printf '\n======== %s: left out (%s)\n' "$1" "$2"
    fi
    left_out+=("$1: $2")
}

if [ "$LIST" = 1 ]; then
    PY='$PY'  # printed, never run
else
    bash tools/install_deps.sh || { echo "FAILED: installing dependencies"; exit 1; }
    # from here on python3, pip, pytest and quicoff are the venv's ($PY is its python)
    . tools/venv.sh || { echo "FAILED: the virtual environment (tools/venv.sh)"; exit 1; }
fi

# the fast tier's pytest selection (markers: pyproject.toml)
FAST_MARKERS="not root and not netns and not slow"
if [ "$FAST" = 1 ] && [ "$LIST" = 0 ]; then
    echo "fast tier: C build, C tests, Python tests -m \"$FAST_MARKERS\", lint; left out: DPDK app tests, sanitizers, RTL, fuzzing"
fi

run "C build"            bash -c 'meson setup build --reconfigure >/dev/null 2>&1 || meson setup build; ninja -C build'
run "C tests"            meson test -C build --print-errorlogs
pytest_select=()
[ "$FAST" = 1 ] && pytest_select=(-m "$FAST_MARKERS")
run "Python tests"       $PY -m pytest -q tests/python "${pytest_select[@]}"
[ "$FAST" = 1 ] && skip "Python tests marked root, netns or slow" \
                        "--fast; pytest -m 'root or netns or slow' tests/python runs them"
run "lint"               bash tools/lint.sh
full "DPDK app tests"    "--fast: needs root, veth pairs and DPDK" $PY -m pytest -q tests/dpdk
full "sanitizers"        "--fast: two more builds (ASan+UBSan, TSan), minutes" bash tools/run_sanitizers.sh
full "RTL (cocotb, bounded)" "--fast: minutes of RTL simulation" env PYTHON="$(command -v "$PY")" bash tools/hw.sh test
if [ "$FUZZ_SECONDS" = 0 ]; then
    skip "fuzz" "--fuzz-seconds 0"
else
    full "fuzz (${FUZZ_SECONDS}s)" "--fast: fuzzing takes minutes" bash tools/run_fuzz.sh "$FUZZ_SECONDS"
fi
if [ "$FUZZ_WIRE_SECONDS" = 0 ]; then
    skip "fuzz wire" "--fuzz-wire-seconds 0"
else
    full "fuzz wire (${FUZZ_WIRE_SECONDS}s)" "--fast: fuzzing takes minutes" bash tools/run_fuzz.sh "$FUZZ_WIRE_SECONDS" wire
fi

[ "$LIST" = 1 ] && exit 0
echo
for l in "${left_out[@]}"; do echo "left out: $l"; done
[ ${#failed[@]} -gt 0 ] && echo "FAILED stages: ${failed[*]}"
echo "stages: $passed passed, ${#failed[@]} failed, ${#left_out[@]} skipped"
[ ${#failed[@]} -eq 0 ]
