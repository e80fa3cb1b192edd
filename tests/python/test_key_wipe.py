# SPDX-License-Identifier: Apache-2.0
"""The Python bindings leave no copy of a key or secret in the cffi buffers
they allocate for add_connection / update_connection (and the key-schedule
helpers), after success and after an error (issue 8 item 8).

Every ffi.new() the module makes during a call is recorded (a proxy stands in
for the module's ffi), and after the call every recorded buffer is searched
for the key bytes, the secret and the keys derived from it (quicoff.ref, the
independent model, says what those are).
"""

from __future__ import annotations

import pytest

import quicoff
from quicoff import _engine, ref


class _RecordingFFI:
    """quicoff._engine's ffi, recording what ffi.new() hands out."""

    def __init__(self, real):
        self._real = real
        self.made = []

    def new(self, *a, **kw):
        c = self._real.new(*a, **kw)
        self.made.append(c)
        return c

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.fixture
def rec(monkeypatch):
    r = _RecordingFFI(_engine.ffi)
    monkeypatch.setattr(_engine, "ffi", r)
    return r


def _left(rec, *secrets):
    """The recorded buffers still holding any of the secrets."""
    real = rec._real
    found = []
    for c in rec.made:
        b = bytes(real.buffer(c))
        for s in secrets:
            if s and s in b:
                found.append((real.typeof(c).cname, s.hex()))
    return found


KEY = ref.PacketKeys(bytes(range(0x10, 0x20)), bytes(range(0x40, 0x4C)), bytes(range(0x60, 0x70)))
NEXT = ref.PacketKeys(bytes(range(0x80, 0x90)), bytes(range(0xA0, 0xAC)), bytes(16))
SECRET = bytes(range(0xC0, 0xE0))  # 32 bytes: SHA-256 suites


def _derived(secret):
    k = ref.derive_packet_keys("aes-128-gcm", secret)
    n = ref.next_secret("aes-128-gcm", secret)
    kn = ref.derive_packet_keys("aes-128-gcm", n)
    return [secret, k.key, k.iv, k.hp, n, kn.key, kn.iv]


def test_add_with_raw_keys_wipes(rec):
    with quicoff.Engine(local_cid_len=8) as e:
        h = e.add_connection("rx", "aes-128-gcm", b"\x01" * 8, keys=KEY, next_keys=NEXT)
        assert e.find_connection("1rtt", b"\x01" * 8) == h  # it was installed
        assert rec.made, "nothing recorded: the test would see nothing"
        assert not _left(rec, KEY.key, KEY.iv, KEY.hp, NEXT.key, NEXT.iv)


@pytest.mark.parametrize("derive_next", [True, False])
def test_add_with_secret_wipes(rec, derive_next):
    with quicoff.Engine(local_cid_len=8) as e:
        e.add_connection("rx", "aes-128-gcm", b"\x02" * 8, secret=SECRET, derive_next=derive_next)
        assert not _left(rec, *_derived(SECRET))


def test_add_error_wipes(rec):
    """exists (from the C library), and a ValueError after the keys were copied in."""
    with quicoff.Engine(local_cid_len=8) as e:
        e.add_connection("rx", "aes-128-gcm", b"\x03" * 8, keys=KEY)
        rec.made.clear()
        with pytest.raises(quicoff.QuicoffError):
            e.add_connection(
                "rx", "aes-128-gcm", b"\x03" * 8, keys=(NEXT.key, NEXT.iv, KEY.hp), next_keys=KEY
            )
        assert rec.made and not _left(rec, KEY.key, KEY.iv, NEXT.key, NEXT.iv)
        rec.made.clear()
        with pytest.raises(ValueError):  # next_keys' IV too short: refused after KEY is in
            e.add_connection(
                "rx",
                "aes-128-gcm",
                b"\x04" * 8,
                keys=KEY,
                next_keys=(NEXT.key, NEXT.iv[:8], NEXT.hp),
            )
        assert rec.made and not _left(rec, KEY.key, KEY.iv, KEY.hp)


def test_update_wipes_on_success_and_error(rec):
    with quicoff.Engine(local_cid_len=8) as e:
        h = e.add_connection("tx", "aes-128-gcm", b"\x05" * 8, secret=SECRET)
        rec.made.clear()
        e.update_connection(h, keys=NEXT, key_generation=1)
        assert rec.made and not _left(rec, NEXT.key, NEXT.iv)
        rec.made.clear()
        e.update_connection(h, secret=SECRET, key_generation=1)
        assert not _left(rec, *_derived(SECRET))
        rec.made.clear()
        with pytest.raises(quicoff.QuicoffError):  # generation 5: invalid_argument
            e.update_connection(h, keys=KEY, key_generation=5)
        assert rec.made and not _left(rec, KEY.key, KEY.iv)


def test_key_schedule_helpers_wipe(rec):
    quicoff.derive_packet_keys("aes-128-gcm", SECRET)
    quicoff.derive_next_secret("aes-128-gcm", SECRET)
    c, s = quicoff.initial_secrets(b"\x83\x94\xc8\xf0\x3e\x51\x57\x08")
    assert rec.made and not _left(rec, *_derived(SECRET)[1:], c, s)
