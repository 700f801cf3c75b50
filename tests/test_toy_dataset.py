"""A new dataset needs only its own folder.

``tests/data/toy_dataset/culturebench_toy`` is a complete dataset (declarations, builder,
checks, task) in a package of its own. It is installed the way a third party's package is:
a ``.dist-info`` with an entry point in the group ``culturebench.datasets`` on ``sys.path``.
Then it is built, validated, loaded with ``datasets.load_dataset``, evaluated on the tiny
local model and reported, through the Python API and the command line, and not one file of
this repository changes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench import registry
from culturebench.cli import app

REPO = Path(__file__).resolve().parent.parent
TOY = Path(__file__).resolve().parent / "data" / "toy_dataset" / "culturebench_toy"


def _install(site: Path) -> None:
    """What `pip install culturebench-toy` leaves behind: the package and its metadata."""
    shutil.copytree(TOY, site / "culturebench_toy")
    info = site / "culturebench_toy-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: culturebench-toy\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[culturebench.datasets]\ntoy = culturebench_toy\n")


@pytest.fixture
def toy_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import importlib

    def forget() -> None:  # each test installs its own copy: drop the previous one's modules
        for name in [m for m in sys.modules if m == "culturebench_toy" or m.startswith("culturebench_toy.")]:
            del sys.modules[name]
        importlib.invalidate_caches()

    site = tmp_path / "site"
    site.mkdir()
    _install(site)
    forget()
    monkeypatch.syspath_prepend(str(site))
    yield site
    forget()


def _repo_state() -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_toy_dataset_end_to_end(toy_site: Path, tmp_path: Path, tiny_model: Path) -> None:
    from culturebench.builders import get_builder
    from culturebench.eval.backends.base import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend
    from culturebench.eval.runner import run_eval
    from culturebench.validation import validate_release
    from datasets import load_dataset

    before = _repo_state()
    entry = registry.get("toy")
    assert entry.origin == "culturebench-toy 0.1.0" and entry.folder == toy_site / "culturebench_toy"
    result = get_builder("toy").build(out_root=tmp_path / "dist")
    assert result.report.ok and "cross:one_capital_per_country" in result.report.checks_run
    assert validate_release(result.folder).ok
    rows = load_dataset(str(result.folder), "default", split="test")
    assert rows["capital"] == ["Paris", "Tokyo", "Nairobi"]
    backend = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=6))
    out = tmp_path / "run"
    results = run_eval("toy", "capital", backend, out, local=str(result.folder))
    assert results["samples"] == 6 and results["metrics"]["n_countries"] == 3
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## toy / capital" in report and "| all | accuracy |" in report and "| 6 (3 countries) |" in report
    assert _repo_state() == before


def test_toy_dataset_from_the_command_line(toy_site: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(toy_site), "COLUMNS": "250"}
    exe = str(Path(sys.executable).with_name("culturebench"))
    listed = subprocess.run([exe, "list"], capture_output=True, text=True, env=env, check=True).stdout
    assert "toy" in listed and "culturebench-toy" in listed
    built = subprocess.run(
        [exe, "build", "toy", "--out", str(tmp_path / "dist")], capture_output=True, text=True, env=env
    )
    assert built.returncode == 0, built.stderr
    tasks = subprocess.run([exe, "eval", "list"], capture_output=True, text=True, env=env, check=True).stdout
    assert "capital" in tasks


def test_broken_dataset_fails_at_discovery(toy_site: Path) -> None:
    (toy_site / "culturebench_toy" / "checks.py").unlink()
    with pytest.raises(registry.RegistryError, match=r"code\.checks names culturebench_toy\.checks"):
        registry.datasets()
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_a_name_taken_twice_is_refused(toy_site: Path) -> None:
    info = toy_site / "culturebench_toy-0.1.0.dist-info" / "entry_points.txt"
    info.write_text("[culturebench.datasets]\nborsch = culturebench_toy\n")
    with pytest.raises(registry.RegistryError, match="registered twice"):
        registry.datasets()


def test_shared_modules_name_no_dataset() -> None:
    """The issue's grep: dataset names appear in shared code only in comments/docstrings."""
    import re

    names = re.compile(r"\b(borsch|wwd|rubin|foodieqa|ash)\b")
    hits = []
    for folder in ("culturebench", "builders", "validation", "eval", "cards"):
        for path in (REPO / folder).rglob("*.py"):
            in_doc = False
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                stripped = line.strip()
                quotes = stripped.count('"""')
                if quotes == 1:
                    in_doc = not in_doc
                    continue
                if in_doc or quotes >= 2 or stripped.startswith("#"):
                    continue
                code = stripped.split("#", 1)[0]
                if names.search(code):
                    hits.append(f"{path.relative_to(REPO)}:{number}: {stripped}")
    assert hits == []


def test_readme_task_list_matches_the_registry() -> None:
    import re

    from culturebench.eval.tasks import registry as task_registry

    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- tasks:start -->")[1].split("<!-- tasks:end -->")[0]
    listed = {
        m.group(1): re.findall(r"`([^`]+)`", m.group(2))
        for m in re.finditer(r"^\| `(\w+)` \| (.+) \|$", block, re.MULTILINE)
    }
    assert listed == {name: list(tasks) for name, tasks in task_registry().items()}
