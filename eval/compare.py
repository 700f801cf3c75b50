"""Compare two runs (or two tables such as ``table_h9.csv`` and a published stats file).

Runs: every headline metric the two share, side by side, with the difference (B - A) and a
paired bootstrap 95% interval of the difference. The unit resampled is the item (the dish,
the question): the same drawn items are scored in both runs, all their prompts and seeds
together. Tables: the cells the two CSV files share, side by side, with their differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ITERATIONS = 1000


def _samples_by_unit(samples: Sequence[dict[str, Any]], group: str, metric: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for sample in samples:
        if group != "all" and sample.get("lang") != group:
            continue
        value = sample.get(metric)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        out.setdefault(str(sample.get("row_id", sample.get("id"))), []).append(float(value))
    return out


def paired_difference_ci(
    a: dict[str, list[float]],
    b: dict[str, list[float]],
    *,
    iterations: int = ITERATIONS,
    seed: int = 0,
    over: str = "shared",
) -> tuple[float, float] | None:
    """95% percentile interval of mean(B) - mean(A), resampling items: ``over="shared"`` the
    items both runs scored; ``over="union"`` every item either scored (each mean over the drawn
    items it has), for two item sets where one holds the other (RuBIN-EASY within RuBIN)."""
    import numpy as np

    from culturebench.eval.metrics import unit_draws

    units = sorted(set(a) & set(b)) if over == "shared" else sorted(set(a) | set(b))
    if len(units) < 2:
        return None
    empty: list[float] = []
    sum_a, n_a, sum_b, n_b = np.array(
        [
            [sum(a.get(u, empty)), len(a.get(u, empty)), sum(b.get(u, empty)), len(b.get(u, empty))]
            for u in units
        ]
    ).T
    diff = np.concatenate(
        [
            sum_b[draw].sum(1) / n_b[draw].sum(1) - sum_a[draw].sum(1) / n_a[draw].sum(1)
            for draw in unit_draws(len(units), iterations, seed)
        ]
    )
    lo, hi = np.quantile(diff, [0.025, 0.975])
    return float(lo), float(hi)


def compare_runs(run_a: Path, run_b: Path) -> list[dict[str, Any]]:
    """One row per headline metric the two runs share."""
    from culturebench.eval.run_report import headlines

    results_a, samples_a = _read_run(run_a)
    results_b, samples_b = _read_run(run_b)
    datasets = [r["provenance"]["dataset"].get("dataset") for r in (results_a, results_b)]
    if datasets[0] != datasets[1]:
        from culturebench.errors import CultureBenchError

        raise CultureBenchError(
            f"{run_a} is a {datasets[0]} run and {run_b} a {datasets[1]} run: nothing to compare"
        )
    heads_b = {(h.group, h.metric): h for h in headlines(results_b["metrics"])}
    rows = []
    for head_a in headlines(results_a["metrics"]):
        head_b = heads_b.get((head_a.group, head_a.metric))
        if head_b is None:
            continue
        ci = paired_difference_ci(
            _samples_by_unit(samples_a, head_a.group, head_a.metric),
            _samples_by_unit(samples_b, head_b.group, head_b.metric),
        )
        rows.append(
            {
                "group": head_a.group,
                "metric": head_a.metric,
                "a": head_a.value,
                "b": head_b.value,
                "difference": head_b.value - head_a.value,
                "ci95": ci,
                "n": (head_a.n, head_b.n),
            }
        )
    return rows


def _read_run(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``results.json`` and the samples of a finished run, read strictly
    (:mod:`culturebench.inputs`: UTF-8, no key twice in an object, no sample id twice, no torn
    line); the results' shape is checked by the runner's :func:`read_results`."""
    from culturebench.eval.run_folder import RESULTS, SAMPLES, read_results
    from culturebench.inputs import read_json, read_jsonl

    if (folder / RESULTS).is_file():
        read_json(folder / RESULTS, what="a results file", name=str(folder / RESULTS))
    results = read_results(folder)
    samples_path = folder / SAMPLES
    if not samples_path.exists():
        return results, []
    records = read_jsonl(samples_path, what="a samples file", name=str(samples_path), unique_key="id")
    return results, [sample for _, sample in records]


@dataclass(frozen=True)
class Printed:
    """A paper's printed cells (a dataset's ``report.printed_table`` hook): (row, column) ->
    (value, ± or None), at ``digits`` decimals."""

    source: str
    cells: dict[tuple[str, str], tuple[float, float | None]]
    digits: int


def _number(cell: str) -> tuple[float, float | None] | None:
    """``"61.0"`` -> (61.0, None); ``"61.0±1.0"`` (a printed-layout cell) -> (61.0, 1.0)."""
    value, _, pm = cell.partition("±")
    try:
        return float(value), (float(pm) if pm.strip() else None)
    except ValueError:
        return None


def read_cells(path: Path, *, name: str | None = None) -> dict[tuple[str, str], tuple[float, float | None]]:
    """A CSV table with row labels in the first column: (row, column) -> (number, ± or None)
    (cells that are not numbers are left out; a ``mean±sem`` cell is (mean, sem)), in file
    order. ``name``:
    the file in errors (default: the path as given). Refused with a :class:`SourceError`
    naming the file, row and column: a file that is missing, empty, not UTF-8 or without rows;
    a column name or row label given twice (one would silently replace the other); a value
    beyond the header's columns."""
    from culturebench.errors import Location, SourceError
    from culturebench.inputs import check_header, read_csv_rows

    label = str(path) if name is None else name
    rows = read_csv_rows(path, what="a CSV table", name=label)
    header_row, first = rows[0]
    header = [title.strip() for title in first]
    check_header(header, label, row=header_row)
    if len(header) < 2:
        raise SourceError(Location(label, header_row), "no columns beside the row labels")
    labels: dict[str, int] = {}
    out = {}
    for number, cells in rows[1:]:
        if not any(cell.strip() for cell in cells):
            continue
        extra = next((i for i in range(len(header), len(cells)) if cells[i].strip()), None)
        if extra is not None:
            raise SourceError(
                Location(label, number, f"column {extra + 1}"),
                f"the row has {len(cells)} values, the header {len(header)} columns; it would be dropped",
            )
        row_label = cells[0].strip()
        if row_label in labels:
            raise SourceError(
                Location(label, number, header[0] or "column 1"),
                f"row label {row_label!r} appears twice (rows {labels[row_label]} and {number}); "
                "one would silently replace the other",
            )
        labels[row_label] = number
        for column, value in zip(header[1:], cells[1:], strict=False):
            number = _number(value)
            if number is not None:
                out[(row_label, column)] = number
    if not labels:
        raise SourceError(Location(label, header_row), "no rows below the header")
    return out


def read_table(path: Path, *, name: str | None = None) -> dict[tuple[str, str], float]:
    """:func:`read_cells` without the ±: (row, column) -> number (a ``mean±sem`` cell: its mean)."""
    return {key: value for key, (value, _pm) in read_cells(path, name=name).items()}


def compare_tables(table_a: Path, table_b: Path) -> list[dict[str, Any]]:
    """One row per cell both tables have, in table A's order."""
    a, b = read_table(table_a), read_table(table_b)
    return [
        {
            "group": column,
            "metric": row,
            "a": value,
            "b": b[(row, column)],
            "difference": b[(row, column)] - value,
        }
        for (row, column), value in a.items()
        if (row, column) in b
    ]


def compare_printed(table: Path, dataset: str, model: str) -> tuple[list[dict[str, Any]], Printed]:
    """Our table (a summary file such as ``table_h9_paper.csv``) against the numbers the
    dataset's paper prints for ``model``, cell by cell: the difference, and whether the two are
    equal at the printed precision (the value and, where both have one, the ±)."""
    from culturebench import registry
    from culturebench.errors import UsageError

    hooks = registry.get(dataset).report()
    if hooks is None or not hasattr(hooks, "printed_table"):
        raise UsageError(f"{dataset}: no printed table to compare a file with (report.printed_table)")
    printed: Printed = hooks.printed_table(table.name, model)
    rows = []
    for key, (value, pm) in read_cells(table).items():
        if key not in printed.cells:
            continue
        paper, paper_pm = printed.cells[key]
        equal = round(value, printed.digits) == round(paper, printed.digits)
        pm_equal = None if paper_pm is None or pm is None else round(pm, printed.digits) == paper_pm
        rows.append(
            {"group": key[1], "metric": key[0], "a": value, "b": paper, "difference": paper - value,
             "a_pm": pm, "b_pm": paper_pm, "equal": equal, "pm_equal": pm_equal}
        )  # fmt: skip
    return rows, printed


def compare(a: Path, b: Path) -> list[dict[str, Any]]:
    """Runs (folders) or tables (CSV files): whichever the two paths are."""
    from culturebench.errors import UsageError

    if a.is_dir() and b.is_dir():
        return compare_runs(a, b)
    if a.suffix == ".csv" and b.suffix == ".csv":
        return compare_tables(a, b)
    raise UsageError("compare two run folders, or two CSV tables (e.g. table_h9.csv and the published stats)")


def markdown(rows: Sequence[dict[str, Any]], name_a: str, name_b: str) -> str:
    """The comparison as a Markdown table."""
    from culturebench.text import md_row

    lines = [
        md_row(["group", "metric", f"A: {name_a}", f"B: {name_b}", "B - A", "95% CI of B - A"]),
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        ci = row.get("ci95")
        interval = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
        lines.append(
            md_row([row["group"], row["metric"], f"{row['a']:.3f}", f"{row['b']:.3f}",
                    f"{row['difference']:+.3f}", interval])
        )  # fmt: skip
    return "\n".join(lines) + "\n"


def printed_row(row: dict[str, Any], digits: int, *, no: str = "no") -> list[str]:
    """A :func:`compare_printed` row as text: row, column, ours, printed (each ``value ± pm``),
    printed - ours, and whether they are equal (``no``: how a difference is written)."""

    def cell(value: float, pm: float | None) -> str:
        return f"{value:.{digits}f}" + ("" if pm is None else f" ± {pm:.{digits}f}")

    same = "yes" if row["equal"] else no
    if row["pm_equal"] is not None:
        same += ", ± " + ("yes" if row["pm_equal"] else no)
    return [row["metric"], row["group"], cell(row["a"], row["a_pm"]), cell(row["b"], row["b_pm"]),
            f"{row['difference']:+.{digits}f}", same]  # fmt: skip


def printed_markdown(rows: Sequence[dict[str, Any]], name: str, printed: Printed) -> str:
    """A :func:`compare_printed` comparison as a Markdown table, with the equality tally."""
    from culturebench.text import md_row

    lines = [
        md_row(["row", "column", f"ours: {name}", f"printed: {printed.source}", "printed - ours", "equal"]),
        "| --- | --- | ---: | ---: | ---: | --- |",
        *(md_row(printed_row(row, printed.digits)) for row in rows),
        "",
        tally(rows, printed),
    ]
    return "\n".join(lines) + "\n"


def tally(rows: Sequence[dict[str, Any]], printed: Printed) -> str:
    """``"N of M cells equal at the printed precision (± K of L)"``."""
    pm = [r["pm_equal"] for r in rows if r["pm_equal"] is not None]
    equal = sum(r["equal"] for r in rows)
    text = f"{equal} of {len(rows)} cells equal {printed.source} at the printed precision"
    return text + (f" (their ±: {sum(pm)} of {len(pm)})" if pm else "")
