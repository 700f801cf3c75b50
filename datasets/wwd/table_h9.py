"""Table H.9/H.10 of the World Wide Dishes paper from scored runs, in exactly the layout of
the authors' ``*_cleaned_stats.csv`` (rows: count, the five task metrics, the four
failure-mode rates in %; one column per continent), so it can be diffed against theirs.

The table is item Table H.9 of ``culturebench eval paper wwd``
(:func:`culturebench.datasets.wwd.paper_report.table_h9_llm`); the ``table_h9.csv`` that
``culturebench eval score wwd`` writes (:func:`summary_files`) is that item."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from culturebench.eval.records import Results

CONTINENTS = ("Africa", "Asia", "Europe", "North America", "Oceania", "South America")
#: row of the published table -> (task, metric key in that task's per-continent block)
METRIC_ROWS = {
    "country_acc": ("country", "correct"),
    "time_of_day_iou": ("time-of-day", "iou"),
    "type_of_dish_iou": ("meal-type", "iou"),
    "utensils_iou": ("utensils", "iou"),
    "ingredients_iou": ("ingredients", "iou"),
}
#: failure-mode rows (percent of descriptions) -> keyword group in prompts.yaml
FAILURE_ROWS = {
    "apologize": "apologize",
    "not known": "not_known",
    "not real": "not_real",
    "take a guess": "guess",
}


def table_h9(results_by_task: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """row -> continent -> value, from the results of the scored tasks (missing: None)."""
    table: dict[str, dict[str, float | None]] = {}
    counts: dict[str, float | None] = dict.fromkeys(CONTINENTS)
    for row, (task, _metric) in METRIC_ROWS.items():
        block = (results_by_task.get(task) or {}).get("metrics", {}).get("en", {})
        per = block.get("per_continent", {})
        table[row] = {c: round(per[c]["mean"], 2) if c in per else None for c in CONTINENTS}
        if task == "country":
            counts = {c: float(per[c]["n"]) if c in per else None for c in CONTINENTS}
    modes = (
        (results_by_task.get("description") or {}).get("metrics", {}).get("en", {}).get("failure_modes", {})
    )
    for row, key in FAILURE_ROWS.items():
        per = modes.get(key, {})
        table[row] = {c: round(100 * per[c]["mean"], 2) if c in per else None for c in CONTINENTS}
    return {"count": counts, **table}


def write_table_h9(table: Mapping[str, Mapping[str, float | None]], path: Path) -> Path:
    """Write a :func:`table_h9` table as CSV in the authors' layout (empty cell: not computed)."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["", *CONTINENTS])
        for row, cells in table.items():
            writer.writerow([row, *("" if cells[c] is None else cells[c] for c in CONTINENTS)])
    return path


def read_published(path: Path) -> dict[str, dict[str, float]]:
    """The authors' ``*_cleaned_stats.csv`` (or ours) as row -> continent -> value."""
    from culturebench.errors import Location, SourceError
    from culturebench.eval.compare import read_table

    out: dict[str, dict[str, float]] = {}
    for (row, continent), value in read_table(path).items():
        out.setdefault(row, {})[continent] = value
    if not any(row in out for row in (*METRIC_ROWS, *FAILURE_ROWS)) or not any(
        continent in cells for cells in out.values() for continent in CONTINENTS
    ):
        raise SourceError(
            Location(Path(path).name, 1),
            f"not a Table H.9 stats file: no row of {', '.join(METRIC_ROWS)} with a continent column",
        )
    return out


def summary_files(results_by_task: Mapping[str, Results], out_dir: Path) -> list[Path]:
    """Report hook for `eval score`/multi-task runs: ``table_h9.csv`` beside the task folders,
    the table of item Table H.9 of ``culturebench eval paper wwd`` computed from the scored
    results (``{task: results}``, the task folders under ``out_dir``)."""
    from culturebench.eval.paper_report import Run, run_item

    if not any(task in results_by_task for task, _ in METRIC_ROWS.values()):
        return []
    out_dir = Path(out_dir)
    runs = [Run.from_results(out_dir / task, results) for task, results in results_by_task.items()]
    # the tasks of one `eval score` (or one multi-task run) are one model's outputs, whatever
    # file each task read: one model, one table
    runs = [replace(run, identity=runs[0].identity) for run in runs]
    _item, ctx = run_item("wwd", "Table H.9", out_dir, runs=runs)
    return [
        write_table_h9(ctx.data["table_h9"], out_dir / "table_h9.csv"),
        write_table_h9_paper(ctx.data["table_h9_paper"], out_dir / "table_h9_paper.csv"),
    ]


def write_table_h9_paper(cells: Mapping[str, Any], path: Path) -> Path:
    """Table H.9 in the printed layout: rows Country, Time of day, Type of meal, Utensils,
    Ingredients; a column per continent; ``mean±sem`` in percent with one decimal (``cells``:
    ``{"<row>: <continent>": (mean %, sem %)}`` as item Table H.9 computes them)."""
    rows = ("Country", "Time of day", "Type of meal", "Utensils", "Ingredients")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["", *CONTINENTS])
        for row in rows:
            out = []
            for continent in CONTINENTS:
                cell = cells.get(f"{row}: {continent}")
                if cell is None:
                    out.append("")
                else:
                    mean, sem = cell
                    out.append(f"{mean:.1f}" + ("" if sem is None else f"±{sem:.1f}"))
            writer.writerow([row, *out])
    return path
