# SPDX-License-Identifier: Apache-2.0
"""qo_aes_pipe and qo_aes_deep against FIPS-197 vectors and `cryptography` (random
keys and blocks, AES-128 and AES-256 interleaved back to back, one block per clock,
results matched by tag whatever the latency), and
qo_gf128_mul against a bit-serial model of NIST SP 800-38D Algorithm 1."""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer, ReadOnly
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from tb_common import set_stats

N_RANDOM = int(os.environ.get("QO_N", "400"))


def ecb(key, block):
    e = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return e.update(block) + e.finalize()


def gf_mul_spec(x, y):
    """SP 800-38D Algorithm 1, bit by bit (x, y as 128-bit ints, block MSB first)."""
    r = 0xE1 << 120
    z, v = 0, y
    for i in range(127, -1, -1):
        if (x >> i) & 1:
            z ^= v
        v = (v >> 1) ^ r if v & 1 else v >> 1
    return z


@cocotb.test()
async def aes_vectors_and_random(dut):
    if not hasattr(dut, "in_key"):
        return
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    rng = random.Random(1)
    # FIPS-197 C.1 / C.3 plus random cases, each its own key size
    cases = [
        (
            bytes.fromhex("000102030405060708090a0b0c0d0e0f"),
            bytes.fromhex("00112233445566778899aabbccddeeff"),
        ),
        (bytes(range(32)), bytes.fromhex("00112233445566778899aabbccddeeff")),
    ]
    for _ in range(N_RANDOM):
        cases.append((rng.randbytes(rng.choice((16, 32))), rng.randbytes(16)))
    expect = {i: ecb(k, b) for i, (k, b) in enumerate(cases)}
    assert expect[0].hex() == "69c4e0d86a7b0430d8cdb78070b4c55a"
    assert expect[1].hex() == "8ea2b7ca516745bfeafc49904b496089"
    got = {}
    seen_at = {}  # clock of each block's output, for the latency
    clock = [0]
    dut.rst.value = 1
    dut.in_valid.value = 0
    for _ in range(20):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    async def collect():
        while len(got) < len(cases):
            await RisingEdge(dut.clk)
            clock[0] += 1
            await ReadOnly()
            if int(dut.out_valid.value):
                tag = int(dut.out_tag.value)
                got[tag] = int(dut.out_block.value).to_bytes(16, "big")
                seen_at.setdefault(tag, clock[0])

    mon = cocotb.start_soon(collect())
    sent_at = clock[0] + 1  # block 0 is sampled at the next edge
    for i, (k, b) in enumerate(cases):
        dut.in_valid.value = 1
        dut.in_block.value = int.from_bytes(b, "big")
        dut.in_key.value = int.from_bytes(k.ljust(32, b"\0"), "big")
        dut.in_aes256.value = int(len(k) == 32)
        dut.in_tag.value = i
        await RisingEdge(dut.clk)
        if rng.random() < 0.1:  # gaps: the pipeline must not care
            dut.in_valid.value = 0
            await RisingEdge(dut.clk)
    dut.in_valid.value = 0
    await mon
    bad = [i for i in expect if got.get(i) != expect[i]]
    # clocks from the edge that takes block 0 in to the one after which it is out
    latency = seen_at[0] - sent_at + 1
    dut._log.info(
        "AES blocks compared: %d, mismatches: %d, latency %d clocks", len(cases), len(bad), latency
    )
    set_stats(f"aes_{dut._name}", blocks=len(cases), mismatches=len(bad), latency_cycles=latency)
    assert not bad, f"mismatching blocks: {bad[:5]}"


@cocotb.test()
async def gf128_random(dut):
    if not hasattr(dut, "a"):
        return
    rng = random.Random(2)
    # the GCM test case 2 H and a known product check the bit order
    vals = [(1 << 127, 0x66E94BD4EF8A2C3B884CFA59CA342B2E)]
    vals += [(rng.getrandbits(128), rng.getrandbits(128)) for _ in range(N_RANDOM)]
    bad = 0
    for x, y in vals:
        dut.a.value = x
        dut.b.value = y
        await Timer(1, unit="ns")
        if int(dut.p.value) != gf_mul_spec(x, y):
            bad += 1
    dut._log.info("GF(2^128) products compared: %d, mismatches: %d", len(vals), bad)
    assert (
        gf_mul_spec(1 << 127, 0x66E94BD4EF8A2C3B884CFA59CA342B2E)
        == 0x66E94BD4EF8A2C3B884CFA59CA342B2E
    )
    assert bad == 0
