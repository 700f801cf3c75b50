"""Probe cases (issue 53, claims count every printed cell): a table was "reproduced" from a part
of it (`eval paper` with the time-of-day run alone: "6 of 6 cells equal"; `eval compare TABLE
--paper` on a table cut to one row), and a run whose samples.jsonl was cut, or whose coverage
block was edited to claim more rows, read as complete. Each case through the real commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import CultureBenchError
from culturebench.eval.runner import run_eval

pytestmark = pytest.mark.integration

CONTINENTS = ("Africa", "Asia", "Europe", "North America", "Oceania", "South America")
#: the printed GPT 3.5 time-of-day row of WWD Table H.9 (paper.yaml results.table_h9), value ± SEM
TIME_OF_DAY = ("50.7±0.8", "52.0±1.2", "57.9±2.0", "55.3±2.6", "55.0±14.9", "49.2±3.7")


# ------------------------------------------------------------ a table compared in part (eval paper)
@pytest.mark.unit
def test_a_table_with_printed_cells_without_a_run_is_not_reproduced() -> None:
    """Six compared cells, all equal, of a model whose printed column has 30: not "reproduced",
    and the claim counts the 24 printed cells with no number of ours. A printed model with no
    run is not counted (a table of three printed models, run for one, is that one's cells)."""
    from culturebench.eval.paper_report import PARTIAL, REPRODUCED, Item, Row, Table, judge_status

    rows = [f"{metric}: {c}" for metric in ("Country", "Time of day", "Type", "Utensils", "Ingredients")
            for c in CONTINENTS]  # fmt: skip
    table = Table(digits=1)
    table.add("GPT 3.5", {r: 50.0 for r in rows}, source="paper", model="GPT 3.5")
    table.add("Llama", {r: 40.0 for r in rows}, source="paper", model="Llama")  # no run of it
    ours = {r: (50.0 if r.startswith("Time of day") else None) for r in rows}
    table.add("gpt-3.5-turbo", ours, source="ours", model="GPT 3.5")
    compared = [Row(f"GPT 3.5: {r}", 50.0, 50.0) for r in rows if ours[r] is not None]
    item = judge_status(Item("Table H.9", "t", REPRODUCED, compared, table=table))
    assert item.status == PARTIAL and item.status != REPRODUCED
    assert (item.cells_equal, item.cells_compared, item.cells_without_run) == (6, 6, 24)
    assert item.equal_text == "6 of 30 cells equal, 24 without a run"
    table.columns[-1].cells.update({r: 50.0 for r in rows})  # every printed GPT 3.5 cell has ours
    full = [Row(f"GPT 3.5: {r}", 50.0, 50.0) for r in rows]
    item = judge_status(Item("Table H.9", "t", REPRODUCED, full, table=table))
    assert item.status == REPRODUCED and item.equal_text == "30 of 30 cells equal"
    # an item without a table: a printed row with no number of ours counts the same way
    bare = judge_status(Item("T", "t", REPRODUCED, [Row("a", 8, 8), Row("b", None, 5)]))
    assert bare.status == PARTIAL and bare.equal_text == "1 of 2 cells equal, 1 without a run"


@pytest.mark.slow
def test_the_time_of_day_run_alone_does_not_reproduce_table_h9(gpt35_scored: Path, tmp_path: Path) -> None:
    """The probe: the authors' GPT-3.5 time-of-day run alone read "reproduced (6 of 6 cells
    equal)"; its six cells equal the print, the 30 other printed GPT 3.5 cells (24 of the other
    probes, 6 dish counts from the country run) have no run."""
    out = tmp_path / "paper"
    result = CliRunner().invoke(
        app, ["eval", "paper", "wwd", str(gpt35_scored / "time-of-day"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "paper_report.json").read_text(encoding="utf-8"))
    h9 = next(i for i in report["items"] if i["ref"] == "Table H.9")
    assert h9["status"] == "computed, printed cells without a run"
    assert (h9["cells_equal"], h9["cells_compared"], h9["cells_without_run"]) == (6, 6, 30)
    markdown = (out / "paper_report.md").read_text(encoding="utf-8")
    assert (
        "| Table H.9 | computed, printed cells without a run | 6 of 36 cells equal, 30 without a run |"
        in markdown
    )
    assert "| Table H.9 | reproduced" not in markdown


@pytest.mark.unit
def test_the_site_judges_a_report_file_by_its_cells() -> None:
    """A paper_report.json written before printed cells without a run were counted (or edited)
    says "reproduced" for a part of a table: the site shows what its cells give."""
    from culturebench.eval.paper_report import rejudged

    printed = {"label": "GPT 3.5", "source": "paper", "model": "GPT 3.5", "cells": {"a": 1.0, "b": 2.0}}
    ours = {"label": "gpt", "source": "ours", "model": "GPT 3.5", "cells": {"a": 1.0, "b": None}}
    item = {"ref": "T", "title": "t", "status": "reproduced", "cells_compared": 1, "cells_equal": 1,
            "rows": [{"label": "gpt: a", "ours": 1.0, "paper": 1.0}],
            "table": {"rows": ["a", "b"], "columns": [printed, ours], "digits": 1}}  # fmt: skip
    shown = rejudged(item)
    assert shown["status"] == "computed, printed cells without a run"
    assert shown["claim"] == "1 of 2 cells equal at the printed precision, 1 without a run"
    kept = rejudged({"ref": "F", "status": "not a result"})
    assert kept["status"] == "not a result" and kept["claim"] == ""


# ------------------------------------------------------- eval compare TABLE --paper on one row
@pytest.mark.unit
def test_compare_paper_on_a_one_row_table_counts_the_missing_printed_cells(tmp_path: Path) -> None:
    table = tmp_path / "table_h9_paper.csv"
    table.write_text(",".join(["", *CONTINENTS]) + "\nTime of day," + ",".join(TIME_OF_DAY) + "\n", "utf-8")
    out = tmp_path / "compare.md"
    result = CliRunner().invoke(
        app, ["eval", "compare", str(table), "--paper", "wwd:GPT 3.5", "--out", str(out)], terminal_width=400
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert (
        "6 of 30 cells equal World Wide Dishes Table H.9, GPT 3.5 at the printed precision, 24 without a run"
        in text
    )
    assert "6 of 6 cells" not in text
    assert "6 of 30 cells equal" in out.read_text(encoding="utf-8")


# ------------------------------------------------------ coverage checked against samples.jsonl
@pytest.fixture
def run(wwd_release, scripted_backend, tmp_path: Path) -> Path:
    backend = scripted_backend("It is from Algeria.", model="openai/gpt-3.5-turbo")
    out = tmp_path / "country"
    run_eval("wwd", "country", backend, out, local=str(wwd_release.folder), limit=12)
    return out


def _edit_results(folder: Path, edit) -> None:
    path = folder / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    edit(results)
    path.write_text(json.dumps(results), encoding="utf-8")


def test_a_samples_file_cut_to_five_lines_is_refused(run: Path, wwd_release, tmp_path: Path) -> None:
    from culturebench.eval.paper_report import build_report
    from culturebench.eval.run_report import write_report

    samples = run / "samples.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) > 5
    samples.write_text("".join(lines[:5]), encoding="utf-8")
    why = rf"samples.jsonl holds 5 samples, .*results.json says {len(lines)} \(samples\)"
    with pytest.raises(CultureBenchError, match=why):
        build_report("wwd", [run], tmp_path / "paper", local=str(wwd_release.folder))
    assert not (tmp_path / "paper").exists()
    with pytest.raises(CultureBenchError, match=why):
        write_report([run], tmp_path / "report.md")
    result = CliRunner().invoke(app, ["eval", "paper", "wwd", str(run), "--out", str(tmp_path / "p2")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "holds 5 samples" in " ".join(result.output.split())


def test_a_coverage_block_edited_to_claim_every_dish_is_not_complete(
    run: Path, wwd_release, tmp_path: Path
) -> None:
    """12 dishes answered; the block edited to say 765 used (of 765): the report says PARTIAL
    from samples.jsonl; edited to say 765 answered too: refused, naming the file and the field."""
    from culturebench.eval.paper_report import build_report
    from culturebench.eval.run_report import write_report

    release = json.loads((run / "results.json").read_text(encoding="utf-8"))["coverage"]["rows"]["release"]

    def claim_all(results: dict) -> None:
        results["coverage"]["rows"]["used"] = release

    _edit_results(run, claim_all)
    report = build_report("wwd", [run], tmp_path / "paper", local=str(wwd_release.folder))
    (coverage,) = report["coverage"]["runs"]
    assert coverage["partial"] == [f"samples.jsonl answers 12 of the {release} rows used"]
    markdown = (tmp_path / "paper" / "paper_report.md").read_text(encoding="utf-8")
    assert f"{release} of {release} PARTIAL: samples.jsonl answers 12 of the {release} rows used" in markdown
    text = write_report([run], tmp_path / "report.md").read_text(encoding="utf-8")
    assert f"- PARTIAL: samples.jsonl answers 12 of the {release} rows used" in text

    def claim_answered(results: dict) -> None:
        results["coverage"]["rows"]["scored"] = release

    _edit_results(run, claim_answered)
    with pytest.raises(
        CultureBenchError, match=rf"holds 12 rows, .*results.json says {release} \(coverage.rows.scored\)"
    ):
        build_report("wwd", [run], tmp_path / "paper2", local=str(wwd_release.folder))
    with pytest.raises(CultureBenchError, match=r"coverage\.rows\.scored"):
        write_report([run], tmp_path / "report2.md")


def test_a_whole_run_is_not_marked_partial(run: Path) -> None:
    from culturebench.eval.coverage import checked_coverage

    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    coverage = checked_coverage(run, results)
    assert coverage["partial"] == [] and coverage["checked"]["rows"] == 12
    assert coverage["checked"]["samples"] == results["samples"]
