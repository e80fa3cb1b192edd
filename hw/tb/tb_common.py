# SPDX-License-Identifier: Apache-2.0
"""Bench plumbing the cocotb suites share: the clock and reset, the
AXI4-Stream source and sink and the AXI4-Lite masters (cocotbext-axi), the
driver's bus adapter, random pause generators, a random connection's sending
side, and the statistics file tools/hw.sh report reads."""

import ipaddress
import json
import logging
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamSink, AxiStreamSource

from quicoff import ref

SUITES = ("aes-128-gcm", "aes-256-gcm")


class Bus:
    """rtl_driver's bus (write/read of 32-bit words) over an AxiLiteMaster."""

    def __init__(self, m):
        self.m = m

    async def write(self, addr, value):
        await self.m.write_dword(addr, value)

    async def read(self, addr):
        return await self.m.read_dword(addr)


def pauses(rng, p):
    while True:
        yield rng.random() < p


class Bench:
    """The DUT's streams and control ports; `await Bench.start(...)` also runs
    the clock and the reset. axil: the prefixes of its AXI4-Lite ports."""

    def __init__(self, dut, axil=("s_axil",)):
        self.dut = dut
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.axil = [AxiLiteMaster(AxiLiteBus.from_prefix(dut, p), dut.clk, dut.rst) for p in axil]
        for x in [self.src, self.sink] + [i for m in self.axil for i in (m.write_if, m.read_if)]:
            x.log.setLevel(logging.WARNING)

    @classmethod
    async def start(cls, dut, axil=("s_axil",), rng=None, src_pause=0.0, sink_pause=0.0):
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        b = cls(dut, axil)
        if rng is not None and src_pause:
            b.src.set_pause_generator(pauses(rng, src_pause))
        if rng is not None and sink_pause:
            b.sink.set_pause_generator(pauses(rng, sink_pause))
        dut.rst.value = 1
        for _ in range(5):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        for _ in range(2):
            await RisingEdge(dut.clk)
        return b


class Sender:
    """One connection's sending side."""

    def __init__(self, rng, suite, dcid, secret, addr, v6, updates=12):
        """updates: how many key updates' keys to derive (gens[0..updates])."""
        self.suite, self.dcid, self.addr, self.v6 = suite, dcid, addr, v6
        self.secret = secret
        self.gens = [ref.derive_packet_keys(suite, secret)]
        self._last_secret = secret
        self.ensure_gens(updates)
        self.gen = 0
        self.pn = rng.randrange(0, 1 << 20)
        self.held = []  # PNs of the previous generation sent late
        self.upd_pending = False

    def ensure_gens(self, g):
        """Derives keys up to generation g (a long run updates more often
        than the generations derived up front)."""
        while len(self.gens) <= g:
            self._last_secret, k = ref.next_packet_keys(
                self.suite, self._last_secret, self.gens[-1]
            )
            self.gens.append(k)


def random_sender(rng, i, dcid_len, updates=12):
    """Connection number i of a run: a random suite, IPv4 or IPv6 (40%), its own
    address and port (the lookup key when dcid_len is 0)."""
    suite = rng.choice(SUITES)
    v6 = rng.random() < 0.4
    addr = ("2001:db8::%x" % (i + 2), 4433 + i) if v6 else ("192.0.2.%d" % (i + 2), 4433 + i)
    return Sender(
        rng, suite, rng.randbytes(dcid_len), rng.randbytes(ref.secret_len(suite)), addr, v6, updates
    )


def distinct_sender(rng, i, dcid_len, taken, updates=12):
    """random_sender, drawn again while its lookup key is in `taken` (1- and
    2-byte DCIDs repeat among a run's connections, and a receiver could not
    tell two connections with one key apart); the key is added to `taken`."""
    s = random_sender(rng, i, dcid_len, updates)
    while lookup_key20(s, dcid_len) in taken:
        s = random_sender(rng, i, dcid_len, updates)
    taken.add(lookup_key20(s, dcid_len))
    return s


def lookup_key20(s, dcid_len):
    """The receiver's 20-byte lookup key: the DCID, or address + port for zero-length CIDs."""
    if dcid_len:
        return s.dcid.ljust(20, b"\0")
    return (ipaddress.ip_address(s.addr[0]).packed + s.addr[1].to_bytes(2, "big")).ljust(20, b"\0")


def _update_stats(name, update):
    fn = os.environ.get("QO_STATS_FILE")
    if not fn:
        return
    d = {}
    if os.path.exists(fn):
        with open(fn) as fh:
            d = json.load(fh)
    d[name] = update(d.get(name, {}))
    with open(fn, "w") as fh:
        json.dump(d, fh, indent=1)


def add_stats(name, **counts):
    """Adds to section `name` of $QO_STATS_FILE, so that runs accumulate (tools/hw.sh
    test --long runs a suite several times): numbers are added, dicts of numbers
    added key by key, lists merged as sorted sets."""

    def update(old):
        new = {}
        for k, v in counts.items():
            o = old.get(k)
            if isinstance(v, dict):
                new[k] = dict(o or {})
                for kk, vv in v.items():
                    new[k][kk] = new[k].get(kk, 0) + vv
            elif isinstance(v, (list, tuple, set)):
                new[k] = sorted(set(o or []) | set(v))
            else:
                new[k] = (o or 0) + v
        return new

    _update_stats(name, update)


def set_stats(name, **values):
    """Replaces section `name` of $QO_STATS_FILE (figures of one run, such as cycle counts)."""
    _update_stats(name, lambda old: dict(values))
