# SPDX-License-Identifier: Apache-2.0
"""What the long runs' script writers (gen_rx.py, gen_tx.py) share: the
script format, the control-port recorder and the loop of epochs over every
DCID length. tb_long.cpp reads the script.

One operation per line:
    W addr value     AXI4-Lite write (hex)
    P                poll the command register (0x00C) until bit 0 clears
    R addr v mask    AXI4-Lite read that must give v in the bits of mask (hex):
                     the read-back words (0x100-0x11c) an update's
                     read-modify-write reads, with the values the generator
                     assumed
    I hex            an input frame (RX)
    I tuser hex      an input frame and its s_axis_tuser descriptor (TX, hex)
    O tuser hex      the next expected output frame and its m_axis_tuser
    D                drain: every expected frame out, then nothing more
Control writes only happen between drains, as the RTL requires."""

import json
import random


class Recorder:
    """rtl_driver's bus: writes become W lines, polls of the command register
    P, reads of an entry's read-back words R lines. The script is written
    before anything runs, so the values those reads return are what the
    generator expects the hardware to hold: readback.append({word: (value,
    mask)}) once per entry read back, in the order of the reads; the
    testbench checks them."""

    def __init__(self, out):
        self.out = out
        self.readback = []
        self._words = {}

    def write(self, addr, value):
        self.out.write(f"W {addr:x} {value:x}\n")

    def read(self, addr):
        if addr == 0x00C:
            self.out.write("P\n")
            return 0
        assert 0x100 <= addr < 0x120, (
            "the long run reads the command register and read-back words only"
        )
        if addr == 0x100:
            self._words = self.readback.pop(0)
        value, mask = self._words.get((addr - 0x100) // 4, (0, 0))
        self.out.write(f"R {addr:x} {value:x} {mask:x}\n")
        return value


def run_epochs(path, packets, seed, epoch_len, epoch, **stats):
    """Writes the script to path: epochs of epoch_len packets (the last one
    shorter), cycling through DCID lengths 0-20, each made by
    epoch(out, rng, dcid_len, n_packets, stats), which counts into
    stats["input_frames"]. Prints the statistics as one JSON line."""
    rng = random.Random(seed)
    stats = {"input_frames": 0, "expected_frames": 0, **stats}
    dcid_lens = set()
    with open(path, "w") as out:
        dl = 0
        while stats["input_frames"] < packets:
            epoch(out, rng, dl, min(epoch_len, packets - stats["input_frames"]), stats)
            dcid_lens.add(dl)
            dl = (dl + 1) % 21
    stats["dcid_lens"] = sorted(dcid_lens)
    print(json.dumps(stats))
