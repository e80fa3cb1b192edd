# SPDX-License-Identifier: Apache-2.0
"""Runs quicoff-dpdk on veth pairs for the tests: the checkout's tooling
(lab/quicoff_lab/dpdk_app.py, shared with bench/fwd_cost.py) under the names
the test modules import."""

from __future__ import annotations

import subprocess

from quicoff_lab.dpdk_app import App, Port, Telemetry, Veth, find_binary

__all__ = ["App", "Port", "Telemetry", "Veth", "find_binary", "sh"]


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)
