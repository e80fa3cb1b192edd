# SPDX-License-Identifier: Apache-2.0
"""No two modules of the Python packages import each other, directly or round
a loop: the Python half of tools/file_cycles.py's rule for the C files."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (("python", "quicoff"), ("lab", "quicoff_lab"))


def _modules(root: Path, packages) -> dict:
    mods = {}
    for base, pkg in packages:
        for path in sorted((root / base / pkg).rglob("*.py")):
            parts = list(path.relative_to(root / base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path
    return mods


def import_graph(root: Path, packages=PACKAGES) -> dict:
    """{module: {modules of the same packages it imports}}."""
    mods = _modules(root, packages)
    graph = {}
    for mod, path in mods.items():
        here = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    target = ".".join(parts + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    if f"{target}.{a.name}" in mods:
                        deps.add(f"{target}.{a.name}")
                    elif target in mods:
                        deps.add(target)
        graph[mod] = deps - {mod}
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_packages_have_no_import_cycles():
    graph = import_graph(ROOT)
    assert "quicoff.decrypt" in graph and "quicoff_lab.demo" in graph
    assert not cycles(graph), "modules that import each other: %s" % cycles(graph)


def test_the_check_finds_a_loop(tmp_path):
    pkg = tmp_path / "python" / "quicoff"
    (pkg / "ref").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from quicoff import b\n")
    (pkg / "b.py").write_text("from .ref import c\n")
    (pkg / "ref" / "__init__.py").write_text("")
    (pkg / "ref" / "c.py").write_text("from .. import a\n")
    found = cycles(import_graph(tmp_path, (("python", "quicoff"),)))
    assert found == [["quicoff.a", "quicoff.b", "quicoff.ref.c"]]
    (pkg / "ref" / "c.py").write_text("import os\n")
    assert cycles(import_graph(tmp_path, (("python", "quicoff"),))) == []
