"""End-to-end evaluation on CPU with a tiny local model: results, samples, report,
identical re-runs, resume after a kill, provenance; task request building."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.backends.base import SamplingParams
from culturebench.eval.backends.transformers_backend import TransformersBackend
from culturebench.eval.run_folder import RunMismatch
from culturebench.eval.runner import run_eval
from culturebench.eval.tasks import get_task
from culturebench.hashing import sha256_file

pytestmark = pytest.mark.e2e

LIMIT = 3  # rows of `parallel` -> 3 rows x 2 languages x 5 prompts = 30 samples
TOKENS = 12


def backend(model: Path) -> TransformersBackend:
    return TransformersBackend(str(model), sampling=SamplingParams(max_new_tokens=TOKENS), batch_size=8)


def samples(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def first_run(borsch_release, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("eval") / "run1"
    results = run_eval(
        "borsch",
        "origin-qa",
        backend(tiny_model),
        out,
        local=str(borsch_release.folder),
        limit=LIMIT,
        first=True,  # the first rows: the assertions below name them
    )
    return out, results


def test_run_writes_results_samples_and_report(first_run, borsch_release, tiny_model: Path) -> None:
    out, results = first_run
    assert {p.name for p in out.iterdir()} >= {
        "run.json",
        "samples.jsonl",
        "results.json",
        "report.md",
        "confusion_ru.png",
        "confusion_uk.png",
        "over_prediction.png",
    }
    rows = samples(out)
    assert len(rows) == results["samples"] == LIMIT * 2 * 5
    first = rows[0]
    assert first["id"] == "par-ru39-uk61:ru:0"
    assert first["prompt"] == "Из какой страны или каких стран происходит блюдо Плов?"
    assert set(first) >= {"output", "predicted", "jaccard", "dice", "overlap", "gold_origins"}
    assert {r["lang"] for r in rows} == {"ru", "uk"}
    metrics = results["metrics"]
    for lang in ("ru", "uk"):
        assert metrics[lang]["n"] == LIMIT * 5
        mean = sum(r["jaccard"] for r in rows if r["lang"] == lang) / (LIMIT * 5)
        assert metrics[lang]["jaccard"]["mean"] == pytest.approx(mean)
        lo, hi = metrics[lang]["jaccard"]["ci95"]
        assert lo <= mean <= hi
    prov = results["provenance"]
    assert prov["dataset"]["source"] == "local"
    assert prov["dataset"]["manifest_sha256"] == sha256_file(borsch_release.folder / "manifest.json")
    assert prov["model"]["weights_sha256"] and prov["model"]["backend"] == "transformers"
    assert prov["model"]["sampling"] == {"max_new_tokens": TOKENS, "temperature": 0.0, "seed": 0}
    assert len(prov["prompt_sha256"]) == 10 and "origin-qa/uk/4" in prov["prompt_sha256"]
    assert prov["packages"]["datasets"] != "not installed"
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| ru | jaccard |" in report and "| 15 (3 dishes) |" in report
    assert "### ru: per_country" in report and "Over-prediction (ru)" in report


def test_same_inputs_give_identical_outputs(
    first_run, borsch_release, tiny_model: Path, tmp_path: Path
) -> None:
    out, _ = first_run
    run_eval(
        "borsch",
        "origin-qa",
        backend(tiny_model),
        tmp_path / "run2",
        local=str(borsch_release.folder),
        limit=LIMIT,
        first=True,
    )
    assert [(s["id"], s["output"]) for s in samples(tmp_path / "run2")] == [
        (s["id"], s["output"]) for s in samples(out)
    ]
    a = json.loads((out / "results.json").read_text(encoding="utf-8"))["metrics"]
    b = json.loads((tmp_path / "run2" / "results.json").read_text(encoding="utf-8"))["metrics"]
    assert a == b


class _CountingBackend(TransformersBackend):
    """The real transformers backend, counting the prompts it is asked to generate."""

    calls = 0

    def generate(self, requests):
        type(self).calls += len(requests)
        return super().generate(requests)


def test_killed_run_resumes_with_identical_outputs(
    first_run, borsch_release, tiny_model: Path, tmp_path: Path
) -> None:
    out, _ = first_run
    resumed = tmp_path / "resumed"
    shutil.copytree(out, resumed)
    lines = (resumed / "samples.jsonl").read_bytes().splitlines(keepends=True)
    # Killed mid-write: 13 complete lines and half of the 14th.
    (resumed / "samples.jsonl").write_bytes(b"".join(lines[:13]) + lines[13][: len(lines[13]) // 2])
    (resumed / "results.json").unlink()
    engine = _CountingBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=TOKENS))
    run_eval(
        "borsch", "origin-qa", engine, resumed, local=str(borsch_release.folder), limit=LIMIT, first=True
    )
    assert _CountingBackend.calls == len(lines) - 13
    assert (resumed / "samples.jsonl").read_bytes() != b""
    got = sorted((s["id"], s["output"]) for s in samples(resumed))
    assert got == sorted((s["id"], s["output"]) for s in samples(out))
    assert len(got) == len(set(got))


def test_output_folder_of_another_run_is_refused(first_run, borsch_release, tiny_model: Path) -> None:
    out, _ = first_run
    with pytest.raises(RunMismatch, match="limit"):
        run_eval(
            "borsch", "origin-qa", backend(tiny_model), out, local=str(borsch_release.folder), limit=LIMIT + 1
        )


def test_cli_eval_run_report_list(borsch_release, tiny_model: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli-run"
    result = runner.invoke(
        app,
        [
            "eval",
            "run",
            "borsch",
            "--task",
            "origin-qa",
            "--backend",
            "transformers",
            "--model",
            str(tiny_model),
            "--local",
            str(borsch_release.folder),
            "--limit",
            "2",
            "--lang",
            "uk",
            "--max-new-tokens",
            "8",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "10 samples" in result.output
    assert {s["lang"] for s in samples(out)} == {"uk"}
    report = runner.invoke(app, ["eval", "report", str(out), "--out", str(tmp_path / "all.md")])
    assert report.exit_code == 0 and (tmp_path / "all.md").exists()
    assert "cli-run/confusion_uk.png" in (tmp_path / "all.md").read_text(encoding="utf-8")
    listed = runner.invoke(app, ["eval", "list"], terminal_width=200)
    assert listed.exit_code == 0
    for name in ("origin-qa", "origin-vqa", "origin-vqa-dish", "dish-name-vqa"):
        assert name in listed.output
    bad = runner.invoke(
        app,
        [
            "eval",
            "run",
            "borsch",
            "--task",
            "nope",
            "--model",
            str(tiny_model),
            "--local",
            str(borsch_release.folder),
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert bad.exit_code != 0


def _png(color: tuple[int, int, int]) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.integration
def test_vqa_tasks_attach_images_and_skip_rows_without_bytes() -> None:
    row = {
        "id": "par-ru1-uk2",
        "name_ru": "БОРЩ",
        "name_uk": "БОРЩ",
        "origins": ["UA"],
        "images": [{"image": {"bytes": _png((200, 0, 0)), "path": None}}, {"image": None}],
    }
    empty = {**row, "id": "par-ru3", "images": [{"image": None}]}
    reqs, skipped = get_task("borsch", "origin-vqa-dish").build([row, empty], ["ru", "uk"])
    assert skipped == {"no image bytes": 1}
    assert len(reqs) == 10 and all(len(r.request.images) == 1 for r in reqs)
    assert (
        reqs[0].request.prompt
        == "Из какой страны или каких стран происходит блюдо Борщ, показанное на фотографиях?"
    )
    plain, _ = get_task("borsch", "origin-vqa").build([row], ["uk"])
    assert "Борщ" not in plain[0].request.prompt and plain[0].request.prompt.endswith("на фотографіях?")
    name_task = get_task("borsch", "dish-name-vqa")
    assert name_task.score({"gold_name": "БОРЩ"}, "Це, мабуть, борщ.") == {"correct": 1.0}
    assert name_task.score({"gold_name": "БОРЩ"}, "Це вареники.") == {"correct": 0.0}


def test_eval_pins_a_hub_revision_to_its_commit(
    borsch_release, tiny_model: Path, tmp_path: Path, servers
) -> None:
    import subprocess
    import sys

    out_root = tmp_path / "dist"
    shutil.copytree(borsch_release.folder, out_root / "borsch" / "1.0.0")
    with servers.local_hub(tmp_path / "hub") as hub:
        published = hub.publish("borsch", "1.0.0", out_root=out_root)
        env = hub.client_env(tmp_path / "hf")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "culturebench.cli",
                "eval",
                "run",
                "borsch",
                "--task",
                "origin-qa",
                "--repo",
                "culturebench/borsch",
                "--revision",
                "v1.0.0",
                "--model",
                str(tiny_model),
                "--limit",
                "1",
                "--lang",
                "ru",
                "--max-new-tokens",
                "4",
                "--out",
                str(tmp_path / "hub-run"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "hub-run" / "results.json").read_text(encoding="utf-8"))
    ref = results["provenance"]["dataset"]
    assert (ref["source"], ref["location"], ref["requested_revision"]) == (
        "hub",
        "culturebench/borsch",
        "v1.0.0",
    )
    assert ref["commit_sha"] == published.commit
    assert results["samples"] == 5


@pytest.mark.integration
@pytest.mark.parametrize(("config", "langs"), [("ru", ["ru"]), ("uk", ["uk"])])
def test_origin_tasks_run_on_the_language_configs(
    borsch_release, scripted_backend, tmp_path: Path, config: str, langs: list[str]
) -> None:
    from datasets import load_dataset

    results = run_eval(
        "borsch",
        "origin-qa",
        scripted_backend("Россия"),
        tmp_path / "run",
        local=str(borsch_release.folder),
        limit=2,
        first=True,  # the first row is read back below
        task_options={"config": config},
    )
    rows = samples(tmp_path / "run")
    assert results["samples"] == 2 * 5 and sorted(results["metrics"]) == langs
    first = load_dataset(str(borsch_release.folder), config, split="test")[0]
    assert first["name"].capitalize() in rows[0]["prompt"] or first["name"] in rows[0]["prompt"]
    assert rows[0]["gold_origins"] == list(first["origins"])
    assert results["provenance"]["task_options"] == {"config": config}


@pytest.mark.integration
def test_origin_task_refuses_an_unknown_config(borsch_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.errors import UsageError

    with pytest.raises(UsageError, match="choose one of parallel, ru, uk"):
        run_eval(
            "borsch",
            "origin-qa",
            scripted_backend("x"),
            tmp_path / "r",
            local=str(borsch_release.folder),
            task_options={"config": "kk"},
        )


def test_multi_seed_run_records_each_seed_and_resumes(
    borsch_release, tiny_model: Path, tmp_path: Path
) -> None:
    """`--repeat-seeds`: every prompt once per seed with that sampling seed; ids `<request>@<seed>`;
    a killed multi-seed run resumes only the missing (prompt, seed) pairs."""
    from culturebench.eval.run_folder import RunMismatch

    def backend_() -> TransformersBackend:
        return TransformersBackend(
            str(tiny_model), sampling=SamplingParams(max_new_tokens=8, temperature=1.0), batch_size=8
        )

    out = tmp_path / "seeds"
    results = run_eval(
        "borsch", "origin-qa", backend_(), out, local=str(borsch_release.folder), limit=1, seeds=[0, 1, 2]
    )
    rows = samples(out)
    assert results["samples"] == 1 * 2 * 5 * 3 and len(rows) == 30
    assert {r["seed"] for r in rows} == {0, 1, 2} and rows[0]["id"].endswith("@0")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["seeds"] == [0, 1, 2] and run["sampling_per_seed"]["2"]["seed"] == 2
    by_seed = {s: [r["output"] for r in rows if r["seed"] == s] for s in (0, 1, 2)}
    assert by_seed[0] != by_seed[1]  # temperature 1.0: the seed changes the outputs
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    (out / "samples.jsonl").write_text("\n".join(lines[:-7]) + "\n", encoding="utf-8")  # killed
    again = run_eval(
        "borsch", "origin-qa", backend_(), out, local=str(borsch_release.folder), limit=1, seeds=[0, 1, 2]
    )
    # the missing (prompt, seed) pairs are generated again, each under its own seed (with
    # temperature > 0 a resumed batch may sample differently; greedy runs resume identically)
    assert again["samples"] == 30 and [r["id"] for r in samples(out)] == [r["id"] for r in rows]
    assert [r["seed"] for r in samples(out)[-7:]] == [r["seed"] for r in rows[-7:]]
    with pytest.raises(RunMismatch, match="seeds"):
        run_eval(
            "borsch", "origin-qa", backend_(), out, local=str(borsch_release.folder), limit=1, seeds=[0, 1]
        )
