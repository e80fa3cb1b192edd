# SPDX-License-Identifier: Apache-2.0
"""scapy is an optional extra (``quicoff[scapy]``), not a dependency.

* pyproject.toml lists scapy only under the ``scapy`` extra (and ``test``,
  which includes it), so ``pip install quicoff`` does not pull it in;
* with scapy hidden (a meta-path finder that refuses it, in a fresh
  interpreter), ``import quicoff`` and its engine, ref, wire, decrypt,
  capture and CLI modules import, nothing imports scapy behind our back, and
  decrypt turns a small real capture (aioquic, recorded by the parent) into
  exactly the packets it holds;
* ``quicoff.scapy_layers`` then fails with an ImportError that names the
  extra, not with a bare "No module named scapy".
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import quicoff

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(quicoff.__file__)))

# Runs in the child: hides scapy, then does what a user without it would.
CHILD = textwrap.dedent(r"""
    import importlib.abc, json, sys

    class NoScapy(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "scapy" or name.startswith("scapy."):
                raise ModuleNotFoundError("No module named %r (hidden by the test)" % name,
                                          name=name)
            return None

    sys.meta_path.insert(0, NoScapy())
    for m in [m for m in sys.modules if m == "scapy" or m.startswith("scapy.")]:
        del sys.modules[m]

    import quicoff, quicoff.ref, quicoff.wire, quicoff.decrypt, quicoff.capture  # noqa
    import quicoff.pcap_io, quicoff.keylog, quicoff.cli  # noqa
    from quicoff import Engine  # the compiled engine, not its ImportError stand-in  # noqa
    out = {"scapy_loaded": sorted(m for m in sys.modules if m.split(".")[0] == "scapy")}
    report = quicoff.decrypt.decrypt_capture(sys.argv[1], None, sys.argv[2])
    out["totals"] = report.totals
    out["quic_datagrams"] = report.quic_datagrams
    out["connections"] = len(report.connections)
    try:
        import quicoff.scapy_layers  # noqa
        out["layers_error"] = None
    except ImportError as e:
        out["layers_error"] = str(e)
    print(json.dumps(out))
""")


def _pyproject():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python >= 3.11")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _names(reqs):
    return {
        r.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip().lower()
        for r in reqs
    }


def test_scapy_is_an_extra_not_a_dependency():
    project = _pyproject()
    assert "scapy" not in _names(project["dependencies"]), project["dependencies"]
    extras = project["optional-dependencies"]
    assert "scapy" in _names(extras.get("scapy", [])), extras
    assert "scapy" in _names(extras["test"]), "the test extra must include scapy"


def test_quicoff_imports_and_decrypts_without_scapy(tmp_path):
    from quicoff import capture

    pcap, keys = tmp_path / "in.pcap", tmp_path / "keys.log"
    res = capture.record(
        pcap, keys, [capture.ConnectionSpec(upload=3000, download=3000, chunks=2, key_updates=1)]
    )
    assert all(c.handshake_completed and c.received == c.sent for c in res.connections)

    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run(
        [sys.executable, "-c", CHILD, str(pcap), str(keys)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["scapy_loaded"] == [], "imported scapy: %s" % out["scapy_loaded"]
    # every datagram of the capture is QUIC and every packet decrypts
    assert out["quic_datagrams"] == len(res.datagrams)
    assert out["connections"] == 1
    assert out["totals"]["ok"] >= len(res.datagrams)
    assert out["totals"]["failed"] == out["totals"]["no_keys"] == 0, out["totals"]
    assert out["layers_error"] and "quicoff[scapy]" in out["layers_error"], out["layers_error"]
