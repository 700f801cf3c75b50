"""Packaging: one import name in site-packages, declarative data shipped in the wheel,
and the repo's top-level ``datasets/`` folder never shadows Hugging Face ``datasets``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from culturebench.registry import builtin_names

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
DATASETS = builtin_names()  # what this checkout ships, from the registry


def _clean_copy(dest: Path) -> Path:
    """The working tree as git sees it (tests/tree_copy.py)."""
    from tests.tree_copy import clean_copy

    return clean_copy(dest)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    tree = _clean_copy(tmp_path_factory.mktemp("tree") / "culturebench")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(tree),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return next(out.glob("culturebench-*.whl"))


def test_wheel_has_a_single_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"culturebench"}
    for module in (
        "builders/base.py",
        "validation/release.py",
        "cards/croissant.py",
        "cards/paper.py",
        "eval/__init__.py",
        "cli/application.py",
        "cli/__main__.py",
        "registry.py",
        "release/pipeline.py",
        "eval/runner.py",
        "eval/backends/vllm_backend.py",
        "images/stage.py",
        "urlcheck/checker.py",
        *(f"datasets/{name}/{part}.py" for name in DATASETS for part in ("builder", "checks", "tasks")),
        "datasets/borsch/sections.py",
        "eval/run_folder.py",
        "eval/dataset_ref.py",
        "cli/options.py",
        "datasets/rubin/cli.py",
        "datasets/ash/cli.py",
    ):
        assert f"culturebench/{module}" in names
    # nothing left over from the old layout (a stale build folder would ship these)
    assert not any(
        n.startswith(("culturebench/builders/borsch", "culturebench/eval/tasks/borsch")) for n in names
    )
    # every package below the installed folders was found (setup.py), none listed by hand,
    # with the data files of its non-package sub-folders
    for folder in ("eval/corpus", "eval/backends", "eval/tasks", "datasets/wwd"):
        assert f"culturebench/{folder}/__init__.py" in names
    for data in ("cards/templates/", "datasets/rubin/sample/", "datasets/wwd/test_suites/", "eval/data/"):
        assert any(n.startswith(f"culturebench/{data}") for n in names), data


def test_installed_wheel_discovers_every_dataset(wheel: Path, tmp_path: Path) -> None:
    """The registry works from an installed wheel, where ``culturebench/datasets`` is a
    namespace package inside the package (not the checkout's top-level folder)."""
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    code = (
        "import culturebench, json; from culturebench import registry; "
        "e = registry.datasets(); print(json.dumps([culturebench.__file__, "
        "{n: str(x.folder) for n, x in e.items()}, sorted(registry.get('borsch').tasks())]))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("CULTUREBENCH_DATASETS", None)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, capture_output=True, text=True
    )
    location, folders, tasks = json.loads(out.stdout)
    assert location.startswith(str(site))
    assert sorted(folders) == sorted(DATASETS)
    assert all(folder.startswith(str(site / "culturebench" / "datasets")) for folder in folders.values())
    assert "origin-qa" in tasks


def test_wheel_ships_declarative_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in (
        "datasets/borsch/dataset.yaml",
        "datasets/borsch/datasheet.yaml",
        "datasets/borsch/CHANGELOG.md",
        "datasets/borsch/images_manifest.csv",
        "datasets/borsch/sample/RU_DATA.xlsx",
        "datasets/borsch/sample/images_manifest.csv",
        "datasets/borsch/sample/images/data/RU/images/1/image_849.png",  # the drawn stand-ins
        "cards/templates/dataset_card.md.j2",
        "datasets/borsch/prompts.yaml",
        "eval/data/country_aliases.yaml",
        "datasets/wwd/dataset.yaml",
        "datasets/wwd/prompts.yaml",
        "datasets/borsch/image_policy.yaml",
        "datasets/rubin/dataset.yaml",
        "datasets/rubin/prompts.yaml",
        "datasets/rubin/sample/questions.jsonl",
        "datasets/rubin/sample/human_answers.csv",
        "datasets/rubin/sample/SAMPLE.md",
        "datasets/foodieqa/dataset.yaml",
        "datasets/foodieqa/prompts.yaml",
        "datasets/foodieqa/image_policy.yaml",
        "datasets/ash/dataset.yaml",
        "datasets/ash/cuisines.yaml",
        "datasets/ash/prompts.yaml",
        "py.typed",  # PEP 561: the package's own types reach the tools of those who install it
    ):
        assert f"culturebench/{data}" in names


def test_repo_datasets_folder_does_not_shadow_hf_datasets() -> None:
    assert not (REPO / "datasets" / "__init__.py").exists()
    found = subprocess.run(
        [sys.executable, "-c", "import datasets; print(datasets.__file__)"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert "site-packages" in found and not found.startswith(str(REPO / "datasets"))


def test_only_the_package_imports_from_the_repo_root() -> None:
    """From the repository root (the current folder first on ``sys.path``) the checkout's other
    folders are not sub-packages: ``culturebench.culturebench`` was a second copy with its own
    ``CultureBenchError``, and ``import culturebench.setup`` ran setup.py. ``find_spec`` looks
    without running any of them."""
    code = (
        "import importlib.util, json, sys, culturebench; "
        "names = ['culturebench.culturebench', 'culturebench.setup', 'culturebench.tests', "
        "'culturebench.scripts', 'culturebench.docs', 'culturebench.eval', 'culturebench.datasets']; "
        "print(json.dumps([{n: importlib.util.find_spec(n) is not None for n in names}, "
        "list(culturebench.__path__), [getattr(f, '__module__', '') for f in sys.meta_path]]))"
    )
    found, path, finders = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True
        ).stdout
    )
    assert found == {
        "culturebench.culturebench": False,
        "culturebench.setup": False,
        "culturebench.tests": False,
        "culturebench.scripts": False,
        "culturebench.docs": False,
        "culturebench.eval": True,
        "culturebench.datasets": True,
    }
    assert path == [str(REPO / "culturebench")]  # one folder, nothing appended at import time
    assert not any(module.startswith("culturebench") for module in finders)
