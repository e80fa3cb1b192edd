# SPDX-License-Identifier: Apache-2.0
"""Differential tests across crypto backends: the C data plane with backend A
protects exactly as the reference model does, and backend B unprotects it,
for every pair of the backends this build and CPU have ("openssl" always,
"ipsec-mb" on x86-64 with intel-ipsec-mb).

A compact version of test_differential.py: random packets of every suite,
short and long headers (long ones with 20-byte CIDs and tokens, so the AAD
passes 46 bytes, ipsec-mb's CCM job limit that the backend must not inherit),
payloads 0-1500 bytes; plus forged packets, which must fail with the bytes
as received (fail action "pass").
"""

import itertools
import os
import random

import pytest

import quicoff
from quicoff import ref

SUITES = ["aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305"]
KEY_LEN = {"aes-128-gcm": 16, "aes-256-gcm": 32, "aes-128-ccm": 16, "chacha20-poly1305": 32}
BACKENDS = ["openssl", "ipsec-mb"]
CASES = int(os.environ.get("QUICOFF_BACKEND_DIFF_CASES", "150"))


def _available(name):
    try:
        with quicoff.Engine(local_cid_len=8, backend=name) as e:
            return e.backend == name
    except quicoff.QuicoffError:
        return False


AVAILABLE = {b: _available(b) for b in BACKENDS}


def varint(v):
    if v < 1 << 6:
        return bytes([v])
    if v < 1 << 14:
        return (v | 0x4000).to_bytes(2, "big")
    return (v | 0x80000000).to_bytes(4, "big")


def make_case(rnd, suite):
    """(keys, dcid, header, payload, pn, level) for one random packet."""
    kl = KEY_LEN[suite]
    keys = ref.PacketKeys(key=rnd.randbytes(kl), iv=rnd.randbytes(12), hp=rnd.randbytes(kl))
    pn_len = rnd.randint(1, 4)
    pn = rnd.choice([rnd.randint(0, 300), rnd.randint(0, (1 << 62) - 1)])
    payload = rnd.randbytes(
        rnd.choice([rnd.randint(max(0, 4 - pn_len), 64), rnd.randint(max(0, 4 - pn_len), 1500)])
    )
    pn_bytes = (pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")
    if rnd.random() < 0.6:
        level = "1rtt"
        dcid = rnd.randbytes(8)
        header = bytes([0x40 | (pn_len - 1)]) + dcid + pn_bytes
    else:
        level = rnd.choice(["initial", "handshake"])
        dcid = rnd.randbytes(rnd.randint(0, 20))
        scid = rnd.randbytes(rnd.randint(0, 20))
        type_bits = 0 if level == "initial" else 2
        header = bytes([0xC0 | type_bits << 4 | (pn_len - 1)]) + (1).to_bytes(4, "big")
        header += bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid
        if level == "initial":
            token = rnd.randbytes(rnd.choice([0, rnd.randint(1, 60)]))
            header += varint(len(token)) + token
        header += varint(pn_len + len(payload) + 16) + pn_bytes
    return keys, dcid, header, payload, pn, level


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("tx,rx", list(itertools.product(BACKENDS, BACKENDS)))
def test_protect_with_a_unprotect_with_b(suite, tx, rx):
    if not (AVAILABLE[tx] and AVAILABLE[rx]):
        pytest.skip(
            "backend %s not available in this build/CPU" % (tx if not AVAILABLE[tx] else rx)
        )
    rnd = random.Random("%s/%s/%s" % (suite, tx, rx))
    long_aad = forgeries = 0
    for _ in range(CASES):
        keys, dcid, header, payload, pn, level = make_case(rnd, suite)
        long_aad += len(header) > 46
        cid_len = len(dcid) if level == "1rtt" else 8
        with (
            quicoff.Engine(local_cid_len=cid_len, backend=tx) as a,
            quicoff.Engine(local_cid_len=cid_len, backend=rx) as b,
        ):
            th = a.add_connection("tx", suite, dcid, keys=keys, level=level)
            wire = a.protect(th, header, payload, pn)
            assert wire == ref.protect(suite, keys, header, payload, pn)

            rh = b.add_connection(
                "rx",
                suite,
                dcid,
                keys=keys,
                level=level,
                largest_pn=pn - 1 if pn else None,
                fail_action="pass",
            )
            (r,) = b.unprotect(wire)
            assert r.status == "ok" and r.connection == rh
            assert (r.header, r.payload, r.pn) == (header, payload, pn)

            # A forged byte of ciphertext or tag past the header-protection
            # sample (which would change the PN instead): auth_failed, and with
            # fail action "pass" the bytes come back exactly as sent.
            sample_end = len(header) - (header[0] & 3) - 1 + 4 + 16
            if sample_end < len(wire):
                forged = bytearray(wire)
                forged[rnd.randrange(sample_end, len(wire))] ^= 1 << rnd.randrange(8)
                forged = bytes(forged)
                (f,) = b.unprotect(forged)
                assert f.status == "auth_failed" and f.pass_failed
                assert f.packet == forged
                forgeries += 1
    assert long_aad > 0 and forgeries > CASES // 2  # both paths were exercised


@pytest.mark.parametrize("tx,rx", [("ipsec-mb", "openssl"), ("openssl", "ipsec-mb")])
def test_burst_mixing_suites_across_backends(tx, rx):
    """One burst over connections of every suite: protect on one backend,
    unprotect on the other, all in one call each."""
    if not (AVAILABLE[tx] and AVAILABLE[rx]):
        pytest.skip("ipsec-mb not available in this build/CPU")
    rnd = random.Random(5)
    with (
        quicoff.Engine(local_cid_len=8, backend=tx) as a,
        quicoff.Engine(local_cid_len=8, backend=rx) as b,
    ):
        conns = []
        for i, suite in enumerate(SUITES * 3):
            kl = KEY_LEN[suite]
            keys = ref.PacketKeys(key=rnd.randbytes(kl), iv=rnd.randbytes(12), hp=rnd.randbytes(kl))
            dcid = i.to_bytes(2, "big") + rnd.randbytes(6)
            conns.append(
                (
                    suite,
                    keys,
                    dcid,
                    a.add_connection("tx", suite, dcid, keys=keys),
                    b.add_connection("rx", suite, dcid, keys=keys, largest_pn=99),
                )
            )
        jobs, expect = [], []
        for i in range(64):
            suite, keys, dcid, th, rh = rnd.choice(conns)
            pn = 100 + i
            header = bytes([0x41]) + dcid + (pn & 0xFFFF).to_bytes(2, "big")
            payload = rnd.randbytes(rnd.randint(2, 1400))
            jobs.append((th, header, payload, pn))
            expect.append((suite, keys, header, payload, pn, rh))
        out = a.protect_burst(jobs)
        assert all(r.status == "ok" for r in out)
        for r, (suite, keys, header, payload, pn, rh) in zip(out, expect):
            assert r.packet == ref.protect(suite, keys, header, payload, pn)
        back = b.unprotect_burst([r.packet for r in out])
        for r, (suite, keys, header, payload, pn, rh) in zip(back, expect):
            assert r.status == "ok" and r.connection == rh and r.payload == payload


def test_auto_prefers_ipsecmb_when_available():
    with quicoff.Engine(local_cid_len=8) as e:
        assert e.backend == ("ipsec-mb" if AVAILABLE["ipsec-mb"] else "openssl")
