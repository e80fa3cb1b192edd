# SPDX-License-Identifier: Apache-2.0
"""The test tiers of tools/test.sh (its --help).

* Every test the fast tier selects (pytest -m "not root and not netns and
  not slow", read from test.sh) lives in a file that shows no sign of needing
  root: no euid check, no `ip netns`/`ip link`, no testbed, no quicoff-dpdk,
  no tcpdump, no raw socket. A test that needs root carries the marker
  (pyproject.toml) instead of skipping or failing on a non-root machine.
* The same selection passes with no privileges at all (as root: under
  setpriv with every capability dropped, so no namespaces, no raw sockets,
  no tcpdump). It takes as long as the fast tier, so it is itself slow.
* The markers test.sh selects on are the ones pyproject.toml registers.
* `test.sh --list` shows what each option selects: the default runs every
  stage and leaves nothing out; --fast leaves out the DPDK, sanitizer, RTL
  and fuzzing stages and says why, and keeps the lint stage; the fuzzing time follows --fuzz-seconds and
  QUICOFF_FUZZ_SECONDS; bad options exit 2.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_SH = ROOT / "tools" / "test.sh"

# what needing root looks like in a test file (comments are not looked at)
ROOT_SIGNS = {
    "euid check": re.compile(r"\bgeteuid\s*\("),
    "ip netns / ip link": re.compile(
        r"""["']ip["']\s*,\s*["'](netns|link)\b|\bip\s+(netns|link)\s+add\b"""
    ),
    "the namespace testbed": re.compile(r"\bTestbed\s*\("),
    "quicoff-dpdk": re.compile(r"quicoff-dpdk|\bharness\b"),
    "tcpdump": re.compile(r"\btcpdump\b"),
    "a raw socket": re.compile(r"socket\s*\(\s*(socket\.)?AF_PACKET|SOCK_RAW"),
    "unshare/nsenter/sudo": re.compile(r"""["'](unshare|nsenter|sudo)["']"""),
}


def fast_markers():
    m = re.search(r'^FAST_MARKERS="([^"]+)"', TEST_SH.read_text(), re.M)
    assert m, "tools/test.sh defines FAST_MARKERS, the fast tier's pytest -m expression"
    return m.group(1)


def code_of(path):
    """The file without comments and docstrings' prose lines (a crude cut:
    whatever follows a # is dropped), so that a comment saying "needs no root"
    does not count as needing it."""
    return "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())


def root_signs(path):
    code = code_of(path)
    return sorted(name for name, rx in ROOT_SIGNS.items() if rx.search(code))


def collect(expr, *paths):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            expr,
        ]
        + [str(ROOT / x) for x in paths],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert p.returncode in (0, 5), p.stdout[-3000:] + p.stderr[-3000:]  # 5: none selected
    return [ln for ln in p.stdout.splitlines() if "::" in ln]


def test_the_signs_are_seen():
    """The check below can fail: the files that do need root show the signs."""
    assert root_signs(ROOT / "tests" / "python" / "test_testbed.py")
    assert root_signs(ROOT / "tests" / "dpdk" / "conftest.py")


def test_the_fast_tier_selects_nothing_that_needs_root():
    selected = collect(fast_markers(), "tests/python")
    assert selected, "the fast tier selects no test at all"
    files = sorted({ln.split("::", 1)[0] for ln in selected})
    bad = {f: root_signs(ROOT / f) for f in files if f != "tests/python/test_tiers.py"}
    bad = {f: s for f, s in bad.items() if s}
    assert not bad, (
        "these test files look like they need root but the fast tier runs them: "
        "mark their tests root (and netns if they make namespaces/veths): %s" % bad
    )
    # tests/dpdk (collected on its own: its basenames repeat tests/python's) is
    # all root: its conftest marks every test
    assert collect(fast_markers(), "tests/dpdk") == []
    assert len(collect("root and netns", "tests/dpdk")) > 0


@pytest.mark.slow  # runs the whole fast tier of Python tests again, ~40 s
def test_the_fast_tier_passes_without_privileges(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        fast_markers(),
        "--basetemp",
        str(tmp_path / "bt"),
        str(ROOT / "tests" / "python"),
    ]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) not found: cannot drop root's capabilities"
        cmd = [setpriv, "--bounding-set", "-all", "--inh-caps", "-all", "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert p.returncode == 0, (
        "the fast tier fails without privileges: a test needs the "
        "root marker\n" + p.stdout[-6000:] + p.stderr[-3000:]
    )


def test_the_markers_test_sh_selects_on_are_registered():
    import tomllib  # Python >= 3.11; the project's venv has it (Debian 12)

    with open(ROOT / "pyproject.toml", "rb") as f:
        registered = {
            m.split(":", 1)[0].strip()
            for m in tomllib.load(f)["tool"]["pytest"]["ini_options"]["markers"]
        }
    used = set(re.findall(r"\b(?!not\b|and\b|or\b)(\w+)", fast_markers()))
    assert used and used <= registered, (used, registered)
    assert {"root", "netns", "slow"} <= used


def parses_options():
    """test.sh without option parsing would take any arguments and run every
    test (minutes, root): fail at once instead of starting that."""
    text = TEST_SH.read_text()
    assert "--list)" in text and "unknown option" in text, "tools/test.sh parses no options"


def list_stages(*args, **env):
    parses_options()
    e = dict(os.environ)
    e.pop("QUICOFF_FUZZ_SECONDS", None)
    e.pop("QUICOFF_FUZZ_WIRE_SECONDS", None)
    e.update(env)
    p = subprocess.run(
        ["bash", str(TEST_SH), "--list"] + list(args),
        capture_output=True,
        text=True,
        env=e,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    runs = [ln[len("runs: ") :] for ln in p.stdout.splitlines() if ln.startswith("runs: ")]
    out = [
        ln[len("leaves out: ") :] for ln in p.stdout.splitlines() if ln.startswith("leaves out: ")
    ]
    return runs, out


def test_the_default_tier_runs_everything():
    runs, out = list_stages()
    assert out == []
    assert runs == [
        "C build",
        "C tests",
        "Python tests",
        "lint",
        "DPDK app tests",
        "sanitizers",
        "RTL (cocotb, bounded)",
        "fuzz (120s)",
        "fuzz wire (30s)",
    ]


def test_the_fast_tier_says_what_it_leaves_out_and_why():
    runs, out = list_stages("--fast")
    assert runs == ["C build", "C tests", "Python tests", "lint"]
    for stage in (
        "DPDK app tests",
        "sanitizers",
        "RTL (cocotb, bounded)",
        "fuzz",
        "fuzz wire",
        "Python tests marked root, netns or slow",
    ):
        assert any(o.startswith(stage + " ") and "(--fast" in o for o in out), (stage, out)


def test_the_fuzzing_time_is_an_option():
    assert list_stages("--fuzz-seconds", "7")[0][-2:] == ["fuzz (7s)", "fuzz wire (30s)"]
    assert list_stages("--fuzz-seconds=8", "--fuzz-wire-seconds", "3")[0][-2:] == [
        "fuzz (8s)",
        "fuzz wire (3s)",
    ]
    assert list_stages(QUICOFF_FUZZ_SECONDS="9")[0][-2:] == ["fuzz (9s)", "fuzz wire (30s)"]
    assert list_stages("--fuzz-seconds", "5", QUICOFF_FUZZ_SECONDS="9")[0][-2] == "fuzz (5s)"
    runs, out = list_stages("--fuzz-seconds", "0")
    assert not any(r.startswith("fuzz (") for r in runs)
    assert any(o.startswith("fuzz ") and "--fuzz-seconds 0" in o for o in out), out


@pytest.mark.parametrize(
    "args", [["--bogus"], ["--fuzz-seconds"], ["--fuzz-seconds", "x"], ["--fuzz-seconds", "-1"]]
)
def test_bad_options_exit_2_with_a_message(args):
    parses_options()
    p = subprocess.run(["bash", str(TEST_SH)] + args, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "test.sh:" in p.stderr, (p.returncode, p.stderr)


def test_help_says_it_all():
    parses_options()
    p = subprocess.run(["bash", str(TEST_SH), "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    for word in (
        "--fast",
        "no root",
        "under two minutes",
        "--fuzz-seconds",
        "QUICOFF_FUZZ_SECONDS",
        "--fuzz-wire-seconds",
        "--list",
        ".ci/run",
        "not root and not netns and not slow",
    ):
        assert word in p.stdout, word


def test_every_test_has_a_time_limit(pytestconfig):
    # pytest-timeout's limit from pyproject.toml: a test that hangs fails and
    # the run goes on (getini raises if the plugin is not installed)
    limit = float(pytestconfig.getini("timeout"))
    assert 0 < limit <= 1800, limit
