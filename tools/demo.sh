#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's demo: installs what is missing, builds libquicoff, records real
# QUIC conversations with aioquic (every suite it offers, key updates both
# ways), decrypts them through the engine with `quicoff decrypt`, and measures
# the data path against bare OpenSSL with the benchmark.
# Results go to results/demo/.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
out=results/demo
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

bash tools/install_deps.sh || die "installing dependencies"
printf '\n== building libquicoff (meson, ninja)\n'
{ meson setup build >/dev/null 2>&1 || meson setup --reconfigure build >/dev/null; } || die "meson setup"
ninja -C build >/dev/null || die "ninja -C build"
mkdir -p "$out"

printf '\n== 1. real QUIC traffic: aioquic client <-> server, 3 suites, 2 key updates each\n'
quicoff capture -k "$out/keys.log" --suite aes-128-gcm --suite aes-256-gcm \
    --suite chacha20-poly1305 --key-updates 2 --bytes 200000 "$out/capture.pcap" \
    || die "quicoff capture"

printf '\n== 2. quicoff decrypt: every packet through the C data plane\n'
quicoff decrypt --strict --keylog "$out/keys.log" "$out/capture.pcap" -o "$out/plaintext.pcap" \
    || die "quicoff decrypt found packets it could not decrypt"
echo "plaintext capture: $out/plaintext.pcap (tshark -r / Wireshark / scapy)"

printf '\n== 3. benchmark: the engine vs bare OpenSSL EVP on one core (quick run)\n'
./build/bench/quicoff-bench --quick --suite aes-128-gcm --json "$out/bench.json" \
    || die "quicoff-bench"
printf '\ndemo done: results in %s/\n' "$out"
