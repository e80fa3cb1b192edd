# SPDX-License-Identifier: Apache-2.0
"""What the README promises about the tree itself: a LICENSE file with the
license it names, and an SPDX header near the top of every source file."""

import re
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


def _layout_block():
    text = (ROOT / "README.md").read_text()
    start = text.index("## Layout")
    block = text[text.index("```", start) + 3 :]
    return block[: block.index("```")]


def test_readme_layout_names_every_part_of_the_tree():
    """README's Layout names every top-level directory, every module of the
    two Python packages, every C file of the libraries and of the DPDK app,
    every docs page and every tool, and nothing that is not there."""
    layout = _layout_block()
    words = set(
        layout.replace(",", " ").replace(";", " ").replace("(", " ").replace(")", " ").split()
    )
    tracked = [Path(p) for p in _tracked_sources()] + [
        Path(p)
        for p in subprocess.run(
            ["git", "ls-files", "docs", "tools"], cwd=ROOT, capture_output=True, text=True
        ).stdout.split()
    ]
    top = {p.parts[0] for p in tracked if len(p.parts) > 1 and not p.parts[0].startswith(".")}
    missing = sorted(d for d in top if not any(w.startswith(d + "/") for w in words))
    groups = {
        "python/quicoff": ".py",
        "lab/quicoff_lab": ".py",
        "src": ".c",
        "wire": ".c",
        "apps/dpdk": ".c",
        "docs": ".md",
    }
    for folder, suffix in groups.items():
        for p in tracked:
            if str(p.parent) == folder and p.suffix == suffix:
                name = p.stem
                if name.startswith("__") or name.startswith("test_") or name == "_ffi_build":
                    continue
                if name not in words:
                    missing.append(str(p))
    for p in tracked:
        if str(p.parent) == "tools" and p.suffix in (".sh", ".py", ".c") and p.name not in words:
            if p.name not in layout:
                missing.append(str(p))
    assert not missing, "README's Layout does not name: " + ", ".join(sorted(set(missing)))
    for line in layout.splitlines():
        first = line.split()[0] if line and not line[0].isspace() else ""
        if first.endswith("/"):
            assert (ROOT / first).is_dir(), "README's Layout names %s, not in the tree" % first


# A source document's number says nothing to a reader of the code: code and
# its names say what a thing is, and docs/glossary.md maps each source
# document to what the project took from it.
_SOURCE_DOCUMENT_NAME = re.compile(r"seed[ _-]?0\d\d|\bthesis\b", re.IGNORECASE)
_NAMES_CHECKED_SUFFIXES = {".c", ".h", ".py", ".sh", ".v", ".vh", ".sv"}
_NAMES_UNCHECKED_DIRS = ("docs",)


def test_no_source_document_names_in_code():
    hits = []
    for rel in _tracked_sources():
        if rel.parts[0] in _NAMES_UNCHECKED_DIRS:
            continue
        if rel.suffix not in _NAMES_CHECKED_SUFFIXES and rel.name != "meson.build":
            continue
        path = ROOT / rel
        if not path.exists():
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _SOURCE_DOCUMENT_NAME.search(line):
                hits.append(f"{rel}:{n}: {line.strip()}")
    assert not hits, (
        "name things after what they are; source documents are cited in docs/ only "
        "(docs/glossary.md):\n" + "\n".join(hits)
    )
