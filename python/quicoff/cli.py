# SPDX-License-Identifier: Apache-2.0
"""The ``quicoff`` command: ``quicoff <command> [options]``.

Each command lives in its own module, which provides ``add_arguments(parser)``
(it must ``set_defaults(func=run)``, ``run(args) -> exit status``).  To add
one, append it to COMMANDS.

``bench`` and ``demo`` are tooling of a source checkout (the package
``quicoff_lab`` in <checkout>/lab, which tools/install_deps.sh makes
importable in the development venv); the wheel does not ship it, and there
these commands say how to get it instead of failing with a traceback.

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
    (
        "decrypt",
        "quicoff.decrypt",
        "decrypt the QUIC packets of a capture with the engine (TLS key log)",
    ),
    ("capture", "quicoff.capture", "record a QUIC conversation (aioquic) to a pcap and a key log"),
    (
        "ctl",
        "quicoff.ctl",
        "list, show, count and remove a running quicoff-dpdk's entries over the host interface",
    ),
    (
        "bench",
        "quicoff_lab.bench",
        "compare quicoff with bare OpenSSL, intel-ipsec-mb, DPDK, rustls and ngtcp2",
    ),
    (
        "demo",
        "quicoff_lab.demo",
        "two hosts, two offloads, one wire in network namespaces: traffic, checks, tampering",
    ),
]

#: the package of the checkout's tooling (not in the wheel)
TOOLING = "quicoff_lab"


def _no_tooling(name: str):
    """run() of a checkout command where the tooling is not installed."""

    def run(args) -> int:
        sys.stderr.write(
            "quicoff %s needs the tooling of a quicoff source checkout (the package %s in "
            "<checkout>/lab), which the installed quicoff package does not include.\n"
            "Clone the quicoff repository, run `bash tools/install_deps.sh` there and use its "
            "venv's quicoff (.venv/bin/quicoff %s), or `bash tools/demo.sh` for the demo.\n"
            % (name, TOOLING, name)
        )
        return 2

    return run


def _command_module(module: str):
    """The command's module, or None when it is checkout tooling that is not
    installed here (any other ImportError is a bug and propagates)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if module.startswith(TOOLING + ".") and e.name == TOOLING:
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="quicoff", description="QUIC packet-protection offload engine tools."
    )
    parser.add_argument("--version", action="version", version="quicoff " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in COMMANDS:
        mod = _command_module(module)
        if mod is None:
            help_text += " (source checkout only: not installed here)"
        p = sub.add_parser(name, help=help_text, description=help_text)
        if mod is None:
            # its options are unknown here: main() lets them through to the message
            p.set_defaults(func=_no_tooling(name), tooling_missing=True)
        else:
            mod.add_arguments(p)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "tooling_missing", False):
        parser.error("unrecognized arguments: %s" % " ".join(unknown))
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
