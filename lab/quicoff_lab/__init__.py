# SPDX-License-Identifier: Apache-2.0
"""quicoff_lab: the tooling of a quicoff source checkout, not the library.

The namespace testbed, its traffic driver, ``quicoff demo`` and
``quicoff bench`` need root, a meson build of the checkout
(build/apps/dpdk/quicoff-dpdk, build/tools/qo_traffic) or the checkout's
sources, so the quicoff wheel does not ship them. tools/install_deps.sh makes
this folder importable in the development venv (a .pth file); the ``quicoff``
command finds it there for its ``demo`` and ``bench`` commands.

* :mod:`quicoff_lab.checkout`  where the checkout and its build are
* :mod:`quicoff_lab.rawsock`   AF_PACKET sockets (raw Ethernet frames)
* :mod:`quicoff_lab.links`     veth pairs and network namespaces (ip, sysctl, ethtool)
* :mod:`quicoff_lab.dpdk_app`  quicoff-dpdk on two veth pairs (tests/dpdk, bench/fwd_cost.py)
* :mod:`quicoff_lab.testbed`   two hosts, two offloads, one wire in namespaces
* :mod:`quicoff_lab.traffic`   flows and the driver of tools/qo_traffic.c
* :mod:`quicoff_lab.demo`, :mod:`quicoff_lab.bench`, :mod:`quicoff_lab.bench_peers`
"""
