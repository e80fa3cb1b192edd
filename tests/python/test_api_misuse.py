# SPDX-License-Identifier: Apache-2.0
"""Misuse of the Python API that must end in a clear exception, never in a
crash or in a table entry that cannot work (issue 8, items 9 and 10).

 - largest_pn above 2^62 - 1 (other than PN_NONE) is refused by
   add_connection / update_connection with invalid_argument and changes
   nothing; pn_decode refuses widths a header cannot carry.
 - close() racing other threads: control-path calls and close() exclude each
   other, every call after close() raises EngineClosedError. The race runs in
   a subprocess so that a segfault is a test failure, not the end of pytest.
"""

import os
import subprocess
import sys
import textwrap

import pytest

import quicoff

H = bytes.fromhex
DCID = H("8394c8f03e515708")
KEYS = (bytes(range(16)), bytes(range(16, 28)), bytes(range(32, 48)))
BAD_LARGEST = [1 << 62, (1 << 62) + 1, 1 << 63, (1 << 64) - 2]


def short_header(dcid, pn, pn_len=4):
    return (
        bytes([0x40 | (pn_len - 1)])
        + dcid
        + (pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")
    )


# ---------------------------------------------------------------------------
# item 9: largest_pn and pn_decode


@pytest.mark.parametrize("direction", ["tx", "rx"])
@pytest.mark.parametrize("largest", BAD_LARGEST)
def test_add_refuses_largest_pn_past_2_62(direction, largest):
    with quicoff.Engine() as e:
        with pytest.raises(quicoff.QuicoffError) as ei:
            e.add_connection(direction, "aes-128-gcm", DCID, keys=KEYS, largest_pn=largest)
        assert ei.value.status == "invalid_argument"
        assert e.stats()["connections"] == 0
        assert e.find_connection("1rtt", DCID) is None


def test_add_accepts_the_edges():
    with quicoff.Engine() as e:
        h = e.add_connection("rx", "aes-128-gcm", DCID, keys=KEYS, largest_pn=(1 << 62) - 1)
        assert e.connection_stats(h)["largest_pn"] == (1 << 62) - 1
        e.remove_connection(h)
        h = e.add_connection("rx", "aes-128-gcm", DCID, keys=KEYS, largest_pn=quicoff.PN_NONE)
        assert e.connection_stats(h)["largest_pn"] == quicoff.PN_NONE


@pytest.mark.parametrize("largest", BAD_LARGEST)
def test_update_refuses_largest_pn_past_2_62(largest):
    with quicoff.Engine() as e:
        tx = e.add_connection("tx", "aes-128-gcm", DCID, keys=KEYS)
        rx = e.add_connection("rx", "aes-128-gcm", DCID, keys=KEYS, largest_pn=41)
        before = e.connection_stats(rx)
        with pytest.raises(quicoff.QuicoffError) as ei:
            e.update_connection(rx, largest_pn=largest, usage_threshold=5)
        assert ei.value.status == "invalid_argument"
        assert e.connection_stats(rx) == before
        # the entry still decodes from the largest PN it had
        pkt = e.protect(tx, short_header(DCID, 42, pn_len=1), bytes(20), 42)
        (r,) = e.unprotect(pkt)
        assert r.ok and r.pn == 42, r


@pytest.mark.parametrize("nbits", [0, 1, 7, 9, 12, 31, 33, 40, 63, 64, 65])
def test_pn_decode_refuses_widths_a_header_cannot_carry(nbits):
    with pytest.raises(ValueError):
        quicoff.pn_decode(1000, 0x2A, nbits)


def test_pn_decode_refuses_out_of_range_values():
    with pytest.raises(ValueError):
        quicoff.pn_decode(1000, 0x100, 8)
    with pytest.raises(ValueError):
        quicoff.pn_decode(1 << 62, 0x2A, 8)
    # the edges that stay valid
    assert quicoff.pn_decode((1 << 62) - 2, 0xFF, 8) == (1 << 62) - 1
    assert quicoff.pn_decode(quicoff.PN_NONE, 0xFFFFFFFF, 32) == 0xFFFFFFFF


# ---------------------------------------------------------------------------
# item 10: close() and other threads


def test_every_call_after_close_raises_engine_closed():
    e = quicoff.Engine()
    tx = e.add_connection("tx", "aes-128-gcm", DCID, keys=KEYS)
    rx = e.add_connection("rx", "aes-128-gcm", DCID, keys=KEYS)
    pkt = e.protect(tx, short_header(DCID, 1), bytes(20), 1)
    e.close()
    calls = [
        lambda: e.add_connection("rx", "aes-128-gcm", DCID, keys=KEYS),
        lambda: e.update_connection(rx, largest_pn=5),
        lambda: e.remove_connection(rx),
        lambda: e.replace_connection(rx, "rx", "aes-128-gcm", DCID, keys=KEYS),
        lambda: e.find_connection("1rtt", DCID),
        lambda: e.connection_stats(rx),
        lambda: e.stats(),
        lambda: e.reclaim(),
        lambda: e.protect(tx, short_header(DCID, 2), bytes(20), 2),
        lambda: e.protect_burst([(tx, short_header(DCID, 2), bytes(20), 2)]),
        lambda: e.unprotect(pkt),
        lambda: e.unprotect_burst([pkt]),
    ]
    for call in calls:
        with pytest.raises(quicoff.EngineClosedError, match="Engine is closed"):
            call()
    assert issubclass(quicoff.EngineClosedError, ValueError)  # what it always raised
    assert e.connections == []
    e.close()  # idempotent


# One round: an engine, five threads hammering it (each on its own handles),
# and close() after a random short delay. Every thread loops until its call
# raises "Engine is closed"; anything else is reported. Before the fix this
# died of SIGSEGV (cffi releases the GIL; the control path took no lock).
RACE = textwrap.dedent(r"""
    import random, sys, threading, time
    import quicoff

    DCID_LEN = 8
    KEYS = (bytes(range(16)), bytes(range(16, 28)), bytes(range(32, 48)))
    rounds = int(sys.argv[1])
    unexpected = []
    closed_seen = 0

    def hdr(dcid, pn):
        return bytes([0x43]) + dcid + pn.to_bytes(4, "big")

    def run(e, name, step):
        global closed_seen
        i = 0
        try:
            while True:
                step(i)
                i += 1
        except Exception as exc:  # noqa: BLE001 - classified here
            if str(exc) == "Engine is closed":
                closed_seen += 1
            else:
                unexpected.append("%s: %r" % (name, exc))

    for rnd in range(rounds):
        e = quicoff.Engine(local_cid_len=DCID_LEN)
        tx = e.add_connection("tx", "aes-128-gcm", b"\x01" * 8, keys=KEYS)
        rx = e.add_connection("rx", "aes-128-gcm", b"\x01" * 8, keys=KEYS)
        upd = e.add_connection("rx", "aes-128-gcm", b"\x02" * 8, keys=KEYS)
        pkt = e.protect(tx, hdr(b"\x01" * 8, 7), bytes(64), 7)

        def adder(i):
            h = e.add_connection("rx", "chacha20-poly1305", (0x100000 + i).to_bytes(8, "big"),
                                 secret=bytes(32))
            e.connection_stats(h)
            e.remove_connection(h)

        def stats(i):
            e.connection_stats(rx)
            e.stats()
            e.find_connection("1rtt", b"\x01" * 8)

        def updater(i):
            e.update_connection(upd, largest_pn=i)
            e.update_connection(upd, keys=KEYS, key_generation=0)
            e.reclaim()

        def data(i):
            (r,) = e.unprotect(pkt)
            if not r.ok:
                raise RuntimeError("unprotect: " + r.status)
            e.protect_burst([(tx, hdr(b"\x01" * 8, 8 + i), bytes(64), 8 + i)])

        def data_burst(i):
            e.unprotect_burst([pkt, pkt])

        steps = [("add/remove", adder), ("stats", stats), ("update", updater),
                 ("unprotect", data), ("unprotect_burst", data_burst)]
        threads = [threading.Thread(target=run, args=(e, n, f)) for n, f in steps]
        for t in threads:
            t.start()
        time.sleep(random.uniform(0.0005, 0.01))
        e.close()
        for t in threads:
            t.join(30)
            if t.is_alive():
                unexpected.append("round %d: a thread hangs after close()" % rnd)
                break
        if unexpected:
            break
    print("rounds %d, threads stopped by close %d" % (rounds, closed_seen))
    for u in unexpected[:10]:
        print("unexpected:", u)
    sys.exit(1 if unexpected else 0)
""")


def test_close_racing_other_threads_in_a_subprocess():
    rounds = 40
    env = dict(os.environ)
    p = subprocess.run(
        [sys.executable, "-c", RACE, str(rounds)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    detail = "exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr[-3000:])
    assert p.returncode == 0, detail
    # every thread of every round was still working when close() came
    assert "rounds %d, threads stopped by close %d" % (rounds, 5 * rounds) in p.stdout, detail
