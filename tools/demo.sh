#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's demo. Installs what is missing, builds libquicoff and
# quicoff-dpdk, then:
#   1. quicoff demo: two hosts and two quicoff-dpdk offloads in network
#      namespaces (host A -> offload A -> wire -> offload B -> host B and
#      back); connections installed over the host<->offload protocol (mixed
#      suites, both directions, a multipath connection, a key update in
#      mid-stream); traffic at rising rates checked byte for byte; packets
#      tampered on the wire and shown dropped and counted; a table, JSON and
#      plots in results/demo/. Everything it creates is removed, also on Ctrl-C.
#   2. quicoff decrypt on real QUIC traffic (aioquic, every suite it offers,
#      key updates both ways), run through the same C data plane.
#   3. quicoff demo --stack: real QUIC stacks on the same testbed, their 1-RTT
#      protection in the offloads (qo-h3-server on ngtcp2 and the aioquic
#      server, each with --offload none|inproc|dpdk, against unmodified
#      gtlsclient and aioquic clients and offloaded clients), downloads checked
#      by SHA-256 with key updates both ways, a wire capture tshark decrypts,
#      host CPU per GB by mode; results in results/demo/stack/.
# Arguments go to `quicoff demo` (e.g. --quick: three to six minutes in all;
# --quick also makes stage 3 download 20 MB instead of 100 MB).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
out=results/demo
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "the demo makes network namespaces: run it as root"

bash tools/install_deps.sh || die "installing dependencies"
# `quicoff` below is the venv's (.venv/bin, made by install_deps.sh)
. tools/venv.sh || die "the virtual environment (tools/venv.sh)"
printf '\n== building libquicoff and quicoff-dpdk (meson, ninja)\n'
{ meson setup build >/dev/null 2>&1 || meson setup --reconfigure build >/dev/null; } || die "meson setup"
ninja -C build >/dev/null || die "ninja -C build"
mkdir -p "$out"

printf '\n== 1. quicoff demo: the offload testbed\n'
quicoff demo --json "$out/demo.json" "$@" || die "quicoff demo (a verdict failed; see above)"

printf '\n== 2. quicoff decrypt: real aioquic traffic through the same data plane\n'
quicoff capture -k "$out/keys.log" --suite aes-128-gcm --suite aes-256-gcm \
    --suite chacha20-poly1305 --key-updates 2 --bytes 200000 "$out/capture.pcap" \
    || die "quicoff capture"
quicoff decrypt --strict --keylog "$out/keys.log" "$out/capture.pcap" -o "$out/plaintext.pcap" \
    || die "quicoff decrypt found packets it could not decrypt"

printf '\n== 3. quicoff demo --stack: ngtcp2 and aioquic servers on the offloads\n'
quick=()
for a in "$@"; do [ "$a" = --quick ] && quick=(--quick); done
quicoff demo --stack --no-build "${quick[@]}" --json "$out/stack/stack.json" \
    || die "quicoff demo --stack (a verdict failed; see above)"
printf '\ndemo done: results, plots and captures in %s/\n' "$out"
