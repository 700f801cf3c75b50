"""RuBIN's tables and figures from `mcqa` / `mcqa-easy` runs and the release
(``culturebench eval paper rubin RUN...``; the catalogue is ``paper.yaml`` ``items``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.paper_report import (
    COMPUTED,
    OURS,
    Context,
    Item,
    Row,
    Run,
    by_unit,
    missing,
    percent,
    percent_ci,
    unit_mean,
)

LETTERS = "ABCD"


def _correct(sample: Mapping[str, Any]) -> float:
    return float(bool(sample["correct"]))


def _answered(letter: str) -> Callable[[Mapping[str, Any]], float]:
    """1.0 for a sample whose answer is ``letter``, else 0.0."""
    return lambda sample: float(sample["pred"] == letter)


def _samples(run: Run) -> Sequence[Mapping[str, Any]]:
    """A run's samples, read through the task's own fields (``correct``, ``parsed``, ``decade``)."""
    return run.samples()


#: Table 3's columns, by the keys of ``results.table3``
TABLE3 = {"acc": "Acc.", "acc_easy": "Acc. E", "delta": "Δ (E - full, pp)", "na": "NA"}


def table3_accuracy(ctx: Context) -> Item:
    """Per model: accuracy on full and EASY (% with 95% CIs over questions), their difference
    (EASY - full, with a paired bootstrap over the questions of both sets) and NA (%); the
    printed models (``results.table3``) and one per model that has runs side by side."""
    from culturebench.eval.compare import paired_difference_ci

    columns = ctx.columns([*ctx.runs_of("mcqa"), *ctx.runs_of("mcqa-easy")])
    if not columns:
        return missing(ctx.ref, "`mcqa` and/or `mcqa-easy` runs")
    published = ctx.results("table3") or {}
    side = ctx.table(
        {name: {TABLE3[k]: v for k, v in cells.items() if k in TABLE3} for name, cells in published.items()},
        unit="%",
    )
    rows: list[Row] = []
    for model, runs in columns.items():
        paper = ctx.printed(published, runs[0]) or {}
        f = next((r for r in runs if ctx.task_of(r) == "mcqa"), None)
        e = next((r for r in runs if ctx.task_of(r) == "mcqa-easy"), None)
        accuracy: dict[str, float | None] = {}
        cells: dict[str, float | None] = {}
        for label, run, key in (("Acc.", f, "acc"), ("Acc. E", e, "acc_easy")):
            if run is not None:
                accuracy[label], ci, n = unit_mean(_samples(run), _correct)
                cells[label] = percent(accuracy[label])
                rows.append(Row(f"{model}: {label}", cells[label], paper.get(key), n, percent_ci(ci)))
        if f is not None and e is not None:
            a, b = by_unit(_samples(f), _correct), by_unit(_samples(e), _correct)
            full, easy = accuracy["Acc."], accuracy["Acc. E"]
            ours = None if full is None or easy is None else percent(easy - full)
            ci = paired_difference_ci(a, b, over="union")
            units = len(set(a) | set(b))
            cells[TABLE3["delta"]] = ours
            rows.append(Row(f"{model}: Δ (E - full, pp)", ours, paper.get("delta"), units, percent_ci(ci)))
        if f is not None:
            na, ci, n = unit_mean(_samples(f), lambda s: float(not s["parsed"]))
            cells["NA"] = percent(na)
            rows.append(Row(f"{model}: NA", percent(na), paper.get("na"), n, percent_ci(ci)))
        ctx.add_runs(side, model, runs, cells)
    runs = [r for group in columns.values() for r in group]
    ran = {c.model for c in side.columns if c.source == OURS}
    absent = [name for name in published if name not in ran]
    note = "Paper models without a run here: " + ", ".join(sorted(absent)) + "." if absent else ""
    item = Item(ctx.ref, ctx.title, ctx.status(runs), rows, unit="%; n = questions", note=note)
    item.table = side
    return item


def table4_categories(ctx: Context) -> Item:
    """Accuracy per category for every full-RuBIN run, beside the paper's YandexGPT column;
    with the release, the category sizes beside the paper's."""
    runs = ctx.runs_of("mcqa")
    published = ctx.results("table4") or {}
    cats = published.get("categories", {})
    printed = {published["model"]: {c: v.get("accuracy") for c, v in cats.items()}} if cats else {}
    side = ctx.table(printed, unit="accuracy (fraction)", digits=3)
    rows: list[Row] = []
    for model, (run,) in ctx.columns(runs).items():
        groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for s in _samples(run):
            groups[str(s.get("category"))].append(s)
        cells = {}
        for cat in sorted(groups, key=lambda c: (cats.get(c, {}).get("accuracy", 2), c)):
            mean, ci, n = unit_mean(groups[cat], _correct)
            paper = (ctx.printed(printed, run) or {}).get(cat)
            cells[cat] = mean
            rows.append(Row(f"{model}: {cat}", mean, paper, n, ci))
        ctx.add_runs(side, model, [run], cells)
    note = ""
    try:
        sizes = Counter(str(r["category"]) for r in ctx.release_rows("full"))
    except CultureBenchError as exc:  # the release is optional for this item
        sizes, note = Counter(), f"Category sizes not compared: {exc}"
    for cat in sorted(set(sizes) | set(cats)):
        if sizes and ctx.sample_release:
            size = cats.get(cat, {}).get("size")
            rows.append(
                Row(f"size: {cat}", float(sizes.get(cat, 0)), None, note=f"sample build; paper {size}")
            )
        elif sizes:
            rows.append(
                Row(
                    f"size: {cat}",
                    float(sizes.get(cat, 0)),
                    cats.get(cat, {}).get("size"),
                    note="questions in the release",
                )
            )
    if not runs:
        item = missing(ctx.ref, "`mcqa` runs", note)
        item.rows = rows
        return item
    item = Item(
        ctx.ref, ctx.title, ctx.status(runs), rows, unit="accuracy (fraction); n = questions", note=note
    )
    item.table = side
    return item


def table5_wrong_slots(ctx: Context) -> Item:
    """Where each model's wrong (parsed) answers fell, in % of its wrong answers."""
    runs = ctx.runs_of("mcqa")
    if not runs:
        return missing(ctx.ref, "`mcqa` runs")
    published = ctx.results("table5") or {}
    printed = {published["model"]: published.get("share", {})} if published.get("model") else {}
    side = ctx.table(printed, unit="% of wrong answers")
    rows = []
    for model, (run,) in ctx.columns(runs).items():
        wrong = [s for s in _samples(run) if s["parsed"] and not s["correct"]]
        cells = {}
        for letter in LETTERS:
            share, ci, n = unit_mean(wrong, _answered(letter))
            paper = (ctx.printed(printed, run) or {}).get(letter)
            cells[letter] = percent(share)
            rows.append(
                Row(
                    f"{model}: {letter}",
                    percent(share),
                    paper,
                    n,
                    percent_ci(ci),
                    note=f"{len(wrong)} wrong answers",
                )
            )
        ctx.add_runs(side, model, [run], cells)
    item = Item(
        ctx.ref, ctx.title, ctx.status(runs), rows, unit="% of wrong answers; n = questions answered wrongly"
    )
    item.table = side
    return item


def figure5_decades(ctx: Context) -> Item:
    """Accuracy per decade for every full-RuBIN run, with a line plot."""
    runs = ctx.runs_of("mcqa")
    if not runs:
        return missing(ctx.ref, "`mcqa` runs")
    from culturebench.eval.plots import plot_grouped_bars

    rows, series = [], {}
    for model, (run,) in ctx.columns(runs).items():
        groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for s in _samples(run):
            if s.get("decade"):
                groups[str(s["decade"])].append(s)
        points = {}
        for decade in sorted(groups):
            mean, ci, n = unit_mean(groups[decade], _correct)
            rows.append(Row(f"{model}: {decade}", mean, None, n, ci))
            points[decade] = mean
        series[model] = points
    path = ctx.out / "figure5_accuracy_by_decade.png"
    decades = sorted({d for points in series.values() for d in points})
    plot_grouped_bars(
        {m: [points.get(d) for d in decades] for m, points in series.items()},
        decades, path, title="Accuracy by decade (RuBIN Fig. 5)", ylabel="accuracy",
    )  # fmt: skip
    note = "The paper prints no numbers for this figure; ours are computed for every run given."
    return Item(
        ctx.ref, ctx.title, COMPUTED, rows, unit="accuracy; n = questions", figures=[path.name], note=note
    )


def figure2_categories(ctx: Context) -> Item:
    """Share of questions per category in the release (full)."""
    rows = ctx.release_rows("full")
    counts = Counter(str(r["category"]) for r in rows)
    total = sum(counts.values())
    out = [Row(cat, 100 * n / total, None, n) for cat, n in counts.most_common()]
    return Item(ctx.ref, ctx.title, COMPUTED, out, unit="% of questions; n = questions",
                note="The figure prints no numbers; shares from the release given.")  # fmt: skip


def figure3_years(ctx: Context) -> Item:
    """Questions per decade in the release (the years half of Fig. 3)."""
    rows = ctx.release_rows("full")
    counts = Counter(str(r.get("decade") or "undated") for r in rows)
    total = sum(counts.values())
    out = [Row(decade, 100 * n / total, None, n) for decade, n in sorted(counts.items())]
    return Item(ctx.ref, ctx.title, COMPUTED, out, unit="% of questions; n = questions")
