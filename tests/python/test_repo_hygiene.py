# SPDX-License-Identifier: Apache-2.0
"""What the README promises about the tree itself: a LICENSE file with the
license it names, and an SPDX header near the top of every source file."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_SUFFIXES = {".c", ".h", ".py", ".sh", ".v", ".sv", ".rs"}


def _tracked_sources():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout (an sdist): every file under the tree
        paths = [p.relative_to(ROOT) for p in ROOT.rglob("*") if p.is_file()]
    else:
        paths = [Path(p) for p in out.stdout.split()]
    return [p for p in paths if p.suffix in SOURCE_SUFFIXES or p.name == "meson.build"]


def test_license_file_is_apache_2():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "Apache-2.0" in (ROOT / "README.md").read_text()


def test_every_source_file_has_an_spdx_header():
    missing = []
    for rel in _tracked_sources():
        path = ROOT / rel
        if not path.exists():
            continue
        head = path.read_text(errors="replace").splitlines()[:3]
        if not any("SPDX-License-Identifier: Apache-2.0" in line for line in head):
            missing.append(str(rel))
    assert not missing, "no SPDX header in the first three lines: " + ", ".join(missing)
