"""The package's imports, read without importing anything: every ``culturebench`` import of the
checkout names a file, no import cycle between the package's modules (lazy, function-level
imports included), and no module reaches into another package's private names.

The package is the tree under ``culturebench/``, its links followed (``culturebench/eval`` ->
``../eval``, docs/layout.md): what Python imports and what static tools read. An edge ``a -> b``
for every ``import`` or ``from ... import`` in ``a`` naming the module ``b`` (or a name defined
in ``b``'s package ``__init__``), wherever the statement is. A cycle, even through a lazy import,
means two modules that cannot be understood (or moved) one without the other.
"""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "culturebench"


def _modules() -> dict[str, Path]:
    """Every module of the package by import name: the files under ``culturebench/``, links
    followed, nothing imported."""
    out: dict[str, Path] = {}
    for folder, dirs, files in os.walk(PACKAGE, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        parts = Path(folder).relative_to(PACKAGE).parts
        for file in sorted(files):
            if file.endswith(".py"):
                stem = [] if file == "__init__.py" else [file[: -len(".py")]]
                out[".".join(["culturebench", *parts, *stem])] = Path(folder) / file
    return out


def _checkout_files() -> list[Path]:
    """The checkout's Python files as git lists them (tracked, and new ones not ignored), each
    once: a file below a link is listed at its real place (``eval/x.py``)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "-z", "*.py"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [REPO / rel for rel in sorted(set(filter(None, listed.split("\0")))) if (REPO / rel).is_file()]


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


# --- every import names a file; no private names across packages (issue 54) ------------------


def _static_target(name: str, modules: dict[str, Path]) -> Path | None:
    """The file (or namespace folder) a dotted name imports, read from disk alone."""
    if name in modules:
        return modules[name]
    folder = PACKAGE.joinpath(*name.split(".")[1:])
    return folder if name.startswith("culturebench.") and folder.is_dir() else None


def _bound_names(body: list[ast.stmt]) -> set[str] | None:
    """The names a module binds at its top level (``None``: any name, a ``__getattr__`` or a
    star import)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            for block in blocks:
                inner = _bound_names(block)
                if inner is None:
                    return None
                names |= inner
    return names


def _culturebench_imports(path: Path, current: str | None) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` for each import of ``culturebench`` in a file: ``names`` are a
    ``from`` import's names (empty for ``import``); relative imports resolved for package files."""
    out: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (not node.level or current):
            base = _resolve(node.module or "", node.level, current or "", path.name == "__init__.py")
            out.append((node.lineno, base, [alias.name for alias in node.names]))
    return [(line, m, n) for line, m, n in out if m == "culturebench" or m.startswith("culturebench.")]


def _owner(module: str) -> str:
    """The package a module belongs to: ``culturebench`` for its top-level modules, a first-level
    sub-package (``culturebench.eval``), or a dataset's package (``culturebench.datasets.x``)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "datasets":
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if len(parts) > 1 and parts[1] in _first_level_packages() else "culturebench"


def _first_level_packages() -> set[str]:
    return {entry.name for entry in PACKAGE.iterdir() if entry.is_dir() and entry.name != "__pycache__"}


def test_the_package_is_the_tree_on_disk() -> None:
    """Each repository folder the package holds is a link inside ``culturebench/`` (the one
    place the mapping is written), and the walk through them finds every shared folder."""
    links = {entry.name: entry.resolve() for entry in PACKAGE.iterdir() if entry.is_symlink()}
    assert links == {name: REPO / name for name in ("builders", "cards", "datasets", "eval", "validation")}
    assert all(os.readlink(PACKAGE / name) == f"../{name}" for name in links)  # relative: any clone
    modules = _modules()
    assert modules["culturebench.eval.score"].resolve() == REPO / "eval" / "score.py"
    assert modules["culturebench.datasets.borsch"].resolve() == REPO / "datasets" / "borsch" / "__init__.py"
    assert not any(
        name.split(".")[1:2] in (["culturebench"], ["tests"], ["scripts"], ["setup"]) for name in modules
    )


def test_every_culturebench_import_names_a_file() -> None:
    """Every ``import culturebench...`` / ``from culturebench... import name`` of the checkout
    (package, tests, scripts, benchmarks) resolves statically: the module is a file (or a
    namespace folder) under ``culturebench/``, and each name a sub-module or a name the module
    binds. Nothing is imported: this is what a static tool sees."""
    modules = _modules()
    by_file = {path.resolve(): name for name, path in modules.items()}
    bound: dict[Path, set[str] | None] = {}
    problems = []
    files = _checkout_files()
    assert len(files) > 300 and REPO / "tests" / "conftest.py" in files
    seen = 0
    for path in files:
        for line, module, names in _culturebench_imports(path, by_file.get(path.resolve())):
            seen += 1
            where = f"{path.relative_to(REPO)}:{line}"
            target = _static_target(module, modules)
            if target is None:
                problems.append(f"{where}: {module} is no file under culturebench/")
                continue
            for name in names:
                if _static_target(f"{module}.{name}", modules) is not None:
                    continue
                if target.is_file() and target not in bound:
                    bound[target] = _bound_names(ast.parse(target.read_text(encoding="utf-8")).body)
                known = bound.get(target, set()) if target.is_file() else set()
                if known is not None and name not in known:
                    problems.append(f"{where}: {module} has no {name}")
    assert seen > 1000
    assert problems == [], "\n".join(problems)


def test_no_module_imports_a_private_name_of_another_package() -> None:
    """``from culturebench.eval.x import _helper`` in ``culturebench.site``: a private name is
    its package's own; another package asks for a public one."""
    problems = []
    for name, path in _modules().items():
        for line, module, names in _culturebench_imports(path, name):
            if _owner(module) == _owner(name):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private += [p for p in module.split(".") if p.startswith("_") and not p.startswith("__")]
            if private:
                problems.append(f"{path.relative_to(REPO)}:{line}: {module}: {', '.join(private)}")
    assert problems == [], "\n".join(problems)


def test_the_checks_see_what_they_check() -> None:
    """The readers are not vacuous: a private name across packages and a missing module are caught."""
    assert _owner("culturebench.eval.tasks.base") == "culturebench.eval"
    assert _owner("culturebench.datasets.borsch.tasks") == "culturebench.datasets.borsch"
    assert _owner("culturebench.registry") == _owner("culturebench.spec") == "culturebench"
    modules = _modules()
    assert _static_target("culturebench.eval.nonexistent", modules) is None
    assert _static_target("culturebench.datasets", modules) == PACKAGE / "datasets"  # namespace
    assert _bound_names(ast.parse("if x:\n    A = 1\nelse:\n    def b(): pass\n").body) == {"A", "b"}
