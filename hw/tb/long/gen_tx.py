#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the TX long run's script (format: long/script.py): every frame the
host hands quicoff_tx with its descriptor (entry index, full packet number),
every control-port write and every expected output, made once in Python by
test_tx.py's generator and golden model (quicoff.ref.protect + scapy), for
the Verilator testbench (tb_long.cpp built for TX) to stream and compare.

    python hw/tb/long/gen_tx.py OUT PACKETS [--seed N] [--epoch N]

Each epoch programs five connections of one DCID length (cycling through
0-20; zero-length CIDs are looked up by address and port), AES-128/256-GCM,
IPv4/IPv6, 802.1Q, packet numbers from small up to 2^61 (the descriptor
carries all 62 bits), payloads of 1-1,500 bytes. The host flips the key
phase now and then: a key update when the next keys are installed, which
the control plane then replaces by the generation after (so both phases
come round many times per connection); key_phase_unavailable when it flips
again before that. Also removed entries (unknown_connection), datagrams too
short for the header-protection sample, non-QUIC frames.

RX of what TX produced: every expected ok frame is opened by the receiver's
model (rxmodel.expect, what quicoff_rx is checked against) and must come out
ok (header protection removed, PN decoded, tag verified under the receiver's
keys and phase); as the testbench checks that the
hardware produced exactly these bytes, this holds for the hardware's output
too."""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from quicoff.rtl_driver import RtlDriver

import rxmodel as M
from long.script import Recorder, run_epochs
from tb_common import distinct_sender, lookup_key20
from test_tx import TxConn, install_next_keys, tx_frame

MASK = 0xFFFFFFFF


def epoch(out, rng, dcid_len, n_packets, stats):
    rec = Recorder(out)
    drv = RtlDriver(rec, local_cid_len=dcid_len, direction="tx", seed=rng.getrandbits(32))
    conns, rx_conns = [], {}
    for i in range(5):
        # keys for more key updates than an epoch makes (about 6 per
        # connection; when they run out the host stops flipping the phase)
        s = distinct_sender(rng, i, dcid_len, set(rx_conns), updates=40)
        # packet numbers of every size the descriptor carries; the receiver
        # has seen the one before the first
        s.pn = rng.choice((s.pn, rng.randrange(1 << 32), rng.randrange(1 << 61)))
        c = TxConn(
            s, drv.add_connection("tx", s.suite, s.dcid, keys=s.gens[0], next_keys=s.gens[1])
        )
        c.key20 = lookup_key20(s, dcid_len)
        rx_conns[c.key20] = M.MConn(
            s.suite, c.key20, s.gens[0], s.gens[1], 0, True, largest=s.pn - 1 if s.pn else None
        )
        conns.append(c)
    drv.commit_sync()
    sent = 0
    while sent < n_packets:
        for _ in range(min(rng.randrange(1, 9), n_packets - sent)):
            plen = rng.choice((rng.randrange(1, 64), rng.randrange(1, 1501), 1, 1500))
            f, tuser, st, exp, upd = tx_frame(rng, rng.choice(conns), dcid_len, rx_conns, plen)
            out.write(f"I {tuser:x} {f.hex()}\nO {st | upd << 4:x} {exp.hex()}\n")
            stats["expected_frames"] += 1
            stats["input_frames"] += 1
            stats["statuses"][M.NAMES[st]] = stats["statuses"].get(M.NAMES[st], 0) + 1
            stats["key_updates"] += upd
            if st == M.OK:  # sent in key phase 1 (the plaintext header's bit)
                stats["key_phase_1"] += f[M.parse_frame(f)[1]["q"]] >> 2 & 1
                rst, rout, _ = M.expect(exp, dcid_len, rx_conns)
                stats["rx_model_opened"] += 1
                stats["rx_model_failed"] += rst != M.OK or rout is None
            sent += 1
        # control writes only between drains: after a key update the next
        # generation goes in, half the time only some batches later (so that
        # the host flipping the phase again meanwhile is seen refused)
        pending = [c for c in conns if not c.next_ok and not c.removed]
        if (pending and rng.random() < 0.5) or rng.random() < 0.04:
            out.write("D\n")
            for c in pending:
                if c.cur + 1 >= len(c.s.gens):
                    continue  # nothing to install (install_next_keys does nothing)
                # the update reads the entry back first: no PN state (TX
                # keeps none), the phase of the update just made, the
                # other slot marked previous (counters not checked)
                rec.readback.append(
                    {
                        3: (0, MASK),
                        4: (0, MASK),
                        5: ((c.cur & 1) << 2 | M.OT_PREV, MASK),
                        6: (0, MASK),
                        7: (0, MASK),
                    }
                )
                install_next_keys(drv, c, rx_conns)
            if rng.random() < 0.04:
                c = rng.choice(conns)
                if not c.removed:
                    drv.remove_connection(c.idx)
                    c.removed = True
            drv.commit_sync()
    out.write("D\n")
    for c in conns:
        if not c.removed:
            drv.remove_connection(c.idx)
    drv.commit_sync()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("packets", type=int)
    ap.add_argument("--seed", type=int, default=200)
    ap.add_argument("--epoch", type=int, default=400)
    a = ap.parse_args()
    run_epochs(
        a.out,
        a.packets,
        a.seed,
        a.epoch,
        epoch,
        key_updates=0,
        key_phase_1=0,
        rx_model_opened=0,
        rx_model_failed=0,
        statuses={},
    )


if __name__ == "__main__":
    main()
