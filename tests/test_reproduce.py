"""``eval reproduce``: the paper's grid read from ``paper.yaml`` and checked, the plan counted
without a model, the grid run on a tiny model into ordinary run folders (resumable, no new
work on a rerun) with the paper report beside the printed models, shards of a reproduction
merged, and a cell with nothing to run stopped before any model loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.grid import GridError, load_grid, parse_grid
from culturebench.eval.run_folder import read_samples
from culturebench.eval.tasks import task_class
from culturebench.registry import builtin_names

pytestmark = pytest.mark.unit

DATASETS = builtin_names()  # every shipped dataset, from the registry
WWD_LLM = ("description", "country", "time-of-day", "meal-type", "utensils", "ingredients")


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_paper_declares_a_grid_of_real_tasks(dataset: str) -> None:
    grid = load_grid(dataset)
    assert grid.cells
    for cell in grid.cells:
        klass = task_class(dataset, cell.task)
        assert set(cell.langs) <= set(klass.languages)
        assert set(cell.options) <= klass.accepted_options()
        assert cell.source, f"{dataset}/{cell.name}: no source (which table or section it feeds)"
        for needed in cell.needs:
            assert grid.names.index(needed) < grid.names.index(cell.name)


def test_wwd_grid_is_the_papers_llm_probing() -> None:
    grid = load_grid("wwd")
    text = grid.select(kinds=("text",))
    assert [c.task for c in text] == list(WWD_LLM)
    assert all(c.seeds == (0, 1, 2, 3, 4) and c.langs == ("en",) for c in text)  # footnote 9


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"cells": [{"task": "nope"}]}, "grid cell 'nope': task:"),
        ({"cells": [{"task": "country", "colour": 1}]}, "unknown key 'colour'"),
        ({"cells": [{"task": "country", "options": {"bogus": 1}}]}, "has no option 'bogus'"),
        ({"cells": [{"task": "country", "langs": ["fr"]}]}, "langs: 'fr'"),
        ({"cells": [{"task": "country", "seeds": [1, 1]}]}, "seeds: expected distinct"),
        ({"cells": [{"task": "country"}, {"task": "country"}]}, "name: given twice"),
        ({"cells": [{"task": "country", "kind": "audio"}]}, "kind: 'audio'"),
        ({"sampling": {"top_k": 5}, "cells": [{"task": "country"}]}, "unknown setting 'top_k'"),
        ({"cells": [{"task": "vqa-probes", "options": {"images": "{cell:later}"}}]}, "names no earlier cell"),
        ({"cells": []}, "needs 'cells:'"),
    ],
)
def test_a_grid_that_does_not_read_is_one_line_naming_the_cell(
    block: dict, message: str, tmp_path: Path
) -> None:
    with pytest.raises(GridError) as info:
        parse_grid("wwd", block, tmp_path / "paper.yaml")
    assert message in str(info.value) and "paper.yaml" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.e2e
def test_plan_counts_the_grid_without_loading_a_model(wwd_release, tiny_model: Path, tmp_path: Path) -> None:
    # only the tokenizer's files: a plan that tried to load the model would fail here
    tokenizer = tmp_path / "tokenizer-only"
    tokenizer.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "chat_template.jinja"):
        if (tiny_model / name).exists():
            shutil.copy(tiny_model / name, tokenizer / name)
    out = tmp_path / "repro"
    result = invoke(
        "eval", "reproduce", "wwd", "--model", tokenizer, "--plan", "--local", wwd_release.folder,
        "--out", out, "--throughput", "1000",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    cells = {c["cell"]: c for c in plan["cells"]}
    assert list(cells) == list(WWD_LLM)
    for cell in cells.values():  # 765 dishes x 5 seeds, one English prompt each
        assert (cell["units"], cell["requests"], cell["generations"]) == (765, 765, 3825)
        assert cell["prompt_tokens"] > cell["generations"]  # counted by the model's own tokenizer
        work = cell["prompt_tokens"] + cell["generations"] * cell["max_new_tokens"]
        assert cell["gpu_hours"] == pytest.approx(work / 1000 / 3600)
    assert plan["total"]["generations"] == 6 * 3825
    assert plan["tokens"] == "the model's tokenizer"
    assert not (out / "country").exists()  # nothing ran
    assert "plan.json" in result.output
    # without a tokenizer at hand the plan estimates from characters, and says so
    bare = invoke(
        "eval", "reproduce", "wwd", "--plan", "--local", wwd_release.folder, "--out", tmp_path / "b"
    )
    assert bare.exit_code == 0, bare.output
    assert "Prompt tokens: estimated as characters / 4" in " ".join(bare.output.split())
    assert json.loads((tmp_path / "b" / "plan.json").read_text(encoding="utf-8"))["tokens"].startswith(
        "estimated"
    )


@pytest.mark.e2e
def test_reproduce_runs_cells_resumes_and_reports_beside_the_printed_models(
    wwd_release, tiny_model: Path, tmp_path: Path
) -> None:
    out = tmp_path / "repro"
    args = ["eval", "reproduce", "wwd", "--model", tiny_model, "--local", wwd_release.folder,
            "--only", "country,time-of-day", "--limit", "3", "--out", out]  # fmt: skip
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    for cell in ("country", "time-of-day"):
        run = json.loads((out / cell / "run.json").read_text(encoding="utf-8"))
        assert run["seeds"] == [0, 1, 2, 3, 4]
        assert run["model"]["sampling"]["temperature"] == 1.0  # the grid's, not --temperature's
        assert len(read_samples(out / cell / "samples.jsonl")) == 3 * 5
    report = (out / "paper" / "paper_report.md").read_text(encoding="utf-8")
    h9 = report[report.index("## Table H.9") :]
    header = next(line for line in h9.splitlines() if line.startswith("| |"))
    for column in ("GPT 3.5", "Llama 3-8B", "Llama 3-70B", tiny_model.name):
        assert column in header
    before = {c: (out / c / "samples.jsonl").read_bytes() for c in ("country", "time-of-day")}
    stamp = (out / "country" / "samples.jsonl").stat().st_mtime_ns
    again = invoke(*args)  # the same settings: no new work
    assert again.exit_code == 0, again.output
    assert {c: (out / c / "samples.jsonl").read_bytes() for c in before} == before
    assert (out / "country" / "samples.jsonl").stat().st_mtime_ns == stamp


@pytest.mark.e2e
def test_reproduction_shards_merge_cell_by_cell(wwd_release, tiny_model: Path, tmp_path: Path) -> None:
    common = ["eval", "reproduce", "wwd", "--model", tiny_model, "--local", wwd_release.folder,
              "--only", "country", "--limit", "4", "--max-new-tokens", "8"]  # fmt: skip
    assert invoke(*common, "--out", tmp_path / "whole").exit_code == 0
    for k in (1, 2):
        result = invoke(*common, "--shard", f"{k}/2", "--out", tmp_path / f"part{k}")
        assert result.exit_code == 0, result.output
        assert not (tmp_path / f"part{k}" / "paper").exists()  # a part gets no report
    merged = tmp_path / "merged"
    result = invoke("eval", "merge", tmp_path / "part1", tmp_path / "part2", "--out", merged)
    assert result.exit_code == 0, result.output
    for name in ("samples.jsonl", "results.json", "run.json"):
        assert (merged / "country" / name).read_bytes() == (
            tmp_path / "whole" / "country" / name
        ).read_bytes()
    report = invoke(*common, "--out", merged)  # the merged folder: no new work, the report
    assert report.exit_code == 0, report.output
    assert (merged / "paper" / "paper_report.md").is_file()


@pytest.mark.e2e
def test_a_cell_with_nothing_to_run_stops_before_the_model_loads(
    borsch_release, tiny_model: Path, tmp_path: Path
) -> None:
    """The BORSCH release without embedded images has no VQA request: one line saying to
    build with images, and no run folder, before any model is loaded (the model path is not
    a model at all)."""
    not_a_model = tmp_path / "no-model"
    not_a_model.mkdir()
    result = invoke(
        "eval", "reproduce", "borsch", "--kind", "vision", "--only", "origin-vqa", "--model", not_a_model,
        "--local", borsch_release.folder, "--out", tmp_path / "repro",
    )  # fmt: skip
    assert result.exit_code != 0
    assert "build it with images first" in result.output
    assert not (tmp_path / "repro" / "origin-vqa").exists()


@pytest.mark.integration
def test_plan_reads_the_throughput_the_benchmark_saved(wwd_release, tmp_path: Path) -> None:
    saved = tmp_path / "throughput.json"  # the shape benchmarks/bench_eval_throughput.py --save writes
    saved.write_text(json.dumps({"transformers": {"tokens_per_s": 500.0, "model": "m"}}), encoding="utf-8")
    out = tmp_path / "plan"
    result = invoke(
        "eval", "reproduce", "wwd", "--plan", "--only", "country", "--local", wwd_release.folder,
        "--out", out, "--throughput-file", saved,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    cell = plan["cells"][0]
    assert plan["throughput_tokens_per_s"] == 500.0 and "benchmark" in plan["throughput_source"]
    work = cell["prompt_chars"] / 4 + cell["generations"] * cell["max_new_tokens"]
    assert cell["gpu_hours"] == pytest.approx(work / 500 / 3600)


@pytest.mark.integration
def test_a_corrupt_throughput_file_is_one_line(wwd_release, tmp_path: Path) -> None:
    saved = tmp_path / "throughput.json"
    saved.write_text("{not json", encoding="utf-8")
    result = invoke(
        "eval", "reproduce", "wwd", "--plan", "--only", "country", "--local", wwd_release.folder,
        "--out", tmp_path / "plan", "--throughput-file", saved,
    )  # fmt: skip
    assert result.exit_code == 2
    assert "throughput.json: corrupt" in result.output and "Traceback" not in result.output
