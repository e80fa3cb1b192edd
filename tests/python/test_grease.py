# SPDX-License-Identifier: Apache-2.0
"""Greasing the QUIC bit (RFC 9287) through the bindings, and against the
reference model (quicoff.ref), which models the same per-connection rule.

A greased packet has the fixed bit (0x40 of the first byte) 0; ngtcp2 sends
them once the peer advertised grease_quic_bit. Engine.add_connection's
grease_quic_bit (default True) accepts them on that connection; False keeps
RFC 9000's rule: "malformed". A DCID no entry has stays "unknown_connection".
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quicoff
from quicoff import ref

SETTINGS = settings(
    max_examples=int(os.environ.get("QUICOFF_DIFF_EXAMPLES", "200")) // 2 or 1,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
DCID = bytes.fromhex("0c1d2e3f40516273")
SCID = bytes.fromhex("a0b1c2")


def greased(header):
    return bytes([header[0] & ~0x40]) + header[1:]


def keys_for(suite, seed):
    n = quicoff.suite_key_len(suite)
    return ref.PacketKeys(
        bytes((seed + 3 * i) & 0xFF for i in range(n)),
        bytes((seed * 5 + i) & 0xFF for i in range(12)),
        bytes((seed * 11 + i) & 0xFF for i in range(n)),
    )


def header_for(level, pn, payload_len, version=1):
    if level == "1rtt":
        return ref.build_short_header(DCID, pn, pn_len=2)
    return ref.build_long_header(level, DCID, SCID, pn, payload_len, version=version, pn_len=2)


def test_add_connection_default_accepts_greased():
    """ref-protected greased packet (the oracle) -> engine; engine's protect
    of the greased plaintext == ref's bytes."""
    k = keys_for("aes-128-gcm", 9)
    with quicoff.Engine(local_cid_len=8) as e:
        tx = e.add_connection("tx", "aes-128-gcm", DCID, keys=k)
        rx = e.add_connection("rx", "aes-128-gcm", DCID, keys=k)
        hdr = greased(header_for("1rtt", 77, 30))
        payload = bytes(range(30))
        want = ref.protect("aes-128-gcm", k, hdr, payload, 77)
        assert not want[0] & 0x40
        assert e.protect(tx, hdr, payload, 77) == want
        (r,) = e.unprotect(want)
        assert r.status == "ok" and r.connection == rx
        assert (r.header, r.payload, r.pn) == (hdr, payload, 77)
        assert e.connection_stats(rx)["malformed"] == 0


@pytest.mark.parametrize("level", ["1rtt", "handshake", "initial", "0rtt"])
def test_flag_off_is_malformed(level):
    k = keys_for("chacha20-poly1305", 4)
    with quicoff.Engine(local_cid_len=8) as e:
        tx = e.add_connection(
            "tx", "chacha20-poly1305", DCID, keys=k, level=level, grease_quic_bit=False
        )
        rx = e.add_connection(
            "rx", "chacha20-poly1305", DCID, keys=k, level=level, grease_quic_bit=False
        )
        payload = bytes(40)
        hdr = greased(header_for(level, 5, len(payload)))
        pkt = ref.protect("chacha20-poly1305", k, hdr, payload, 5)
        (r,) = e.unprotect(pkt)
        assert r.status == "malformed" and r.connection == rx
        assert e.connection_stats(rx)["malformed"] == 1
        with pytest.raises(quicoff.QuicoffError) as exc:
            e.protect(tx, hdr, payload, 5)
        assert exc.value.status == "malformed"
        # the same packet with the bit set is fine
        hdr1 = header_for(level, 6, len(payload))
        (r,) = e.unprotect(ref.protect("chacha20-poly1305", k, hdr1, payload, 6))
        assert r.status == "ok"


def test_unknown_dcid_greased_is_unknown_connection():
    k = keys_for("aes-256-gcm", 2)
    with quicoff.Engine(local_cid_len=8) as e:
        e.add_connection("rx", "aes-256-gcm", bytes(8), keys=k)
        pkt = ref.protect("aes-256-gcm", k, greased(header_for("1rtt", 1, 30)), bytes(30), 1)
        before = e.stats()
        (r,) = e.unprotect(pkt)
        after = e.stats()
        assert r.status == "unknown_connection" and r.connection is None
        assert after["unknown_connection"] == before["unknown_connection"] + 1
        assert after["malformed"] == before["malformed"]


@st.composite
def cases(draw):
    suite = draw(st.sampled_from(quicoff.SUITES))
    level = draw(st.sampled_from(["1rtt", "initial", "0rtt", "handshake"]))
    version = draw(st.sampled_from([1, 0x6B3343CF]))
    pn = draw(st.integers(0, (1 << 16) - 1))
    payload = draw(st.binary(min_size=4, max_size=300))
    return (
        suite,
        level,
        version,
        pn,
        payload,
        draw(st.booleans()),
        draw(st.booleans()),
        draw(st.integers(0, 255)),
    )


@SETTINGS
@given(cases())
def test_differential_vs_reference(case):
    """Engine and reference agree on every packet: protect (bytes or refusal)
    and unprotect (payload or refusal), greased or not, flag on or off."""
    suite, level, version, pn, payload, grease_hdr, flag, seed = case
    k = keys_for(suite, seed)
    hdr = header_for(level, pn, len(payload), version)
    if grease_hdr:
        hdr = greased(hdr)
    with quicoff.Engine(local_cid_len=8) as e:
        tx = e.add_connection(
            "tx", suite, DCID, keys=k, level=level, version=version, grease_quic_bit=flag
        )
        e.add_connection(
            "rx", suite, DCID, keys=k, level=level, version=version, grease_quic_bit=flag
        )
        try:
            want = ref.protect(suite, k, hdr, payload, pn, grease_quic_bit=flag)
        except ValueError:
            want = None
        try:
            got = e.protect(tx, hdr, payload, pn)
        except quicoff.QuicoffError as exc:
            assert exc.status == "malformed"
            got = None
        assert got == want
        # RX: a packet protected with the bit as the header has it (the
        # reference with the flag on is the sender: it always greases as told)
        pkt = ref.protect(suite, k, hdr, payload, pn)
        try:
            ref_rx = ref.unprotect(suite, k, pkt, dcid_len=8, grease_quic_bit=flag).payload
        except ref.Malformed:
            ref_rx = None
        (r,) = e.unprotect(pkt)
        assert (r.payload if r.ok else None) == ref_rx
        assert r.ok or r.status == "malformed"
        assert (ref_rx is None) == (grease_hdr and not flag)
