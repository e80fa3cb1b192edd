# SPDX-License-Identifier: Apache-2.0
"""The install contract of the README's two commands on a stock Debian 12
(issue 8 item 0), checked cheaply, without apt or a fresh clone:

* tools/install_deps.sh never dies for want of cargo >= 1.78 (the rustls
  peer of `quicoff bench` is optional): with no cargo, or Debian 12's 1.65,
  on a newcomer's PATH it exits 0 and prints the skip note;
* `quicoff bench` then skips that peer with the same note and exits 0;
* it installs into a virtual environment (Debian's python3 refuses pip,
  PEP 668), and tools/venv.sh puts that venv first on PATH for every script:
  python3, pip, pytest and quicoff are the venv's;
* the scripts that run Python do so only after sourcing tools/venv.sh.

install_deps.sh runs against the venv these tests run in, which it finds
installed and up to date (tools/test.sh has just run it), so apt and pip do
nothing; if src/ changed since, it rebuilds the venv's module first, which is
what it is for.  The end-to-end proof (a clean clone, `env -i`, both
commands) is too slow for the suite; see the install branch's report.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEWCOMER_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"  # env -i PATH of the issue
SKIP_NOTE = "skipped: rustls peer of quicoff bench needs cargo >= 1.78"
# scripts the README and CI run, and the ones they run in turn
SCRIPTS = [
    "tools/test.sh",
    "tools/demo.sh",
    "tools/install_deps.sh",
    "tools/run_sanitizers.sh",
    "tools/run_fuzz.sh",
    "tools/lint.sh",
    ".ci/run",
]


def this_venv() -> Path:
    """The venv these tests run in (tools/venv.sh exports QUICOFF_VENV)."""
    venv = Path(os.environ.get("QUICOFF_VENV") or sys.prefix)
    if not (venv / "pyvenv.cfg").is_file():
        pytest.fail(
            "the tests must run in quicoff's virtual environment (bash tools/test.sh, "
            "or .venv/bin/python -m pytest); %s is not one" % venv
        )
    return venv


def fake_bin(tmp_path: Path, cargo_version: str = "") -> Path:
    """A directory to put first on PATH; with a `cargo` that reports
    cargo_version (e.g. Debian 12's 1.65) when given."""
    d = tmp_path / "bin"
    d.mkdir()
    if cargo_version:
        cargo = d / "cargo"
        cargo.write_text("#!/bin/sh\necho 'cargo %s'\n" % cargo_version)
        cargo.chmod(0o755)
    return d


def newcomer_env(tmp_path: Path, bindir: Path, **extra) -> dict:
    """env -i PATH=<newcomer's> HOME=<empty>: no rustup, no pyenv, no venv on PATH."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "%s:%s" % (bindir, NEWCOMER_PATH), "HOME": str(home), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


@pytest.mark.parametrize("cargo", ["none", "1.65.0"])
def test_install_deps_skips_the_rustls_peer_without_new_cargo(tmp_path, cargo):
    bindir = fake_bin(tmp_path, "" if cargo == "none" else cargo)
    env = newcomer_env(tmp_path, bindir, QUICOFF_VENV=str(this_venv()))
    if cargo == "none" and shutil.which("cargo", path=env["PATH"]):
        pytest.skip("this machine has a system cargo in %s" % NEWCOMER_PATH)
    p = subprocess.run(
        ["bash", str(ROOT / "tools" / "install_deps.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-4000:]
    assert SKIP_NOTE in p.stdout, p.stdout[-4000:]
    want = "no cargo found" if cargo == "none" else "found cargo %s" % cargo
    assert want in p.stdout, p.stdout[-4000:]
    assert "dependencies ok" in p.stdout


def test_quicoff_bench_skips_the_rustls_peer_without_new_cargo(tmp_path):
    env = newcomer_env(tmp_path, fake_bin(tmp_path, "1.65.0"))
    js = tmp_path / "bench.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "quicoff",
            "bench",
            "--paths",
            "rustls-quic",
            "--suite",
            "aes-128-gcm",
            "--size",
            "64",
            "--no-build",
            "--no-plot",
            "--json",
            str(js),
        ],
        env=env,
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert SKIP_NOTE + " (found cargo 1.65" in p.stderr, p.stderr[-3000:]
    recs = [r for r in json.loads(js.read_text())["records"] if r["path"] == "rustls-quic"]
    assert recs and all(r["status"] == "unavailable" for r in recs), recs
    assert all(SKIP_NOTE in r["reason"] for r in recs), recs


def test_venv_sh_puts_the_venv_first(tmp_path):
    venv = this_venv()
    # a python3/pip/quicoff that must lose against the venv's
    bindir = fake_bin(tmp_path)
    for tool in ("python3", "pip", "quicoff", "pytest"):
        (bindir / tool).write_text("#!/bin/sh\nexit 99\n")
        (bindir / tool).chmod(0o755)
    env = newcomer_env(tmp_path, bindir, QUICOFF_VENV=str(venv))
    script = (
        '. "%s/tools/venv.sh" || exit 3\n'
        'for t in python3 pip quicoff pytest; do command -v "$t"; done\n'
        'echo "PY=$PY"\n'
        'python3 -c "import sys, quicoff; print(sys.prefix)"\n' % ROOT
    )
    p = subprocess.run(
        ["bash", "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split()
    assert lines[:4] == [str(venv / "bin" / t) for t in ("python3", "pip", "quicoff", "pytest")]
    assert lines[4] == "PY=%s" % (venv / "bin" / "python")
    assert Path(lines[5]).resolve() == venv.resolve()


def test_venv_sh_says_how_to_get_a_venv(tmp_path):
    env = newcomer_env(tmp_path, fake_bin(tmp_path), QUICOFF_VENV=str(tmp_path / "nope"))
    p = subprocess.run(
        ["bash", "-c", '. "%s/tools/venv.sh" || exit 3' % ROOT],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    assert p.returncode == 3
    assert "run bash tools/install_deps.sh" in p.stderr


def _code_lines(path: Path):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        yield n, code


# a command that runs Python: python3/pip/pytest/quicoff or $PY in command position
# (start of line, after ; && || | or a test.sh `run "stage"`)
PY_COMMAND = re.compile(
    r'(^|;|&&|\|\||\||\brun\s+"[^"]*")\s*(python3?|pip3?|pytest|quicoff|"?\$\{?PY\b)'
)


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_run_python_only_from_the_venv(script):
    """python3, pip, pytest and quicoff run only after tools/venv.sh is
    sourced; pip never installs into the system's python (PEP 668 refuses)."""
    sourced = None
    for n, code in _code_lines(ROOT / script):
        if re.search(r"(^|[;&|]|\s)(\.|source)\s+\S*tools/venv\.sh", code):
            sourced = sourced or n
        m = PY_COMMAND.search(code)
        assert not m or sourced, "%s:%d runs %r before sourcing tools/venv.sh" % (
            script,
            n,
            m.group(0).strip(),
        )
        m = re.search(r"(^|;|&&|\|\|)\s*(\S+\s+-m\s+)?pip3?\s+install\b", code)
        assert not m or '"$venv/bin/python" -m pip' in m.group(0), (
            "%s:%d: pip install outside the venv: %r" % (script, n, m.group(0).strip())
        )


def test_test_sh_and_demo_sh_use_the_venv():
    for script in ("tools/test.sh", "tools/demo.sh"):
        text = (ROOT / script).read_text()
        i_deps, i_venv = text.find("tools/install_deps.sh"), text.find("tools/venv.sh")
        assert 0 <= i_deps < i_venv, "%s must source tools/venv.sh after install_deps.sh" % script
    test_sh = (ROOT / "tools" / "test.sh").read_text()
    assert re.search(r'^run "Python tests"\s+"?\$PY"? -m pytest', test_sh, re.M)
    assert not re.search(r"^PY=", test_sh, re.M), "test.sh must take $PY from tools/venv.sh"


def test_readme_says_how_to_use_the_venv():
    readme = (ROOT / "README.md").read_text()
    assert ". .venv/bin/activate" in readme
    assert "bash tools/demo.sh" in readme and "bash tools/test.sh" in readme
