# SPDX-License-Identifier: Apache-2.0
"""The wheel is the library alone: no checkout tooling (testbed, traffic,
demo, bench: lab/quicoff_lab) in it, and `import quicoff` plus the library's
commands work from it in a fresh venv, away from the checkout.

The wheel is built from a copy of the checkout's tracked files (an in-tree
build would write into build/, meson's directory), without build isolation
(no network: the dev venv has the build requirements). The fresh venv gets
the wheel without its dependencies; cryptography and cffi come from the dev
venv's site-packages through a path entry, which is not a site directory, so
its .pth files (the editable quicoff, quicoff_lab) are not applied."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLING = ("testbed", "traffic", "demo", "bench", "bench_peers", "standin_offload")

pytestmark = pytest.mark.slow  # compiles the C library into the wheel: about a minute


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("wheel")
    src = d / "src"
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    out = d / "dist"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, "pip wheel failed:\n" + p.stdout[-3000:] + p.stderr[-3000:]
    (whl,) = out.glob("quicoff-*.whl")
    return whl


def test_the_wheel_has_no_tooling(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    mods = {n for n in names if n.endswith(".py")}
    assert "quicoff/__init__.py" in mods and "quicoff/ref/__init__.py" in mods
    assert any(n.startswith("quicoff/_quicoff") for n in names), "no compiled module"
    shipped = [
        n
        for n in names
        if n.startswith("quicoff_lab/") or n in {"quicoff/%s.py" % m for m in TOOLING}
    ]
    assert not shipped, "checkout tooling in the wheel: %s" % shipped


def test_the_library_works_from_the_wheel_alone(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(wheel) as z:  # what pip install does for a pure-layout wheel
        z.extractall(site)
    # the dependencies (cryptography, cffi) from the dev venv, last on sys.path
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QUICOFF_SOURCE_DIR")}
    run = dict(cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    p = subprocess.run(
        [
            str(py),
            "-c",
            """
import quicoff, quicoff.ref, quicoff.wire, quicoff.decrypt, quicoff.pcap_io, quicoff.cli
from quicoff import Engine
print(quicoff.__file__)
e = Engine()
e.close()
try:
    import quicoff_lab
except ImportError:
    print("no tooling")
""",
        ],
        **run,
    )
    assert p.returncode == 0, p.stderr
    where, tooling = p.stdout.split()[0], p.stdout.split("\n")[1]
    assert where.startswith(str(site)), "quicoff imported from %s, not the wheel" % where
    assert tooling == "no tooling"
    p = subprocess.run([str(py), "-m", "quicoff", "decrypt", "--help"], **run)
    assert p.returncode == 0 and "keylog" in p.stdout, p.stderr
    for cmd in ("demo", "bench"):
        p = subprocess.run([str(py), "-m", "quicoff", cmd, "--quick"], **run)
        assert p.returncode == 2, (cmd, p.stdout, p.stderr)
        assert "source checkout" in p.stderr and "tools/install_deps.sh" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr, p.stderr
