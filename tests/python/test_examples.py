# SPDX-License-Identifier: Apache-2.0
"""The README's Python example runs and prints what the README says."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_hello_py_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "hello.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "ok 7 b'hello, offload'" in out.stdout
    assert "1 packet(s) unprotected" in out.stdout
