#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the RX long run's script: every input frame, every control-port
write and every expected output (bytes, status and flags), made once in
Python by the same generators and golden model as the cocotb suite
(test_rx.py's traffic, rxmodel.py: quicoff.ref + scapy), so that the
Verilator testbench (tb_long.cpp) streams and compares at the simulator's own
speed instead of cocotb's few frames per second.

    python hw/tb/long/gen_rx.py OUT PACKETS [--seed N] [--epoch N]

The script format: long/script.py. Connections live for one epoch (--epoch
packets of one DCID length, cycling through every length 0-20); each may
make one key update mid-stream (the next keys are installed with the entry)
and sends late packets under the old keys after it."""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from quicoff import ref
from quicoff.rtl_driver import RtlDriver

import rxmodel as M
from long.script import Recorder, run_epochs
from tb_common import Sender
from test_rx import l2l3, non_quic, quic_packet


def epoch(out, rng, dcid_len, n_packets, stats):
    drv = RtlDriver(Recorder(out), local_cid_len=dcid_len, seed=rng.getrandbits(32))
    conns, senders = {}, []
    for i in range(6):
        suite = rng.choice(("aes-128-gcm", "aes-256-gcm"))
        v6 = rng.random() < 0.4
        addr = ("2001:db8::%x" % (i + 2), 4433 + i) if v6 else ("192.0.2.%d" % (i + 2), 4433 + i)
        s = Sender(
            rng, suite, rng.randbytes(dcid_len), rng.randbytes(ref.secret_len(suite)), addr, v6
        )
        fail = rng.choice(("drop", "pass"))
        try:
            h = drv.add_connection(
                "rx",
                suite,
                s.dcid,
                keys=s.gens[0],
                next_keys=s.gens[1],
                fail_action=fail,
                local_addr=addr if dcid_len == 0 else None,
            )
        except OverflowError:
            continue
        s.key20 = drv._conns[h].key20
        conns[s.key20] = M.MConn(suite, s.key20, s.gens[0], s.gens[1], 0, fail == "pass")
        senders.append(s)
    drv.commit_sync()
    sent = 0
    while sent < n_packets:
        for _ in range(rng.randrange(1, 9)):
            s = rng.choice(senders)
            mc = conns[s.key20]
            r = rng.random()
            plen = rng.choice((rng.randrange(1, 64), rng.randrange(1, 1501), 64, 1500))
            if r < 0.06:
                f = non_quic(rng, s, dcid_len)
            elif r < 0.10 and dcid_len:  # unknown DCID
                o = Sender(
                    rng,
                    s.suite,
                    rng.randbytes(dcid_len),
                    rng.randbytes(ref.secret_len(s.suite)),
                    s.addr,
                    s.v6,
                )
                f = l2l3(rng, o, quic_packet(rng, o, dcid_len, plen))
            else:
                gen, pn = None, None
                if s.held and rng.random() < 0.5:
                    pn, gen = s.held.pop(), s.gen - 1
                elif rng.random() < 0.05 and s.gen == 0 and mc.other == M.OT_NEXT:
                    # key update; two PNs held back and sent later under the old keys
                    s.held += [s.pn, s.pn + 1]
                    s.pn += 2
                    s.gen += 1
                la = mc.largest - 200 if mc.largest and mc.largest > 200 else None
                pkt = quic_packet(rng, s, dcid_len, plen, gen=gen, pn=pn, largest_acked=la)
                if rng.random() < 0.08:  # one flipped bit anywhere in the packet
                    b = bytearray(pkt)
                    b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
                    pkt = bytes(b)
                pad = rng.randrange(1, 20) if rng.random() < 0.1 else 0
                f = l2l3(rng, s, pkt, pad=pad, zero_csum=rng.random() < 0.1, ip_opts=True)
            st, exp, flags = M.expect(f, dcid_len, conns)
            out.write(f"I {f.hex()}\n")
            if exp is not None:
                out.write(f"O {st | flags << 4:x} {exp.hex()}\n")
                stats["expected_frames"] += 1
            name = M.NAMES[st] if exp is not None else "dropped_" + M.NAMES[st]
            stats["statuses"][name] = stats["statuses"].get(name, 0) + 1
            stats["key_updates"] += flags & 1
            stats["input_frames"] += 1
            sent += 1
    out.write("D\n")
    for h in list(drv._conns):
        drv.remove_connection(h)
    drv.commit_sync()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("packets", type=int)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--epoch", type=int, default=400)
    a = ap.parse_args()
    run_epochs(a.out, a.packets, a.seed, a.epoch, epoch, key_updates=0, statuses={})


if __name__ == "__main__":
    main()
