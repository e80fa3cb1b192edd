# SPDX-License-Identifier: Apache-2.0
"""AF_PACKET sockets: raw Ethernet frames on one interface, optionally opened
inside another network namespace. The one opener of the testbed, the DPDK
tests (tests/dpdk/harness.py) and bench/fwd_cost.py.

Linux constants the socket module does not export are named here, from
<linux/if_ether.h>, <linux/if_packet.h>, <asm-generic/socket.h> and <sched.h>.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading

__all__ = [
    "ETH_P_ALL",
    "SOL_PACKET",
    "PACKET_AUXDATA",
    "PACKET_IGNORE_OUTGOING",
    "PACKET_OUTGOING",
    "SO_ATTACH_FILTER",
    "open_raw",
    "open_raw_in_netns",
]

ETH_P_ALL = 0x0003  # every EtherType
SOL_PACKET = 263
PACKET_AUXDATA = 8  # VLAN tag and status as ancillary data
PACKET_IGNORE_OUTGOING = 23  # do not see our own transmissions
PACKET_OUTGOING = getattr(socket, "PACKET_OUTGOING", 4)  # sll_pkttype of those
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)  # beyond rmem_max (root)
SO_ATTACH_FILTER = getattr(socket, "SO_ATTACH_FILTER", 26)  # a classic BPF program
CLONE_NEWNET = 0x40000000


def open_raw(
    iface: str,
    proto: int = ETH_P_ALL,
    rcvbuf: int = 16 << 20,
    ignore_outgoing: bool = False,
    auxdata: bool = False,
    blocking: bool = True,
) -> socket.socket:
    """A raw socket bound to ``iface`` receiving EtherType ``proto`` (0: send
    only). rcvbuf: receive buffer in bytes (0: the default); forced beyond
    net.core.rmem_max when root may. ignore_outgoing: frames this host sends
    are not received back (kernel >= 4.20; silently not applied before).
    auxdata: PACKET_AUXDATA ancillary data (the VLAN tag the kernel strips)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(proto))
    try:
        s.bind((iface, proto))
        if rcvbuf:
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if ignore_outgoing:
            try:
                s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            except OSError:
                pass
        if auxdata:
            s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        s.setblocking(blocking)
    except BaseException:
        s.close()
        raise
    return s


def open_raw_in_netns(netns: str, iface: str, proto: int = ETH_P_ALL, **kw) -> socket.socket:
    """open_raw() on ``iface`` of network namespace ``netns``, from this
    process: a helper thread enters the namespace (setns(2) is per thread),
    opens the socket and ends; the socket keeps its namespace."""
    box: dict = {}

    def work():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open("/run/netns/" + netns, os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns(%s)" % netns)
            finally:
                os.close(fd)
            box["s"] = open_raw(iface, proto, **kw)
        except BaseException as e:  # reported in the caller's thread
            box["e"] = e

    t = threading.Thread(target=work, name="setns-" + netns)
    t.start()
    t.join()
    if "e" in box:
        raise box["e"]
    return box["s"]
