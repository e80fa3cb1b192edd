# SPDX-License-Identifier: Apache-2.0
"""Veth pairs and network namespaces through iproute2, sysctl and ethtool:
the plumbing of the namespace testbed (testbed.py) and of quicoff-dpdk on
veth pairs (dpdk_app.py). Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import List, Optional, Sequence

__all__ = [
    "LinkError",
    "run",
    "ip",
    "in_netns",
    "netns_list",
    "kill_netns_procs",
    "add_veth",
    "delete_link",
    "disable_ipv6",
    "ethtool_off",
]


class LinkError(RuntimeError):
    """A command of the plumbing failed; the message has its stderr."""


def run(
    argv: Sequence[str], check: bool = True, timeout: float = 30
) -> subprocess.CompletedProcess:
    p = subprocess.run(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout
    )
    if check and p.returncode != 0:
        raise LinkError("%s: %s" % (" ".join(argv), (p.stderr or p.stdout).strip()))
    return p


def in_netns(ns: Optional[str], argv: Sequence[str]) -> List[str]:
    """argv run inside namespace ns (as is when ns is None)."""
    return (["ip", "netns", "exec", ns] if ns else []) + list(argv)


def ip(*args: str, ns: Optional[str] = None, check: bool = True) -> subprocess.CompletedProcess:
    return run(["ip"] + (["-n", ns] if ns else []) + list(args), check=check)


def netns_list() -> List[str]:
    p = run(["ip", "netns", "list"], check=False)
    return [ln.split()[0] for ln in p.stdout.splitlines() if ln.strip()]


def kill_netns_procs(ns: str, grace: float = 3.0) -> None:
    """Ends every process in namespace ns: SIGTERM, then SIGKILL."""

    def pids():
        p = run(["ip", "netns", "pids", ns], check=False)
        return [int(x) for x in p.stdout.split() if x.isdigit() and int(x) != os.getpid()]

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        ps = pids()
        if not ps:
            return
        for pid in ps:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        t = time.monotonic()
        while time.monotonic() - t < wait and pids():
            time.sleep(0.05)


def add_veth(
    name: str,
    peer: str,
    ns: Optional[str] = None,
    peer_ns: Optional[str] = None,
    mac: Optional[str] = None,
    peer_mac: Optional[str] = None,
) -> None:
    """A veth pair name <-> peer, each end in its namespace (None: this one)."""

    def end(ifname, where, addr):
        return [ifname] + (["netns", where] if where else []) + (["address", addr] if addr else [])

    run(
        ["ip", "link", "add"]
        + end(name, ns, mac)
        + ["type", "veth", "peer", "name"]
        + end(peer, peer_ns, peer_mac)
    )


def delete_link(name: str, ns: Optional[str] = None) -> None:
    """Removes a link (a veth takes its peer along); no error when it is gone."""
    ip("link", "del", name, ns=ns, check=False)


def disable_ipv6(conf: str, ns: Optional[str] = None) -> None:
    """No IPv6 (hence no router solicitations or DAD) on interface ``conf``
    ("all" and "default" for the whole namespace): the kernel then sends
    nothing of its own on the test links."""
    run(in_netns(ns, ["sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % conf]), check=False)


def ethtool_off(iface: str, features: Sequence[str], ns: Optional[str] = None) -> None:
    """Switches ethtool features off (best effort: veth lacks some on old
    kernels, and ethtool may be missing)."""
    args: List[str] = []
    for f in features:
        args += [f, "off"]
    try:
        run(in_netns(ns, ["ethtool", "-K", iface] + args), check=False)
    except FileNotFoundError:
        pass
