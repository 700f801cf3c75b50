"""No import cycle between the package's modules, lazy (function-level) imports included.

The graph is read with ``ast`` from the source tree as it is installed (the repo's top-level
folders are sub-packages of ``culturebench``, see pyproject.toml): an edge ``a -> b`` for every
``import`` or ``from ... import`` in ``a`` naming the module ``b`` (or a name defined in
``b``'s package ``__init__``), wherever the statement is. A cycle, even through a lazy import,
means two modules that cannot be understood (or moved) one without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
# installed name -> folder in the repo (pyproject's package-dir)
ROOTS = {
    "culturebench": REPO / "culturebench",
    "culturebench.builders": REPO / "builders",
    "culturebench.validation": REPO / "validation",
    "culturebench.eval": REPO / "eval",
    "culturebench.cards": REPO / "cards",
    "culturebench.datasets": REPO / "datasets",
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for prefix, folder in ROOTS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([prefix, *parts])
            if (
                prefix == "culturebench"
                and parts
                and (REPO / parts[0]).is_dir()
                and parts[0] != "culturebench"
            ):
                continue
            out[name] = path
    return out


def _resolve(module: str, level: int, current: str, is_package: bool) -> str:
    if not level:
        return module
    base = current.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", node.level, name, path.name == "__init__.py")
                targets = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t if t in modules else base for t in targets]
            for target in targets:
                while target and target not in modules:  # `import a.b.c` names a.b.c's module
                    target = target.rpartition(".")[0]
                if target and target != name and target.startswith("culturebench"):
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.append(item)
                    if item == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _path(graph: dict[str, set[str]], component: list[str]) -> str:
    """One concrete loop inside a component (shortest, from its first module), for the message."""
    members, start = set(component), component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    loop = [node]
                    while loop[-1] != start:
                        loop.append(previous[loop[-1]])
                    return " -> ".join([*reversed(loop), start])
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return ", ".join(component)


def test_the_graph_sees_lazy_imports() -> None:
    """The reader counts an import inside a function (the check is not vacuous)."""
    modules = _modules()
    graph = _graph(modules)
    assert "culturebench.eval.tasks.base" in modules and "culturebench.cli.application" in modules
    source = modules["culturebench.cli.application"].read_text(encoding="utf-8")
    assert "    from culturebench." in source  # cli imports lazily ...
    assert len(graph["culturebench.cli.application"]) > 10  # ... and those imports are edges
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    graph = _graph(_modules())
    cycles = _cycles(graph)
    assert cycles == [], "\n".join(f"{len(c)} modules: {_path(graph, c)}" for c in cycles)
