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

pytestmark = pytest.mark.integration

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


@pytest.mark.e2e
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
    """The issue's grep: dataset names appear in shared code only in comments/docstrings.

    Then an ``ast`` walk over every shared module, docstrings and other bare string statements
    left out: no identifier and no identifier-like string constant (one without whitespace,
    e.g. ``"ru"``, ``"name_uk"``, ``"culturebench/borsch"``, ``"non_russian_option"``) has a
    part (split at ``_``, ``.``, ``-``, ``/`` ...) that is a dataset's name, a language a dataset
    declares (``dataset.yaml`` ``languages``, less the shared ``en`` and ``mul``) or that
    language's English name. Prose (help texts, messages) may name them. A language table that
    is genuinely generic is allowed by name below.
    """
    import ast
    import re

    import yaml
    from babel import Locale

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

    words: set[str] = set()  # what names a dataset: its name, its own languages and their names
    for declared in (REPO / "datasets").glob("*/dataset.yaml"):
        data = yaml.safe_load(declared.read_text(encoding="utf-8"))
        langs = {str(code).lower() for code in data.get("languages") or []} - {"en", "mul"}
        words |= {declared.parent.name, str(data["name"]).lower()} | langs
        words |= {Locale.parse(code).english_name.lower() for code in langs}
    assert {"borsch", "rubin", "ru", "uk", "zh", "russian", "chinese"} <= words
    # Generic language tables (module, name), each with the reason it is not a dataset's:
    allowed = {
        # the languages the country extractor knows country names in (CLDR + its alias file);
        # BORSCH and WWD tasks and the corpus count (`--lang`) use it
        ("eval/country_extractor.py", "LANGUAGES"),
        # the pymorphy3 dictionaries installed (pyproject: pymorphy3-dicts-ru, -uk)
        ("eval/country_extractor.py", "MORPH_LANGUAGES"),
    }

    def parts(text: str) -> set[str]:
        return {part for part in re.split(r"[^0-9a-z]+", text.lower()) if part}

    hits = []
    for folder in ("culturebench", "builders", "validation", "eval", "cards"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            skip = {  # docstrings and other bare strings (documentation, not code)
                id(node.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            }
            for node in tree.body:  # allowed tables: module-level `NAME = (...)`
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets = [node.target]
                else:
                    continue
                if any(isinstance(t, ast.Name) and (rel, t.id) in allowed for t in targets):
                    skip |= {id(n) for n in ast.walk(node.value)}
            for node in ast.walk(tree):
                if id(node) in skip:
                    continue
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    texts = [] if re.search(r"\s", node.value.strip()) else [node.value]
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    texts = [node.name]
                elif isinstance(node, ast.Name):
                    texts = [node.id]
                elif isinstance(node, ast.Attribute):
                    texts = [node.attr]
                elif isinstance(node, (ast.arg, ast.keyword)):
                    texts = [node.arg or ""]
                elif isinstance(node, ast.alias):
                    texts = [node.name, node.asname or ""]
                elif isinstance(node, ast.ImportFrom):
                    texts = [node.module or ""]
                else:
                    continue
                for text in texts:
                    if parts(text) & words:
                        hits.append(f"{rel}:{getattr(node, 'lineno', '?')}: {text!r}")
    assert hits == []


def test_readme_task_list_matches_the_registry() -> None:
    """The task table of docs/evaluating.md (linked from the README) equals the registry:
    scripts/docs_tables.py writes it, so a new dataset or task edits no doc by hand."""
    import importlib.util
    import re

    from culturebench.eval.tasks import registry as task_registry

    spec = importlib.util.spec_from_file_location("docs_tables", REPO / "scripts" / "docs_tables.py")
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    text = (REPO / "docs" / "evaluating.md").read_text(encoding="utf-8")
    assert tables.updated(text) == text, "docs/evaluating.md is out of date: run scripts/docs_tables.py"
    block = text.split("<!-- tasks:start -->")[1].split("<!-- tasks:end -->")[0]
    listed = {
        m.group(1): re.findall(r"`([^`]+)`", m.group(2))
        for m in re.finditer(r"^\| `(\w+)` \| (.+) \|$", block, re.MULTILINE)
    }
    assert listed == {name: list(tasks) for name, tasks in task_registry().items()}


NEW_TASK = '''
from culturebench.eval.tasks.base import Task


class CapitalInitial(Task):
    """A new question about the same rows: the first letter of the capital."""

    name = "capital-initial"
    config = "default"
    languages = ("en",)

    def meta(self, row, lang):
        return {"gold": row["capital"][0]}

    def score(self, meta, output):
        return {"correct": float(output.strip()[:1].upper() == meta["gold"])}

    def aggregate(self, samples):
        return {"n": len(samples), "accuracy": sum(s["correct"] for s in samples) / len(samples)}


TASKS = {CapitalInitial.name: CapitalInitial}
'''


def _add_task(package: Path, module: str = "initial", source: str = NEW_TASK) -> None:
    """What adding a task to a dataset takes: a module in its folder, its prompts (with its
    Hub ``eval.yaml`` task, ``hub:``), one word in ``dataset.yaml`` (nothing in culturebench
    itself)."""
    (package / f"{module}.py").write_text(source, encoding="utf-8")
    prompts = package / "prompts.yaml"
    prompts.write_text(
        prompts.read_text(encoding="utf-8")
        + "  capital-initial:\n    description: First letter of the capital.\n    en:\n"
        + '      - "With which letter does the capital of {country} begin?"\n'
        + "    hub: {input: country, target: capital, scorer: match,\n"
        + "          result: {metric: accuracy, sample_score: correct}}\n",
        encoding="utf-8",
    )
    spec = package / "dataset.yaml"
    spec.write_text(
        spec.read_text(encoding="utf-8").replace("  tasks: tasks\n", f"  tasks: tasks, {module}\n"),
        encoding="utf-8",
    )


@pytest.mark.e2e
def test_a_new_task_touches_only_the_dataset_folder(toy_site: Path, tmp_path: Path, tiny_model: Path) -> None:
    """A new question about the toy's rows is a short declaration in the toy's own folder;
    the shared request loop asks it (ids ``<row>:<lang>:<template>``), the runner runs it."""
    from culturebench.builders import get_builder
    from culturebench.eval.backends.base import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend
    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval
    from culturebench.eval.tasks import get_task

    before = _repo_state()
    _add_task(toy_site / "culturebench_toy")
    tasks = registry.get("toy").tasks()
    assert list(tasks) == ["capital", "capital-initial"]
    task = get_task("toy", "capital-initial")
    assert task.dataset == "toy"  # from the entry point's name, written nowhere in the task
    release = get_builder("toy").build(out_root=tmp_path / "dist").folder
    backend = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=4))
    results = run_eval("toy", "capital-initial", backend, tmp_path / "run", local=str(release))
    assert results["samples"] == 3 and results["metrics"]["n"] == 3
    samples = read_samples(tmp_path / "run" / "samples.jsonl")
    assert [s["id"] for s in samples] == ["toy-1:en:0", "toy-2:en:0", "toy-3:en:0"]
    assert [s["gold"] for s in samples] == ["P", "T", "N"]
    assert samples[1]["prompt"] == "With which letter does the capital of Japan begin?"
    assert _repo_state() == before


def test_a_task_claiming_another_dataset_is_refused(toy_site: Path) -> None:
    claims = NEW_TASK.replace(
        '    name = "capital-initial"', '    dataset = "borsch"\n    name = "capital-initial"'
    )
    _add_task(toy_site / "culturebench_toy", source=claims)
    with pytest.raises(registry.RegistryError, match="says it belongs to 'borsch'"):
        registry.get("toy").tasks()


def test_a_task_name_in_another_style_is_refused(toy_site: Path) -> None:
    _add_task(
        toy_site / "culturebench_toy", source=NEW_TASK.replace('"capital-initial"', '"capital_initial"')
    )
    with pytest.raises(registry.RegistryError, match="not lowercase words joined by hyphens"):
        registry.get("toy").tasks()


def test_dataset_yaml_name_must_be_the_folders(toy_site: Path) -> None:
    spec = toy_site / "culturebench_toy" / "dataset.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("name: toy\n", "name: toys\n"))
    with pytest.raises(registry.RegistryError, match="name 'toys' is not the dataset's name 'toy'"):
        registry.datasets()
