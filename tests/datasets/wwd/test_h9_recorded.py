"""`eval score wwd --matcher recorded`: the authors' own GPT-3.5 judgments (country match,
ingredient intersection and union, one per dish and seed in *_cleaned_compared.csv) replayed
through the tasks' judge, and Table H.9 compared with the print cell by cell: every printed
GPT 3.5 cell is equal at the printed precision (value and ± SEM) or is one of the traced
exceptions below, each checked against the rows that explain it."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.score import score_generations

pytestmark = pytest.mark.integration

TASKS = ("country", "description", "ingredients", "meal-type", "time-of-day", "utensils")
COMPARED = "gpt35_dish_info_cleaned_compared.csv"
#: printed cells the authors' files do not give, each traced in a test below
EXCEPTIONS = {
    "Country: Africa": "1,559 of 2,560 judgments are True (60.90%); the print needs 1,561",
    "Utensils: Europe": "wwd-485 'fork with a long handle': the print's substring match finds 'hand'",
}


@pytest.fixture(scope="module")
def report(gpt35_recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("paper")
    result = CliRunner().invoke(
        app, ["eval", "paper", "wwd", *(str(gpt35_recorded / t) for t in TASKS), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return json.loads((out / "paper_report.json").read_text(encoding="utf-8"))


def _samples(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").open(encoding="utf-8")]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_printed_gpt35_cell_is_reproduced_or_traced(report: dict) -> None:
    h9 = next(i for i in report["items"] if i["ref"] == "Table H.9")
    rows = {r["label"].removeprefix("GPT 3.5: "): r for r in h9["rows"] if r["paper"] is not None}
    metric_rows = {k: r for k, r in rows.items() if not k.startswith("Dish count")}
    assert len(metric_rows) == 30
    equal, differ = [], []
    for label, row in metric_rows.items():
        ours_sem = float(row["note"].split("±")[1].split("(")[0])
        paper_sem = float(row["note"].split("paper ±")[1].rstrip(")").split(")")[0])
        assert ours_sem == paper_sem, f"{label}: ± {ours_sem} vs printed ± {paper_sem}"  # all 30
        (equal if round(row["ours"], 1) == row["paper"] else differ).append(label)
    assert sorted(differ) == sorted(EXCEPTIONS), differ  # a newly equal cell: drop it from EXCEPTIONS
    assert len(equal) == 28
    assert "28 of 30 cells equal at the printed precision (their ± SEM: 30 of 30)" in h9["note"]


def test_judgments_are_replayed_with_their_source(gpt35_recorded: Path, wwd_probing: Path) -> None:
    country = _samples(gpt35_recorded / "country")
    assert len(country) == 3825 and all(s["matcher"] == "recorded" for s in country)
    by_id = {s["id"]: s for s in country}
    recorded = _rows(wwd_probing / COMPARED)
    first = recorded[0]  # row 2 of the file (its header is row 1)
    sample = by_id[f"wwd-{first['id']}:en:0@{first['seed']}"]
    # the answer (and its judgment) is in both files; identical duplicates are read from the first
    assert sample["judge_source"] in (f"{COMPARED} row 2", "gpt35_dish_info_cleaned_results.csv row 2")
    assert sample["correct"] == float(first["country_match"] == "True")
    assert sum(s["correct"] for s in country) == sum(r["country_match"] == "True" for r in recorded)
    run = json.loads((gpt35_recorded / "country" / "run.json").read_text(encoding="utf-8"))
    assert run["matcher"]["matcher"] == "recorded" and run["matcher"]["judge_missing"] == 0
    assert (
        COMPARED in run["matcher"]["judge"]["model"] or "cleaned_results" in run["matcher"]["judge"]["model"]
    )
    lines = (gpt35_recorded / "country" / "judgments_recorded.jsonl").read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[0])
    assert (
        len(lines) == 3825
        and entry["prompt"].startswith("COUNTRY: `")
        and entry["output"] in ("True", "False")
    )
    # tasks without a judge are scored as they always are, in the same command
    assert all("matcher" not in s for s in _samples(gpt35_recorded / "time-of-day"))


def test_trace_country_africa(gpt35_recorded: Path) -> None:
    africa = [s for s in _samples(gpt35_recorded / "country") if "Africa" in s["continents"]]
    assert (sum(s["correct"] for s in africa), len(africa)) == (1559, 2560)
    assert round(100 * 1559 / 2560, 1) == 60.9 and round(100 * 1561 / 2560, 1) == 61.0


def test_trace_utensils_europe(gpt35_recorded: Path, wwd_probing: Path) -> None:
    """The print's keyword matching runs on the contributed answer as typed: 'hand' is found in
    'fork with a long handle' (wwd-485); the release reads that answer as Fork + Other."""
    samples = [s for s in _samples(gpt35_recorded / "utensils") if "Europe" in s["continents"]]
    scored = [s for s in samples if s["iou"] is not None]
    assert round(100 * sum(s["iou"] for s in scored) / len(scored), 1) == 62.0
    results = _rows(wwd_probing / "gpt35_dish_info_cleaned_results.csv")
    typed = {r["utensils"] for r in results}
    assert "fork with a long handle" in typed
    quirk = [s for s in scored if s["row_id"] == "wwd-485"]
    assert len(quirk) == 5 and all(s["iou"] == 1.0 and s["predicted"] == ["fork"] for s in quirk)
    as_printed = sum(0.5 if s["row_id"] == "wwd-485" else s["iou"] for s in scored)  # {fork} / {fork, hand}
    assert round(100 * as_printed / len(scored), 1) == 60.9


def test_ingredients_africa_counts_the_judges_lists_as_the_authors_did(
    gpt35_recorded: Path, wwd_probing: Path
) -> None:
    """--matcher recorded divides len() of the judge's two lists as written, as the authors'
    code did: eight intersections are [''] (no shared ingredient), which len() counts as one.
    Every row then equals the authors' own ratio, and Africa equals the print (34.4)."""
    samples = {s["id"]: s for s in _samples(gpt35_recorded / "ingredients")}
    africa = [s for s in samples.values() if "Africa" in s["continents"]]
    assert round(100 * sum(s["iou"] for s in africa) / len(africa), 1) == 34.4
    authors = {}
    for r in _rows(wwd_probing / COMPARED):
        both, either = ast.literal_eval(r["ingredients_intersect"]), ast.literal_eval(r["ingredients_union"])
        authors[f"wwd-{r['id']}:en:0@{r['seed']}"] = (len(both) / len(either), both)
    assert sum("" in both for _, both in authors.values()) == 8
    assert all(abs(authors[k][0] - s["iou"]) < 1e-12 for k, s in samples.items())
    # without the recorded rule (the deterministic or a live judge's reading) [''] is no ingredient
    from culturebench.datasets.wwd.tasks import IngredientsTask

    quirk = next(k for k, (_, both) in authors.items() if "" in both)
    row = next(r for r in _rows(wwd_probing / COMPARED) if f"wwd-{r['id']}:en:0@{r['seed']}" == quirk)
    answers = {n: row[n] for n in ("ingredients_intersect", "ingredients_union")}
    live = IngredientsTask().apply_judgments({**samples[quirk], "matcher": "llm"}, answers)
    assert live["iou"] == 0.0 and samples[quirk]["iou"] > 0


def test_a_missing_judgment_refuses_the_recording(wwd_release, tmp_path: Path) -> None:
    """Judgments recorded for some rows only are not the recording the numbers came from: one
    line naming the first row without one, and nothing written (not even run.json)."""
    path = tmp_path / "country.jsonl"
    records = [
        {"id": "wwd-748", "seed": 0, "output": "Algeria", "country_match": "True"},
        {"id": "wwd-748", "seed": 1, "output": "Morocco", "country_match": ""},
        {"id": "wwd-749", "seed": 0, "output": "Tunisia", "country_match": "I think so"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["eval", "score", "wwd", "--task", "country", "--generations", str(path), "--matcher", "recorded",
         "--local", str(wwd_release.folder), "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "country.jsonl row 2: no recorded judgment" in result.output and "1 of 3" in result.output
    assert not (tmp_path / "out").exists()
    # every row judged: an answer not in the asked form is counted, as with a live judge
    records[1]["country_match"] = "False"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    results = score_generations(
        "wwd", "country", [path], tmp_path / "out", local=str(wwd_release.folder), judge="recorded"
    )
    assert results["judge_missing"] == 0 and results["judge_unparsed"] == 1
    en = results["metrics"]["en"]
    assert (en["n"], en["n_judge_unparsed"], en["n_without_gold"]) == (2, 1, 0)
    samples = {s["id"]: s for s in _samples(tmp_path / "out")}
    assert samples["wwd-748:en:0@0"]["judge_source"] == "country.jsonl row 1"


def test_recorded_needs_the_judgment_column(wwd_release, tmp_path: Path) -> None:
    path = tmp_path / "country.csv"
    path.write_text("id,seed,output\nwwd-748,0,Algeria\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["eval", "score", "wwd", "--task", "country", "--generations", str(path), "--matcher", "recorded",
         "--local", str(wwd_release.folder), "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "country.csv" in result.output and "country_match" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out" / "samples.jsonl").exists()


def test_eval_compare_sets_table_h9_paper_beside_a_printed_row(gpt35_recorded: Path, tmp_path: Path) -> None:
    table = gpt35_recorded / "table_h9_paper.csv"
    out = tmp_path / "vs_print.md"
    result = CliRunner().invoke(
        app, ["eval", "compare", str(table), "--paper", "wwd:GPT 3.5", "--out", str(out)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "28 of 30 cells equal World Wide Dishes Table H.9, GPT 3.5 at the printed precision" in text
    assert "(their ±: 30 of 30)" in text
    africa = next(line for line in text.splitlines() if line.startswith("| Country | Africa |"))
    assert "60.9 ± 1.0" in africa and "61.0 ± 1.0" in africa and africa.endswith("| no, ± yes |")
    # against another printed model the same file is mostly different
    other = CliRunner().invoke(app, ["eval", "compare", str(table), "--paper", "wwd:Llama 3-8B"])
    assert other.exit_code == 0 and "of 30 cells equal" in other.output
    assert "28 of 30" not in other.output
    for args, message in (
        (["--paper", "wwd:GPT 4"], "prints no model 'GPT 4'"),
        (["--paper", "wwd"], "DATASET:MODEL"),
        ([str(table), "--paper", "wwd:GPT 3.5"], "one of the two"),
    ):
        bad = CliRunner().invoke(app, ["eval", "compare", str(table), *args])
        assert bad.exit_code != 0 and message in bad.output and "Traceback" not in bad.output
