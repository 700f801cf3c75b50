"""BORSCH's tables and figures from runs of its tasks and from the release
(``culturebench eval paper borsch RUN...``; the catalogue is ``paper.yaml`` ``items``)."""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from culturebench.datasets.borsch.tasks import POST_SOVIET
from culturebench.eval.paper_report import (
    COMPUTED,
    REPRODUCED,
    Context,
    Item,
    Row,
    Run,
    base_name,
    by_unit,
    counts_item,
    missing,
    percent,
    unit_mean,
)

LANGS = ("ru", "uk")
ORIGIN_TASKS = ("origin-qa", "origin-vqa", "origin-vqa-dish")


def _by_lang(run: Run) -> dict[str, list[Mapping[str, Any]]]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for s in run.samples():
        groups[s.get("lang", "?")].append(s)
    return dict(sorted(groups.items()))


def _names(code: str) -> Callable[[Mapping[str, Any]], float]:
    """1.0 for a sample whose answer names the country ``code``, else 0.0."""
    return lambda s: float(code in s["predicted"])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


# ---------------------------------------------------------------------- from the release
def _per_country(rows: list[dict[str, Any]]) -> Counter:
    return Counter(code for r in rows for code in set(r["origins"] or []))


def _origins_table(ctx: Context, config: str) -> Item:
    counts = _per_country(ctx.release_rows(config))
    note = "Dishes per country of origin (a dish counts once per country it lists)."
    return counts_item(ctx, counts, f"{config}.per_country", "dishes", note)


def table7_ru_origins(ctx: Context) -> Item:
    """Dishes per country in the Russian subset."""
    return _origins_table(ctx, "ru")


def table8_uk_origins(ctx: Context) -> Item:
    """Dishes per country in the Ukrainian subset."""
    return _origins_table(ctx, "uk")


def table1_bootstrapping(ctx: Context) -> Item:
    """Round-1 seeds and dishes per bootstrapping round (App. A) against the release's
    provenance: seeds = dishes from Wikidata; round N = dishes of provenance bootstrap-(N-1)."""
    published = ctx.results("table1") or {}
    rows = []
    for lang in LANGS:
        counts = Counter(str(r.get("provenance")) for r in ctx.release_rows(lang))
        paper = published.get(lang, {})
        rows.append(
            Row(
                f"{lang}: #Seeds (round 1) vs dishes from Wikidata",
                float(counts["wikidata"]),
                paper.get("seeds"),
            )
        )
        for n in (1, 2, 3):
            rows.append(
                Row(
                    f"{lang}: #Dishes round {n} vs provenance bootstrap-{n - 1}",
                    float(counts[f"bootstrap-{n - 1}"]),
                    paper.get(f"round{n}"),
                )
            )
    # the ru seeds of Table 1 beyond the Wikidata dishes §3.1 counts (those of a full release)
    wikidata = (ctx.results("wikidata_post_soviet") or {}).get("ru", {}).get("of")
    seeds = published.get("ru", {}).get("seeds")
    extra = f"{seeds - wikidata} " if seeds is not None and wikidata is not None else ""
    note = (
        "The paper's counts are before the final de-duplication (App. A: 'The reported values can "
        "contain duplicates, and once all extractions were acquired from every round of "
        "bootstrapping, they were de-duplicated ... before being added to BORSCH'); the release "
        f"holds the dishes that survived it, so ours are lower. The {extra}seeds more than the "
        "release's Wikidata dishes (ru) are not explained by the paper. #Extractions are not in "
        "the release."
    )
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit="dishes", note=note)


def figure2_origins(ctx: Context) -> Item:
    """(b) Dishes with any post-Soviet origin among the Wikidata and the bootstrapped dishes;
    (a) with `corpus count` folders of mC4 (``--input corpus_ru=DIR``, ``corpus_uk=DIR``): the
    dishes' corpus frequency against their frequency rank, Wikidata vs bootstrapped."""
    published = ctx.results("wikidata_post_soviet") or {}
    rows = []
    for lang in LANGS:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in ctx.release_rows(lang):
            kind = "Wikidata" if r.get("provenance") == "wikidata" else "bootstrapped"
            groups[kind].append(r)
        for kind, members in sorted(groups.items(), reverse=True):
            hits = sum(any(c in POST_SOVIET for c in (r["origins"] or [])) for r in members)
            paper = published.get(lang, {}) if kind == "Wikidata" else {}
            rows.append(
                Row(
                    f"{lang}, {kind}: dishes with a post-Soviet origin",
                    float(hits),
                    paper.get("dishes"),
                    len(members),
                )
            )
            rows.append(
                Row(f"{lang}, {kind}: share (%)", 100 * hits / len(members), paper.get("share"), len(members))
            )
    figures = [_figure2a(ctx, lang, count, rows) for lang, count in sorted(_corpora(ctx).items())]
    note = ""
    if figures:
        note = (
            "(b): dishes of the release by provenance. (a): each dish's occurrences (its name in the "
            "corpus language) in the `corpus count` given, and its frequency rank among the counted "
            "dishes (1 = most frequent; tied dishes share their mean rank), for the post-Soviet dishes "
            "(§3.3) and for all; the paper plots (a) without printing numbers."
        )
    unit = "dishes, %, occurrences, ranks; n = dishes of the group"
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit=unit, figures=figures, note=note)


def _figure2a(ctx: Context, lang: str, count: Path, rows: list[Row]) -> str:
    """Fig. 2a for one corpus language: median occurrences, median frequency rank and the share
    of dishes never found, Wikidata vs bootstrapped dishes (post-Soviet ones and all), appended to
    ``rows``; the frequency-vs-rank plot's file name is returned. A count of the ``ru`` / ``uk``
    config ranks the whole language set; one of ``parallel`` the parallel dishes (provenance of
    their ``lang`` side; dishes without that side are left out)."""
    from statistics import median

    from culturebench.datasets.borsch.corpus_analyses import _table
    from culturebench.eval.corpus.job import read_count
    from culturebench.eval.plots import plot_scatter

    config = str(read_count(count).get("config") or "parallel")
    occurrences = {
        str(m["dish_id"]): int(m["occurrences"]) for m in _table(count, "mentions") if m["name_lang"] == lang
    }
    key = "provenance" if config == lang else f"provenance_{lang}"
    dishes = {
        str(r["id"]): ("Wikidata" if r.get(key) == "wikidata" else "bootstrapped", _post_soviet(r))
        for r in ctx.release_rows(config)
        if r.get(key) and str(r["id"]) in occurrences
    }
    ordered = sorted(occurrences[d] for d in dishes)
    rank = {d: _mean_rank(ordered, occurrences[d]) for d in dishes}
    series: dict[str, list[tuple[float, float]]] = {}
    for population in ("post-Soviet", "all"):
        for kind in ("Wikidata", "bootstrapped"):
            members = [d for d, (k, ps) in dishes.items() if k == kind and (ps or population == "all")]
            if not members:
                continue
            label = f"(a) {lang} corpus ({config} dishes), {population} {kind}"
            found = [occurrences[d] for d in members]
            rows.append(Row(f"{label}: median occurrences", float(median(found)), None, len(members)))
            middle = float(median(rank[d] for d in members))
            of = f"of {len(dishes)} dishes"
            rows.append(Row(f"{label}: median frequency rank", middle, None, len(members), note=of))
            rows.append(
                Row(f"{label}: never found (%)", 100 * found.count(0) / len(found), None, len(members))
            )
    for kind in ("Wikidata", "bootstrapped"):
        for ps, which in ((True, "post-Soviet"), (False, "other")):
            series[f"{kind} ({which})"] = [
                (float(rank[d]), math.log10(1 + occurrences[d]))
                for d, (k, p) in dishes.items()
                if k == kind and p == ps
            ]
    path = ctx.out / f"figure2a_{lang}.png"
    title = f"Fig. 2a: corpus frequency ({lang}) vs frequency rank ({config} dishes)"
    plot_scatter(
        series, path, title=title, xlabel="frequency rank", ylabel="log10(1 + occurrences)", limits=None
    )
    return path.name


def _mean_rank(ordered: list[int], value: int) -> float:
    """The frequency rank of ``value`` among the ascending ``ordered`` counts: 1 = most
    frequent, tied counts sharing the mean of the ranks they span."""
    above = len(ordered) - bisect_right(ordered, value)
    tied = bisect_right(ordered, value) - bisect_left(ordered, value)
    return above + (tied + 1) / 2


def _post_soviet(row: dict[str, Any]) -> bool:
    """Whether a release row lists any post-Soviet origin."""
    return any(c in POST_SOVIET for c in (row.get("origins") or []))


def figure11_parallel_origins(ctx: Context) -> Item:
    """Countries of origin of the parallel dishes."""
    rows_ = ctx.release_rows("parallel")
    counts = _per_country(rows_)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # ties by code: reproducible
    rows = [Row(c, float(n), None, len(rows_)) for c, n in ranked]
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="dishes; n = parallel dishes",
                note="The figure prints no numbers; counts from the release given.")  # fmt: skip


# ---------------------------------------------------------------------- from QA / VQA runs
def figure3_confusion(ctx: Context) -> Item:
    """Recall per post-Soviet origin (diagonal share of each confusion row) and the matrices."""
    from culturebench.eval.plots import plot_confusion

    runs = [r for t in ORIGIN_TASKS[:2] for r in ctx.runs_of(t)]
    if not runs:
        return missing(ctx.ref, "`origin-qa` and/or `origin-vqa` runs")
    rows, figures = [], []
    for run in runs:
        model = ctx.model_label(run)
        for lang, metrics in sorted(run.metrics.items()):
            confusion = metrics.get("confusion") if isinstance(metrics, dict) else None
            if not confusion:
                continue
            for i, label in enumerate(confusion["labels"]):
                total = sum(confusion["matrix"][i])
                if total:
                    rows.append(
                        Row(
                            f"{model} {run.task} {lang}: {label}",
                            confusion["matrix"][i][i] / total,
                            None,
                            total,
                        )
                    )
            path = ctx.out / f"figure3_{_slug(model)}_{run.task}_{lang}.png"
            plot_confusion(confusion, path, f"{model}, {run.task}, {lang}")
            figures.append(path.name)
    note = "The matrices print no numbers in the paper; ours for every run given."
    unit = "recall (diagonal share of the row); n = row total"
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit=unit, figures=figures, note=note)


def figure4_over_prediction(ctx: Context) -> Item:
    """On dishes from both Russia and Ukraine: how often an answer names Russia, Ukraine, both;
    and how often the prompt language's country is named for dishes not from it."""
    runs = [r for t in ORIGIN_TASKS for r in ctx.runs_of(t)]
    if not runs:
        return missing(ctx.ref, "`origin-qa` / `origin-vqa` runs")
    own = {"ru": "RU", "uk": "UA"}
    rows = []
    for run in runs:
        model = ctx.model_label(run)
        for lang, group in _by_lang(run).items():
            both = [s for s in group if {"RU", "UA"} <= set(s["gold_origins"])]
            for label, fn in (
                ("names RU", lambda s: float("RU" in s["predicted"])),
                ("names UA", lambda s: float("UA" in s["predicted"])),
                ("names both", lambda s: float({"RU", "UA"} <= set(s["predicted"]))),
            ):
                mean, ci, n = unit_mean(both, fn)
                rows.append(Row(f"{model} {run.task} {lang}: RU+UA dishes, {label}", mean, None, n, ci))
            code = own.get(lang)
            if code:
                others = [s for s in group if code not in s["gold_origins"]]
                mean, ci, n = unit_mean(others, _names(code))
                rows.append(
                    Row(f"{model} {run.task} {lang}: names {code} for dishes not from it", mean, None, n, ci)
                )
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="share of answers; n = dishes")


def figure12_top_errors(ctx: Context) -> Item:
    """The 10 most frequent (origin, prediction) pairs where the prediction is neither a true
    origin nor a post-Soviet country, per run and prompt language."""
    runs = ctx.runs_of("origin-qa")
    if not runs:
        return missing(ctx.ref, "`origin-qa` runs")
    rows = []
    for run in runs:
        model = ctx.model_label(run)
        for lang, group in _by_lang(run).items():
            pairs: Counter = Counter()
            for s in group:
                gold = set(s["gold_origins"])
                for p in s["predicted"]:
                    if p not in gold and p not in POST_SOVIET:
                        pairs.update(f"{g}-{p}" for g in sorted(gold))
            for pair, n in pairs.most_common(10):
                rows.append(Row(f"{model} {lang}: {pair}", float(n), None, len(group), note="answers"))
    labels = ctx.results("figure12_labels") or {}
    note = (
        "Counts of answers (five prompts per dish). The paper's bars carry no numbers; the legible "
        f"labels of its Ukrainian panel are {', '.join(labels.get('uk', []))}, and "
        f"{', '.join(labels.get('ru', []))} appear in its Russian panel."
    )
    return Item(
        ctx.ref,
        ctx.title,
        COMPUTED,
        rows,
        unit="answers with the pair; n = answers of the language",
        note=note,
    )


def figure13_vqa_with_name(ctx: Context) -> Item:
    """Country-of-origin VQA given images and the dish name: Jaccard per language."""
    runs = ctx.runs_of("origin-vqa-dish")
    if not runs:
        return missing(ctx.ref, "`origin-vqa-dish` runs")
    rows = []
    for run in runs:
        model = ctx.model_label(run)
        for lang, group in _by_lang(run).items():
            mean, ci, n = unit_mean(group, lambda s: s["jaccard"])
            rows.append(Row(f"{model} {lang}: Jaccard", mean, None, n, ci))
    return Item(ctx.ref, ctx.title, ctx.status(runs), rows, unit="mean Jaccard; n = dishes",
                note="The paper plots these without printing them.")  # fmt: skip


def figure14_name_effect(ctx: Context) -> Item:
    """Per dish: Jaccard with the name (origin-vqa-dish) minus without it (origin-vqa), for
    runs of the same model; the mean change with a paired bootstrap over dishes, the shares of
    dishes that gain and lose, and the sorted per-dish changes as a plot."""
    from culturebench.eval.compare import paired_difference_ci
    from culturebench.eval.plots import plot_grouped_bars

    without = {label: run for label, (run,) in ctx.columns(ctx.runs_of("origin-vqa")).items()}
    with_name = {label: run for label, (run,) in ctx.columns(ctx.runs_of("origin-vqa-dish")).items()}
    models = [m for m in without if m in with_name]  # the same model (and setup) in both
    if not models:
        return missing(ctx.ref, "an `origin-vqa` and an `origin-vqa-dish` run of the same model")
    rows, figures = [], []
    for label in models:
        for lang in LANGS:
            a = by_unit([s for s in without[label].samples() if s["lang"] == lang], lambda s: s["jaccard"])
            b = by_unit([s for s in with_name[label].samples() if s["lang"] == lang], lambda s: s["jaccard"])
            dishes = sorted(set(a) & set(b))
            if not dishes:
                continue
            change = {d: sum(b[d]) / len(b[d]) - sum(a[d]) / len(a[d]) for d in dishes}
            mean = sum(change.values()) / len(change)
            rows.append(
                Row(f"{label} {lang}: mean ΔJaccard", mean, None, len(dishes), paired_difference_ci(a, b))
            )
            rows.append(
                Row(
                    f"{label} {lang}: dishes that gain (%)",
                    100 * sum(v > 0 for v in change.values()) / len(change),
                    None,
                    len(dishes),
                )
            )
            rows.append(
                Row(
                    f"{label} {lang}: dishes that lose (%)",
                    100 * sum(v < 0 for v in change.values()) / len(change),
                    None,
                    len(dishes),
                )
            )
            ordered = sorted(change.items(), key=lambda kv: kv[1])
            path = ctx.out / f"figure14_{_slug(label)}_{lang}.png"
            title = f"Effect of adding the dish name: {label}, {lang}"
            values = {"ΔJaccard": [v for _, v in ordered]}
            plot_grouped_bars(
                values, [d for d, _ in ordered], path, title=title, ylabel="ΔJaccard", ylim=(-1, 1)
            )
            figures.append(path.name)
    return Item(ctx.ref, ctx.title, ctx.status([without[m] for m in models]), rows,
                unit="ΔJaccard (with name - without); n = dishes in both runs", figures=figures)  # fmt: skip


def table2_dish_name(ctx: Context) -> Item:
    """Dish-name VQA accuracy per post-Soviet country of origin and prompt language, beside the
    paper's Llama-3.2-Vision and Qwen2-VL columns (side by side with one column per model that
    has runs)."""
    runs = ctx.runs_of("dish-name-vqa")
    if not runs:
        return missing(ctx.ref, "`dish-name-vqa` runs")
    published = ctx.results("table2") or {}
    side = ctx.table(
        {
            name: {f"{lang}: {code}": v for lang, per in langs.items() for code, v in per.items()}
            for name, langs in published.items()
        },
        unit="accuracy (within one edit)",
    )
    rows = []
    for model, (run,) in ctx.columns(runs).items():
        paper = ctx.printed(published, run) or {}
        cells = {}
        for lang, group in _by_lang(run).items():
            for code in POST_SOVIET:
                members = [s for s in group if code in s.get("gold_origins", [])]
                if not members and code not in paper.get(lang, {}):
                    continue
                mean, ci, n = unit_mean(members, lambda s: s["correct"])
                cells[f"{lang}: {code}"] = mean
                rows.append(Row(f"{model} {lang}: {code}", mean, paper.get(lang, {}).get(code), n, ci))
        ctx.add_runs(side, model, [run], cells)
    item = Item(ctx.ref, ctx.title, ctx.status(runs), rows, unit="accuracy (within one edit); n = dishes")
    item.table = side
    return item


# ---------------------------------------------------------------------- §5 descriptions
def figure8_descriptions(ctx: Context) -> Item:
    """Description quality (mean DINOv2 cosine of generated vs real images) per language, and
    §5's reference frame (mean cosine of image pairs of one dish and of different dishes, over
    the release's images) beside the paper's (``results.reference_frame``)."""
    runs = ctx.runs_of("description-scores")
    if not runs:
        return missing(ctx.ref, "`description-scores` runs (`culturebench eval borsch-description`)")
    rows = [row for run in runs for row in _reference_frame_rows(ctx, run)]
    for run in runs:
        model = run.metrics.get("describer") or ctx.model_label(run)
        for lang in LANGS:
            entry = run.metrics.get(lang)
            if isinstance(entry, dict) and isinstance(entry.get("score_mean"), dict):
                stat = entry["score_mean"]
                rows.append(
                    Row(
                        f"{model} {lang}: mean cosine",
                        stat["mean"],
                        None,
                        entry.get("n_dishes", entry.get("n")),
                        tuple(stat["ci95"]),
                    )
                )
    status = REPRODUCED if any(r.paper is not None for r in rows) else COMPUTED
    note = (
        "The paper plots the description scores without printing them; its reference frame (§5) is "
        "compared where the run's encoder is the paper's."
    )
    return Item(ctx.ref, ctx.title, status, rows, unit="mean DINOv2 cosine; n = dishes (frame: image pairs)",
                note=note)  # fmt: skip


def _reference_frame_rows(ctx: Context, run: Run) -> list[Row]:
    """A ``description-scores`` run's reference frame (intra- and inter-dish mean cosine, n =
    image pairs), compared with the paper's only when the run's encoder is the paper's
    (``results.reference_frame.model``, by the last part of its Hub id or folder)."""
    frame = run.metrics.get("reference")
    if not isinstance(frame, dict):
        return []
    published = ctx.results("reference_frame") or {}
    encoder = base_name(str(run.options.get("model") or "-"))
    same = bool(published.get("model")) and str(published["model"]).lower() == encoder.lower()
    note = f"{frame.get('n_images')} release images of {frame.get('n_dishes')} dishes"
    if ctx.sample_release:
        note += " (a sample build)"
    if not same:
        note += f"; the paper's frame is with {published.get('model', '-')}: not compared"
    pairs = frame.get("pairs") or {}
    return [
        Row(
            f"reference frame ({encoder}): {which}-dish mean cosine",
            frame.get(f"{which}_dish"),
            published.get(f"{which}_dish") if same else None,
            pairs.get(f"{which}_dish"),
            note=note,
        )
        for which in ("intra", "inter")
    ]


def figure9_correlations(ctx: Context) -> Item:
    """Spearman's rho between description quality and QA/VQA Jaccard per dish."""
    runs = ctx.runs_of("description-correlations")
    if not runs:
        return missing(
            ctx.ref, "`description-correlations` runs (`culturebench eval borsch-description --qa RUN`)"
        )
    rows = []
    for run in runs:
        for key in ("vs_qa", "vs_vqa"):
            table = run.metrics.get(key)
            if not isinstance(table, dict):
                continue
            model = table.get("model") or "-"
            for lang in LANGS:
                corr = (table.get(lang) or {}).get("jaccard") or {}
                rows.append(
                    Row(
                        f"{key[3:].upper()} {model} {lang}: Spearman",
                        corr.get("spearman"),
                        None,
                        corr.get("n"),
                    )
                )
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="Spearman's rho; n = dishes",
                note="The paper reports small positive correlations in a plot, without numbers.")  # fmt: skip


TABLE4_TASKS = (("qa", "QA"), ("vqa", "VQA"))
TABLE4_METRICS = ("jaccard", "dice", "overlap")
TABLE4_STATS = (("pearson", "r"), ("spearman", "rho"), ("kendall", "tau"))


def _table4_printed(
    published: dict[str, Any],
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], str]]:
    """``results.table4`` as ``{family: {"lang: row": value}}`` (the printed columns), and a
    note per cell that the text extraction does not give with certainty (``unread``), by
    (family, "lang: row")."""
    printed: dict[str, dict[str, Any]] = {}
    columns = [str(c).rsplit(" ", 1) for c in published.get("columns") or []]
    for row, values in (published.get("rows") or {}).items():
        for (family, lang), value in zip(columns, values, strict=True):
            printed.setdefault(family, {})[f"{lang}: {row}"] = value
    unread = {}
    for cell in published.get("unread") or []:
        family, lang = str(cell["column"]).rsplit(" ", 1)
        unread[(family, f"{lang}: {cell['row']}")] = (
            f"paper cell not legible in the text extraction ({cell['extraction']!r}, "
            f"{cell['reading']}): not compared"
        )
    return printed, unread


def table4_set_metrics(ctx: Context) -> Item:
    """Pearson, Spearman and Kendall between the §5 description score and QA / VQA Jaccard,
    Dice and Overlap per dish (``description-correlations`` runs), beside Table 4's columns:
    model families (``results.table4.families``), compared when the run's describer is a model
    of the family and its QA (VQA) run is the family's text (vision) model."""
    runs = [
        r
        for r in ctx.runs_of("description-correlations")
        if any(isinstance(r.metrics.get(f"vs_{key}"), dict) for key, _ in TABLE4_TASKS)
    ]
    if not runs:
        return missing(
            ctx.ref,
            "`description-correlations` runs with --option qa=RUN and/or vqa=RUN "
            "(`culturebench eval borsch-description --qa RUN --vqa RUN`)",
        )
    published = ctx.results("table4") or {}
    families: dict[str, dict[str, str]] = published.get("families") or {}
    printed, unread = _table4_printed(published)
    side = ctx.table(printed, unit="correlation")
    rows: list[Row] = []
    filled: set[tuple[str, str]] = set()  # (family, task) compared with the paper
    labels: Counter = Counter()
    for run in runs:
        describer = run.metrics.get("describer")
        describer_name = ctx.paper_model(str(describer)) if describer else None
        family = next((f for f, models in families.items() if describer_name in models.values()), None)
        label = family or describer_name or base_name(str(describer or ctx.model_label(run)))
        labels[label] += 1
        if labels[label] > 1:
            label = f"{label} #{labels[label]}"
        cells: dict[str, Any] = {}
        for key, task in TABLE4_TASKS:
            table = run.metrics.get(f"vs_{key}")
            if not isinstance(table, dict):
                continue
            model = table.get("model")
            expected = families.get(family, {}).get(key) if family else None
            compared = expected is not None and ctx.paper_model(str(model or "-")) == expected
            if compared:
                filled.add((str(family), task))
            why = ""
            if family and not compared:
                why = f"{task} model {model} is not the paper's {expected}: not compared"
            for lang in LANGS:
                for metric in TABLE4_METRICS:
                    corr = (table.get(lang) or {}).get(metric) or {}
                    for stat, symbol in TABLE4_STATS:
                        cell = f"{lang}: {task} {metric.title()} {symbol}"
                        paper = printed.get(str(family), {}).get(cell) if compared else None
                        note = unread.get((str(family), cell), "") if compared else why
                        cells[cell] = corr.get(stat)
                        rows.append(Row(f"{label} {cell}", corr.get(stat), paper, corr.get("n"), note=note))
        side.add(label, cells, model=family, runs=[run])
    needs = [
        f"{family} {task}: a `description-correlations` run of {family} descriptions with "
        f"{key}= an `origin-{key}` run of {models.get(key)}"
        for family, models in families.items()
        for key, task in TABLE4_TASKS
        if (family, task) not in filled
    ]
    note = (
        "Table 4's columns are model families: a QA row correlates the family's descriptions with "
        "its text model's QA, a VQA row with its vision model's VQA (App. J.3-J.4). A row is compared "
        "when the run's describer is of the family and its QA/VQA run is the family's model."
    )
    item = Item(ctx.ref, ctx.title, REPRODUCED if filled else COMPUTED, rows,
                unit="correlation; n = dishes", missing=needs, note=note)  # fmt: skip
    item.table = side
    return item


# ---------------------------------------------------------------------- pretraining corpora
def _corpora(ctx: Context) -> dict[str, Any]:
    """``--input corpus_ru=DIR`` / ``corpus_uk=DIR``: `corpus count` folders of the ``parallel``
    names, by corpus language."""
    from culturebench.eval.corpus.job import read_count

    out = {}
    for key, path in ctx.inputs.items():
        if key.startswith("corpus_"):
            out[read_count(path)["corpus_lang"]] = path
    return out


def _bin_rows(label: str, bins: list[dict[str, Any]]) -> list[Row]:
    return [Row(f"{label} [{b['from']:g}, {b['to']:g}]", b["score"], None, b["n_dishes"]) for b in bins]


def _qa_run(ctx: Context, task: str, lang: str) -> Run | None:
    return next((r for r in ctx.runs_of(task) if any(s.get("lang") == lang for s in r.samples())), None)


def figure5_code_mixing(ctx: Context) -> Item:
    """Code-mixing share per corpus language (beside §4.2's shares, ``results.code_mixing``), and
    QA Jaccard / dish-name VQA accuracy per bin of the signed log occurrence difference."""
    from culturebench.datasets.borsch.corpus_analyses import code_mixing
    from culturebench.errors import CultureBenchError

    corpora = _corpora(ctx)
    if not corpora:
        return missing(ctx.ref, "`corpus count` folders of mC4: --input corpus_ru=DIR --input corpus_uk=DIR")
    published = ctx.results("code_mixing") or {}
    rows = []
    for lang, count in sorted(corpora.items()):
        qa, vqa = _qa_run(ctx, "origin-qa", lang), _qa_run(ctx, "dish-name-vqa", lang)
        try:
            result = code_mixing(count, qa=qa.folder if qa else None, vqa=vqa.folder if vqa else None)
        except CultureBenchError as exc:  # e.g. a count of config uk: no name pairs to compare
            return missing(ctx.ref, str(exc))
        n = result["n_dishes_distinct_names"]
        rows.append(
            Row(
                f"{lang} corpus: code-mixing share (%)",
                percent(result["code_mixing_share"]),
                published.get(lang),
                n,
            )
        )
        rows += _bin_rows(
            f"{lang} QA Jaccard, occurrence difference", result.get("qa_jaccard_by_difference", [])
        )
        rows += _bin_rows(
            f"{lang} dish-name VQA, occurrence difference", result.get("vqa_accuracy_by_difference", [])
        )
    note = "The shares are compared with §4.2; the bins need QA / dish-name VQA runs of the same language."
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit="%, mean score per bin; n = dishes", note=note)


def figure6_cooccurrence(ctx: Context) -> Item:
    """QA Jaccard per log-spaced bin of correct co-occurrence count and ratio."""
    from culturebench.datasets.borsch.corpus_analyses import cooccurrence_bins

    corpora = _corpora(ctx)
    pairs = [
        (lang, count, qa)
        for lang, count in sorted(corpora.items())
        if (qa := _qa_run(ctx, "origin-qa", lang)) is not None
    ]
    if not pairs:
        return missing(
            ctx.ref,
            "a `corpus count` folder (--input corpus_uk=DIR) and an `origin-qa` run of its language",
        )
    rows = []
    for lang, count, qa in pairs:
        result = cooccurrence_bins(count, qa.folder)
        rows += _bin_rows(f"{lang} by correct count", result["qa_jaccard_by_correct_count"])
        rows += _bin_rows(f"{lang} by correct ratio", result["qa_jaccard_by_correct_ratio"])
        zero = result["ratio_zero"]
        rows.append(Row(f"{lang} correct ratio 0", zero["score"], None, zero["n_dishes"]))
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="mean QA Jaccard; n = dishes",
                note="The paper plots the bins without printing them.")  # fmt: skip


def figure7_annotations(ctx: Context) -> Item:
    """Shares of the five categories in annotated samples (`corpus sample` CSVs with the
    ``category`` column filled: --input annotations_ru=CSV, annotations_uk=CSV)."""
    from culturebench.datasets.borsch.corpus_analyses import CATEGORIES, tabulate_annotations

    files = [p for k, p in sorted(ctx.inputs.items()) if k.startswith("annotations")]
    if not files:
        return missing(
            ctx.ref,
            "annotated `corpus sample` CSVs: --input annotations_ru=CSV --input annotations_uk=CSV",
        )
    published = ctx.results("figure7") or {}
    rows = []
    for lang, shares in tabulate_annotations(files).items():
        for category in CATEGORIES:
            rows.append(
                Row(
                    f"{lang}: {category}",
                    percent(shares[category]),
                    published.get(lang, {}).get(category),
                    shares["n"],
                )
            )
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit="% of the annotated sentences; n = sentences")


def appendix_c_captions(ctx: Context) -> Item:
    """Share of dishes with a caption mention in LAION-2B-multi (beside App. C's,
    ``results.captions_share``)."""
    from culturebench.datasets.borsch.corpus_analyses import caption_share

    if "captions" not in ctx.inputs:
        return missing(ctx.ref, "a `corpus count` of LAION caption metadata: --input captions=DIR")
    result = caption_share(ctx.inputs["captions"])
    rows = [
        Row(
            "dishes with any caption mention (%)",
            percent(result["share_any_name"]),
            ctx.results("captions_share"),
            result["n_dishes"],
        )
    ]
    rows += [
        Row(f"{k.removeprefix('share_')} (%)", percent(v), None, result["n_dishes"])
        for k, v in result.items()
        if k.startswith("share_") and k != "share_any_name"
    ]
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit="% of dishes; n = dishes")
