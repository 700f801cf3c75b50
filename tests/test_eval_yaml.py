"""The Hub benchmark file `eval.yaml` of every release: written with the card, listed in the
manifest, checked by the release gate, and read by Inspect's own loader.

Real releases are built from the shipped or shared upstream data; Inspect's loader reads a
release published to a git repository served by olah (a real Hub download server) and runs a
task on Inspect's mock model; each broken eval.yaml is a copy of a real one with one defect,
which the gate names (file, task id, field), and which Inspect's own pydantic model refuses
where the defect is one it checks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from culturebench.builders import get_builder
from culturebench.cards.eval_yaml import (
    EVALUATION_FRAMEWORKS,
    check_eval_yaml,
    render_eval_yaml,
)
from culturebench.cli import app
from culturebench.errors import CultureBenchError
from culturebench.eval.harness.common import harness_tasks
from culturebench.hashing import sha256_file
from culturebench.manifest import read_manifest, write_manifest
from culturebench.spec import load_spec
from culturebench.validation import validate_release

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
DATASETS = ("ash", "borsch", "foodieqa", "rubin", "wwd")


def _load(folder: Path) -> dict:
    return yaml.safe_load((folder / "eval.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def releases(request: pytest.FixtureRequest) -> dict[str, Path]:
    """One real release per dataset: BORSCH and WWD from the shared upstream (session
    fixtures), RuBIN and CulinaryASH from what the repository ships, FoodieQA from a download
    in the upstream layout."""
    names = ("borsch", "wwd", "rubin", "ash", "foodieqa")
    return {name: request.getfixturevalue(f"{name}_release").folder for name in names}


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_release_has_a_valid_eval_yaml(releases: dict[str, Path], dataset: str) -> None:
    folder = releases[dataset]
    data = _load(folder)
    assert check_eval_yaml(folder) == []
    assert list(data) == ["name", "description", "evaluation_framework", "tasks"]
    assert data["evaluation_framework"] == "inspect-ai" and "inspect-ai" in EVALUATION_FRAMEWORKS
    ids = [task["id"] for task in data["tasks"]]
    assert ids == [cls.name for cls in harness_tasks(dataset)]  # the task_ids of .eval_results
    for name in ids:  # the description names the real tasks and where the values come from
        assert f"culturebench/{dataset}_{name.replace('-', '_')}" in data["description"]
    assert "pip install culturebench[interop]" in data["description"]
    assert ".eval_results" in data["description"]
    manifest = read_manifest(folder)
    assert manifest["files"]["eval.yaml"] == sha256_file(folder / "eval.yaml")  # uploaded with it
    assert "eval.yaml" in validate_release(folder, croissant_records=False).checks_run
    text = (folder / "eval.yaml").read_text(encoding="utf-8")
    assert text == render_eval_yaml(load_spec(dataset), manifest["version"])  # `card` rewrites it


@pytest.mark.parametrize("dataset", DATASETS)
def test_inspect_accepts_every_task(releases: dict[str, Path], dataset: str) -> None:
    """Inspect's own pydantic model of an eval.yaml task (extra keys forbidden, solver and
    scorer names a Literal) validates every task of every release."""
    pytest.importorskip("inspect_ai")
    from inspect_ai._eval.task.hf import HFTask

    for task in _load(releases[dataset])["tasks"]:
        HFTask.model_validate(task)


def test_the_prompt_template_is_the_papers_first_prompt(releases: dict[str, Path]) -> None:
    """Template fields become the input ({prompt}) or metadata columns; a shared opening
    sentence the task adds in its own render() is kept."""
    tasks = {t["id"]: t for t in _load(releases["wwd"])["tasks"]}
    template = tasks["ingredients"]["solvers"][0]["args"]["template"]
    assert template.startswith("Given an item of food called {prompt}, you are tasked")
    assert "What are the ingredients for {prompt} from {countries[0][name]}?" in template
    assert "countries" in tasks["ingredients"]["field_spec"]["metadata"]
    rubin = {t["id"]: t for t in _load(releases["rubin"])["tasks"]}
    assert rubin["mcqa"]["solvers"] == [{"name": "multiple_choice"}]
    assert rubin["mcqa"]["field_spec"]["choices"] == "options"


# ------------------------------------------------------------------- the release gate
def _edited(release: Path, tmp_path: Path, edit: Callable[[dict], None]) -> Path:
    """A copy of ``release`` whose eval.yaml is edited (manifest checksum kept consistent)."""
    folder = tmp_path / "release"
    shutil.copytree(release, folder)
    data = _load(folder)
    edit(data)
    (folder / "eval.yaml").write_text(
        yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    manifest = read_manifest(folder)
    manifest["files"]["eval.yaml"] = sha256_file(folder / "eval.yaml")
    write_manifest(folder, manifest)
    return folder


def _task(data: dict, index: int = 0) -> dict:
    return data["tasks"][index]


BROKEN = {
    "unknown framework": (
        lambda d: d.update(evaluation_framework="lm-eval"),
        "evaluation_framework",
        "'lm-eval' is not one of the Hub's",
        False,
    ),
    "a column that does not exist": (
        lambda d: _task(d)["field_spec"].update(target="origin_names_xx"),
        "tasks[origin-qa].field_spec.target",
        "'origin_names_xx' is not a column of the config",
        False,
    ),
    "an extra key": (
        lambda d: _task(d).update(task="culturebench/borsch_origin_qa"),
        "tasks[origin-qa].task",
        "unknown key 'task' (Inspect's HFTask forbids it)",
        True,
    ),
    "duplicate ids": (
        lambda d: _task(d, 1).update(id="origin-qa"),
        "tasks[origin-qa].id",
        "task id 'origin-qa' is declared twice",
        False,
    ),
    "a custom scorer": (
        lambda d: _task(d).update(scorers=[{"name": "culturebench/contains_country"}]),
        "tasks[origin-qa].scorers[0].name",
        "'culturebench/contains_country' is not an Inspect built-in",
        True,
    ),
    "a config the release lacks": (
        lambda d: _task(d).update(config="be"),
        "tasks[origin-qa].config",
        "config 'be' is not in the release",
        False,
    ),
    "a split the config lacks": (
        lambda d: _task(d).update(split="train"),
        "tasks[origin-qa].split",
        "config 'parallel' has no split 'train'",
        False,
    ),
    "a list target compared as text": (
        lambda d: _task(d).update(scorers=[{"name": "includes"}]),
        "tasks[origin-qa].field_spec.target",
        "is not a single value (Inspect compares its Python repr)",
        False,
    ),
    "a placeholder Inspect cannot fill": (
        lambda d: _task(d)["solvers"][0]["args"].update(template="Откуда блюдо {dish}?"),
        "tasks[origin-qa].solvers[0].args.template",
        "placeholder {dish} is neither {prompt} nor a metadata column",
        False,
    ),
    "no field_spec": (
        lambda d: _task(d).pop("field_spec"),
        "tasks[origin-qa].field_spec",
        "field_spec (input, target, ...) is required with inspect-ai",
        True,
    ),
    "no name": (lambda d: d.pop("name"), "name", "eval.yaml: no 'name' (required)", False),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_eval_yaml_fails_the_gate_naming_the_field(
    borsch_release, tmp_path: Path, case: str
) -> None:
    edit, field, message, inspect_refuses = BROKEN[case]
    folder = _edited(borsch_release.folder, tmp_path, edit)
    report = validate_release(folder, croissant_records=False)
    assert not report.ok
    found = [f for f in report.errors if f.check == "eval.yaml" and f.field == field]
    assert found, [(f.check, f.field, f.message) for f in report.errors]
    assert all(f.message.startswith("eval.yaml: ") for f in found)
    assert any(message in f.message for f in found), [f.message for f in found]
    # and the hand edit is also caught as a file that is not what the release renders
    assert any(f.check == "card:regenerated" and f.field == "eval.yaml" for f in report.errors)
    if inspect_refuses and "tasks[" in field:
        pytest.importorskip("inspect_ai")
        from inspect_ai._eval.task.hf import HFTask
        from pydantic import ValidationError

        with pytest.raises(ValidationError):
            HFTask.model_validate(_task(_load(folder)))


def test_a_missing_or_unreadable_eval_yaml_fails_the_gate(borsch_release, tmp_path: Path) -> None:
    folder = tmp_path / "release"
    shutil.copytree(borsch_release.folder, folder)
    (folder / "eval.yaml").write_text("tasks: [\n", encoding="utf-8")
    assert [p.field for p in check_eval_yaml(folder)] == ["eval.yaml"]
    assert "does not parse as YAML" in check_eval_yaml(folder)[0].message
    (folder / "eval.yaml").unlink()
    report = validate_release(folder, croissant_records=False)
    assert any(f.check == "layout" and f.field == "eval.yaml" for f in report.errors)
    result = CliRunner().invoke(app, ["validate", str(folder), "--no-records"])
    assert result.exit_code == 1 and "eval.yaml" in result.output


def test_a_task_without_hub_declaration_stops_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = tmp_path / "datasets"
    shutil.copytree(REPO / "datasets", datasets)
    prompts = datasets / "rubin" / "prompts.yaml"
    prompts.write_text(prompts.read_text(encoding="utf-8").replace("    hub: *hub\n", ""), encoding="utf-8")
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
    with pytest.raises(CultureBenchError, match=r"prompts\.yaml: task 'mcqa-easy' has no `hub:` mapping"):
        get_builder("rubin").build(out_root=tmp_path / "dist")
    assert not (tmp_path / "dist" / "rubin").exists()


# ------------------------------------------------------------ Inspect's own loader
def test_inspect_loads_and_runs_the_release_from_a_hub(borsch_release, tmp_path: Path, servers) -> None:
    """`inspect eval hf/culturebench/borsch/origin-qa@v1.0.0`, in Python: Inspect downloads
    eval.yaml from a Hub server (olah, over a git repository the release was published to),
    builds every task from it, reads the release's rows, and runs origin-qa on two dishes with
    its mock model: the prompt is the paper's first Russian template with the dish name."""
    pytest.importorskip("inspect_ai")

    code = """
        import json, sys
        from inspect_ai import eval as inspect_eval
        from inspect_ai._eval.task.hf import task_create_from_hf
        from inspect_ai.model import ModelOutput, ModelUsage, get_model

        tasks = task_create_from_hf("hf/culturebench/borsch@v1.0.0")
        first = {t.name.rsplit("/", 1)[1]: t.dataset[0] for t in tasks}
        seen = []

        def answer(messages, tools, tool_choice, config):
            text = messages[-1].text
            seen.append(text)
            reply = "GRADE: C" if "GRADE" in text else "Узбекистан"
            out = ModelOutput.from_content(model="mockllm", content=reply)
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return out

        one = [t for t in tasks if t.name.endswith("/origin-qa")]
        log = inspect_eval(one, model=get_model("mockllm/model", custom_outputs=answer), limit=2,
                           log_dir=sys.argv[1], display="none")[0]
        print(json.dumps({
            "tasks": sorted(first),
            "origin-qa": {"input": first["origin-qa"].input, "target": first["origin-qa"].target,
                          "metadata": first["origin-qa"].metadata},
            "status": log.status,
            "prompts": [s for s in seen if "GRADE" not in s],
            "accuracy": log.results.scores[0].metrics["accuracy"].value,
        }, ensure_ascii=False))
    """
    with servers.local_hub(tmp_path / "hub") as hub:
        shutil.copytree(borsch_release.folder, tmp_path / "dist" / "borsch" / "1.0.0")
        hub.publish("borsch", "1.0.0", out_root=tmp_path / "dist")
        env = hub.client_env(tmp_path / "hf")
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), str(tmp_path / "logs")],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["tasks"] == sorted(cls.name for cls in harness_tasks("borsch"))
    assert (
        got["origin-qa"]["input"] == "ПЛОВ" and got["origin-qa"]["target"] == "['Узбекистан', 'Таджикистан']"
    )
    assert got["origin-qa"]["metadata"] == {"id": "par-ru39-uk61", "origins": ["UZ", "TJ"]}
    assert got["status"] == "success" and got["accuracy"] == 1.0
    assert got["prompts"][0] == "Из какой страны или каких стран происходит блюдо ПЛОВ?"
    assert len(got["prompts"]) == 2
