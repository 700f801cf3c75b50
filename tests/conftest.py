"""The suite's environment (no hub, no real token, isolated caches, the installed culturebench),
its fixture plugins (tests/fixtures/), and its tiers.

Tiers: every test module declares its tier, ``pytestmark = pytest.mark.unit`` (or
``integration``, ``e2e``; a list when it has other marks too), and a test that differs from its
module declares its own, ``@pytest.mark.e2e``:

- unit: no subprocess, no server, no model, no upstream snapshot (`pytest -m unit`, the fast tier);
- integration: starts a server or a subprocess, or reads the real upstream snapshots;
- e2e: runs a model (a tiny one, SmolLM2, a harness, vLLM) or the docs in order.

A module without a tier is an error at collection."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

# Nothing in the suite may reach a hub, or see a real token. HF_HOME must be set before
# huggingface_hub is first imported (its paths are read at import time).
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="cb-hf-home-")
os.environ.pop("HF_TOKEN", None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# The response cache shared across runs is off for the suite (each test's runs are its own);
# tests/test_response_cache.py turns it on with a folder of its own.
os.environ["CULTUREBENCH_RESPONSE_CACHE"] = "off"

REPO = Path(__file__).resolve().parent.parent

# The suite tests the installed culturebench (an editable install maps it to this checkout; a
# wheel install is the wheel), never the checkout's folder picked up because Python puts the
# current folder first: drop the repository root from sys.path here, and keep subprocesses
# (``python -c``, ``python -m culturebench`` run from the root) from adding it (Python 3.11+).
# (``tests`` itself is imported as a package by pytest, ``--import-mode=importlib``.)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO]
os.environ["PYTHONSAFEPATH"] = "1"

pytest_plugins = [
    "tests.fixtures.extras",
    "tests.fixtures.upstream",
    "tests.fixtures.services",
    "tests.fixtures.models",
    "tests.fixtures.releases",
    "tests.fixtures.wwd_scoring",
]

TIERS = ("unit", "integration", "e2e")


@pytest.fixture(scope="session", autouse=True)
def _isolated_caches(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("cache")
    os.environ["CULTUREBENCH_CACHE"] = str(cache / "culturebench")


def _tiers(marks: list[pytest.Mark]) -> list[str]:
    return [m.name for m in marks if m.name in TIERS]


def module_tier(module: pytest.Module) -> str:
    """The tier ``module`` declares in its ``pytestmark``; :class:`pytest.UsageError` naming
    the module when it declares none or several."""
    declared = _tiers(module.own_markers)
    if len(declared) != 1:
        raise pytest.UsageError(
            f"{module.path}: declare the module's tier, one of {', '.join(TIERS)}: "
            f"pytestmark = pytest.mark.unit (found: {', '.join(declared) or 'none'})"
        )
    return declared[0]


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test gets exactly one tier marker: its own when it declares one, else its module's
    (moved from the module to its tests, so that `-m unit` never selects a test that declares
    another tier)."""
    tiers: dict[pytest.Module, str] = {}
    for item in items:
        module = item.getparent(pytest.Module)
        if module is None:
            continue
        if module not in tiers:
            tiers[module] = module_tier(module)
            module.own_markers[:] = [m for m in module.own_markers if m.name not in TIERS]
        own = _tiers([m for node in item.listchain() if node is not module for m in node.own_markers])
        if len(own) > 1:
            raise pytest.UsageError(f"{item.nodeid}: more than one tier ({', '.join(own)})")
        if not own:
            item.add_marker(tiers[module])
