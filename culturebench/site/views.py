"""What the site's pages show of a run, read once from its folder: its dataset, task, model,
languages and kind, its headline value (the metric its task's Hub declaration names, else its
first overall headline) with the 95% interval and n, its metrics per language, the breakdowns
that become maps or bars, and a confusion matrix where the task reports one. Nothing here
names a dataset: the shapes of the metrics decide (``culturebench.eval.run_report``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from culturebench.eval.records import Results, RunInfo

# sample fields that hold the row's reporting group (first present wins)
SAMPLE_GROUP_FIELDS = (
    "continents", "gold_origins", "origins", "gold_countries", "question_type", "food_type", "category",
    "cuisine_category", "cuisine",
)  # fmt: skip


@dataclass(frozen=True)
class Figure:
    """A headline number: value, 95% interval (or None), n."""

    metric: str
    value: float
    ci95: tuple[float, float] | None
    n: int | None
    sem: float | None = None

    def text(self) -> str:
        from culturebench.site.format import number

        if self.ci95 is not None:
            return f"{number(self.value)} [{number(self.ci95[0])}, {number(self.ci95[1])}]"
        if self.sem is not None:
            return f"{number(self.value)} ± {number(self.sem)}"
        return number(self.value)


@dataclass
class RunView:
    """One finished run as the site shows it."""

    folder: Path
    run: RunInfo
    results: Results
    slug: str
    dataset: str
    task: str
    model: str
    languages: list[str]
    kind: str  # text, vision, text-to-image, analysis
    headline: Figure | None
    score_fields: tuple[str, ...]  # the per-sample score (the Hub declaration's sample_score)
    read_field: str | None  # what the task read from the answer (its ``prediction``)
    model_key: tuple[Any, ...] = ()  # what makes two runs one model (paper_report.ModelId.key)
    model_detail: str = ""  # what tells two models of one name apart
    by_language: list[tuple[str, list[Figure]]] = field(default_factory=list)
    overall: list[Figure] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.dataset}/{self.task} · {self.model}"

    @property
    def samples_file(self) -> Path:
        return self.folder / "samples.jsonl"

    @property
    def metrics(self) -> Mapping[str, Any]:
        return self.results.get("metrics") or {}


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"


def read_run_view(folder: Path) -> RunView:
    """The view of one finished run folder (errors name the folder)."""
    from culturebench.eval.run_folder import read_results, read_run, run_key

    run = read_run(folder)
    results = read_results(folder)
    prov = results.get("provenance") or {}
    dataset = str((prov.get("dataset") or run.get("dataset") or {}).get("dataset"))
    task = str(prov.get("task") or run.get("task"))
    model, model_key, model_detail = _model(dataset, {"model": run.get("model"), **prov})
    given = prov.get("languages") or run.get("languages") or []
    languages = [str(lang) for lang in (given if isinstance(given, list) else [given])]
    metrics = results.get("metrics") or {}
    score_fields, read_field, hub_metric = _declared(dataset, task)
    headline = _headline(metrics, hub_metric)
    # (the shards of one run share its key: unique_slugs numbers them)
    slug = f"{slugify(dataset)}-{slugify(task)}-{slugify(model)[:24]}-{run_key(run)[:8]}"
    view = RunView(
        folder=folder,
        run=run,
        results=results,
        slug=slug,
        dataset=dataset,
        task=task,
        model=model,
        languages=languages,
        kind=_kind(dataset, task),
        model_key=model_key,
        model_detail=model_detail,
        headline=headline,
        score_fields=score_fields,
        read_field=read_field,
    )
    view.overall, view.by_language = _figures(metrics, languages)
    return view


def _model(dataset: str, prov: Mapping[str, Any]) -> tuple[str, tuple[Any, ...], str]:
    """(label, identity key, detail) of a run's model: the paper's name where one of its
    ``models:`` aliases matches (the authors' ``gpt35_*`` files are "GPT 3.5"), else the last
    part of its id or path, as ``eval paper`` labels them."""
    from culturebench.eval.paper_report import ModelId, paper_name

    identity = ModelId.from_provenance(prov)
    paper = _paper(dataset)
    return paper_name(identity, paper) or identity.name, identity.key, identity.detail


@cache
def _paper(dataset: str) -> dict[str, Any]:
    from culturebench.eval.paper_report import load_catalogue

    try:
        return load_catalogue(dataset)[0]
    except Exception:  # a dataset without a paper catalogue here
        return {}


def distinct_models(views: Sequence[RunView]) -> None:
    """Two different models that would share a label are told apart by their detail."""
    keys: dict[str, set[tuple[Any, ...]]] = {}
    for view in views:
        keys.setdefault(view.model, set()).add(view.model_key)
    for view in views:
        if len(keys[view.model]) > 1 and view.model_detail:
            view.model = f"{view.model} ({view.model_detail})"


def unique_slugs(views: Sequence[RunView]) -> None:
    """Two folders of the same run (a copy) get distinct slugs, in the order given."""
    seen: dict[str, int] = {}
    for view in views:
        count = seen.get(view.slug, 0)
        seen[view.slug] = count + 1
        if count:
            view.slug = f"{view.slug}-{count + 1}"


@cache
def _task_class(dataset: str, task: str) -> Any:
    from culturebench.eval.run_report import task_class_of

    try:
        return task_class_of(dataset, task)
    except Exception:  # a dataset this install does not have: the run still shows
        return None


def _kind(dataset: str, task: str) -> str:
    cls = _task_class(dataset, task)
    if cls is None:
        return "text"
    from culturebench.eval.tasks.base import AnalysisTask

    if issubclass(cls, AnalysisTask):
        return "analysis"
    if cls.output_kind == "image":
        return "text-to-image"
    return "vision" if cls.needs_images else "text"


@cache
def _declared(dataset: str, task: str) -> tuple[tuple[str, ...], str | None, str | None]:
    """(sample score fields, prediction field, leaderboard metric) from the task's Hub
    declaration; empty where the task has none."""
    from culturebench.cards.hub_tasks import hub_tasks

    try:
        declared = hub_tasks(dataset).get(task)
    except Exception:  # no declarations for this dataset here
        return (), None, None
    if declared is None:
        return (), None, None
    rule = declared.result
    return tuple(rule.sample_score), rule.prediction, rule.metric


def _headline(metrics: Mapping[str, Any], metric: str | None) -> Figure | None:
    from culturebench.errors import CultureBenchError
    from culturebench.eval.hub_runs import leaderboard_value
    from culturebench.eval.run_report import headlines

    if metric:
        try:
            value = leaderboard_value(dict(metrics), metric)
            return Figure(metric, value.value, value.ci95, value.n, value.sem)
        except CultureBenchError:
            pass
    found = headlines(metrics)
    top = [h for h in found if h.group == "all"] or found
    if not top:
        return None
    h = top[0]
    return Figure(h.metric, float(h.value), h.ci95, h.n, h.sem)


def _figures(
    metrics: Mapping[str, Any], languages: Sequence[str]
) -> tuple[list[Figure], list[tuple[str, list[Figure]]]]:
    """The overall headlines and, for each group of the metrics, its headlines (the groups are
    the prompt languages for most tasks)."""
    from culturebench.eval.run_report import headlines

    overall: list[Figure] = []
    groups: dict[str, list[Figure]] = {}
    for h in headlines(metrics):
        figure = Figure(h.metric, float(h.value), h.ci95, h.n, h.sem)
        if h.group == "all":
            overall.append(figure)
        else:
            groups.setdefault(h.group, []).append(figure)
    order = [g for g in languages if g in groups] + sorted(g for g in groups if g not in languages)
    return overall, [(g, groups[g]) for g in order]


def confusions(metrics: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(group, block)`` of every confusion matrix (``labels``, ``columns``, ``matrix``)."""
    out = []

    def is_matrix(value: Any) -> bool:
        return isinstance(value, Mapping) and all(k in value for k in ("labels", "columns", "matrix"))

    for key, value in metrics.items():
        if is_matrix(value):
            out.append(("all", value))
        elif isinstance(value, Mapping):
            out += [(str(key), inner) for name, inner in value.items() if is_matrix(inner)]
    return out


def digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:10]
