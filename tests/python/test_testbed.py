# SPDX-License-Identifier: Apache-2.0
"""The namespace testbed (lab/quicoff_lab/testbed.py), its traffic and `quicoff demo`.

Needs root and iproute2: these tests FAIL (not skip) when network namespaces
cannot be made; set QUICOFF_SKIP_TESTBED=1 to skip them on purpose.  The
offloads are quicoff-dpdk and the traffic tools/qo_traffic (both built by
meson): a build without them, or a DPDK that cannot start, is a failure.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from quicoff_lab import testbed as tbm
from quicoff_lab import traffic as tr

# root + netns: tools/test.sh --fast leaves these out (pyproject.toml's markers)
pytestmark = [
    pytest.mark.root,
    pytest.mark.netns,
    pytest.mark.skipif(
        os.environ.get("QUICOFF_SKIP_TESTBED") == "1", reason="QUICOFF_SKIP_TESTBED=1"
    ),
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ours(tag):
    p = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True, check=True)
    return [ln.split()[0] for ln in p.stdout.splitlines() if ln.startswith(tag)]


def test_root_and_namespaces():
    """Loud failure when the testbed cannot exist here."""
    assert os.geteuid() == 0, "the testbed tests need root (network namespaces)"
    name = "qotb-%d-probe" % os.getpid()
    p = subprocess.run(["ip", "netns", "add", name], stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, "cannot create a network namespace: " + p.stderr
    subprocess.run(["ip", "netns", "del", name], check=True)


def test_up_and_down_leaves_nothing():
    with tbm.Testbed(start_offloads=False) as tb:
        tag = tb.tag
        assert len(_ours(tag)) == 5
        # the veths are where they should be
        out = tb.run_in("oA", ["ip", "-o", "link"]).stdout
        assert "host0" in out and "net0" in out
        assert "br0" in tb.run_in("w", ["ip", "-o", "link"]).stdout
    assert _ours(tag) == []
    assert not any(tb.resources().values())


def test_exception_and_leftovers_are_cleaned():
    tag = None
    with pytest.raises(RuntimeError):
        with tbm.Testbed(start_offloads=False) as tb:
            tag = tb.tag
            raise RuntimeError("boom")
    assert _ours(tag) == []
    # a crashed run's leftovers: a namespace named for a pid that is gone
    dead = 1
    while True:
        dead += 7919
        try:
            os.kill(dead, 0)
        except ProcessLookupError:
            break
    name = "qotb-%d-dead-hA" % dead
    subprocess.run(["ip", "netns", "add", name], check=True)
    assert name in tbm.list_leftovers()
    tbm.cleanup_leftovers()
    assert name not in _ours("qotb-")


def test_sigterm_removes_everything(tmp_path):
    """A run killed by SIGTERM (or Ctrl-C) takes its testbed down."""
    marker = tmp_path / "tag"
    code = textwrap.dedent("""
        import sys, time
        from quicoff_lab.testbed import Testbed
        with Testbed(start_offloads=False) as tb:
            open(sys.argv[1], "w").write(tb.tag)
            time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code, str(marker)], cwd=REPO)
    t = time.monotonic()
    while not marker.exists() or not marker.read_text():
        assert p.poll() is None, "testbed process died"
        assert time.monotonic() - t < 60
        time.sleep(0.1)
    tag = marker.read_text()
    assert len(_ours(tag)) == 5
    p.send_signal(signal.SIGTERM)
    p.wait(30)
    assert _ours(tag) == []


# ---------------------------------------------------------------------------
# with offloads: the real application when it is built


@pytest.fixture(scope="module")
def bed():
    assert tbm.find_dpdk_app(), "quicoff-dpdk is not built: meson setup build && ninja -C build"
    # a DPDK that cannot start raises: a failure
    with tbm.Testbed() as tb:
        assert tb.offload_kind == "dpdk"
        yield tb


_next_index = [1]


def _flows(direction, suites, pn_start=0, **kw):
    out = []
    for s in suites:
        i = _next_index[0]
        _next_index[0] += 1
        out.append(
            tr.Flow(
                id=i,
                name="%s-%s" % (direction, s),
                suite=s,
                dcid=os.urandom(8),
                secret=os.urandom(48 if s == "aes-256-gcm" else 32),
                tx_index=i,
                rx_index=500 + i,
                direction=direction,
                pn_start=pn_start,
                **kw,
            )
        )
    return out


def _send_and_check(tb, proto, flows, n, size=300, rate=2000):
    direction = flows[0].direction
    src, dst = (tb.host_a, tb.host_b) if direction == "ab" else (tb.host_b, tb.host_a)
    side = "A" if direction == "ab" else "B"
    path = os.path.join(tb.log_dir, "flows-%d.txt" % flows[0].id)
    tr.write_flows_file(path, flows, proto, tbm.MACS["off%s_host" % side], src.mac)
    tool = tr.traffic_tool(tb.build_dir)
    rx = tr.Receiver(tool, dst.ns, dst.iface, path, proto.rx_format)
    time.sleep(0.3)
    s = tr.Sender(tool, src.ns, src.iface, path, size=size, rate=rate, count=n).wait(60)
    time.sleep(0.8)
    rx.stop()
    return s, rx.wait(10)


@pytest.mark.parametrize("direction", ["ab", "ba"])
def test_payload_identity_end_to_end(bed, direction):
    proto = tr.V1Protocol()
    flows = _flows(direction, ["aes-128-gcm", "chacha20-poly1305", "aes-256-gcm"])
    flows[0].key_update_pn = 150  # a key update in mid-stream
    acks = bed.install(flows, proto)
    assert [a["status_name"] for a in acks] == ["ok"] * (2 * len(flows))
    s, r = _send_and_check(bed, proto, flows, 600)
    assert s["sent"] == 600
    assert r["mismatches"] == 0, r["first_mismatch"]
    assert r["checked"] == 600 and r["unique"] == 600 and r["dups"] == 0
    for f in flows:
        assert r["flows"][str(f.id)]["received"] == s["flows"][str(f.id)]["sent"] == 200


def test_compat_format_frames_go_through(bed):
    """The compat format's frames (the DPU prototype's) go through as well."""
    proto = tr.CompatProtocol()
    flows = _flows("ab", ["aes-128-gcm"])
    bed.install(flows, proto)
    s, r = _send_and_check(bed, proto, flows, 200)
    assert r["mismatches"] == 0 and r["unique"] == 200, r


def test_tampered_packets_are_dropped_and_counted(bed):
    proto = tr.V1Protocol()
    flows = _flows("ab", ["aes-128-gcm"])
    bed.install(flows, proto)

    def auth_failures():
        q = proto.query(tbm.MACS["offB_host"], bed.host_b.mac)
        return bed.signal("B", [q], proto)[0]["table"]["auth_failures"]

    before = auth_failures()
    bed.set_wire("tamper", every=5, max_tamper=20, direction="ab")
    try:
        s, r = _send_and_check(bed, proto, flows, 200)
        time.sleep(0.3)
        wire = bed.wire_stats()
    finally:
        bed.set_wire("bridge")
    assert wire["tampered"] == 20
    assert auth_failures() - before == 20
    assert r["mismatches"] == 0
    assert r["unique"] == 200 - 20


def test_demo_quick_json(tmp_path):
    """`quicoff demo --quick` with a reduced step duration: the JSON verdicts."""
    out = tmp_path / "demo"
    js = tmp_path / "demo.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "quicoff",
            "demo",
            "--quick",
            "--duration",
            "0.5",
            "--sizes",
            "64,512",
            "--suites",
            "aes-128-gcm,chacha20-poly1305",
            "--loads",
            "0.5,1.0",
            "--tamper-count",
            "20",
            "--no-build",
            "--out",
            str(out),
            "--json",
            str(js),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=170,
    )
    assert js.exists(), p.stdout[-3000:]
    res = json.loads(js.read_text())
    assert res["offload"] == "dpdk"
    assert res["mismatches"] == 0
    assert res["payloads_checked"] > 1000
    assert res["tampered_sent"] == 20
    assert res["tampered_dropped_counted"] == res["tampered_sent"]
    assert all(res["verdicts"].values()), res["verdicts"]
    assert not any(res["leftovers"].values())
    sizes = {r["size"] for r in res["throughput"]}
    assert sizes == {64, 512}
    assert all(r["kpps"] > 0 for r in res["throughput"])
    assert p.returncode == 0, p.stdout[-3000:]
    if res.get("plots"):
        for path in res["plots"]:
            assert os.path.getsize(path) > 1000
