"""Compare two runs (or two tables such as ``table_h9.csv`` and a published stats file).

Runs: every headline metric the two share, side by side, over the SAME items: the items both
runs scored (the dish, the question). A, B and B - A are the means over those shared items,
with a paired 95% interval of the difference (the same drawn items scored in both runs, all
their prompts and seeds together): the percentile bootstrap at 30 shared items or more, the
conservative Wilson bound below that (values in [0, 1]), none otherwise. Each row also holds
each run's own value over all its items and how many items each run had and shared; when the
two runs' items differ, :func:`warnings` says so. A metric that is not a mean of per-sample
values cannot be paired: it is compared as each run reports it, and flagged.
Tables: the cells the two CSV files share, side by side, with their differences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.eval.records import RECORD_KEYS, Results

ITERATIONS = 1000


def _samples_by_unit(samples: Sequence[Mapping[str, Any]], group: str, metric: str) -> dict[str, list[float]]:
    """Per item, the values of the per-sample field ``metric`` (a boolean as 0/1) in ``group``."""
    out: dict[str, list[float]] = {}
    for sample in samples:
        if group != "all" and sample.get("lang") != group:
            continue
        value = sample.get(metric)
        if not isinstance(value, int | float):
            continue
        out.setdefault(_unit(sample), []).append(float(value))
    return out


# sample fields that are bookkeeping, never a score a headline metric is the mean of
# (and the schema's normalised fields: ``score`` copies the task's own score field, named there)
_NOT_SCORES = {
    "id",
    "run",
    "row_id",
    "lang",
    "prompt_index",
    "n_images",
    "seed",
    "gold",
    "scored_chars",
} | set(RECORD_KEYS)


def _sample_field(
    samples_a: Sequence[Mapping[str, Any]],
    samples_b: Sequence[Mapping[str, Any]],
    group: str,
    metric: str,
    values: tuple[float, float],
) -> str | None:
    """The per-sample field a headline metric is the mean of: the field of the metric's name,
    else the one score field whose mean over each run's samples (in ``group``) is that run's
    headline value (RuBIN's ``accuracy`` is the mean of ``correct``); None when there is none
    (a count, a rate of a negated field, a best-of-prompts figure: not paired)."""

    def mean(samples: Sequence[Mapping[str, Any]], key: str) -> float | None:
        got = [v for vs in _samples_by_unit(samples, group, key).values() for v in vs]
        return sum(got) / len(got) if got else None

    if _samples_by_unit(samples_a, group, metric) and _samples_by_unit(samples_b, group, metric):
        return metric
    keys = sorted({k for s in [*samples_a[:1], *samples_b[:1]] for k in s} - _NOT_SCORES)
    for key in keys:
        means = (mean(samples_a, key), mean(samples_b, key))
        if all(m is not None and abs(m - v) < 1e-9 for m, v in zip(means, values, strict=True)):
            return key
    return None


def _unit(sample: Mapping[str, Any]) -> str:
    """The item a sample is about (its row), or its id when it names none."""
    return str(sample.get("row_id", sample.get("id")))


def _items(samples: Sequence[Mapping[str, Any]], group: str) -> set[str]:
    """The items (rows) a run's samples cover, in ``group`` (a prompt language) or all."""
    return {_unit(s) for s in samples if group == "all" or s.get("lang") == group}


@dataclass(frozen=True)
class Difference:
    """mean(B) - mean(A) over ``units`` items and its 95% interval (``lo``/``hi`` None when
    there is none), made by ``method`` (:mod:`culturebench.eval.metrics`)."""

    value: float | None
    lo: float | None
    hi: float | None
    method: str
    units: int

    @property
    def ci95(self) -> tuple[float, float] | None:
        return None if self.lo is None or self.hi is None else (self.lo, self.hi)


def paired_difference(
    a: dict[str, list[float]],
    b: dict[str, list[float]],
    *,
    iterations: int = ITERATIONS,
    seed: int = 0,
    over: str = "shared",
) -> Difference:
    """mean(B) - mean(A) and its 95% interval, resampling items: ``over="shared"`` the items
    both runs scored; ``over="union"`` every item either scored (each mean over the drawn items
    it has), for two item sets where one holds the other (RuBIN-EASY within RuBIN). The
    interval: the percentile bootstrap at :data:`~culturebench.eval.metrics.MIN_BOOTSTRAP_UNITS`
    items or more; below that, for values in [0, 1], the Wilson bound of (d + 1) / 2 at n items
    (d lies in [-1, 1]: conservative, never of zero width); otherwise none."""
    import numpy as np

    from culturebench.eval.metrics import (
        BOOTSTRAP,
        MIN_BOOTSTRAP_UNITS,
        NO_INTERVAL,
        WILSON_BOUND,
        unit_draws,
        wilson_interval,
    )

    units = sorted(set(a) & set(b)) if over == "shared" else sorted(set(a) | set(b))
    empty: list[float] = []
    if not units or not any(a.get(u) for u in units) or not any(b.get(u) for u in units):
        return Difference(None, None, None, NO_INTERVAL, len(units))
    sum_a, n_a, sum_b, n_b = np.array(
        [
            [sum(a.get(u, empty)), len(a.get(u, empty)), sum(b.get(u, empty)), len(b.get(u, empty))]
            for u in units
        ]
    ).T
    value = float(sum_b.sum() / n_b.sum() - sum_a.sum() / n_a.sum())
    if len(units) >= MIN_BOOTSTRAP_UNITS:
        diff = np.concatenate(
            [
                sum_b[draw].sum(1) / n_b[draw].sum(1) - sum_a[draw].sum(1) / n_a[draw].sum(1)
                for draw in unit_draws(len(units), iterations, seed)
            ]
        )
        lo, hi = np.quantile(diff, [0.025, 0.975])
        return Difference(value, float(lo), float(hi), BOOTSTRAP, len(units))
    values = [v for u in units for v in (*a.get(u, empty), *b.get(u, empty))]
    if all(0.0 <= v <= 1.0 for v in values):
        lo, hi = wilson_interval((value + 1) / 2 * len(units), len(units))
        return Difference(value, 2 * lo - 1, 2 * hi - 1, WILSON_BOUND, len(units))
    return Difference(value, None, None, NO_INTERVAL, len(units))


def paired_difference_ci(
    a: dict[str, list[float]],
    b: dict[str, list[float]],
    *,
    iterations: int = ITERATIONS,
    seed: int = 0,
    over: str = "shared",
) -> tuple[float, float] | None:
    """The 95% interval of :func:`paired_difference` (None where there is none)."""
    return paired_difference(a, b, iterations=iterations, seed=seed, over=over).ci95


def compare_runs(run_a: Path, run_b: Path) -> list[dict[str, Any]]:
    """One row per headline metric the two runs share: ``a``, ``b`` and ``difference`` over the
    items both scored (``paired`` True), or, for a metric that is not a mean of per-sample
    values, as each run reports it (``paired`` False); ``a_all``/``b_all`` each run's own value;
    ``items`` (items of A, of B, shared); ``ci95`` and its ``interval`` method."""
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
        items_a, items_b = _items(samples_a, head_a.group), _items(samples_b, head_a.group)
        field = _sample_field(samples_a, samples_b, head_a.group, head_a.metric, (head_a.value, head_b.value))
        by_a = _samples_by_unit(samples_a, head_a.group, field) if field else {}
        by_b = _samples_by_unit(samples_b, head_b.group, field) if field else {}
        diff = paired_difference(by_a, by_b)
        paired = diff.value is not None
        shared = sorted(set(by_a) & set(by_b))
        a = _mean([v for u in shared for v in by_a[u]]) if paired else head_a.value
        b = _mean([v for u in shared for v in by_b[u]]) if paired else head_b.value
        rows.append(
            {
                "group": head_a.group,
                "metric": head_a.metric,
                "a": a,
                "b": b,
                "difference": b - a,
                "ci95": diff.ci95,
                "interval": diff.method if paired else "not paired",
                "paired": paired,
                "sample_field": field if paired else None,
                "a_all": head_a.value,
                "b_all": head_b.value,
                "n": (head_a.n, head_b.n),
                "items": (len(items_a), len(items_b), len(items_a & items_b)),
            }
        )
    return rows


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def warnings(rows: Sequence[dict[str, Any]]) -> list[str]:
    """What a reader of a run comparison must know: the two runs' items differ (the numbers
    are over the shared ones only), or a metric could not be paired (its difference is over
    each run's own items)."""
    out = []
    seen: set[tuple[int, int, int]] = set()
    for row in rows:
        items = row.get("items")
        if not items or tuple(items) in seen:
            continue
        seen.add(tuple(items))
        n_a, n_b, shared = items
        if n_a != shared or n_b != shared:
            out.append(
                f"{row['group']}: A has {n_a} items, B {n_b}, {shared} shared: A, B and B - A are over "
                f"the {shared} shared items (each run's own value over all its items is in results)"
            )
    unpaired = [f"{r['group']} {r['metric']}" for r in rows if r.get("items") and not r.get("paired")]
    if unpaired:
        out.append(
            "not paired (not a mean of per-sample values; each run's own value, over its own items): "
            + ", ".join(unpaired)
        )
    return out


def items_line(rows: Sequence[dict[str, Any]]) -> str:
    """How many items each run had and how many both scored (from the rows' ``items``)."""
    counts = next((r["items"] for r in rows if r.get("items") and r["group"] == "all"), None)
    counts = counts or next((r["items"] for r in rows if r.get("items")), None)
    if counts is None:
        return ""
    n_a, n_b, shared = counts
    return (
        f"Items: A {n_a}, B {n_b}, shared {shared}. A, B, B - A and its 95% interval are over the "
        "shared items (paired); the interval is the percentile bootstrap at 30 shared items or "
        "more, the conservative Wilson bound below that."
    )


def _read_run(folder: Path) -> tuple[Results, list[Mapping[str, Any]]]:
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
            parsed = _number(value)
            if parsed is not None:
                out[(row_label, column)] = parsed
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
    equal at the printed precision (the value and, where both have one, the ±). Printed cells
    our table lacks have no row: :func:`tally` counts them (``len(printed.cells)``)."""
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

    def kind(path: Path) -> str:
        return "a folder" if path.is_dir() else ("a CSV table" if path.suffix == ".csv" else "neither")

    raise UsageError(
        f"{a} is {kind(a)} and {b} is {kind(b)}: compare two run folders, or two CSV tables "
        "(e.g. table_h9.csv and the published stats)"
    )


def markdown(rows: Sequence[dict[str, Any]], name_a: str, name_b: str) -> str:
    """The comparison as a Markdown table; for runs, the items each had and shared, and the
    :func:`warnings`, below it."""
    from culturebench.text import md_row

    runs = any(row.get("items") for row in rows)
    heads = ["group", "metric", f"A: {name_a}", f"B: {name_b}", "B - A", "95% CI of B - A"]
    lines = [
        md_row([*heads, "items A / B / shared"] if runs else heads),
        "| --- | --- | ---: | ---: | ---: | --- |" + (" ---: |" if runs else ""),
    ]
    for row in rows:
        cells = [row["group"], row["metric"], f"{row['a']:.3f}", f"{row['b']:.3f}",
                 f"{row['difference']:+.3f}", interval_text(row)]  # fmt: skip
        if runs:
            cells.append(" / ".join(map(str, row["items"])) if row.get("items") else "")
        lines.append(md_row(cells))
    if runs:
        lines += ["", items_line(rows), *(f"Warning: {w}" for w in warnings(rows))]
    return "\n".join(lines) + "\n"


def interval_text(row: dict[str, Any]) -> str:
    """The 95% interval cell of a comparison row: the bounds, or why there are none."""
    ci = row.get("ci95")
    if ci:
        return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
    if row.get("interval") == "not paired":
        return "not paired"
    if row.get("items"):
        return "no interval (n < 30)"
    return ""


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
    """``"N of M cells equal <source> at the printed precision, K without a run (their ±: J of
    L)"``: M is every cell the paper prints, K of them absent from our table
    (:class:`~culturebench.eval.claims.Tally`: a table cut to one row is never all equal)."""
    from culturebench.eval.claims import Tally

    pm = [r["pm_equal"] for r in rows if r["pm_equal"] is not None]
    equal = sum(r["equal"] for r in rows)
    count = Tally(len(rows), equal, len(printed.cells) - len(rows))
    text = count.text(f" {printed.source} at the printed precision")
    return text + (f" (their ±: {sum(pm)} of {len(pm)})" if pm else "")
