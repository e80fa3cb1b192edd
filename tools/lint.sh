#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The lint stage of tools/test.sh (both tiers): the tree as the formatters and
# linters want it. Four checks, each run even when one before it failed:
#   ruff check            pyflakes + pycodestyle findings, unused noqa markers
#   ruff format --check   the Python formatting
#   mypy                  quicoff._engine and quicoff.ref, strict
#   clang-format          the C sources (.clang-format), clang-format-14 as on
#                         Debian 12 ($CLANG_FORMAT chooses another binary)
# Their configuration is in pyproject.toml and .clang-format. Exits non-zero
# and names every check that failed.
#
#   bash tools/lint.sh          check (what the test stage runs)
#   bash tools/lint.sh --fix    format the tree: ruff format, ruff check --fix
#                               and clang-format -i over the same files; then
#                               fix by hand what the checks still report
#   bash tools/lint.sh --list   the C files clang-format looks at
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

mode=check
case ${1:-} in
    "") ;;
    --fix) mode=fix ;;
    --list) mode=list ;;
    -h|--help) sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "lint.sh: unknown option '$1' (--fix, --list, --help)" >&2; exit 2 ;;
esac

# The C sources are the tracked .c and .h files (hw/ holds Verilog and its
# Python test benches, no C). Without git (an unpacked sdist) they are found.
c_files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -- '*.c' '*.h'
    else
        find . -path ./.venv -prune -o -path './build*' -prune -o \
            \( -name '*.c' -o -name '*.h' \) -type f -print | sed 's|^\./||' | sort
    fi
}
mapfile -t C_FILES < <(c_files)
if [ "$mode" = list ]; then
    printf '%s\n' "${C_FILES[@]}"
    exit 0
fi
[ ${#C_FILES[@]} -gt 0 ] || { echo "lint.sh: no C files found" >&2; exit 1; }

. tools/venv.sh || exit 1
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
missing=()
for tool in ruff mypy "$CLANG_FORMAT"; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "lint.sh: not found: ${missing[*]} (bash tools/install_deps.sh installs them:" \
         "ruff and mypy into the venv, clang-format-14 from Debian)" >&2
    exit 1
fi

# clang-format --dry-run -Werror names every line it would change: the first
# 40 places, then how many in how many files
clang_format_check() {
    local out rc
    echo "$CLANG_FORMAT --dry-run -Werror on ${#C_FILES[@]} C files (bash tools/lint.sh --list)"
    out=$("$CLANG_FORMAT" --dry-run -Werror "${C_FILES[@]}" 2>&1)
    rc=$?
    [ $rc -eq 0 ] && return 0
    printf '%s\n' "$out" | grep -E ': (error|warning): ' | head -n 40
    printf '%s places in %s files would change\n' \
        "$(printf '%s\n' "$out" | grep -cE ': (error|warning): ')" \
        "$(printf '%s\n' "$out" | grep -E ': (error|warning): ' | cut -d: -f1 | sort -u | wc -l)"
    return $rc
}

failed=()
check() {
    local name=$1; shift
    printf -- '-- %s: %s\n' "$name" "$(printf '%q ' "$@" | cut -c1-200)"
    if "$@"; then
        printf -- '-- %s: ok\n' "$name"
    else
        printf -- '-- %s: FAILED\n' "$name"
        failed+=("$name")
    fi
}

if [ "$mode" = fix ]; then
    check "ruff format" ruff format .
    check "ruff check --fix" ruff check --fix .
    check "clang-format -i" "$CLANG_FORMAT" -i "${C_FILES[@]}"
    check "mypy" mypy
else
    check "ruff check" ruff check .
    check "ruff format" ruff format --check --output-format concise .
    check "mypy" mypy
    # --dry-run -Werror: every line clang-format would change is an error, with its place
    check "clang-format" clang_format_check
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "lint FAILED: ${failed[*]}$([ "$mode" = check ] && echo " (formatting only? bash tools/lint.sh --fix formats the tree)")"
    exit 1
fi
echo "lint: ok"
