"""World Wide Dishes' tables and figures from the release, the authors' published review file
(``--input reviews=CSV``), a WorldCuisines KB (``--input worldcuisines=CSV``) and runs of the
WWD tasks (``culturebench eval paper wwd RUN...``)."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

from culturebench.errors import Location, SourceError
from culturebench.eval.paper_report import COMPUTED, REPRODUCED, Context, Item, Row, counts_item, missing

LLM_TASKS = ("country", "time-of-day", "meal-type", "utensils", "ingredients", "description")


# ---------------------------------------------------------------------- Tables B.1-B.5
def _tally(ctx: Context, field: str) -> Counter:
    return Counter(v for r in ctx.release_rows("default") for v in set(r[field] or []))


def table_b1(ctx: Context) -> Item:
    """Dishes per continent."""
    return counts_item(ctx, _tally(ctx, "continents"), "default.per_continent", "dishes")


def table_b2(ctx: Context) -> Item:
    """Dishes per time of day eaten."""
    return counts_item(ctx, _tally(ctx, "time_of_day"), "default.per_time_of_day", "dishes")


def table_b3(ctx: Context) -> Item:
    """Dishes per type of meal."""
    return counts_item(ctx, _tally(ctx, "type_of_dish"), "default.per_type_of_dish", "dishes")


def table_b4(ctx: Context) -> Item:
    """Dishes per country (ISO 3166-1 alpha-2)."""
    return counts_item(ctx, _tally(ctx, "country_codes"), "default.per_country", "dishes")


def table_b5(ctx: Context) -> Item:
    """Dishes per language (ISO 639-3)."""
    return counts_item(ctx, _tally(ctx, "language_codes"), "default.per_language", "dishes")


# ---------------------------------------------------------------------- community review
def _read_reviews(ctx: Context) -> tuple[list[dict[str, str]], int] | None:
    """The reviews with a model and the number of rows without one (None: no file given)."""
    from culturebench.datasets.wwd.community_review import read_reviews

    if "reviews" not in ctx.inputs:
        return None
    return read_reviews(ctx.inputs["reviews"])


def _reviews(ctx: Context) -> list[dict[str, str]] | None:
    read = _read_reviews(ctx)
    return None if read is None else read[0]


def community_tables(ctx: Context) -> Item:
    """Table 2 (item Table 2) or Table 3 (item Table 3) cell by cell from the published review
    file, beside the printed cells (``results.community_review``): each item shows its own
    table's rows. Both tables and the whole comparison are kept as
    ``ctx.data["community_review"]``: ``culturebench eval wwd-community-review`` is this item."""
    from culturebench.datasets.wwd.community_review import (
        TABLE_OF_ITEM,
        compare_with_paper,
        explain,
        review_counts,
        tables,
    )

    read = _read_reviews(ctx)
    if read is None:
        return missing(
            ctx.ref, "the authors' review file: --input reviews=Community_Review_Generated_Dish_Images.csv"
        )
    rows_, dropped = read
    ours = tables(rows_)
    comparison = compare_with_paper(ours, ctx.results("community_review"))
    ctx.data["community_review"] = {
        "tables": ours,
        "comparison": comparison,
        "reviews": len(rows_),
        "without_model": dropped,
    }
    table = TABLE_OF_ITEM.get(ctx.ref.strip())
    own = [c for c in comparison if table is None or c["table"] == table]
    rows = [
        Row(f"{c['table']} {c['metric']}, {c['country']}, {c['model']}", c["ours"], c["paper"], c["n"])
        for c in own
    ]
    note = explain(own, review_counts(rows_), ctx.results("table_e7") or {})
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit="share of reviews; n = reviews", note=note)


def table_e7_reviewers(ctx: Context) -> Item:
    """Reviewers, images per reviewer (mean and SD) and reviews per model, per country."""
    from culturebench.datasets.wwd.community_review import MODELS, review_counts

    rows_ = _reviews(ctx)
    if rows_ is None:
        return missing(ctx.ref, "the authors' review file: --input reviews=CSV")
    published = ctx.results("table_e7") or {}
    reviews = review_counts(rows_)
    out = []
    by_country: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows_:
        by_country[r["Country"].strip()].append(r)
    for country, group in sorted(by_country.items()):
        paper = published.get(country, {})
        per_rater = Counter(r["Rater_id"].strip() for r in group)
        counts = list(per_rater.values())
        out.append(Row(f"{country}: reviewers", float(len(per_rater)), paper.get("reviewers")))
        out.append(Row(f"{country}: images per reviewer, mean", mean(counts), paper.get("mean")))
        out.append(
            Row(
                f"{country}: images per reviewer, SD",
                pstdev(counts),
                paper.get("sd"),
            )
        )
        for model in MODELS:
            out.append(Row(f"{country}: {model}", float(reviews[country].get(model, 0)), paper.get(model)))
        out.append(Row(f"{country}: total", float(len(group)), paper.get("total")))
    nigeria = published.get("Nigeria") or {}
    note = (
        "Rows of the published file without a model are left out (as in Tables 2-3). The SD is the "
        f"population SD (numpy's default), which gives the paper's Nigeria {nigeria.get('mean')} ± "
        f"{nigeria.get('sd')}; Cameroon, Kenya "
        "and Nigeria match per model, Algeria, South Africa and the United States hold other reviews "
        "in the published file than the paper counts (see the card's notes on Tables 2-3)."
    )
    return Item(ctx.ref, ctx.title, REPRODUCED, out, unit="reviewers, reviews", note=note)


def figure_e2_match(ctx: Context) -> Item:
    """Share of each answer to "how closely does this image match ..." per country and model."""
    rows_ = _reviews(ctx)
    if rows_ is None:
        return missing(ctx.ref, "the authors' review file: --input reviews=CSV")
    column = next((c for c in rows_[0] if c.lower().startswith("in your opinion, how closely")), None)
    if column is None:
        return missing(ctx.ref, "a review file with the 'how closely does this image match' column")
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in rows_:
        groups[(r["Country"].strip(), r["Model"].strip())].append(r[column].strip() or "(blank)")
    out = []
    for (country, model), answers in sorted(groups.items()):
        counts = Counter(answers)
        for answer, n in sorted(counts.items()):
            out.append(Row(f"{country}, {model}: {answer}", 100 * n / len(answers), None, len(answers)))
    return Item(ctx.ref, ctx.title, COMPUTED, out, unit="% of the reviews; n = reviews",
                note="The figure prints no numbers; shares from the published review file.")  # fmt: skip


# ---------------------------------------------------------------------- WorldCuisines
def _names(text: str | None) -> list[str]:
    return [n.strip().casefold() for n in re.split(r"[;|]", text or "") if n.strip()]


def read_worldcuisines(path: Path) -> list[dict[str, Any]]:
    """A WorldCuisines KB as CSV: ``name`` (required) and optional ``aliases`` (separated by
    ``;`` or ``|``), ``countries`` (column names in any case); errors name the file, row and
    field (read by :func:`culturebench.inputs.read_csv_records`)."""
    from culturebench.inputs import read_csv_records

    path = Path(path)
    records = read_csv_records(path, what="a WorldCuisines CSV", required=["name"], fold_case=True)
    out = []
    for number, row in records:
        if not row["name"].strip():
            raise SourceError(Location(path.name, number, "name"), "empty")
        name = row["name"].strip()
        names = [name.casefold(), *_names(row.get("aliases"))]
        out.append({"name": name, "names": names, "countries": row.get("countries", "")})
    return out


def _matches(wwd: list[str], wc: list[str]) -> bool:
    for a in wwd:
        for b in wc:
            if a == b or (len(a) >= 4 and len(b) >= 4 and (a in b or b in a)):
                return True
    return False


def table_d6_worldcuisines(ctx: Context) -> Item:
    """Share of WWD dishes whose English or local name matches a WorldCuisines name or alias,
    per continent; and the eru entry the paper compares."""
    if "worldcuisines" not in ctx.inputs:
        return missing(ctx.ref, "a WorldCuisines KB: --input worldcuisines=CSV (name, aliases)")
    kb = read_worldcuisines(ctx.inputs["worldcuisines"])
    found: dict[str, list[bool]] = defaultdict(list)
    every: list[bool] = []
    eru = None
    for dish in ctx.release_rows("default"):
        names = [n.casefold() for n in (dish.get("english_name"), dish.get("local_name")) if n]
        hit = next((e for e in kb if _matches(names, e["names"])), None)
        every.append(hit is not None)
        for continent in dish["continents"] or ["(none)"]:
            found[continent].append(hit is not None)
        if "eru" in names:
            eru = (dish, hit)
    rows = [
        Row(f"{c}: WWD dishes found in WorldCuisines (%)", 100 * sum(v) / len(v), None, len(v))
        for c, v in sorted(found.items())
    ]
    rows.append(
        Row("all: WWD dishes found in WorldCuisines (%)", 100 * sum(every) / len(every), None, len(every))
    )
    note = (
        "eru: not in the release."
        if eru is None
        else (
            f"eru ({eru[0]['id']}): "
            + (f"found as {eru[1]['name']!r}" if eru[1] else "not found")
            + " in the KB given."
        )
    )
    return Item(
        ctx.ref, ctx.title, COMPUTED, rows, unit="% of WWD dishes; n = dishes of the continent", note=note
    )


# ---------------------------------------------------------------------- runs
def vqa_figures(ctx: Context) -> Item:
    """Answer shares per question, region and T2I model, from ``vqa-probes`` runs."""
    runs = ctx.runs_of("vqa-probes")
    if not runs:
        return missing(ctx.ref, "`vqa-probes` runs (on `t2i-generate` runs)")
    rows = []
    for run in runs:
        questions = run.metrics.get("questions", {})
        for key, dist in run.metrics.get("distribution", {}).items():
            qid = key.split(" | ", 1)[0]
            choices = questions.get(qid, {}).get("choices") or {}
            for letter, share in dist.items():
                if letter in ("n",):
                    continue
                label = choices.get(letter, letter) if isinstance(choices, dict) else letter
                rows.append(Row(f"{ctx.model_label(run)} {key}: {label}", 100 * share, None, dist["n"]))
    note = "The figures print no numbers; shares for every VQA run given (Fig. 7 is one question's panel)."
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="% of images asked; n = images", note=note)


def figure8_clip(ctx: Context) -> Item:
    """Mean normalised descriptor score per continent and T2I model (App. G.1)."""
    runs = ctx.runs_of("clip-descriptors")
    if not runs:
        return missing(ctx.ref, "`clip-descriptors` runs")
    rows = []
    for run in runs:
        for group, block in run.metrics.get("per_group", {}).items():
            score = block["score"]
            rows.append(
                Row(
                    group,
                    score["mean"],
                    None,
                    block["n"],
                    note=f"SEM {score['sem']:.3f}" if score.get("sem") is not None else "",
                )
            )
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="mean normalised net score; n = images",
                note="The figure prints no numbers (README: the two readings of App. G.1).")  # fmt: skip


#: the printed row names of Tables H.9 and H.10, by the row keys of the authors' stats file
ROW_NAMES = {
    "count": "Dish count",
    "country_acc": "Country",
    "time_of_day_iou": "Time of day",
    "type_of_dish_iou": "Type of meal",
    "utensils_iou": "Utensils",
    "ingredients_iou": "Ingredients",
    "apologize": '"I apologize"',
    "not known": '"Not known"',
    "not real": '"Not a real dish"',
    "take a guess": '"Take a guess"',
}
#: the model whose numbers the authors' stats file (``--input h9=``) holds
H9_FILE_MODEL = "GPT 3.5"


def _side_cells(results_by_task: Mapping[str, Mapping[str, Any]], keys: list[str]) -> dict[str, Any]:
    """One model's cells of Table H.9/H.10 as the paper prints them: % with ± SEM per row and
    continent; the dish count is the country task's answers per continent over its seeds."""
    from culturebench.datasets.wwd.table_h9 import CONTINENTS, FAILURE_ROWS, METRIC_ROWS

    def en(task: str) -> dict[str, Any]:
        return (results_by_task.get(task) or {}).get("metrics", {}).get("en", {})

    cells: dict[str, Any] = {}
    for key in keys:
        if key == "count":
            country = results_by_task.get("country") or {}
            seeds = country.get("seeds") or (country.get("provenance") or {}).get("seeds") or [None]
            per = en("country").get("per_continent", {})
            for c in CONTINENTS:
                cells[f"{ROW_NAMES[key]}: {c}"] = round(per[c]["n"] / len(seeds)) if c in per else None
            continue
        if key in METRIC_ROWS:
            per = en(METRIC_ROWS[key][0]).get("per_continent", {})
        else:
            per = en("description").get("failure_modes", {}).get(FAILURE_ROWS[key], {})
        for c in CONTINENTS:
            block = per.get(c)
            sem = None if block is None or block.get("sem") is None else 100 * _as_printed(block)
            cells[f"{ROW_NAMES[key]}: {c}"] = None if block is None else (100 * block["mean"], sem)
    return cells


def _as_printed(block: dict[str, Any]) -> float:
    """A per-continent SEM as Tables H.9/H.10 print it: the standard deviation with divisor n
    (numpy's ``np.std`` default), over √n. Our results carry the usual sample SEM (divisor n - 1);
    the print's ± for GPT 3.5 equals the divisor-n form in all 30 H.9 cells (the n - 1 form: 24),
    e.g. Oceania ingredients 5.5 (n - 1: 5.7) and North America country 1.8 (1.9)."""
    n = int(block.get("n") or 0)
    return float(block["sem"]) * math.sqrt((n - 1) / n) if n > 1 else float(block["sem"])


def _printed_cells(printed: dict[str, Any], keys: list[str]) -> dict[str, dict[str, Any]]:
    """The printed table (``results.table_h9`` / ``table_h10``) as ``{model: {row: cell}}``."""
    out: dict[str, dict[str, Any]] = {}
    models = [m for key in keys if key != "count" for m in printed.get(key) or {}]
    for model in dict.fromkeys(models):
        cells: dict[str, Any] = {}
        for key in keys:
            per = printed.get("dish_count") if key == "count" else (printed.get(key) or {}).get(model)
            cells.update({f"{ROW_NAMES[key]}: {c}": v for c, v in (per or {}).items()})
        out[model] = cells
    return out


def table_h9_llm(ctx: Context) -> Item:
    """Table H.9 (item Table H.10: its failure-mode rows) from runs (or `eval score` folders)
    of the six LLM tasks: the printed models (``results.table_h9`` / ``table_h10``) and one
    column per model that has runs side by side, and our cells per model, beside the authors'
    stats file when given (``--input h9=gpt35_dish_info_cleaned_stats.csv``; GPT 3.5's numbers,
    so set beside GPT 3.5 runs only). Each model's whole table in the authors' layout (empty
    cells included) is kept as ``ctx.data["table_h9_by_model"]`` and the first model's as
    ``ctx.data["table_h9"]``: the ``table_h9.csv`` that ``culturebench eval score wwd`` writes
    (one model) is this item."""
    from culturebench.datasets.wwd.table_h9 import FAILURE_ROWS, METRIC_ROWS, read_published, table_h9

    columns = ctx.columns([r for r in ctx.runs if ctx.task_of(r) in LLM_TASKS])
    if not columns:
        return missing(
            ctx.ref,
            "runs of the WWD LLM tasks (country, time-of-day, meal-type, utensils, ingredients, description)",
        )
    results = {label: {ctx.task_of(r): r.results for r in runs} for label, runs in columns.items()}
    tables = ctx.data["table_h9_by_model"] = {label: table_h9(per) for label, per in results.items()}
    ctx.data["table_h9"] = next(iter(tables.values()))
    h10 = ctx.ref.strip().endswith("H.10")
    keys = list(FAILURE_ROWS) if h10 else ["count", *METRIC_ROWS]
    printed = ctx.results("table_h10" if h10 else "table_h9") or {}
    unit = "% of descriptions ± SEM" if h10 else "% (accuracy for Country, IoU for the rest) ± SEM; dishes"
    side = ctx.table(_printed_cells(printed, keys), unit=unit, digits=2 if h10 else 1)
    published = read_published(ctx.inputs["h9"]) if "h9" in ctx.inputs else {}
    digits = 2 if h10 else 1  # the printed precision
    rows: list[Row] = []
    equal: dict[str, list[int]] = {}  # model -> [values equal at the printed precision, cells, ± equal]
    for label, runs in columns.items():
        cells = _side_cells(results[label], keys)
        ctx.add_runs(side, label, runs, cells)
        ctx.data.setdefault("table_h9_paper", cells)  # the first model's, for table_h9_paper.csv
        name = ctx.paper_model(runs[0])  # the printed model this run is, if any
        of_file = published if name == H9_FILE_MODEL else {}
        for key in keys:
            per_printed = printed.get("dish_count") if key == "count" else (printed.get(key) or {}).get(name)
            for continent, value in tables[label][key].items():
                cell = cells.get(f"{ROW_NAMES[key]}: {continent}")
                if value is None or cell is None:
                    continue
                ours, sem = (cell, None) if key == "count" else cell
                at = (per_printed or {}).get(continent) if name else None
                paper = at[0] if isinstance(at, list) else at
                note = "" if sem is None else f"± {sem:.{digits}f}"
                if isinstance(at, list):
                    note += f" (paper ± {at[1]:.{digits}f})"
                    tally = equal.setdefault(label, [0, 0, 0])
                    tally[0] += round(ours, digits) == round(at[0], digits)
                    tally[1] += 1
                    tally[2] += sem is not None and round(sem, digits) == round(at[1], digits)
                csv_value = (of_file.get(key) or {}).get(continent)
                if csv_value is not None:
                    scale = 1 if key in FAILURE_ROWS or key == "count" else 100
                    note += f"; authors' stats file: {scale * csv_value:.{digits}f}"
                rows.append(Row(f"{label}: {ROW_NAMES[key]}: {continent}", ours, paper, note=note.strip()))
    compared = bool(equal)
    status = REPRODUCED if compared else ctx.status([r for runs in columns.values() for r in runs])
    if compared:
        note = (
            "The paper column is the print, for the runs of a printed model; "
            + "; ".join(
                f"{label}: {n} of {m} cells equal at the printed precision (their ± SEM: {k} of {m})"
                for label, (n, m, k) in equal.items()
            )
            + ". The ± is the print's: standard deviation with divisor n over √n (see the card)."
        )
    else:
        note = "No run here is of a model the paper prints: its cells stand beside the printed columns."
    if published:
        note += (
            " The authors' stats file (--input h9) is in the note column, scaled to %: it is not what "
            "the paper prints (its utensils row is .47 .70 .80 .72 .27 .65; the print for GPT 3.5 "
            "is 34.0 50.0 60.9 58.1 17.8 58.8): the authors' llm_stats.py counts a dish's utensils "
            "answer as scorable only when a lowercase keyword (fork, spoon, ...) appears in it "
            "case-sensitively, so most capitalised answers (Fork, Spoon) leave the denominator; "
            "matched case-insensitively, as here, its keywords give the printed row."
        )
    else:
        note += " --input h9=CSV adds the authors' stats file (GPT 3.5 runs) to the note column."
    unit_rows = "% of descriptions" if h10 else "% (accuracy for Country, IoU for the rest); dishes"
    item = Item(ctx.ref, ctx.title, status, rows, unit=unit_rows, note=note)
    item.table = side
    return item


def printed_h9(file_name: str, model: str) -> Any:
    """Table H.9 as printed for ``model`` (paper.yaml ``results.table_h9``) in the layout of
    ``table_h9_paper.csv``: a :class:`culturebench.eval.compare.Printed` of (row, continent) ->
    (value %, ± SEM), one decimal."""
    from culturebench.cards.paper import read_catalogue
    from culturebench.datasets.wwd.table_h9 import METRIC_ROWS
    from culturebench.errors import UsageError
    from culturebench.eval.compare import Printed
    from culturebench.spec import load_spec

    if Path(file_name).name != "table_h9_paper.csv":
        raise UsageError(f"{file_name}: the WWD paper's printed numbers compare with table_h9_paper.csv only")
    catalogue = read_catalogue(load_spec("wwd").folder)
    if catalogue is None:
        raise UsageError("wwd has no paper.yaml: no printed Table H.9 to compare with")
    printed = catalogue["results"]["table_h9"]
    by_model = _printed_cells(printed, list(METRIC_ROWS))
    if model not in by_model:
        raise UsageError(f"Table H.9 prints no model {model!r} (models: {', '.join(by_model)})")
    cells: dict[tuple[str, str], tuple[float, float | None]] = {}
    for label, (value, pm) in by_model[model].items():
        row, column = label.split(": ", 1)  # "<row>: <continent>"
        cells[(row, column)] = (float(value), float(pm))
    return Printed(source=f"World Wide Dishes Table H.9, {model}", cells=cells, digits=1)
