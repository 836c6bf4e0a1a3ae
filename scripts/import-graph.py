#!/usr/bin/env python3
"""Print the project's import graph (grimp, the library import-linter uses): package -> package and
module -> module edges, and every module circle.  `python scripts/import-graph.py [--modules]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grimp

PACKAGES = ("bench", "datagen", "reports")


def groups(module: str) -> str:
    """The layer a module belongs to: bench.core.x -> bench.core, bench.engines.spark.x -> bench.engines."""
    parts = module.split(".")
    if parts[0] == "bench" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def cycles(graph, modules) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in modules:
                continue
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

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--modules", action="store_true", help="also list module -> module edges")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    modules = {m for m in graph.modules if m.split(".")[0] in PACKAGES}
    edges: dict[tuple[str, str], int] = {}
    for m in sorted(modules):
        for t in graph.find_modules_directly_imported_by(m):
            if t in modules and groups(m) != groups(t):
                edges[(groups(m), groups(t))] = edges.get((groups(m), groups(t)), 0) + 1
    print("package -> package (module imports):")
    for (a_, b), n in sorted(edges.items()):
        back = " <-> circle" if (b, a_) in edges else ""
        print(f"  {a_:<22} -> {b:<22} {n:>3}{back}")
    if a.modules:
        print("module -> module:")
        for m in sorted(modules):
            for t in sorted(graph.find_modules_directly_imported_by(m)):
                if t in modules:
                    print(f"  {m} -> {t}")
    circles = cycles(graph, modules)
    print(f"module circles: {len(circles)}")
    for c in circles:
        print("  " + " <-> ".join(c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
