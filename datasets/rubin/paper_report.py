"""RuBIN's tables and figures from `mcqa` / `mcqa-easy` runs and the release
(``culturebench eval paper rubin RUN...``; the catalogue is ``paper.yaml`` ``items``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.paper_report import (
    COMPUTED,
    Context,
    Item,
    Row,
    by_unit,
    missing,
    percent,
    percent_ci,
    unit_mean,
)

LETTERS = "ABCD"


def _correct(sample: dict[str, Any]) -> float:
    return float(bool(sample["correct"]))


def table3_accuracy(ctx: Context) -> Item:
    """Per model: accuracy on full and EASY (% with 95% CIs over questions), their difference
    (EASY - full, with a paired bootstrap over the questions of both sets) and NA (%)."""
    from culturebench.eval.compare import paired_difference_ci

    full = {ctx.model_label(r): r for r in ctx.runs_of("mcqa")}
    easy = {ctx.model_label(r): r for r in ctx.runs_of("mcqa-easy")}
    if not full and not easy:
        return missing(ctx.ref, "`mcqa` and/or `mcqa-easy` runs")
    published = ctx.results("table3") or {}
    rows: list[Row] = []
    for model in sorted(set(full) | set(easy)):
        paper = published.get(model, {})
        f, e = full.get(model), easy.get(model)
        accuracy = {}
        for label, run, key in (("Acc.", f, "acc"), ("Acc. E", e, "acc_easy")):
            if run is not None:
                accuracy[label], ci, n = unit_mean(run.samples(), _correct)
                rows.append(
                    Row(f"{model}: {label}", percent(accuracy[label]), paper.get(key), n, percent_ci(ci))
                )
        if f is not None and e is not None:
            a, b = by_unit(f.samples(), _correct), by_unit(e.samples(), _correct)
            ours = percent(accuracy["Acc. E"] - accuracy["Acc."])
            ci = paired_difference_ci(a, b, over="union")
            units = len(set(a) | set(b))
            rows.append(Row(f"{model}: Δ (E - full, pp)", ours, paper.get("delta"), units, percent_ci(ci)))
        if f is not None:
            na, ci, n = unit_mean(f.samples(), lambda s: float(not s["parsed"]))
            rows.append(Row(f"{model}: NA", percent(na), paper.get("na"), n, percent_ci(ci)))
    runs = [*full.values(), *easy.values()]
    absent = sorted(set(published) - set(full) - set(easy))
    note = "Paper models without a run here: " + ", ".join(absent) + "." if absent else ""
    return Item(ctx.ref, ctx.title, ctx.status(runs), rows, unit="%; n = questions", note=note)


def table4_categories(ctx: Context) -> Item:
    """Accuracy per category for every full-RuBIN run, beside the paper's YandexGPT column;
    with the release, the category sizes beside the paper's."""
    runs = ctx.runs_of("mcqa")
    published = ctx.results("table4") or {}
    cats = published.get("categories", {})
    rows: list[Row] = []
    for run in runs:
        model = ctx.model_label(run)
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in run.samples():
            groups[str(s.get("category"))].append(s)
        for cat in sorted(groups, key=lambda c: (cats.get(c, {}).get("accuracy", 2), c)):
            mean, ci, n = unit_mean(groups[cat], _correct)
            paper = cats.get(cat, {}).get("accuracy") if model == published.get("model") else None
            rows.append(Row(f"{model}: {cat}", mean, paper, n, ci))
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
    return Item(
        ctx.ref, ctx.title, ctx.status(runs), rows, unit="accuracy (fraction); n = questions", note=note
    )


def table5_wrong_slots(ctx: Context) -> Item:
    """Where each model's wrong (parsed) answers fell, in % of its wrong answers."""
    runs = ctx.runs_of("mcqa")
    if not runs:
        return missing(ctx.ref, "`mcqa` runs")
    published = ctx.results("table5") or {}
    rows = []
    for run in runs:
        model = ctx.model_label(run)
        wrong = [s for s in run.samples() if s["parsed"] and not s["correct"]]
        for letter in LETTERS:
            share, ci, n = unit_mean(wrong, lambda s, letter=letter: float(s["pred"] == letter))
            paper = published.get("share", {}).get(letter) if model == published.get("model") else None
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
    return Item(
        ctx.ref, ctx.title, ctx.status(runs), rows, unit="% of wrong answers; n = questions answered wrongly"
    )


def figure5_decades(ctx: Context) -> Item:
    """Accuracy per decade for every full-RuBIN run, with a line plot."""
    runs = ctx.runs_of("mcqa")
    if not runs:
        return missing(ctx.ref, "`mcqa` runs")
    from culturebench.eval.plots import plot_grouped_bars

    rows, series = [], {}
    for run in runs:
        model = ctx.model_label(run)
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in run.samples():
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
