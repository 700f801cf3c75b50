"""Reports say what they measured (issue 39, part 6): every results.json, report.md and `eval
paper` report opens with its coverage; "reproduced" means equal at the printed precision; `eval
compare` pairs its difference and interval over the same items; intervals are honest at small
n; `--limit N` spreads its rows over the dataset's reporting groups (`--first`: the first N)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturebench.eval.runner import run_eval

pytestmark = pytest.mark.unit


def _results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


def _report(folder: Path) -> str:
    return (folder / "report.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------------ e) --limit spreads rows
def test_choose_rows_is_round_robin_over_sorted_groups_in_release_order() -> None:
    from culturebench.eval.dataset_ref import choose_rows, group_of

    groups = ["B", "B", "B", "A", "C", "C", "A"]
    assert choose_rows(groups, 4) == [0, 3, 4, 6]  # A (3), B (0), C (4), then A again (6)
    assert choose_rows(groups, 5) == [0, 1, 3, 4, 6]
    assert choose_rows(groups, 4) == choose_rows(list(groups), 4)  # deterministic
    assert choose_rows(groups, 99) == list(range(7))
    assert [group_of(v) for v in (["Asia", "Europe"], [], None, "", "x")] == [
        "Asia",
        "(none)",
        "(none)",
        "(none)",
        "x",
    ]


@pytest.mark.integration
def test_a_limited_wwd_run_covers_several_continents(wwd_release, scripted_backend, tmp_path: Path) -> None:
    """The first 20 WWD dishes are all Algerian: `--limit 20` used to be an Africa-only run.
    Spread over the continents, its table has every continent; `--first` keeps the old rows."""
    local = str(wwd_release.folder)
    backend = scripted_backend("It is an Algerian dish.")
    results = run_eval("wwd", "country", backend, tmp_path / "spread", local=local, limit=20)
    continents = results["metrics"]["en"]["per_continent"]
    assert len(continents) >= 5 and sum(block["n"] for block in continents.values()) >= 20
    limit = results["coverage"]["limit"]
    assert limit["how"] == "spread" and limit["group_field"] == "continents"
    assert sum(limit["groups"].values()) == 20 and len(limit["groups"]) == 6
    assert results["coverage"]["rows"] == {"release": 765, "used": 20, "asked": 20, "scored": 20}
    assert "spread over 6 of the 6 groups of 'continents'" in _report(tmp_path / "spread")
    first = run_eval("wwd", "country", backend, tmp_path / "first", local=local, limit=20, first=True)
    assert list(first["metrics"]["en"]["per_continent"]) == ["Africa"]  # today's behaviour, asked for
    assert first["coverage"]["limit"]["how"] == "first"
    assert "the first 20 of 765 rows in release order" in _report(tmp_path / "first")
    run = json.loads((tmp_path / "first" / "run.json").read_text(encoding="utf-8"))
    assert run["limit_rows"] == "first"  # which rows a limited run asks is part of its identity


@pytest.mark.e2e
def test_eval_run_cli_limit_first_and_spread(wwd_release, tiny_model: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from culturebench.cli import app

    args = ["eval", "run", "wwd", "--task", "country", "--local", str(wwd_release.folder), "--limit", "6"]
    args += ["--model", str(tiny_model), "--max-new-tokens", "2"]
    spread = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "s")], terminal_width=300)
    assert spread.exit_code == 0, spread.output
    assert "spread over 6 of the 6 groups" in " ".join(spread.output.split())
    first = CliRunner().invoke(app, [*args, "--first", "--out", str(tmp_path / "f")], terminal_width=300)
    assert first.exit_code == 0, first.output
    assert _results(tmp_path / "f")["coverage"]["limit"]["how"] == "first"
    assert "the first 6 of 765 rows" in " ".join(first.output.split())


# --------------------------------------------------------------------------- a) the coverage block
@pytest.mark.integration
def test_results_json_opens_with_its_coverage(wwd_release, scripted_backend, tmp_path: Path) -> None:
    run_eval(
        "wwd", "country", scripted_backend("Algeria"), tmp_path / "r", local=str(wwd_release.folder), limit=3
    )
    text = (tmp_path / "r" / "results.json").read_text(encoding="utf-8")
    assert text.startswith('{\n  "coverage": {')
    report = _report(tmp_path / "r")
    assert report.index("### Coverage") < report.index("### Headline metrics")
    assert "- rows used: 3 of 765 (default/test)" in report and "a full build" in report


@pytest.mark.integration
def test_a_five_seed_run_reports_every_seed(wwd_release, scripted_backend, tmp_path: Path) -> None:
    backend = scripted_backend("Algeria")
    seeds = [0, 1, 2, 3, 4]
    results = run_eval(
        "wwd", "country", backend, tmp_path / "r", local=str(wwd_release.folder), limit=2, seeds=seeds
    )
    coverage = results["coverage"]
    assert coverage["seeds"] == seeds and coverage["generations_per_request"] == 5
    assert "seed" not in coverage["sampling"]  # the backend's base seed 0 made no generation
    report = _report(tmp_path / "r")
    assert "'seed': 0" not in report and "seed 0," not in report
    assert "seeds: 0, 1, 2, 3, 4 (5 generations per request)" in report


def test_the_shipped_sample_and_the_parser_versions_are_stated(
    rubin_release, scripted_backend, tmp_path: Path
) -> None:
    from culturebench.eval import answers, metrics, multiple_choice, ratings
    from culturebench.eval.answers import countries

    results = run_eval("rubin", "mcqa", scripted_backend("<answer>A</answer>"), tmp_path / "r",
                       local=str(rubin_release.folder))  # fmt: skip
    coverage = results["coverage"]
    assert coverage["release"]["build"] == "sample"
    assert coverage["parsers"] == {
        "country": countries.VERSION,
        "answer-reader": answers.READER_VERSION,
        "letters": multiple_choice.VERSION,
        "ratings": ratings.VERSION,
        "dish-name": metrics.CONTAINS_WITHIN_EDITS_VERSION,
    }
    assert coverage["parsers_used"] == ["letters"]
    report = _report(tmp_path / "r")
    assert (
        "the SHIPPED SAMPLE" in report and f"answer parsers used: letters {multiple_choice.VERSION}" in report
    )


def test_a_grid_cell_writes_down_its_assumed_sampling(
    rubin_release, scripted_backend, tmp_path: Path
) -> None:
    """`eval reproduce` printed the grid's temperature assumption in the terminal only; each
    cell's run now records its sampling, where it came from and which settings are assumed."""
    from culturebench.eval.grid import parse_grid
    from culturebench.eval.reproduce import run_cells

    block = {
        "sampling": {"max_new_tokens": 50, "temperature": 0.7},
        "assumed": ["temperature"],
        "why": "The paper states no temperature.",
        "cells": [{"task": "mcqa", "source": "Table 3"}],
    }
    grid = parse_grid("rubin", block, tmp_path / "paper.yaml")
    backend = scripted_backend("<answer>B</answer>")
    run_cells(
        grid, grid.cells, backend, tmp_path / "repro", source={"local": str(rubin_release.folder)}, limit=4
    )
    coverage = _results(tmp_path / "repro" / "mcqa")["coverage"]
    assert coverage["sampling"] == {"max_new_tokens": 50, "temperature": 0.7, "seed": 0}
    assert coverage["sampling_assumed"] == ["temperature"]
    assert coverage["sampling_why"] == "The paper states no temperature."
    assert "paper.yaml grid cell 'mcqa'" in coverage["sampling_source"]
    report = _report(tmp_path / "repro" / "mcqa")
    assert "ASSUMED (the paper does not state them): temperature" in report
    assert "The paper states no temperature." in report


def test_the_repositorys_grids_declare_what_they_assume() -> None:
    from culturebench.eval.grid import load_grid

    assert load_grid("borsch").cells[0].assumed == ()  # App. N gives every model's decoding
    for dataset in ("rubin", "foodieqa", "ash"):
        assert set(load_grid(dataset).cells[0].assumed or ()) == {"temperature", "max_new_tokens"}


def test_the_paper_report_opens_with_its_coverage(rubin_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.paper_report import build_report

    local = str(rubin_release.folder)
    run_eval("rubin", "mcqa", scripted_backend("<answer>A</answer>"), tmp_path / "run", local=local, limit=5)
    report = build_report("rubin", [tmp_path / "run"], tmp_path / "paper", local=local)
    assert next(iter(report)) == "coverage"
    assert report["coverage"]["release"]["build"] == "sample"
    (run,) = report["coverage"]["runs"]
    assert run["rows"]["used"] == 5 and run["limit"]["how"] == "spread"
    markdown = (tmp_path / "paper" / "paper_report.md").read_text(encoding="utf-8")
    assert markdown.index("## Coverage") < markdown.index("| item | status |")
    assert "the SHIPPED SAMPLE" in markdown and "5 of " in markdown and "letters " in markdown


def test_a_results_file_without_coverage_is_reconstructed_and_says_so(tmp_path: Path) -> None:
    from culturebench.eval.coverage import coverage_lines, coverage_of

    old = {"provenance": {"dataset": {"source": "none"}, "task": "t", "limit": 5, "seeds": [1, 2]}}
    coverage = coverage_of(old)
    text = "\n".join(coverage_lines(coverage))
    assert "reconstructed from the provenance" in text and "seeds: 1, 2" in text
    assert "the first 5 rows in release order" in text and "versions not recorded" in text


# ------------------------------------------------------- b) "reproduced" means equal as printed
def test_reproduced_only_when_every_compared_cell_is_equal_as_printed() -> None:
    from culturebench.eval.paper_report import (
        COMPUTED,
        NO_PRINTED,
        NO_PRINTED_NUMBER,
        REPRODUCED,
        Item,
        Row,
        Table,
        judge_status,
        printed_decimals,
    )

    assert [printed_decimals(v) for v in (403, 34.0, 0.503, 40.300000000000004, 61.25)] == [0, 1, 3, 1, 2]
    equal = judge_status(Item("T", "t", REPRODUCED, [Row("a", 61.04, 61.0), Row("b", 8, 8), Row("c", 1.0)]))
    assert equal.status == REPRODUCED and equal.equal_text == "2 of 2 cells equal"
    counts = judge_status(Item("T1", "t", REPRODUCED, [Row("questions", 8.0, 403), Row("x", 5.0, 5)]))
    assert counts.status == "computed, differs by 395" and counts.equal_text == "1 of 2 cells equal"
    close = judge_status(Item("T", "t", COMPUTED, [Row("a", 61.06, 61.0)]))
    assert close.status == "computed, differs by 0.1"  # 61.1 at the printed precision, not 61.0
    table = Table(digits=3)  # the item prints 3 decimals: 1.290 is not 1.29 +- 0.005
    precise = judge_status(Item("T3", "t", REPRODUCED, [Row("m", 1.2904, 1.29)], table=table))
    assert precise.status == REPRODUCED
    loose = judge_status(Item("T3", "t", REPRODUCED, [Row("m", 1.2936, 1.29)], table=Table(digits=3)))
    assert loose.status.startswith("computed, differs by")
    # one printed table, one precision: NA "0.00" (read as 0.0) is compared at 2 decimals, as 59.94
    na = judge_status(Item("T3", "t", REPRODUCED, [Row("acc", 59.941, 59.94), Row("na", 0.04, 0.0)]))
    assert na.status == "computed, differs by 0.04" and na.equal_text == "1 of 2 cells equal"
    nothing = judge_status(Item("H.10", "t", REPRODUCED, [Row("tiny: x", 50.0, None)]))
    assert nothing.status == NO_PRINTED == "computed, no printed model to compare"
    plotted = judge_status(Item("F13", "t", REPRODUCED, [Row("Qwen2-VL: x", 0.5)]), printed_model=True)
    assert plotted.status == NO_PRINTED_NUMBER == "computed, no printed number to compare"
    assert judge_status(Item("F", "t", COMPUTED, [Row("x", 1.0)])).status == COMPUTED


@pytest.mark.integration
def test_a_sample_release_does_not_reproduce_the_papers_counts(foodieqa_release, tmp_path: Path) -> None:
    """FoodieQA Table 1 was "reproduced" with 8 questions against the paper's 403."""
    from culturebench.eval.paper_report import build_report

    release = foodieqa_release
    report = build_report("foodieqa", [], tmp_path / "r", local=str(release.folder))
    table1 = next(i for i in report["items"] if i["ref"] == "Table 1")
    assert table1["status"].startswith("computed, differs by")
    assert table1["cells_equal"] < table1["cells_compared"]
    assert report["status_counts"]["computed, differs"] >= 1
    markdown = (tmp_path / "r" / "paper_report.md").read_text(encoding="utf-8")
    line = next(x for x in markdown.splitlines() if x.startswith("| Table 1 |"))
    assert "computed, differs by" in line and f"of {table1['cells_compared']} cells equal" in line
    in_all = next(x for x in markdown.splitlines() if x.startswith("In all: "))
    assert f"{report['status_counts']['computed, differs']} computed, differs; " in in_all


@pytest.mark.integration
def test_wwd_h10_without_a_compared_cell_is_not_reproduced(
    wwd_release, scripted_backend, tmp_path: Path
) -> None:
    """A run of the paper's GPT 3.5 with no description run: Table H.10 has no cell to compare
    (its text says so) and was still "reproduced"; Table H.9 differs from the print."""
    from culturebench.eval.paper_report import NO_PRINTED_NUMBER, build_report

    local = str(wwd_release.folder)
    backend = scripted_backend("It is from Algeria.", model="openai/gpt-3.5-turbo")
    run_eval("wwd", "country", backend, tmp_path / "country", local=local, limit=12)
    report = build_report("wwd", [tmp_path / "country"], tmp_path / "r", local=local)
    h10 = next(i for i in report["items"] if i["ref"] == "Table H.10")
    assert h10["status"] == NO_PRINTED_NUMBER and not h10["rows"]
    h9 = next(i for i in report["items"] if i["ref"] == "Table H.9")
    assert h9["status"].startswith("computed, differs by") and h9["cells_compared"] >= 6
    # the country run gives 12 of the 36 printed GPT 3.5 cells (its 6 and the 6 dish counts): the
    # 24 others have no run and count among the printed cells (issue 53)
    assert (h9["cells_compared"], h9["cells_without_run"]) == (12, 24)
    markdown = (tmp_path / "r" / "paper_report.md").read_text(encoding="utf-8")
    assert (
        f"| Table H.9 | {h9['status']} | {h9['cells_equal']} of 36 cells equal, 24 without a run |"
        in markdown
    )
    assert h10["cells_without_run"] == 24 and "0 of 24 cells equal, 24 without a run" in markdown


# ------------------------------------------------------------ c) eval compare over shared items
@pytest.mark.integration
def test_compare_pairs_runs_over_their_shared_items(borsch_release, scripted_backend, tmp_path: Path) -> None:
    """Runs over 5 and 20 dishes: the difference and its interval are over the 5 shared dishes,
    the counts are stated, a warning says the item sets differ, and the interval is not [0, 0]."""
    from typer.testing import CliRunner

    from culturebench.cli import app
    from culturebench.eval.compare import compare, warnings

    local = str(borsch_release.folder)
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), tmp_path / "a", local=local, limit=5, first=True
    )
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), tmp_path / "b", local=local, limit=20, first=True
    )
    rows = {(r["group"], r["metric"]): r for r in compare(tmp_path / "a", tmp_path / "b")}
    jaccard = rows[("ru", "jaccard")]
    assert jaccard["items"] == (5, 20, 5) and jaccard["paired"]
    assert jaccard["difference"] == pytest.approx(0.0)  # the same answers on the same 5 dishes
    assert jaccard["a"] == pytest.approx(jaccard["a_all"])
    assert jaccard["b_all"] != pytest.approx(jaccard["b"])  # B over its 20 dishes differs
    lo, hi = jaccard["ci95"]
    assert lo < 0 < hi and jaccard["interval"] == "wilson-bound"  # 5 dishes: no bootstrap
    assert any("A has 5 items, B 20, 5 shared" in w for w in warnings(list(rows.values())))
    out = tmp_path / "compare.md"
    result = CliRunner().invoke(
        app,
        ["eval", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)],
        terminal_width=250,
    )
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "Items: A 5, B 20, shared 5" in " ".join(result.output.split())
    text = out.read_text(encoding="utf-8")
    assert "| 5 / 20 / 5 |" in text and "Warning: ru: A has 5 items, B 20, 5 shared" in text


def test_paired_difference_bootstraps_only_at_30_items() -> None:
    from culturebench.eval.compare import paired_difference

    a = {f"d{i}": [float(i % 2)] for i in range(40)}
    b = {f"d{i}": [1.0] for i in range(40)}
    assert paired_difference(a, b).method == "bootstrap"
    few = paired_difference({k: a[k] for k in list(a)[:10]}, {k: b[k] for k in list(b)[:10]})
    assert few.method == "wilson-bound" and few.value == pytest.approx(0.5)
    assert few.lo < 0.5 < few.hi and few.hi - few.lo > 0.1
    wide = paired_difference({"x": [3.0], "y": [4.0]}, {"x": [5.0], "y": [7.0]})
    assert wide.method == "none" and wide.ci95 is None and wide.value == pytest.approx(2.5)


# -------------------------------------------------------------------- d) honest intervals at small n
def test_wilson_interval_is_never_of_zero_width() -> None:
    from culturebench.eval.metrics import wilson_interval

    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and lo == pytest.approx(1 - 0.2775, abs=1e-4)
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval(1, 0)


def test_mean_interval_chooses_wilson_bootstrap_or_none() -> None:
    from culturebench.eval.metrics import mean_interval

    zero = mean_interval([0.0] * 10)
    assert (zero.method, zero.mean, zero.lo) == ("wilson", 0.0, 0.0) and zero.hi > 0.25
    clustered = mean_interval([1.0] * 10, units=["a"] * 5 + ["b"] * 5)  # two dishes, not ten answers
    assert clustered.units == 2 and clustered.lo < mean_interval([1.0] * 10).lo
    bounded = mean_interval([0.5] * 29)
    assert bounded.method == "wilson-bound" and bounded.hi - bounded.lo > 0.3
    assert mean_interval([0.25, 0.5] * 15).method == "bootstrap"  # 30 units
    ratings = mean_interval([3.0, 4.0, 4.0])
    assert ratings.method == "none" and ratings.lo is None and ratings.mean == pytest.approx(11 / 3)


@pytest.mark.integration
def test_no_report_prints_a_zero_width_interval_at_small_n(
    wwd_release, borsch_release, scripted_backend, tmp_path: Path
) -> None:
    from culturebench.eval.run_report import Headline

    assert (
        Headline("en", "correct", 0.0, sem=0.0, n=10).formatted()
        == "0.000 (SEM 0 at n = 10 < 30: no interval)"
    )
    assert "no interval" in Headline("all", "rating", 4.0, no_interval=True).formatted()
    run_eval(
        "wwd",
        "country",
        scripted_backend("no idea"),
        tmp_path / "wwd",
        local=str(wwd_release.folder),
        limit=10,
    )
    assert "0.000 ± 0.000" not in _report(tmp_path / "wwd")  # 0 of 10 correct
    results = run_eval("borsch", "origin-qa", scripted_backend("не знаю"), tmp_path / "b",
                       local=str(borsch_release.folder), limit=3)  # fmt: skip
    for lang in ("ru", "uk"):
        stat = results["metrics"][lang]["jaccard"]
        assert stat["mean"] == 0.0 and stat["ci95"][1] - stat["ci95"][0] > 0.2  # 3 dishes, all 0
    assert "0.000 [0.000, 0.000]" not in _report(tmp_path / "b")


@pytest.mark.integration
def test_recorded_outputs_have_their_coverage(borsch_release, tmp_path: Path) -> None:
    """`eval score` (recorded outputs): :func:`scored_coverage` states the rows the outputs
    answer of the release's, their seeds and the parser versions; a results file without a
    coverage block is shown reconstructed from its provenance."""
    from culturebench.eval.answers import countries
    from culturebench.eval.coverage import coverage_lines, coverage_of, scored_coverage
    from culturebench.eval.run_folder import read_run, read_samples
    from culturebench.eval.score import score_generations
    from culturebench.eval.tasks import get_task
    from datasets import load_dataset

    rows = load_dataset(str(borsch_release.folder), "parallel", split="test")
    lines = [{"id": f"{rows[i]['id']}:ru:0", "output": "Россия", "seed": s} for i in range(3) for s in (0, 1)]
    path = tmp_path / "gen.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    results = score_generations(
        "borsch", "origin-qa", [path], tmp_path / "out", local=str(borsch_release.folder)
    )
    run, samples = read_run(tmp_path / "out"), read_samples(tmp_path / "out" / "samples.jsonl")
    coverage = scored_coverage(get_task("borsch", "origin-qa"), run, samples)
    assert coverage["rows"]["used"] == 3 and coverage["rows"]["release"] == rows.num_rows
    assert coverage["seeds"] == [0, 1] and coverage["samples"] == 6 and coverage["release"]["build"] == "full"
    assert coverage["parsers_used"] == ["country"]
    assert coverage["parsers"]["country"] == countries.VERSION
    text = "\n".join(coverage_lines(coverage_of(results)))
    if "coverage" not in results:  # until `eval score` writes its own block
        assert "reconstructed" in text and "seeds: 0, 1" in text
    assert f"of {rows.num_rows}" in text and "a full build" in text


@pytest.mark.integration
def test_a_run_json_without_coverage_finishes_with_a_reconstructed_one(
    wwd_release, scripted_backend, tmp_path: Path
) -> None:
    """Shards written before coverage was recorded are merged (finish_run) with the coverage
    their run.json gives, marked reconstructed, never with rows or seeds made up."""
    import shutil

    from culturebench.eval.run_folder import read_run, read_samples
    from culturebench.eval.runner import finish_run
    from culturebench.eval.tasks import get_task

    backend = scripted_backend("Algeria")
    run_eval("wwd", "country", backend, tmp_path / "r", local=str(wwd_release.folder), limit=2, first=True)
    old = shutil.copytree(tmp_path / "r", tmp_path / "old")
    run_info = read_run(old)
    run_info.pop("coverage")
    results = finish_run(get_task("wwd", "country"), old, run_info, read_samples(old / "samples.jsonl"), {})
    coverage = results["coverage"]
    assert coverage["reconstructed"] and coverage["rows"]["release"] == 765 and coverage["samples"] == 2
    assert "the first 2 rows in release order" in coverage["limit"]["text"]
    assert "coverage reconstructed from the provenance" in _report(old)


def test_compare_pairs_a_metric_by_the_sample_field_it_is_the_mean_of(
    rubin_release, scripted_backend, tmp_path: Path
) -> None:
    """RuBIN's headline `accuracy` is the mean of the samples' `correct`: paired over the
    shared questions; `na` (a count) cannot be paired and says so."""
    from culturebench.eval.compare import compare, warnings

    local = str(rubin_release.folder)
    run_eval("rubin", "mcqa", scripted_backend("<answer>A</answer>"), tmp_path / "a", local=local)
    run_eval("rubin", "mcqa", scripted_backend("<answer>B</answer>"), tmp_path / "b", local=local, limit=40)
    rows = {r["metric"]: r for r in compare(tmp_path / "a", tmp_path / "b")}
    accuracy = rows["accuracy"]
    assert accuracy["paired"] and accuracy["sample_field"] == "correct" and accuracy["items"][2] == 40
    samples = [
        json.loads(x) for x in (tmp_path / "b" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    shared = {s["row_id"] for s in samples}
    gold = [s["gold"] for s in samples]
    assert accuracy["b"] == pytest.approx(sum(g == 1 for g in gold) / 40)
    assert accuracy["a"] == pytest.approx(sum(g == 0 for g in gold) / 40) and len(shared) == 40
    assert accuracy["interval"] == "bootstrap" and accuracy["ci95"][0] < accuracy["difference"]
    assert not rows["na"]["paired"] and rows["na"]["interval"] == "not paired"
    assert any("not paired" in w and "all na" in w for w in warnings(list(rows.values())))
