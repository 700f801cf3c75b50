"""culturebench's tasks in Inspect and lm-evaluation-harness, and their logs scored back.

Real harnesses, real runs: Inspect (inspect_ai) through its Python API with Inspect's own
``mockllm`` model answering exactly what a culturebench ``eval run`` of the tiny model answered,
and through its CLI with the tiny model (``hf/<path>``, on CPU); lm-evaluation-harness through
its CLI on a folder written by ``culturebench export lm-eval``. Every per-sample score a harness
records must equal culturebench's own scoring of the same answer, and ``eval score`` must turn
each harness's log into a run folder that ``eval paper`` reports beside the paper's rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("inspect_ai")
pytest.importorskip("lm_eval")

from culturebench.cli import app
from culturebench.eval.backends.base import SamplingParams
from culturebench.eval.backends.transformers_backend import TransformersBackend
from culturebench.eval.harness.common import harness_tasks, top_level
from culturebench.eval.runner import run_eval
from culturebench.registry import builtin_names

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
OFFLINE = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "INSPECT_LOG_LEVEL": "warning",
    "NO_COLOR": "1",
}
TOKENS = 12


def _strip(sample: dict) -> dict:
    """A sample without what only says which run wrote it (and where in its folder the run kept
    the thumbnails of the prompt's images: a harness's log has no run folder)."""
    return {k: v for k, v in sample.items() if k not in ("run", "seed", "task", "images")}


def _samples(folder: Path) -> dict[str, dict]:
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return {s["id"]: s for s in map(json.loads, lines)}


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


# ------------------------------------------------------------------ the registry
def test_every_text_and_vqa_task_is_an_inspect_task() -> None:
    from importlib.metadata import entry_points

    (point,) = [e for e in entry_points(group="inspect_ai") if e.name == "culturebench"]
    module = point.load()
    assert "ash_judge" not in module.TASKS  # it judges another run: not a task a harness runs
    for dataset in builtin_names():
        for cls in harness_tasks(dataset):
            name = f"{dataset}_{cls.name}".replace("-", "_")
            assert name in module.TASKS
    assert {"borsch_origin_vqa", "foodieqa_multi_image", "wwd_ingredients", "rubin_mcqa"} <= set(module.TASKS)


# ------------------------------------- Inspect: same answers, same per-sample scores
@pytest.mark.parametrize(
    ("dataset", "task", "release_fixture", "model_fixture", "rows"),
    [
        ("borsch", "origin-qa", "borsch_release", "tiny_model", 2),
        ("wwd", "country", "wwd_release", "tiny_model", 4),
        ("borsch", "origin-vqa", "borsch_image_release", "tiny_vlm", 1),  # images, then the text
    ],
)
def test_inspect_scores_equal_eval_run_on_the_same_answers(
    dataset: str, task: str, release_fixture: str, model_fixture: str, rows: int, tmp_path: Path, request
) -> None:
    """``eval run`` with a tiny model, then Inspect's ``mockllm`` answering every prompt with
    that run's answer: the same samples, the same scores, the same metric."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ContentImage, ModelOutput, ModelUsage, get_model

    release = request.getfixturevalue(release_fixture)
    model = request.getfixturevalue(model_fixture)
    engine = TransformersBackend(str(model), sampling=SamplingParams(max_new_tokens=TOKENS), batch_size=8)
    # Inspect's --limit takes the first samples: ours takes the first rows too (--first)
    results = run_eval(
        dataset, task, engine, tmp_path / "run", local=str(release.folder), limit=rows, first=True
    )
    ours = _samples(tmp_path / "run")
    by_prompt = {s["prompt"]: s["output"] for s in ours.values()}
    assert all(s["n_images"] > 0 for s in ours.values()) == ("vqa" in task)
    assert len(by_prompt) == len(ours)

    def answer(messages, tools, tool_choice, config):
        content = messages[-1].content
        images = [p for p in content if isinstance(p, ContentImage)] if isinstance(content, list) else []
        assert len(images) == next(s["n_images"] for s in ours.values() if s["prompt"] == messages[-1].text)
        out = ModelOutput.from_content(model="mockllm", content=by_prompt[messages[-1].text])
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    name = f"culturebench/{dataset}_{task.replace('-', '_')}"
    (log,) = inspect_eval(
        name,
        task_args={"local": str(release.folder), "epochs": 1},
        model=get_model("mockllm/model", custom_outputs=answer),
        limit=len(ours),
        log_dir=str(tmp_path / "inspect"),
        display="none",
    )
    assert log.status == "success"
    theirs = {s.id: s.scores[f"{dataset}_{task.replace('-', '_')}"] for s in log.samples}
    assert set(theirs) == set(ours)
    for sample_id, score in theirs.items():
        assert _strip(score.metadata["sample"]) == _strip(ours[sample_id])
        numbers = {k: v for k, v in ours[sample_id].items() if k in score.value}
        assert score.value == numbers and score.value  # every per-sample number, as eval run has it
    metrics = {k: m.value for k, m in log.results.scores[0].metrics.items()}
    assert metrics == pytest.approx(top_level(results["metrics"]))


# --------------------------- Inspect CLI on the tiny model, its log scored and reported
@pytest.mark.slow
def test_inspect_cli_log_is_scored_into_a_paper_row(tiny_model: Path, wwd_release, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    command = [
        str(BIN / "inspect"), "eval", "culturebench/wwd_country", "--model", f"hf/{tiny_model}",
        "-M", "device=cpu", "-M", "do_sample=false", "-T", f"local={wwd_release.folder}", "-T", "epochs=1",
        "--limit", "3", "--max-tokens", str(TOKENS), "--display", "plain", "--log-dir", str(logs),
    ]  # fmt: skip
    done = subprocess.run(command, env=OFFLINE, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (log_file,) = logs.glob("*.eval")
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(log_file))
    # no release named: eval score uses the one the log recorded (pinned by manifest sha256)
    _cli("eval", "score", "wwd", "--generations", str(log_file), "--out", str(tmp_path / "scored"))
    scored = _samples(tmp_path / "scored")
    assert set(scored) == {s.id for s in log.samples}
    for sample in log.samples:
        assert _strip(sample.scores["wwd_country"].metadata["sample"]) == _strip(scored[sample.id])
    run = json.loads((tmp_path / "scored" / "run.json").read_text(encoding="utf-8"))
    assert run["harness"] == "inspect-ai"
    assert run["model"]["model"] == f"hf/{tiny_model}"
    assert run["model"]["sampling"] == {"max_new_tokens": TOKENS, "temperature": 1.0}
    assert run["dataset"]["manifest_sha256"] == log.eval.metadata["culturebench"]["pin"]["manifest_sha256"]
    _paper_row(tmp_path / "scored", wwd_release, tmp_path / "paper", tiny_model.name)


def _paper_row(run: Path, release, out: Path, model: str) -> None:
    """``eval paper`` sets the run's model beside the paper's rows."""
    _cli("eval", "paper", "wwd", str(run), "--local", str(release.folder), "--out", str(out))
    report = json.loads((out / "paper_report.json").read_text(encoding="utf-8"))
    text = json.dumps(report)
    assert model in text and "GPT 3.5" in text


# ------------------------------------------------------------- lm-evaluation-harness
@pytest.mark.slow
def test_lm_eval_runs_exported_tasks_and_its_samples_score_the_same(
    tiny_model: Path, borsch_release, wwd_release, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks"
    _cli("export", "lm-eval", "borsch", "--local", str(borsch_release.folder), "--out", str(tasks / "borsch"),
         "--task", "origin-qa")  # fmt: skip
    _cli("export", "lm-eval", "wwd", "--local", str(wwd_release.folder), "--out", str(tasks / "wwd"))
    config = (tasks / "wwd" / "culturebench_wwd_country.yaml").read_text(encoding="utf-8")
    assert "max_gen_toks: 200" in config and "temperature: 1.0" in config  # the paper's decoding
    command = [
        str(BIN / "lm_eval"), "--model", "hf", "--model_args", f"pretrained={tiny_model},dtype=float32",
        "--device", "cpu", "--tasks", "culturebench_borsch_origin_qa,culturebench_wwd_country",
        "--include_path", str(tasks), "--batch_size", "4", "--limit", "3", "--seed", "1",
        "--gen_kwargs", f"max_gen_toks={TOKENS}", "--log_samples", "--output_path", str(tmp_path / "out"),
    ]  # fmt: skip
    done = subprocess.run(command, env=OFFLINE, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (results_file,) = (tmp_path / "out").rglob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    for dataset, task in (("borsch", "origin_qa"), ("wwd", "country")):
        name = f"culturebench_{dataset}_{task}"
        (samples_file,) = (tmp_path / "out").rglob(f"samples_{name}_*.jsonl")
        _cli("eval", "score", dataset, "--generations", str(samples_file), "--out", str(tmp_path / dataset))
        scored = _samples(tmp_path / dataset)
        lines = [json.loads(line) for line in samples_file.read_text(encoding="utf-8").splitlines()]
        assert len(lines) == 3 and len(scored) == 3
        for line in lines:
            metric = line["metrics"][0]
            assert _strip(line[metric]) == _strip(scored[line["doc"]["id"]])
        ours = json.loads((tmp_path / dataset / "results.json").read_text(encoding="utf-8"))
        expected = top_level(ours["metrics"])
        reported = {
            k.split(",")[0]: v for k, v in results[name].items() if k.endswith(",none") and "_stderr" not in k
        }
        assert expected and {k: reported[k] for k in expected} == pytest.approx(expected)
        for key in set(reported) - set(expected):  # a language the limited run never asked
            assert reported[key] != reported[key], key  # NaN
        run = json.loads((tmp_path / dataset / "run.json").read_text(encoding="utf-8"))
        assert run["harness"] == "lm-eval" and run["model"]["model"] == str(tiny_model)
    _paper_row(tmp_path / "wwd", wwd_release, tmp_path / "paper", tiny_model.name)


# ------------------------------------------------------------------- bad input
def test_logs_of_another_release_are_refused_naming_the_first_ids(
    tiny_model: Path, wwd_release, tmp_path: Path
) -> None:
    """An lm-eval samples file whose ids the release does not have: one line naming a few."""
    out = tmp_path / "out" / "model"
    out.mkdir(parents=True)
    lines = [
        {"doc_id": i, "doc": {"id": f"wwd-99{i}:en:0", "prompt": "p", "meta": "{}", "task": "wwd/country"},
         "resps": [["France"]], "filtered_resps": ["France"]}
        for i in range(6)
    ]  # fmt: skip
    path = out / "samples_culturebench_wwd_country_2026-01-01T00-00-00.000000.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["eval", "score", "wwd", "--generations", str(path), "--local", str(wwd_release.folder),
              "--out", str(tmp_path / "s")],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "'wwd-990:en:0' is not an item of this task; nor are 'wwd-991:en:0'" in result.output
    assert "6 of 6 ids unknown" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "s" / "samples.jsonl").exists()


def test_export_refuses_a_foreign_folder(borsch_release, tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["export", "lm-eval", "borsch", "--local", str(borsch_release.folder), "--out", str(tmp_path)]
    )
    assert result.exit_code != 0 and "holds other files" in result.output
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "keep me"
