"""No import circle among the ``topologies`` modules (issue 13, item 3).

Every import counts, wherever it is written: at the top, inside a function (a "lazy" import
only hides a circle) or under ``if TYPE_CHECKING:``. The order the modules may import each
other in is documented in ``topologies/scenario.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "topologies"


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports (``__init__`` for the package itself)."""
    name = package.name
    modules = {p.stem for p in package.glob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod in modules:
        tree = ast.parse((package / f"{mod}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == name:  # from pkg import a, b: submodules or the package's names
                    targets = [f"{name}.{a.name}" if a.name in modules else name for a in node.names]
                else:
                    targets = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                raise AssertionError(f"{package.name}/{mod}.py: relative import (use {name}.<module>)")
            for t in targets:
                parts = t.split(".")
                if parts[0] != name:
                    continue
                dep = parts[1] if len(parts) > 1 else "__init__"
                if dep != mod:
                    graph[mod].add(dep)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_topologies_has_no_import_circle() -> None:
    graph = import_graph(PACKAGE)
    assert {"scenario", "schema", "checks", "layout", "routes", "yamlfile", "mobility"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import circle in topologies: " + " -> ".join(cycle or [])


def test_a_lazy_or_type_only_import_still_makes_a_circle(tmp_path: Path) -> None:
    # The shape topologies had before the split: scenario imports mobility inside a method,
    # mobility imports scenario under TYPE_CHECKING and inside a function.
    pkg = tmp_path / "topologies"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "scenario.py").write_text("def f():\n    from topologies.mobility import trajectories\n")
    (pkg / "mobility.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from topologies.scenario import Scenario\n"
    )
    (pkg / "ns2.py").write_text("from topologies import mobility\n")
    assert find_cycle(import_graph(pkg)) == ["mobility", "scenario", "mobility"]
    (pkg / "mobility.py").write_text("import math\n")
    assert find_cycle(import_graph(pkg)) is None
