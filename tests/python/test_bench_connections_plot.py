# SPDX-License-Identifier: Apache-2.0
"""`quicoff bench --active-sweep`'s plot: ns/packet against active connections,
drawn only when a run measured two or more connection counts."""

import pytest

from quicoff_lab import bench

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rec(conns, op, ns, status="ok", path="quicoff"):
    return {
        "path": path,
        "backend": "ipsec-mb",
        "suite": "aes-128-gcm",
        "op": op,
        "label": "64",
        "payload": 64,
        "connections": conns,
        "active_connections": conns,
        "threads": 1,
        "ns_median": ns,
        "status": status,
    }


def test_sweep_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    recs = [
        _rec(c, op, 30.0 * (1 + i))
        for i, c in enumerate(bench.ACTIVE_SWEEP)
        for op in ("protect", "unprotect")
    ]
    recs.append(_rec(10, "protect", 1.0, path="openssl-evp"))  # not quicoff: not drawn
    out = tmp_path / "b-connections.png"
    assert bench.plot_connections(recs, str(out), "t")
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_one_connection_count_draws_nothing(tmp_path):
    out = tmp_path / "x.png"
    recs = [_rec(1, "protect", 30.0), _rec(1000, "protect", 40.0, status="failed")]
    assert not bench.plot_connections(recs, str(out), "t")
    assert not out.exists()


def test_plot_path_sits_beside_the_main_plot():
    assert bench.connections_plot_path("results/bench.png") == "results/bench-connections.png"
    assert bench.connections_plot_path("b") == "b-connections.png"
