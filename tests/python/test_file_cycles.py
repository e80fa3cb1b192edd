# SPDX-License-Identifier: Apache-2.0
"""tools/file_cycles.py finds a loop of calls between files and passes a tree without one."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "file_cycles.py"
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(
    not CC or not shutil.which("nm"), reason="needs a C compiler and nm to make object files"
)


def objects(tmp_path, sources):
    out = []
    for name, text in sources.items():
        src = tmp_path / name
        src.write_text(text)
        obj = tmp_path / (name + ".o")
        subprocess.run([CC, "-c", "-o", str(obj), str(src)], check=True)
        out.append(str(obj))
    return out


def run(objs):
    return subprocess.run([sys.executable, str(TOOL), *objs], capture_output=True, text=True)


def test_calls_both_ways_are_a_cycle(tmp_path):
    objs = objects(
        tmp_path,
        {
            "a.c": "int b(int); int a(int x) { return x ? b(x - 1) : 0; }\n",
            "b.c": "int a(int); int b(int x) { return a(x); }\n",
        },
    )
    r = run(objs)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "a.c <-> b.c" in r.stdout and "a.c calls b.c: b" in r.stdout


def test_reading_another_files_data_is_a_dependency(tmp_path):
    # a reads b's counter (as a header's inline function would), b calls c, c calls a
    objs = objects(
        tmp_path,
        {
            "a.c": "extern int counter; int a(void) { return counter; }\n",
            "b.c": "int c(void); int counter; int b(void) { return c(); }\n",
            "c.c": "int a(void); int c(void) { return a(); }\n",
        },
    )
    r = run(objs)
    assert r.returncode == 1 and "a.c <-> b.c <-> c.c" in r.stdout, r.stdout
    assert "a.c calls b.c: counter" in r.stdout


def test_a_tree_without_loops_passes(tmp_path):
    objs = objects(
        tmp_path,
        {
            "a.c": "int b(void); int c(void); int a(void) { return b() + c(); }\n",
            "b.c": "int c(void); int b(void) { return c(); }\n",
            "c.c": "int c(void) { return 1; }\n",
        },
    )
    r = run(objs)
    assert r.returncode == 0 and "no file cycles among 3 files" in r.stdout, r.stdout


def test_no_objects_is_a_usage_error(tmp_path):
    assert run([str(tmp_path)]).returncode == 2
