"""FoodieQA: the converter turns a synthetic download in the exact upstream layout (the shipped
sample's generator plus upstream's quirks, tests/fixtures/releases.py) into three configs with
embedded images and normalised answers; bad records name file, record and field; the release is
gated by default, publishes and loads; the three tasks build 4 templates x zh/en and run on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturebench.builders.base import get_builder
from culturebench.errors import SourceError
from culturebench.eval.runner import run_eval
from culturebench.eval.tasks import get_task

pytestmark = pytest.mark.integration


def _rows(release, config: str) -> list[dict]:
    from datasets import load_dataset

    return list(load_dataset(str(release.folder), config, split="test"))


def test_converter_builds_three_configs_with_images(foodieqa_release, foodieqa_download: Path) -> None:
    assert foodieqa_release.report.ok
    rows = {
        c: foodieqa_release.manifest["configs"][c]["splits"]["test"]["num_rows"]
        for c in ("multi_image", "single_image", "text")
    }
    assert rows == {"multi_image": 8, "single_image": 8, "text": 8}
    multi = _rows(foodieqa_release, "multi_image")
    source = json.loads((foodieqa_download / "mivqa_tidy.json").read_text(encoding="utf-8"))
    assert [r["label"] for r in multi] == [int(s["answer"]) for s in source]
    first = multi[0]
    assert [img["file"] for img in first["images"]] == source[0]["images"]
    assert first["images"][0]["image"].size == (160, 120)  # decoded from the embedded bytes
    single = _rows(foodieqa_release, "single_image")
    raw = json.loads((foodieqa_download / "sivqa_tidy.json").read_text(encoding="utf-8"))
    assert {type(s["answer"]) for s in raw} == {int, str}  # both spellings upstream...
    assert [r["label"] for r in single] == [int(s["answer"]) for s in raw]  # ...one index here
    text = _rows(foodieqa_release, "text")
    assert sum(r["question_en"] is None for r in text) == 2
    card = (foodieqa_release.folder / "README.md").read_text(encoding="utf-8")
    assert "CC BY-NC-ND 4.0" in card and "gated on the Hub" in card
    assert "user-supplied" in card


def _break(foodieqa_download: Path, tmp_path: Path, file: str, edit) -> Path:
    import shutil

    copy = tmp_path / "download"
    shutil.copytree(foodieqa_download, copy)
    data = json.loads((copy / file).read_text(encoding="utf-8"))
    edit(data, copy)
    (copy / file).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return copy


@pytest.mark.parametrize(
    ("file", "edit", "needle"),
    [
        (
            "mivqa_tidy.json",
            lambda d, root: (root / d[0]["images"][0]).unlink(),
            "record 0, question_id m0], field 'images[0]': image file",
        ),
        (
            "sivqa_tidy.json",
            lambda d, root: d[3].update(answer="4"),
            "record 3, question_id s3], field 'answer': answer 4",
        ),
        ("textqa_tidy.json", lambda d, root: d[1].update(answer=-1), "field 'answer': answer -1"),
        (
            "sivqa_tidy.json",
            lambda d, root: d[0].pop("question_en"),
            "field 'question_en': English translation is missing",
        ),
        (
            "mivqa_tidy.json",
            lambda d, root: d[5].update(question_en=""),
            "record 5, question_id m5], field 'question_en'",
        ),
        ("textqa_tidy.json", lambda d, root: d[0].pop("choices_en"), "translation is partial"),
        ("mivqa_tidy.json", lambda d, root: d[0]["images"].pop(), "field 'images': expected 4 image paths"),
    ],
)
def test_bad_records_name_file_record_and_field(
    foodieqa_download: Path, tmp_path: Path, file, edit, needle
) -> None:
    source = _break(foodieqa_download, tmp_path, file, edit)
    with pytest.raises(SourceError) as err:
        get_builder("foodieqa").build(source=str(source), out_root=tmp_path / "dist")
    assert file in str(err.value) and needle in str(err.value)
    assert not (tmp_path / "dist" / "foodieqa" / "1.0.0").exists()


@pytest.mark.unit
def test_no_source_explains_the_gated_download(tmp_path: Path, monkeypatch) -> None:
    """Without the shipped synthetic sample (datasets/foodieqa/sample/), the error says how to
    get the gated download; with it, the build reads the sample (tests/test_card_usage.py)."""
    from culturebench.spec import DatasetSpec

    monkeypatch.setenv("CULTUREBENCH_UPSTREAM", str(tmp_path))
    monkeypatch.setattr(DatasetSpec, "sample_dir", property(lambda self: tmp_path / "no-sample"))
    with pytest.raises(SourceError, match="FoodieQA is gated"):
        get_builder("foodieqa").build(out_root=tmp_path / "dist")


def test_release_is_gated_by_default_and_loads(foodieqa_release, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from culturebench.cli import app
    from culturebench.release import plan_release, publish_release
    from culturebench.release.targets import GitTarget

    runner = CliRunner()
    dry = runner.invoke(
        app,
        [
            "release",
            "foodieqa",
            "--version",
            "1.0.0",
            "--repo",
            "org/foodieqa",
            "--endpoint",
            "http://127.0.0.1:9",
            "--dry-run",
            "--out",
            str(foodieqa_release.folder.parents[1]),
        ],
    )
    # The flags are decided before any network call; the unreachable endpoint then fails the plan.
    assert "gated" in dry.output or dry.exit_code != 0
    from culturebench.release.targets import hub_flags
    from culturebench.spec import load_spec

    assert hub_flags(load_spec("foodieqa"), None, None) == (False, True)
    assert hub_flags(load_spec("foodieqa"), None, False) == (False, False)
    assert hub_flags(load_spec("borsch"), None, None) == (False, False)

    target = GitTarget(str(tmp_path / "hub" / "foodieqa"))
    plan = plan_release("foodieqa", "1.0.0", target, out_root=foodieqa_release.folder.parents[1])
    assert publish_release(plan, target).verified
    from datasets import load_dataset

    multi = load_dataset(str(tmp_path / "hub" / "foodieqa"), "multi_image", split="test")
    assert multi.num_rows == 8 and len(multi[0]["images"]) == 4


def test_tasks_build_four_templates_per_language_with_images(foodieqa_release) -> None:
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    ref = resolve_dataset("foodieqa", revision=None, local=str(foodieqa_release.folder), repo=None)
    multi = load_rows(ref, "multi_image", "test", None)  # as the runner reads them: encoded bytes
    reqs, skipped = get_task("foodieqa", "multi-image").build(multi, ["zh", "en"])
    assert len(reqs) == 8 * 2 * 4 and skipped == {}
    assert all(len(r.request.images) == 4 for r in reqs)
    assert reqs[0].request.prompt.endswith("答案为：图") and reqs[4].request.prompt.endswith("Option (")
    text = load_rows(ref, "text", "test", None)
    reqs, skipped = get_task("foodieqa", "text").build(text, ["zh", "en"])
    assert skipped == {"no_en_text": 2} and len(reqs) == (8 + 6) * 4
    assert not any(r.request.images for r in reqs)


def test_unparseable_answers_are_wrong_and_counted(
    foodieqa_release, scripted_backend, tmp_path: Path
) -> None:
    ScriptedBackend = scripted_backend

    results = run_eval(
        "foodieqa", "text", ScriptedBackend("我不知道"), tmp_path / "r", local=str(foodieqa_release.folder)
    )
    m = results["metrics"]
    assert m["accuracy"] == 0.0 and m["unparseable"] == m["n"] == (8 + 6) * 4
    assert m["per_language"]["zh"]["per_prompt"]["prompt0"]["unparseable"] == 8
    right = run_eval(
        "foodieqa", "text", ScriptedBackend("A"), tmp_path / "a", local=str(foodieqa_release.folder)
    )
    zh = right["metrics"]["per_language"]["zh"]["per_prompt"]["prompt0"]
    assert zh["accuracy"] == pytest.approx(2 / 8)  # the fixture's correct slot cycles A-D


@pytest.mark.e2e
def test_text_task_runs_on_the_tiny_model(foodieqa_release, tiny_model: Path, tmp_path: Path) -> None:
    from culturebench.eval.backends import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    engine = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=4))
    results = run_eval(
        "foodieqa",
        "text",
        engine,
        tmp_path / "run",
        local=str(foodieqa_release.folder),
        limit=2,
        langs=["zh"],
    )
    assert results["samples"] == 8
    block = results["metrics"]["per_language"]["zh"]
    assert sum(p["n"] for p in block["per_prompt"].values()) == 8
    assert block["unparseable"] == sum(p["unparseable"] for p in block["per_prompt"].values())


@pytest.mark.e2e
@pytest.mark.parametrize(("task", "n_images"), [("multi-image", 4), ("single-image", 1)])
def test_image_tasks_run_on_the_tiny_vision_language_model(
    foodieqa_release, tiny_vlm: Path, tmp_path: Path, task: str, n_images: int
) -> None:
    """Both image tasks end to end: rows read from the release, 4 templates x zh/en, each
    request's images through the local LLaVA-style model's processor and generate()."""
    from culturebench.eval.backends import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    engine = TransformersBackend(str(tiny_vlm), sampling=SamplingParams(max_new_tokens=4))
    results = run_eval("foodieqa", task, engine, tmp_path / task, local=str(foodieqa_release.folder), limit=2)
    assert results["samples"] == 2 * 2 * 4
    metrics = results["metrics"]
    assert metrics["n"] == 16 and 0.0 <= metrics["accuracy"] <= 1.0
    for lang in ("zh", "en"):
        block = metrics["per_language"][lang]
        assert sorted(block["per_prompt"]) == [f"prompt{i}" for i in range(4)]
        assert block["unparseable"] == sum(p["unparseable"] for p in block["per_prompt"].values())
    samples = [json.loads(line) for line in (tmp_path / task / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 16 and all(isinstance(s["output"], str) for s in samples)

    # what reached the model: every image expanded to its 16 patch tokens, pixels for each
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    ref = resolve_dataset("foodieqa", revision=None, local=str(foodieqa_release.folder), repo=None)
    asked = get_task("foodieqa", task)
    first = asked.build(load_rows(ref, asked.config, "test", 1), ["zh"])[0][0].request
    inputs = engine.vision_inputs(first)
    image_token = engine._vision_model()[1].config.image_token_index
    assert tuple(inputs["pixel_values"].shape) == (n_images, 3, 32, 32)
    assert int((inputs["input_ids"] == image_token).sum()) == n_images * 16


@pytest.mark.e2e
def test_text_task_on_the_vision_language_model_goes_through_its_processor(
    foodieqa_release, tiny_vlm: Path, tmp_path: Path
) -> None:
    """A VLM has no causal-LM auto class; its text-only requests use the processor, no images."""
    from culturebench.eval.backends import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    engine = TransformersBackend(str(tiny_vlm), sampling=SamplingParams(max_new_tokens=4))
    assert engine.is_vision_language()
    results = run_eval(
        "foodieqa", "text", engine, tmp_path / "t", local=str(foodieqa_release.folder), limit=1, langs=["en"]
    )
    assert results["samples"] == 4 and engine._text is None
