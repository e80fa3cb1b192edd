# SPDX-License-Identifier: Apache-2.0
"""hw/rtl/qo_sbox_tower.vh, the tower-field S-box ECP5 synthesis uses, and
qo_sbox_tower_halves.vh, the same cut in two (qo_aes_deep's key schedule): the
files are what hw/syn/gen_sbox_tower.py makes, and Icarus finds both equal to
the case table (qo_sbox.vh) on all 256 inputs."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "hw" / "rtl"


def test_generated_file_is_current():
    subprocess.run([sys.executable, str(ROOT / "hw/syn/gen_sbox_tower.py"), "--check"], check=True)


@pytest.mark.skipif(
    shutil.which("iverilog") is None,
    reason="iverilog is not installed (tools/install_deps.sh installs it)",
)
def test_tower_equals_table_on_every_input(tmp_path):
    tb = tmp_path / "tb.v"
    tb.write_text(
        """module tb;
`include "qo_sbox.vh"
`include "qo_sbox_tower.vh"
`include "qo_sbox_tower_halves.vh"
integer i, bad;
initial begin
  bad = 0;
  for (i = 0; i < 256; i = i + 1)
    if (qo_sbox(i[7:0]) !== qo_sbox_tower(i[7:0]) ||
        qo_sbox(i[7:0]) !== qo_sbox_half2(qo_sbox_half1(i[7:0]))) begin
      bad = bad + 1;
      $display("differs at %02x: table %02x tower %02x halves %02x", i, qo_sbox(i[7:0]),
               qo_sbox_tower(i[7:0]), qo_sbox_half2(qo_sbox_half1(i[7:0])));
    end
  $display("checked 256, differ %0d", bad);
  $finish;
end
endmodule
"""
    )
    vvp = tmp_path / "tb.vvp"
    subprocess.run(["iverilog", "-I", str(RTL), "-o", str(vvp), str(tb)], check=True)
    out = subprocess.run(["vvp", str(vvp)], check=True, capture_output=True, text=True).stdout
    assert "checked 256, differ 0" in out, out
