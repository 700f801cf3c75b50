"""WWD Table H.9/H.10 compared with what the paper prints (not with the authors' stats CSV,
which differs from its own paper): the authors' GPT-3.5 files scored here, then item H.9/H.10
of ``eval paper`` and ``table_h9_paper.csv`` in the printed layout."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.integration

TASKS = ("country", "description", "ingredients", "meal-type", "time-of-day", "utensils")


@pytest.fixture(scope="module")
def scored(gpt35_scored: Path) -> Path:
    return gpt35_scored


def test_table_h9_paper_csv_is_the_printed_layout(scored: Path) -> None:
    with open(scored / "table_h9_paper.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["", "Africa", "Asia", "Europe", "North America", "Oceania", "South America"]
    assert [r[0] for r in rows[1:]] == ["Country", "Time of day", "Type of meal", "Utensils", "Ingredients"]
    time_of_day = [cell.split("±")[0] for cell in rows[2][1:]]
    assert time_of_day == ["50.7", "52.0", "57.9", "55.3", "55.0", "49.2"]  # the printed GPT 3.5 row


def test_items_compare_gpt35_with_the_print(scored: Path, wwd_probing: Path, tmp_path: Path) -> None:
    out = tmp_path / "paper"
    result = CliRunner().invoke(
        app,
        ["eval", "paper", "wwd", *(str(scored / t) for t in TASKS), "--out", str(out),
         "--input", f"h9={wwd_probing / 'gpt35_dish_info_cleaned_stats.csv'}"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "paper_report.json").read_text(encoding="utf-8"))
    items = {i["ref"]: i for i in report["items"]}
    h9, h10 = items["Table H.9"], items["Table H.10"]
    rows = {r["label"]: r for r in h9["rows"]}
    # the paper column is the print (percent), not the stats CSV (whose utensils row is .47 ...)
    assert rows["GPT 3.5: Utensils: Africa"]["paper"] == 34.0
    assert "authors' stats file: 47.0" in rows["GPT 3.5: Utensils: Africa"]["note"]
    assert rows["GPT 3.5: Time of day: Oceania"]["paper"] == 55.0
    for continent in ("Africa", "Asia", "Europe", "North America", "Oceania", "South America"):
        row = rows[f"GPT 3.5: Time of day: {continent}"]
        assert round(row["ours"], 1) == row["paper"]
    assert h10["status"] == "reproduced"
    assert "24 of 24 cells equal at the printed precision" in h10["note"]
    assert all(round(r["ours"], 2) == r["paper"] for r in h10["rows"])
