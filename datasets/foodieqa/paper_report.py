"""FoodieQA's tables and figures from `multi-image` / `single-image` / `text` runs (with the
§6 options of `single-image`) and from the release (``culturebench eval paper foodieqa``)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from culturebench.eval.paper_report import (
    COMPUTED,
    REPRODUCED,
    Context,
    Item,
    Row,
    Run,
    missing,
    percent,
    percent_ci,
    unit_mean,
)

CONFIGS = ("multi_image", "single_image", "text")  # release configs (the tasks: multi-image, ...)
LANGS = ("zh", "en")


def _correct(s: Mapping[str, Any]) -> float:
    return float(bool(s["correct"]))


def _samples(run: Run) -> Sequence[Mapping[str, Any]]:
    """A run's samples, read through the task's own fields (``prompt_index``, ``correct``)."""
    return run.samples()


def _type_key(text: Any) -> str:
    """Question types compared loosely: ``cooking-skills`` = ``Cooking Skills``."""
    return re.sub(r"[^a-z]+", " ", str(text or "").lower()).strip()


def _prompt_accuracy(
    run: Run, lang: str, prompt: int
) -> tuple[float | None, tuple[float, float] | None, int]:
    chosen = [s for s in _samples(run) if s["lang"] == lang and s["prompt_index"] == prompt]
    mean, ci, n = unit_mean(chosen, _correct)
    return percent(mean), percent_ci(ci), n


def _plain(ctx: Context, task: str) -> list[Run]:
    """Runs of the task without the §6 variant options."""
    return [r for r in ctx.runs_of(task) if not {"dish_name", "image", "web"} & set(r.options)]


# ---------------------------------------------------------------------- from runs
def table3_accuracy(ctx: Context) -> Item:
    """Best-of-four-prompts accuracy per model, task and language, as the paper reports it
    (the CI is that of the best prompt, over questions); the printed models (and the human
    row) and one column per model that has runs side by side."""
    published = ctx.results("table3") or {}
    runs = [r for t in ("multi-image", "single-image") for r in _plain(ctx, t)]
    if not runs:
        return missing(ctx.ref, "`multi-image` and/or `single-image` runs")
    human = ctx.results("table3_human") or {}  # printed as the table's first row
    printed = (
        {"Human": {f"{c} {lang}": v for c, per in human.items() for lang, v in per.items()}} if human else {}
    )
    for config in CONFIGS:
        for name, per_lang in (published.get(config) or {}).items():
            printed.setdefault(name, {}).update({f"{config} {lang}": v for lang, v in per_lang.items()})
    side = ctx.table(printed, unit="accuracy %, best of four prompts")
    rows = []
    for model, group in ctx.columns(runs).items():
        cells: dict[str, Any] = {}
        for run in group:
            for lang in LANGS:
                prompts = sorted({s["prompt_index"] for s in _samples(run) if s["lang"] == lang})
                if not prompts:
                    continue
                scored = [(_prompt_accuracy(run, lang, p), p) for p in prompts]
                (best, ci, n), p = max(scored, key=lambda x: x[0][0] or 0)
                config = run.config or run.task
                paper = (ctx.printed(published.get(config), run) or {}).get(lang)
                cells[f"{config} {lang}"] = best
                rows.append(
                    Row(f"{model} {run.task} {lang}", best, paper, n, ci, note=f"best: prompt {p + 1}")
                )
        ctx.add_runs(side, model, group, cells)
    item = Item(ctx.ref, ctx.title, ctx.status(runs), rows, unit="accuracy %; n = questions")
    item.table = side
    return item


def table4_web_images(ctx: Context) -> Item:
    """Mean-of-four-prompts accuracy with the private photos and with web images, on the
    questions that have a web image (the private run is restricted to them)."""
    web = ctx.columns([r for r in ctx.runs_of("single-image") if r.options.get("web")])
    private = ctx.columns(_plain(ctx, "single-image"))
    models = [m for m in web if m in private]
    if not models:
        return missing(
            ctx.ref, "a `single-image` run and one with `--option web=UPSTREAM_FOLDER`, of the same model"
        )
    published = ctx.results("table4") or {}
    side = ctx.table(
        {name: {f"{k} images": v for k, v in cells.items()} for name, cells in published.items()},
        unit="accuracy %, mean of the four prompts",
    )
    rows = []
    for model in models:
        (web_run,), (private_run,) = web[model], private[model]
        ids = {s["row_id"] for s in web_run.samples()}
        paper = ctx.printed(published, web_run) or {}
        cells = {}
        for kind, run in (("private", private_run), ("web", web_run)):
            samples = [s for s in run.samples() if s["row_id"] in ids]
            mean, ci, n = unit_mean(samples, _correct)
            cells[f"{kind} images"] = percent(mean)
            rows.append(Row(f"{model}: {kind} images", percent(mean), paper.get(kind), n, percent_ci(ci)))
        ctx.add_runs(side, model, [private_run, web_run], cells)
    item = Item(ctx.ref, ctx.title, ctx.status([web[m][0] for m in models]), rows,
                unit="accuracy %, mean of the four prompts; n = questions with a web image")  # fmt: skip
    item.table = side
    return item


def _named(ctx: Context) -> list[Run]:
    """``single-image`` runs with the dish name and the photo."""
    return [r for r in ctx.runs_of("single-image", dish_name=True) if not {"image", "web"} & set(r.options)]


def _two_conditions(
    ctx: Context, table: str, conditions: list[tuple[list[Run], str, str]], needs: str
) -> Item:
    """Per-prompt accuracy (zh) of two conditions, each beside the paper's row for the model:
    ``conditions`` = (runs, label, key of the paper's row); the printed models and one column
    per model that has runs side by side."""
    if not any(runs for runs, _, _ in conditions):
        return missing(ctx.ref, needs)
    published = ctx.results(table) or {}
    side = ctx.table(
        {
            name: {
                f"{label} p{p + 1}": (per.get(key) or [None] * 4)[p]
                for _, label, key in conditions
                for p in range(4)
            }
            for name, per in published.items()
        },
        unit="accuracy % (zh)",
    )
    rows = []
    ours: dict[str, tuple[list[Run], dict[str, Any]]] = {}
    for runs, label, key in conditions:
        for model, group in ctx.columns(runs).items():
            run = group[0]
            paper = (ctx.printed(published, run) or {}).get(key) or [None] * 4
            column = ours.setdefault(model, ([], {}))
            column[0].append(run)
            for p in range(4):
                mean, ci, n = _prompt_accuracy(run, "zh", p)
                column[1][f"{label} p{p + 1}"] = mean
                rows.append(Row(f"{model} {label} p{p + 1}", mean, paper[p], n, ci))
    for model, (group, cells) in ours.items():
        ctx.add_runs(side, model, group, cells)
    runs = [r for group, _, _ in conditions for r in group]
    item = Item(ctx.ref, ctx.title, ctx.status(runs), rows, unit="accuracy % (zh); n = questions")
    item.table = side
    return item


def table5_name_only(ctx: Context) -> Item:
    """Single-image questions with the dish name and no image vs name + image, per prompt (zh)."""
    only = ctx.runs_of("single-image", dish_name=True, image=False)
    needs = "`single-image` runs with `--option dish_name=true` (and `--option image=false`)"
    conditions = [(only, "dish name only", "name_only"), (_named(ctx), "+ dish image", "name_and_image")]
    return _two_conditions(ctx, "table5", conditions, needs)


def table6_name_and_image(ctx: Context) -> Item:
    """Single-image questions with the image only vs image + dish name, per prompt (zh)."""
    needs = "`single-image` runs without options and with `--option dish_name=true`"
    conditions = [
        (_plain(ctx, "single-image"), "image only", "image_only"),
        (_named(ctx), "+ dish name", "image_and_name"),
    ]
    return _two_conditions(ctx, "table6", conditions, needs)


def _prompt_figure(ctx: Context, task: str) -> Item:
    runs = _plain(ctx, task)
    if not runs:
        return missing(ctx.ref, f"`{task}` runs")
    rows = []
    for run in runs:
        for lang in LANGS:
            for p in range(4):
                mean, ci, n = _prompt_accuracy(run, lang, p)
                if n:
                    rows.append(Row(f"{ctx.model_label(run)} {lang} prompt {p + 1}", mean, None, n, ci))
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="accuracy %; n = questions",
                note="The paper plots these without printing them.")  # fmt: skip


def figure6_multi_prompts(ctx: Context) -> Item:
    """Multi-image accuracy per prompt and language."""
    return _prompt_figure(ctx, "multi-image")


def figure7_text_prompts(ctx: Context) -> Item:
    """Text QA accuracy per prompt and language."""
    return _prompt_figure(ctx, "text")


def _grouped(ctx: Context, runs: list[Run], key: str) -> list[Row]:
    rows = []
    for run in runs:
        groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for s in run.samples():
            groups[str(s.get(key) or "-")].append(s)
        for value in sorted(groups):
            mean, ci, n = unit_mean(groups[value], _correct)
            rows.append(
                Row(f"{ctx.model_label(run)} {run.task}: {value}", percent(mean), None, n, percent_ci(ci))
            )
    return rows


def figure8_attributes(ctx: Context) -> Item:
    """Accuracy per question type, single- and multi-image (all prompts and languages)."""
    runs = [*_plain(ctx, "single-image"), *_plain(ctx, "multi-image")]
    if not runs:
        return missing(ctx.ref, "`single-image` and/or `multi-image` runs")
    return Item(
        ctx.ref, ctx.title, COMPUTED, _grouped(ctx, runs, "question_type"), unit="accuracy %; n = questions"
    )


def figure9_categories(ctx: Context) -> Item:
    """Accuracy per food category (single-image) and cuisine type (text QA)."""
    single, text = _plain(ctx, "single-image"), _plain(ctx, "text")
    if not single and not text:
        return missing(ctx.ref, "`single-image` and/or `text` runs")
    rows = _grouped(ctx, single, "food_type") + _grouped(ctx, text, "cuisine_type")
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit="accuracy %; n = questions")


# ---------------------------------------------------------------------- from the release
def _note(ctx: Context) -> str:
    return (
        "The release given is a sample or partial build: its counts are not the paper's."
        if ctx.sample_release
        else ""
    )


def table1_tasks(ctx: Context) -> Item:
    """Questions per task; with human answers (``--input human=CSV``, schema in
    datasets/foodieqa/human.py) the human accuracy and Fleiss' kappa per task."""
    from culturebench.datasets.foodieqa.human import read_human_answers
    from culturebench.eval.agreement import fleiss_kappa

    published = ctx.results("table1") or {}
    human_paper = ctx.results("table1_human") or {}
    data = {task: ctx.release_rows(task) for task in CONFIGS}
    rows = [Row(f"{task}: questions", float(len(data[task])), published.get(task)) for task in CONFIGS]
    note = _note(ctx)
    if "human" in ctx.inputs:
        gold = {r["id"]: int(r["label"]) for rows_ in data.values() for r in rows_}
        answers = read_human_answers(ctx.inputs["human"], gold)
        for task, prefix in zip(CONFIGS, ("mivqa-", "sivqa-", "textqa-"), strict=True):
            mine = [a for a in answers if a["question_id"].startswith(prefix) and a["answer"] is not None]
            if not mine:
                continue
            mean, ci, n = unit_mean(
                [{**a, "row_id": a["question_id"]} for a in mine],
                lambda a: float(a["answer"] == gold[a["question_id"]]),
            )
            rows.append(
                Row(f"{task}: human accuracy", mean, human_paper.get(task, {}).get("accuracy"), n, ci)
            )
            per_q: dict[str, list[int]] = defaultdict(list)
            for a in mine:
                per_q[a["question_id"]].append(a["answer"])
            counts = [len(v) for v in per_q.values()]
            modal = max(set(counts), key=counts.count)
            kappa = fleiss_kappa([v for v in per_q.values() if len(v) == modal], categories=range(4))
            paper = human_paper.get(task, {}).get("kappa")
            note_k = f"questions answered by {modal} annotators"
            rows.append(Row(f"{task}: Fleiss' kappa", kappa, paper, counts.count(modal), note=note_k))
    else:
        note = (note + " Human accuracy and kappa need the human answers: --input human=CSV.").strip()
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit="questions; accuracy; kappa", note=note)


def table2_questions(ctx: Context) -> Item:
    """Average question length (characters of the Chinese question), question types, unique
    images, per task. Multi-hop shares are not in the data."""
    published = ctx.results("table2") or {}
    rows = []
    for task in CONFIGS:
        data, paper = ctx.release_rows(task), published.get(task, {})
        if not data:
            continue
        rows.append(
            Row(
                f"{task}: average length",
                sum(len(r["question"]) for r in data) / len(data),
                paper.get("avg_length"),
                len(data),
            )
        )
        rows.append(
            Row(
                f"{task}: question types",
                float(len({_type_key(r.get("question_type")) for r in data})),
                paper.get("question_types"),
                len(data),
            )
        )
        if task != "text":
            shas = {i.get("sha256") for r in data for i in r.get("images") or [] if i.get("sha256")}
            rows.append(
                Row(f"{task}: unique images", float(len(shas)), paper.get("unique_images"), len(data))
            )
    return Item(
        ctx.ref, ctx.title, REPRODUCED, rows, unit="characters, types, images; n = questions", note=_note(ctx)
    )


def _types(ctx: Context, task: str) -> Item:
    published = (ctx.results("question_types") or {}).get(task, {})
    counts = Counter(_type_key(r.get("question_type")) for r in ctx.release_rows(task))
    names = {_type_key(k): k for k in published}
    rows = [
        Row(names.get(k, k), float(counts.get(k, 0)), published.get(names.get(k, "")))
        for k in sorted(set(counts) | set(names))
    ]
    return Item(ctx.ref, ctx.title, REPRODUCED, rows, unit="questions", note=_note(ctx))


def table7_text_types(ctx: Context) -> Item:
    """Text QA questions per type."""
    return _types(ctx, "text")


def table8_single_types(ctx: Context) -> Item:
    """Single-image questions per type."""
    return _types(ctx, "single_image")


def table9_multi_types(ctx: Context) -> Item:
    """Multi-image questions per type."""
    return _types(ctx, "multi_image")


def _counts(ctx: Context, task: str, key: str) -> Item:
    data = ctx.release_rows(task)
    counts = Counter(str(r.get(key) or "-") for r in data)
    rows = [Row(value, float(n), None, len(data)) for value, n in counts.most_common()]
    return Item(ctx.ref, ctx.title, COMPUTED, rows, unit=f"questions; n = {task} questions",
                note="The figure prints no numbers; counts from the release given.")  # fmt: skip


def figure3_cuisines(ctx: Context) -> Item:
    """Questions per cuisine type (text QA)."""
    return _counts(ctx, "text", "cuisine_type")


def figure5_regions(ctx: Context) -> Item:
    """Single-image questions per region of the food."""
    return _counts(ctx, "single_image", "food_location")


def figure10_answers(ctx: Context) -> Item:
    """Share of each answer position per task and question type."""
    rows = []
    for task in CONFIGS:
        groups: dict[str, list[int]] = defaultdict(list)
        for r in ctx.release_rows(task):
            groups[str(r.get("question_type") or "-")].append(int(r["label"]))
        for qtype, labels in sorted(groups.items()):
            for k, letter in enumerate("ABCD"):
                rows.append(
                    Row(f"{task} {qtype}: {letter}", 100 * labels.count(k) / len(labels), None, len(labels))
                )
    return Item(
        ctx.ref, ctx.title, COMPUTED, rows, unit="% of the type's questions; n = questions of the type"
    )
