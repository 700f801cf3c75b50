"""CulinaryASH's tables and figures from `judge` runs, the release and, for Table 3, human
ratings (``culturebench eval paper ash RUN... --input human=RATINGS.csv``); the §3.2 word
frequencies from `generate` runs (the recipes themselves)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from itertools import combinations
from statistics import mean
from typing import Any

from culturebench.datasets.ash.tasks import CRITERIA
from culturebench.errors import CultureBenchError
from culturebench.eval.agreement import interval_alpha
from culturebench.eval.paper_report import COMPUTED, REPRODUCED, Context, Item, Row, Run, missing


def _judge_runs(ctx: Context) -> list[Run]:
    return ctx.runs_of("judge")


def _samples(ctx: Context) -> list[dict[str, Any]]:
    """Every judge run's samples, each with its judge: the model's label in the report (the
    paper's name where the run's model is one of the paper's judges)."""
    return [{**s, "judge": ctx.model_label(run)} for run in _judge_runs(ctx) for s in run.samples()]


def _item_means(samples: list[dict[str, Any]], criterion: str) -> dict[tuple[str, str], dict[str, float]]:
    """(row_id, generator) -> judge -> mean rating over the judge's repeats."""
    values: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        if s.get(criterion) is not None:
            values[(s["row_id"], s["generator"])][s["judge"]].append(s[criterion])
    return {k: {j: mean(v) for j, v in per.items()} for k, per in values.items()}


def table1_benchmark(ctx: Context) -> Item:
    """Instructions, cuisines and base dishes of the release."""
    rows_ = ctx.release_rows("default")
    paper = ctx.results("table1") or {}
    rows = [
        Row("instructions", float(len(rows_)), paper.get("instructions")),
        Row("cuisines", float(len({r["cuisine"] for r in rows_})), paper.get("cuisines")),
        Row("base dishes", float(len({r["base_dish"] for r in rows_})), paper.get("base_dishes")),
    ]
    return Item(
        ctx.ref,
        ctx.title,
        REPRODUCED,
        rows,
        unit="count",
        note="The table lists the names; the counts are compared.",
    )


def figure1_heatmaps(ctx: Context) -> Item:
    """Mean rating per generator x judge and criterion (heatmaps), with the paper's extreme
    sensitivity pairs (``results.sensitivity_extremes``) where the same pair was run.

    Writes ``ash_summary.json`` (top/bottom cuisines and agreement too) and the heatmaps to
    ``ctx.out``, and keeps the summary as ``ctx.data["ash_summary"]``: ``culturebench eval
    ash-summary`` is this item."""
    from culturebench.datasets.ash.summary import summarize

    runs = _judge_runs(ctx)
    if not runs:
        return missing(ctx.ref, "`judge` runs (one per generator x judge)")
    result = ctx.data["ash_summary"] = summarize([r.folder for r in runs], ctx.out)
    extremes = ctx.results("sensitivity_extremes") or {}
    pairs = {(e["generator"], e["judge"]): e["mean"] for e in extremes.values()}
    rows = []
    for criterion in CRITERIA:
        for key, cell in result["criteria"][criterion]["cells"].items():
            generator, judge = key.split("|")
            paper = pairs.get((generator, judge)) if criterion == "sensitivity" else None
            rows.append(
                Row(
                    f"{criterion}: {generator} by {judge}",
                    cell["mean"],
                    paper,
                    cell["n"],
                    note=f"SD {cell['sd']:.2f}" if cell.get("sd") is not None else "",
                )
            )
    status = REPRODUCED if any(r.paper is not None for r in rows) else COMPUTED
    figures = [f"heatmap_{c}.png" for c in CRITERIA]
    printed = " and ".join(str(extremes[k]["mean"]) for k in ("highest", "lowest") if k in extremes)
    note = f"The paper prints only the extremes of sensitivity ({printed + ', ' if printed else ''}§3.1)."
    return Item(ctx.ref, ctx.title, status, rows, unit="mean rating 1-5; n = ratings", figures=figures,
                note=note)  # fmt: skip


def table2_cuisines(ctx: Context) -> Item:
    """Top and bottom three cuisines per criterion over every generator x judge pair."""
    from culturebench.datasets.ash.tasks import ranked_cuisines

    samples = _samples(ctx)
    if not samples:
        return missing(ctx.ref, "`judge` runs")
    rows = []
    for criterion in CRITERIA:
        per: dict[str, list[int]] = defaultdict(list)
        for s in samples:
            if s.get(criterion) is not None:
                per[s["cuisine"]].append(s[criterion])
        ranked = ranked_cuisines(per)
        for side in ("top3", "bottom3"):
            for rank, (cuisine, value) in enumerate(ranked[f"{side}_cuisines"], start=1):
                rows.append(Row(f"{criterion} {side[:-1]} {rank}: {cuisine}", value, None, len(per[cuisine])))
    note = (
        "The paper's table is not legible in the text; it states that Kosher is ranked highest in all "
        "three criteria and Ethiopian lowest in authenticity and harmony."
    )
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="mean rating; n = ratings of the cuisine", note=note)


def figure2_cuisine_heatmaps(ctx: Context, cuisines: tuple[str, ...] = ("Kosher", "Ethiopian")) -> Item:
    """Sensitivity per generator x judge for single cuisines."""
    from culturebench.eval.plots import plot_heatmap

    samples = _samples(ctx)
    if not samples:
        return missing(ctx.ref, "`judge` runs")
    generators = sorted({s["generator"] for s in samples})
    judges = sorted({s["judge"] for s in samples})
    rows, figures = [], []
    for cuisine in cuisines:
        chosen = [s for s in samples if str(s.get("cuisine", "")).lower() == cuisine.lower()]
        grid = []
        for g in generators:
            line = []
            for j in judges:
                values = [
                    s["sensitivity"]
                    for s in chosen
                    if s["generator"] == g and s["judge"] == j and s.get("sensitivity") is not None
                ]
                line.append(mean(values) if values else None)
                if values:
                    rows.append(Row(f"{cuisine}: {g} by {j}", mean(values), None, len(values)))
            grid.append(line)
        path = ctx.out / f"figure2_sensitivity_{cuisine.lower()}.png"
        title = f"Sensitivity, {cuisine}"
        axes = ("generator", "judge")
        plot_heatmap(
            grid, generators, judges, path, title=title, vmin=1, vmax=5, label="mean rating", axis_labels=axes
        )
        figures.append(path.name)
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="mean sensitivity; n = ratings", figures=figures)


# English stop words for the §3.2 word counts (the paper names no list): function words, and
# the pieces a contraction leaves when words are runs of letters ("don't" -> "don", "t").
_STOP_TEXT = """
    a about above after again against ain all am an and any are aren as at be because been before
    being below between both but by can couldn d did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself
    his how i if in into is isn it its itself just ll m ma me mightn more most mustn my myself
    needn no nor not now o of off on once only or other our ours ourselves out over own re s same
    shan she should shouldn so some such t than that the their theirs them themselves then there
    these they this those through to too under until up ve very was wasn we were weren what when
    where which while who whom why will with won wouldn y you your yours yourself yourselves
    also could would may might must shall us one per etc e g ie eg
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
_LETTERS = re.compile(r"[^\W\d_]+")  # a word: a run of letters ("Kosher-certified": kosher, certified)


def cuisine_names() -> list[str]:
    """The 40 cuisines of Table 1, from the dataset's shipped list (``cuisines.yaml``)."""
    from culturebench.spec import load_spec
    from culturebench.yamlio import load_yaml

    data = load_yaml(load_spec("ash").folder / "cuisines.yaml")
    return [str(c) for names in data["cuisines"].values() for c in names]


def recipe_words(text: str, cuisines: list[str]) -> list[str]:
    """The words of a recipe as §3.2 counts them: lower-cased runs of letters, without stop
    words (:data:`STOP_WORDS`) and without the cuisine names (each name removed as a phrase
    first, so "Costa Rican" goes and "costa" elsewhere stays)."""
    text = text.lower()
    for name in sorted(cuisines, key=len, reverse=True):
        text = re.sub(rf"(?<![^\W\d_]){re.escape(name.lower())}(?![^\W\d_])", " ", text)
    return [w for w in _LETTERS.findall(text) if w not in STOP_WORDS]


def _rank(counts: Counter[str], word: str) -> int | None:
    """Competition rank of ``word`` by count (1 = most used; ties share a rank)."""
    n = counts.get(word, 0)
    return 1 + sum(c > n for c in counts.values()) if n else None


def figure2_word_frequency(ctx: Context) -> Item:
    """§3.2 / Figure 2: the most used words of the generated recipes, per cuisine of Figure 2
    and generator model (a `generate` run each; all generators pooled beside when there are
    several), stop words and cuisine names excluded; and where the words the paper names for a
    cuisine (``results.figure2_words``: "certified" for Kosher, "berbere" for Ethiopian) rank.

    A row's number is how often the word occurs in those recipes, n the recipes; the item's
    ``top`` (catalogue) sets how many words per cuisine and generator. Writes
    ``word_frequency.json`` (the top 50 of each, with the recipes each occurs in)."""
    from culturebench.jsonsafe import json_text

    runs = ctx.runs_of("generate")
    if not runs:
        return missing(ctx.ref, "`generate` runs (one per generator model)")
    named: dict[str, list[str]] = ctx.results("figure2_words") or {}
    top = int(ctx.spec.get("top", 10))
    cuisines = cuisine_names()
    by_generator = {
        label: [s for r in group for s in r.samples()] for label, group in ctx.group_by_model(runs).items()
    }
    if len(by_generator) > 1:
        by_generator["all generators"] = [s for samples in list(by_generator.values()) for s in samples]
    rows: list[Row] = []
    data: dict[str, dict[str, dict[str, Any]]] = {}
    for cuisine, words in named.items():
        for generator, samples in by_generator.items():
            recipes = [
                recipe_words(s["output"], cuisines)
                for s in samples
                if str(s.get("cuisine", "")).lower() == cuisine.lower() and isinstance(s.get("output"), str)
            ]
            if not recipes:
                continue
            counts = Counter(w for recipe in recipes for w in recipe)
            docs = Counter(w for recipe in recipes for w in set(recipe))
            ranked = sorted(counts, key=lambda w: (-counts[w], w))
            data.setdefault(cuisine, {})[generator] = {
                "recipes": len(recipes),
                "words": sum(counts.values()),
                "top": [[w, counts[w], docs[w]] for w in ranked[:50]],
            }
            for i, w in enumerate(ranked[:top], start=1):
                note = f"in {docs[w]} of {len(recipes)} recipes"
                rows.append(
                    Row(f"{cuisine}: {generator}: {i}. {w}", float(counts[w]), None, len(recipes), note=note)
                )
            for w in words:
                rank = _rank(counts, w)
                note = f"rank {rank} of {len(counts)} words, in {docs[w]} recipes" if rank else "not used"
                rows.append(Row(f"{cuisine}: {generator}: '{w}' (named by the paper)", float(counts[w]), None,
                                len(recipes), note=note))  # fmt: skip
    ctx.data["word_frequency"] = data
    (ctx.out / "word_frequency.json").write_text(json_text(data, indent=2), encoding="utf-8")
    printed = "; ".join(f"{', '.join(map(repr, w))} for {c}" for c, w in named.items())
    note = (
        f"The paper prints no counts: it names the words {printed} among the most used, so there is "
        f"nothing to compare but whether and where they rank here. Words: lower-cased runs of letters; "
        f"{len(STOP_WORDS)} English stop words (the paper names no list) and the {len(cuisines)} cuisine "
        f"names of Table 1 left out. Full counts: word_frequency.json."
    )
    if not rows:
        note += " The `generate` runs given hold no recipe of these cuisines."
    why = str(ctx.spec.get("why", "")).strip()
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit=f"occurrences of the word; n = recipes; top {top}",
                note=f"{why} {note}".strip())  # fmt: skip


def table3_human_agreement(ctx: Context) -> Item:
    """Per judge and criterion: mean |judge - human| over the recipes the humans rated (each
    side averaged over its repeats / annotators), with a bootstrap CI over recipes and Cohen's
    kappa on the rounded means; among the humans: Fleiss' kappa and Krippendorff's alpha."""
    from culturebench.datasets.ash.human import read_human_ratings
    from culturebench.eval.agreement import cohen_kappa, fleiss_kappa
    from culturebench.eval.metrics import bootstrap_ci

    if "human" not in ctx.inputs:
        return missing(ctx.ref, "human ratings: --input human=RATINGS.csv (schema in datasets/ash/human.py)")
    try:
        known = [r["id"] for r in ctx.release_rows("default")]
    except CultureBenchError:
        known = None  # no release named: ids are not checked against it
    ratings = read_human_ratings(ctx.inputs["human"], known)
    samples = _samples(ctx)
    if not samples:
        return missing(ctx.ref, "`judge` runs of the rated recipes")
    published = ctx.results("table3") or {}
    side = ctx.table(published, unit="mean absolute difference (rating points)", digits=3)
    ours: dict[str, dict[str, float]] = {}
    printed_as = {ctx.model_label(r): ctx.paper_model(r) for r in _judge_runs(ctx)}
    rows = []
    for criterion in CRITERIA:
        human: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        for r in ratings:
            if r[criterion] is not None:
                human[(r["row_id"], r["generator"])][r["annotator"]] = r[criterion]
        judged = _item_means(samples, criterion)
        for judge in sorted({s["judge"] for s in samples}):
            items = [k for k in human if judge in judged.get(k, {})]
            if not items:
                continue
            human_mean = {k: mean(human[k].values()) for k in items}
            diffs = [abs(judged[k][judge] - human_mean[k]) for k in items]
            value, lo, hi = bootstrap_ci(diffs, units=[f"{k[0]}|{k[1]}" for k in items])
            kappa = cohen_kappa(
                [round(judged[k][judge]) for k in items], [round(human_mean[k]) for k in items]
            )
            note = f"Cohen's kappa {kappa:.2f}" if kappa is not None else "Cohen's kappa undefined"
            ours.setdefault(judge, {})[criterion] = value
            rows.append(
                Row(
                    f"{judge}: {criterion}",
                    value,
                    (published.get(printed_as.get(judge) or "") or {}).get(criterion),
                    len(items),
                    (lo, hi),
                    note,
                )
            )
        counts = [len(v) for v in human.values()]
        modal = max(set(counts), key=counts.count) if counts else 0
        fleiss = fleiss_kappa([list(v.values()) for v in human.values() if len(v) == modal])
        annotators = sorted({a for v in human.values() for a in v})
        alpha = interval_alpha({k: dict(v) for k, v in human.items()}, annotators)
        rows.append(
            Row(
                f"humans: {criterion}, Fleiss' kappa",
                fleiss,
                None,
                sum(c == modal for c in counts),
                note=f"recipes rated by {modal} annotators",
            )
        )
        rows.append(Row(f"humans: {criterion}, Krippendorff's alpha (interval)", alpha, None, len(human)))
    by_judge = ctx.group_by_model(_judge_runs(ctx))
    for judge, cells in ours.items():
        ctx.add_runs(side, judge, by_judge.get(judge, []), cells)
    status = REPRODUCED if any(r.paper is not None for r in rows) else COMPUTED
    item = Item(
        ctx.ref,
        ctx.title,
        status,
        rows,
        unit="mean absolute difference (rating points); n = recipes rated by humans",
    )
    item.table = side
    return item


def figure4_judge_agreement(ctx: Context) -> Item:
    """Agreement of every judge pair averaged over the criteria: Krippendorff's alpha
    (interval) and Cohen's kappa on the rounded per-recipe means."""
    from culturebench.eval.agreement import cohen_kappa

    samples = _samples(ctx)
    judges = sorted({s["judge"] for s in samples})
    if len(judges) < 2:
        return missing(ctx.ref, "`judge` runs of at least two judges")
    rows = []
    for a, b in combinations(judges, 2):
        alphas, kappas, n = [], [], 0
        for criterion in CRITERIA:
            units = {k: v for k, v in _item_means(samples, criterion).items() if a in v and b in v}
            n = max(n, len(units))
            value = interval_alpha(units, [a, b])
            if value is not None:
                alphas.append(value)
            kappa = cohen_kappa([round(v[a]) for v in units.values()], [round(v[b]) for v in units.values()])
            if kappa is not None:
                kappas.append(kappa)
        rows.append(Row(f"{a} ~ {b}: alpha", mean(alphas) if alphas else None, None, n))
        rows.append(Row(f"{a} ~ {b}: Cohen's kappa", mean(kappas) if kappas else None, None, n))
    unit = "agreement averaged over the three criteria; n = recipes both judged"
    note = "The paper plots the scores without printing them and does not name the statistic."
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit=unit, note=note)
