#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when two source files call each other, directly or around a loop.

A file that calls a function defined in another file depends on it. In a tree
without file cycles every file can be read, tested and changed knowing only
the files below it; a cycle (worker.c calls rx_path.c, which calls back into
worker.c) means neither can be understood alone.

The call graph comes from the compiled objects, not from the sources: `nm`
lists the functions each object defines (T) and the symbols it needs (U), and
a file A depends on file B when A needs a function or an object B defines.
Objects count too: a file that reads another's counter block through a header's
inline function depends on that file as surely as one that calls it. Static
inline functions in headers leave no symbol of their own, so a header is not a
node of the graph; what they touch is charged to the file that includes them.

Usage: file_cycles.py OBJECT_OR_DIR...  (a directory stands for every *.o in it)
Exit status 0 when the graph has no cycle, 1 (with every cycle printed) when
it has, 2 on a usage error (no objects, nm missing).
"""

import os
import re
import subprocess
import sys


def source_name(obj):
    """main.c.o -> main.c; meson's src_table.c.o -> src/table.c."""
    name = os.path.basename(obj)
    if name.endswith(".o"):
        name = name[: -len(".o")]
    m = re.match(r"^(src|apps_dpdk|common)_(.+)$", name)
    if m:
        return m.group(1).replace("_", "/") + "/" + m.group(2)
    return name


def symbols(obj):
    """(functions and objects defined, symbols needed) of one object file."""
    out = subprocess.run(
        ["nm", "--defined-only", "-g", obj], capture_output=True, text=True, check=True
    ).stdout
    defined = {
        f[2]
        for f in (line.split() for line in out.splitlines())
        if len(f) == 3 and f[1] in "TWDBRCVG"
    }
    out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
    needed = {line.split()[-1] for line in out.splitlines() if line.strip()}
    return defined, needed


def graph(objects):
    """file -> {file it calls: [the functions it calls there]}"""
    defs, needs = {}, {}
    for obj in objects:
        defs[obj], needs[obj] = symbols(obj)
    owner = {}
    for obj, names in defs.items():
        for name in names:
            owner[name] = source_name(obj)
    edges = {source_name(o): {} for o in objects}
    for obj, names in needs.items():
        a = source_name(obj)
        for name in sorted(names):
            b = owner.get(name)
            if b and b != a:
                edges[a].setdefault(b, []).append(name)
    return edges


def cycles(edges):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main(argv):
    objects = []
    for arg in argv:
        if os.path.isdir(arg):
            objects += sorted(os.path.join(arg, f) for f in os.listdir(arg) if f.endswith(".o"))
        else:
            objects.append(arg)
    if not objects:
        print("file_cycles.py: no object files given (OBJECT_OR_DIR...)", file=sys.stderr)
        return 2
    try:
        edges = graph(objects)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"file_cycles.py: nm failed: {e}", file=sys.stderr)
        return 2
    found = cycles(edges)
    for comp in found:
        print("file cycle: " + " <-> ".join(comp))
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    print(f"  {a} calls {b}: {', '.join(edges[a][b])}")
    if not found:
        print(f"no file cycles among {len(edges)} files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
