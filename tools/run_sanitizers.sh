#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sanitizer builds of the C tests:
#  - build-asan: the whole suite with AddressSanitizer + UndefinedBehaviorSanitizer
#    (any report is fatal), run with `meson test`;
#  - build-tsan: the tests with threads, with ThreadSanitizer: test_concurrency
#    (writer + readers, for a few seconds), test_replace (quicoff_conn_replace
#    under a reader) and test_ccm_burst (CCM bursts on several threads, the
#    process-wide crossover) and test_no_alloc (bursts on a fresh thread's
#    worker, heap calls counted).
# OpenSSL is not instrumented: TSan reports whose frames are inside libcrypto
# are suppressed through tools/tsan.supp (libcrypto frames only).
#
#   tools/run_sanitizers.sh            (QUICOFF_TSAN_SECONDS=5 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { printf '\nrun_sanitizers.sh: FAILED: %s\n' "$*" >&2; exit 1; }

setup() { # dir, options...
    local dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        # a build dir another meson version wrote is refused: make it again
        meson configure "$dir" "$@" >/dev/null 2>&1 ||
            meson setup --wipe "$dir" "$@" >/dev/null || fail "meson setup --wipe $dir"
    else
        meson setup "$dir" "$@" || fail "meson setup $dir"
    fi
}

# ---- ASan + UBSan: the whole C test suite
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
ninja -C build-asan || fail "build-asan: build"
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# the 1,000,000-entry and AES-CCM hard-limit tests are slower here
meson test -C build-asan --print-errorlogs --timeout-multiplier 4 \
    || fail "ASan/UBSan test run (logs: build-asan/meson-logs/testlog.txt)"

# ---- TSan: the tests where threads share a table or the backend
setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized
ninja -C build-tsan tests/c/test_concurrency tests/c/test_replace tests/c/test_ccm_burst \
    tests/c/test_no_alloc \
    || fail "build-tsan: build"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tools/tsan.supp"
seconds=${QUICOFF_TSAN_SECONDS:-5}
./build-tsan/tests/c/test_concurrency "$seconds" || fail "ThreadSanitizer run of test_concurrency"
./build-tsan/tests/c/test_replace || fail "ThreadSanitizer run of test_replace"
./build-tsan/tests/c/test_ccm_burst || fail "ThreadSanitizer run of test_ccm_burst"
./build-tsan/tests/c/test_no_alloc || fail "ThreadSanitizer run of test_no_alloc"
echo "run_sanitizers.sh: ok"
