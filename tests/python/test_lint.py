# SPDX-License-Identifier: Apache-2.0
"""The lint habits (issue 9): ruff, mypy and clang-format are configured, and
tools/lint.sh, the lint stage of tools/test.sh, runs all four checks.

The findings that are not formatting (ruff check, mypy on quicoff._engine and
quicoff.ref) stay fixed: they are checked here as well as in the lint stage.
Formatting itself (ruff format, clang-format) is the stage's alone.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLANG_FORMAT = shutil.which("clang-format-14") or shutil.which("clang-format")


def run(*cmd, **kw):
    return subprocess.run(list(cmd), cwd=ROOT, capture_output=True, text=True, timeout=300, **kw)


def test_ruff_check_finds_nothing():
    p = run(sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]


def test_mypy_is_clean_on_the_engine_and_the_reference_model(tmp_path):
    p = run(sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    # pyproject.toml says what mypy checks; both must be among what it checked
    assert "Success" in p.stdout, p.stdout


def test_the_engine_api_is_typed():
    """mypy --strict passes on a module it is not told to check; this says the
    public functions and methods of quicoff._engine carry return hints."""
    import inspect

    from quicoff import _engine

    untyped = []
    for name in _engine.__all__:
        obj = getattr(_engine, name)
        if inspect.isfunction(obj):
            funcs = [obj]
        elif inspect.isclass(obj):
            # the methods written in _engine.py (not NamedTuple's generated ones)
            funcs = [
                f
                for f in vars(obj).values()
                if inspect.isfunction(f) and f.__code__.co_filename == _engine.__file__
            ]
        else:
            continue
        untyped += [
            "%s.%s" % (name, f.__name__)
            for f in funcs
            if inspect.signature(f).return_annotation is inspect.Signature.empty
        ]
    assert not untyped, untyped


@pytest.mark.skipif(
    CLANG_FORMAT is None,
    reason="clang-format-14 is not installed "
    "(tools/install_deps.sh installs it); the lint stage fails loudly on that",
)
def test_clang_format_config_is_valid_and_enforced(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int f(int a){ if(a)return 1;\n  return   0; }\n")
    p = run(
        CLANG_FORMAT, "--style=file:%s" % (ROOT / ".clang-format"), "--dry-run", "-Werror", str(bad)
    )
    assert p.returncode != 0 and "bad.c" in p.stderr, (p.returncode, p.stderr)
    good = tmp_path / "good.c"
    good.write_text(
        run(CLANG_FORMAT, "--style=file:%s" % (ROOT / ".clang-format"), str(bad)).stdout
    )
    p = run(
        CLANG_FORMAT,
        "--style=file:%s" % (ROOT / ".clang-format"),
        "--dry-run",
        "-Werror",
        str(good),
    )
    assert p.returncode == 0, p.stderr


def test_the_lint_stage_runs_every_check():
    text = (ROOT / "tools" / "lint.sh").read_text()
    for check in (
        "ruff check .",
        "ruff format --check",
        "mypy",
        '"$CLANG_FORMAT" --dry-run -Werror "${C_FILES[@]}"',
    ):
        assert check in text, check
    listed = run("bash", "tools/lint.sh", "--list").stdout.split()
    assert "src/protect.c" in listed and "include/quicoff/quicoff.h" in listed, listed[:20]
    assert all(f.endswith((".c", ".h")) for f in listed), listed
