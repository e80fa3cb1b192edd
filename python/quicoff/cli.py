# SPDX-License-Identifier: Apache-2.0
"""The ``quicoff`` command: ``quicoff <command> [options]``.

Each command lives in its own module, which provides ``add_arguments(parser)``
(it must ``set_defaults(func=run)``, ``run(args) -> exit status``).  To add
one (bench, demo, ...), append it to COMMANDS.

Exit status: 0 success, 1 the command ran but found a problem it was asked to
report (e.g. ``decrypt --strict``), 2 bad usage or unreadable input.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import List, Optional

#: (name, module, one-line help)
COMMANDS = [
    ("decrypt", "quicoff.decrypt",
     "decrypt the QUIC packets of a capture with the engine (TLS key log)"),
    ("capture", "quicoff.capture",
     "record a QUIC conversation (aioquic) to a pcap and a key log"),
    ("bench", "quicoff.bench",
     "compare quicoff with bare OpenSSL, intel-ipsec-mb, DPDK, rustls and ngtcp2"),
    ("demo", "quicoff.demo",
     "two hosts, two offloads, one wire in network namespaces: traffic, checks, tampering"),
]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    parser = argparse.ArgumentParser(
        prog="quicoff", description="QUIC packet-protection offload engine tools.")
    parser.add_argument("--version", action="version", version="quicoff " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in COMMANDS:
        p = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `quicoff decrypt --packets ... | head`
        # keep the interpreter's final flush of stdout from failing again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
