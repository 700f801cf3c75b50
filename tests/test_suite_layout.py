"""The suite's own rules: every test module declares its tier (tests/conftest.py), and a fixture
of the plugins in tests/fixtures/ is defined once (a test module does not build its own copy
of a shared release under the same name)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parent
TIERS = {"unit", "integration", "e2e"}


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts)


def _mark_names(node: ast.expr) -> list[str]:
    """``pytest.mark.NAME`` / ``pytest.mark.NAME(...)`` names in a ``pytestmark`` value."""
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    names = []
    for item in items:
        target = item.func if isinstance(item, ast.Call) else item
        if isinstance(target, ast.Attribute):
            names.append(target.attr)
    return names


def declared_tiers(path: Path) -> list[str]:
    """The tiers the module-level ``pytestmark`` of ``path`` declares."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            return [n for n in _mark_names(node.value) if n in TIERS]
    return []


def _fixtures(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if isinstance(target, ast.Attribute) and target.attr == "fixture":
                    out.add(node.name)
    return out


def test_every_test_module_declares_one_tier() -> None:
    modules = _modules()
    assert len(modules) > 50
    wrong = {str(p.relative_to(TESTS)): declared_tiers(p) for p in modules if len(declared_tiers(p)) != 1}
    assert wrong == {}, "declare one tier per module: pytestmark = pytest.mark.unit (or integration, e2e)"


def test_declared_tiers_are_read_from_the_module_mark() -> None:
    source = "import pytest\npytestmark = [pytest.mark.e2e, pytest.mark.extra('eval')]\n"
    tree = ast.parse(source)
    assert _mark_names(tree.body[1].value) == ["e2e", "extra"]


def test_shared_fixtures_are_not_redefined_in_test_modules() -> None:
    shared = set().union(*(_fixtures(p) for p in (TESTS / "fixtures").glob("*.py")))
    assert {"build_release", "borsch_release", "rubin_release", "ash_release", "foodieqa_release"} <= shared
    redefined = {str(p.relative_to(TESTS)): sorted(_fixtures(p) & shared) for p in _modules()}
    assert {k: v for k, v in redefined.items() if v} == {}
