"""Packaging: one import name in site-packages, declarative data shipped in the wheel,
and the repo's top-level ``datasets/`` folder never shadows Hugging Face ``datasets``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
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
            str(REPO),
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
        "builders/borsch.py",
        "validation/borsch.py",
        "cards/croissant.py",
        "eval/__init__.py",
        "cli.py",
        "release/pipeline.py",
        "eval/runner.py",
        "eval/backends/vllm_backend.py",
        "eval/tasks/borsch.py",
        "eval/tasks/wwd.py",
        "images/stage.py",
        "urlcheck/checker.py",
        "builders/wwd.py",
        "validation/wwd.py",
    ):
        assert f"culturebench/{module}" in names


def test_wheel_ships_declarative_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in (
        "datasets/borsch/dataset.yaml",
        "datasets/borsch/datasheet.yaml",
        "datasets/borsch/CHANGELOG.md",
        "datasets/borsch/images_manifest.csv",
        "datasets/borsch/sample/RU_DATA.xlsx",
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
