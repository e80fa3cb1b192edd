# SPDX-License-Identifier: Apache-2.0
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
# this tree's quicoff and its tooling (quicoff_lab: harness.py), not installed ones
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "lab"))


def pytest_configure(config):
    config.addinivalue_line("markers", "dpdk: runs quicoff-dpdk on veth pairs (root)")


def pytest_collection_modifyitems(config, items):
    """Every test here runs quicoff-dpdk on veth pairs: it needs root and makes
    interfaces with fixed names, which the markers say (pyproject.toml; the
    fast tier of tools/test.sh leaves them out)."""
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.root)
            item.add_marker(pytest.mark.netns)
            item.add_marker(pytest.mark.dpdk)


@pytest.fixture(scope="session", autouse=True)
def built_app():
    """Brings the build up to date (a no-op when it is) and fails loudly when
    the application cannot be built or run here."""
    if os.geteuid() != 0:
        pytest.fail("tests/dpdk need root (veth pairs, AF_PACKET, DPDK)")
    if not os.environ.get("QUICOFF_DPDK") and (ROOT / "build" / "build.ninja").exists():
        r = subprocess.run(
            ["ninja", "-C", str(ROOT / "build"), "apps/dpdk/quicoff-dpdk"],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            pytest.fail("building quicoff-dpdk failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    from harness import find_binary

    find_binary()
