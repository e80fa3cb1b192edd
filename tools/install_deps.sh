#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what quicoff needs on Debian 12:
#   1. the Debian packages (apt-get; sudo when not root);
#   2. a Python virtual environment, .venv in the checkout ($QUICOFF_VENV to
#      put it elsewhere), made by the first python3 on PATH ($QUICOFF_PYTHON
#      to choose another). Debian's own python3 refuses `pip install` (PEP 668,
#      "externally-managed-environment"), so quicoff never installs into it;
#   3. quicoff itself into that venv, editable, with its test extras (meson
#      builds libquicoff, libquicoff-wire and the cffi extension module, hence
#      python3-dev), and the checkout's tooling (lab/quicoff_lab: testbed, demo,
#      bench), which the wheel does not ship, made importable there by a .pth file;
#   4. a check for the one optional piece: cargo >= 1.78 for the rustls peer of
#      `quicoff bench`. Without it that peer is skipped with a note, nothing fails.
# Safe and cheap to run again: each step skips what is already done (the venv
# is reinstalled only when the C sources or the package metadata changed).
# Every failing step says what failed. Afterwards: `. .venv/bin/activate`.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${QUICOFF_VENV:-$here/.venv}

step() { printf '\n== %s\n' "$*"; }
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

# ---- 1. Debian packages
# Besides the build: tshark/editcap (decrypt tests), ngtcp2-client/-server
# (gtlsclient, gtlsserver: a real QUIC peer for the interop tests), ethtool,
# procps (sysctl) and iproute2 (the veth/namespace tests), tcpdump (captures
# of the network side and of loopback), openssl (the ngtcp2 tests' server
# certificate), python3-venv and python3-dev (steps 2 and 3); libngtcp2*-dev,
# libnghttp3-dev and libgnutls28-dev build qo-h3-server (integrations/ngtcp2).
APT_PACKAGES=(build-essential pkg-config meson ninja-build libssl-dev
              clang libclang-rt-14-dev llvm tshark iproute2 python3-venv python3-dev
              $([ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] && echo libipsec-mb-dev)
              libngtcp2-crypto-gnutls-dev libngtcp2-dev libnghttp3-dev libgnutls28-dev dpdk-dev
              ngtcp2-client ngtcp2-server ethtool tcpdump procps openssl
              iverilog    # iverilog: the RTL tier's simulator (tools/hw.sh)
              clang-format-14)  # the lint stage of tools/test.sh (.clang-format)

command -v dpkg-query >/dev/null || die "dpkg-query not found: this script installs Debian 12 packages"
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || die "apt-get needs root and sudo is not installed: run as root (missing: ${missing[*]})"
        SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || die "apt-get update (is the Debian mirror reachable?)"
    $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]}"
fi

# ---- 2. the virtual environment
# usable = its python runs and has pip (a venv made without python3-venv has
# a python but no pip; it is made again)
venv_ok() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1; }
if ! venv_ok; then
    base=${QUICOFF_PYTHON:-python3}
    base_path=$(command -v "$base") \
        || die "$base not found (apt-get install python3 python3-venv, or set QUICOFF_PYTHON)"
    if [ -e "$venv" ]; then
        # only ever remove what is recognisably a (broken) virtual environment
        [ -f "$venv/pyvenv.cfg" ] \
            || die "$venv exists and is not a virtual environment: move it away, or set QUICOFF_VENV"
        rm -rf "$venv" || die "removing the broken virtual environment $venv"
    fi
    step "python3 -m venv $venv (from $base_path, $("$base_path" --version 2>&1))"
    "$base_path" -m venv "$venv" \
        || die "$base_path -m venv $venv (Debian: apt-get install python3-venv)"
    venv_ok || die "$venv has no working pip (Debian: apt-get install python3-venv, then run this again)"
fi

# ---- 3. quicoff into the venv (editable: python/ is used in place)
# One meson project builds libquicoff and the extension module (meson-python,
# pyproject.toml). The editable install keeps its meson build directory in the
# venv ($venv/quicoff-build) and runs ninja there whenever quicoff is imported,
# so a change to src/, include/ or a meson.build is compiled on the next import
# without reinstalling. That rebuild needs meson, ninja and cffi where the
# install found them, hence --no-build-isolation with pyproject.toml's build
# requirements installed in the venv itself, and the venv's bin first on PATH
# (meson-python takes meson and ninja from PATH; Debian's meson is older).
# Reinstalled only when the package metadata or the Python version changed.
build_dir=$venv/quicoff-build
stamp_file=$venv/.quicoff-install-stamp
stamp=$( { "$venv/bin/python" -c 'import sys; print(sys.version)'
           echo "$here"
           cat "$here/pyproject.toml"; } 2>/dev/null | sha256sum | cut -d' ' -f1)
import_check() {
    "$venv/bin/python" - "$here" <<'EOF'
import os, sys
import quicoff, quicoff.ref, quicoff._quicoff  # noqa: F401  (the compiled module)
import pytest, aioquic, scapy  # noqa: F401  (the test extras)
import quicoff_lab  # the checkout's tooling (the .pth written below)
for mod, where in ((quicoff, ("python", "quicoff")), (quicoff_lab, ("lab", "quicoff_lab"))):
    want = os.path.join(sys.argv[1], *where)
    got = os.path.dirname(os.path.realpath(mod.__file__))
    if got != os.path.realpath(want):
        sys.exit("%s is imported from %s, not from this checkout (%s)" % (mod.__name__, got, want))
EOF
}
# the tooling package of the checkout (not in the wheel): a .pth file in the
# venv's site-packages puts <checkout>/lab on sys.path
install_tooling_path() {
    local site
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
        || return 1
    printf '%s\n' "$here/lab" >"$site/quicoff_lab.pth"
}
install_tooling_path || die "writing quicoff_lab.pth into $venv (the checkout's tooling)"
# pyproject.toml's [build-system] requires, one per line
build_requires() {
    "$venv/bin/python" -c 'import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))' "$here/pyproject.toml"
}
if [ "$(cat "$stamp_file" 2>/dev/null)" = "$stamp" ] && [ -x "$venv/bin/quicoff" ] \
        && [ -d "$build_dir" ] && import_check 2>/dev/null; then
    echo "quicoff is installed in $venv (up to date)"
else
    rm -f "$stamp_file"
    reqs=$(build_requires) \
        || die "reading [build-system] requires from $here/pyproject.toml (tomllib needs Python >= 3.11)"
    mapfile -t reqs <<<"$reqs"
    step "pip install the build requirements into $venv: ${reqs[*]}"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${reqs[@]}" \
        || die "pip install ${reqs[*]} into $venv"
    step "pip install -e .[test] into $venv (meson builds libquicoff and the extension in $build_dir)"
    PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        --no-build-isolation --config-settings=build-dir="$build_dir" -e "$here[test]" \
        || die "pip install -e $here[test] into $venv (see the pip, meson and compiler output above)"
    import_check || die "quicoff does not import from $venv/bin/python (see above)"
    [ -x "$venv/bin/quicoff" ] || die "the quicoff command was not installed in $venv/bin"
    echo "$stamp" >"$stamp_file"
fi

# ---- 4. optional: cargo for the rustls peer of `quicoff bench`
# (bench/peers/rustls-quic: its Cargo.lock is version 4, which needs cargo >=
# 1.78, i.e. rustup's; Debian 12's cargo is 1.65). rustup puts cargo in
# ~/.cargo/bin, which non-login shells often do not have on PATH.
[ -n "${HOME:-}" ] && [ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
cargo_min=1.78
cargo_ver=""
command -v cargo >/dev/null && cargo_ver=$(cargo --version 2>/dev/null | awk '{print $2}')
if [ -n "$cargo_ver" ] && printf '%s\n%s\n' "$cargo_min" "${cargo_ver%%-*}" | sort -V -C; then
    echo "rustls peer of quicoff bench: cargo $cargo_ver (quicoff bench builds it on first use)"
else
    printf '\nskipped: rustls peer of quicoff bench needs cargo >= %s (%s); install Rust with rustup to measure it. Everything else works without it.\n' \
        "$cargo_min" "$([ -n "$cargo_ver" ] && echo "found cargo $cargo_ver" || echo "no cargo found")"
fi

echo
echo "dependencies ok; the virtual environment is $venv (. $venv/bin/activate for the quicoff command)"
