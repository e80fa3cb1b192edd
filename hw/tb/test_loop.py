# SPDX-License-Identifier: Apache-2.0
"""RX of what TX produced, in hardware: quicoff_tx -> quicoff_rx (qo_loop.v).
Both blocks are programmed through rtl_driver with the same connection
arguments; every RX output must be the host's plaintext frame with the tag
room removed and lengths/checksums fixed (scapy), status ok, and the TX
status between the blocks ok. Includes host-started key updates (RX follows
them through its next-phase trial). Environment: QO_PACKETS, QO_DCID_LENS,
QO_SEED, QO_STATS_FILE."""

import os
import random

import cocotb
from cocotb.triggers import with_timeout
from cocotbext.axi import AxiStreamFrame

from quicoff import ref
from quicoff.rtl_driver import RtlDriver

import rxmodel as M
from tb_common import Bench, Bus, add_stats, distinct_sender
from test_rx import l2l3


@cocotb.test()
async def loop_tx_rx(dut):
    seed = int(os.environ.get("QO_SEED", "33"))
    rng = random.Random(seed)
    b = await Bench.start(dut, axil=("txl", "rxl"), rng=rng, src_pause=0.2, sink_pause=0.3)
    src, sink, (txl, rxl) = b.src, b.sink, b.axil
    n = int(os.environ.get("QO_PACKETS", "40"))
    lens = [int(x) for x in os.environ.get("QO_DCID_LENS", "8,0,20").split(",")]
    compared = mismatches = 0
    for dl in lens:
        tdrv = RtlDriver(Bus(txl), local_cid_len=dl, direction="tx")
        rdrv = RtlDriver(Bus(rxl), local_cid_len=dl, direction="rx", seed=rng.getrandbits(32))
        conns, taken = [], set()
        for i in range(4):
            s = distinct_sender(rng, i, dl, taken)
            s.pn = rng.randrange(0, 100)
            kw = dict(keys=s.gens[0], next_keys=s.gens[1])
            ti = tdrv.add_connection("tx", s.suite, s.dcid, **kw)
            ri = rdrv.add_connection(
                "rx", s.suite, s.dcid, local_addr=(s.addr if dl == 0 else None), **kw
            )
            s.ti, s.ri, s.largest = ti, ri, None
            conns.append(s)
        await tdrv.commit()
        await rdrv.commit()
        sent = 0
        while sent < n:
            batch = []
            for _ in range(rng.randrange(1, 8)):
                s = rng.choice(conns)
                upd = rng.random() < 0.1 and s.gen < 10
                if upd:
                    s.gen += 1
                pn = s.pn
                s.pn += 1
                pn_len = max(rng.choice((1, 2, 3, 4)), ref.encode_pn_len(pn, s.largest))
                hdr = ref.build_short_header(
                    s.dcid if dl else b"", pn, pn_len=pn_len, key_phase=s.gen & 1
                )
                payload = rng.randbytes(
                    max(4 - pn_len, rng.choice((rng.randrange(1, 64), rng.randrange(1, 1400))))
                )
                f = l2l3(rng, s, hdr + payload + bytes(16))
                batch.append((f, s.ti | (pn << 16), M.rewrite(f, hdr + payload), upd, s))
                s.largest = pn
                if upd:
                    break  # install the next keys before this connection sends again
            for f, tu, want, upd, s in batch:
                await src.send(AxiStreamFrame(f, tuser=tu))
            for f, tu, want, upd, s in batch:
                got = await with_timeout(sink.recv(), 400000, "ns")
                data = bytes(got.tdata)
                t = got.tuser[-1] if isinstance(got.tuser, list) else got.tuser
                compared += 1
                if data != want or (t & 15) != M.OK or ((t >> 4) & 1) != int(upd):
                    mismatches += 1
                    if mismatches <= 5:
                        dut._log.error(
                            "loop mismatch: status %d\n want %s\n got  %s",
                            t,
                            want.hex(),
                            data.hex(),
                        )
            for f, tu, want, upd, s in batch:
                if upd:
                    g = s.gen
                    tdrv.update_connection(
                        s.ti, keys=s.gens[g + 1], key_generation=g + 1, current_generation=g
                    )
                    rdrv.update_connection(
                        s.ri, keys=s.gens[g + 1], key_generation=g + 1, current_generation=g
                    )
                    await tdrv.commit()
                    await rdrv.commit()
            sent += len(batch)
        for s in conns:
            tdrv.remove_connection(s.ti)
            rdrv.remove_connection(s.ri)
        await tdrv.commit()
        await rdrv.commit()
    dut._log.info("TX->RX frames compared: %d, mismatches: %d", compared, mismatches)
    add_stats("loop_tx_rx", frames=compared, mismatches=mismatches)
    assert compared > 0
    assert mismatches == 0
