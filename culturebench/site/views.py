"""What the site's pages show of a run, read once from its folder and nothing else: its
dataset, task, model label, languages and kind, its headline value with the 95% interval and n
(all as ``results.json`` names them: :mod:`culturebench.eval.records`, an older folder read
through :func:`~culturebench.eval.records.upgrade`), its metrics per language, the breakdowns
that become maps or bars, and a confusion matrix where the task reports one. Nothing here
names a dataset: the shapes of the metrics decide (``culturebench.eval.run_report``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.records import Results, RunInfo


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
    model_key: tuple[Any, ...] = ()  # what makes two runs one model (model_id.ModelId.key)
    model_detail: str = ""  # what tells two models of one name apart
    by_language: list[tuple[str, list[Figure]]] = field(default_factory=list)
    overall: list[Figure] = field(default_factory=list)
    # the lines of samples.jsonl: (line number, the sample as the current schema, or None for a
    # line that is not a JSON object)
    lines: list[tuple[int, dict[str, Any] | None]] = field(default_factory=list)
    schema_version: int = 1  # the version the folder was written in

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
    """The view of one finished run folder, its records read as the current schema (errors
    name the folder)."""
    from culturebench.eval.model_id import ModelId
    from culturebench.eval.records import upgrade, version_of
    from culturebench.eval.run_folder import read_results, read_run, run_key

    raw_run, raw_results = read_run(folder), read_results(folder)
    lines = read_sample_lines(folder / "samples.jsonl")
    run, results, samples = upgrade(raw_run, raw_results, [s for _, s in lines if s is not None])
    if run is None or results is None:  # never: both were given
        raise CultureBenchError(f"{folder}: not a run folder")
    upgraded = iter(samples)
    lines = [(number, None if sample is None else dict(next(upgraded))) for number, sample in lines]
    prov = results.get("provenance") or {}
    dataset = str((prov.get("dataset") or run.get("dataset") or {}).get("dataset"))
    task = str(prov.get("task") or run.get("task"))
    identity = ModelId.from_provenance({"model": run.get("model"), **prov})
    model = str(results.get("model_label") or identity.name)
    given = prov.get("languages") or run.get("languages") or []
    languages = [str(lang) for lang in (given if isinstance(given, list) else [given])]
    metrics = results.get("metrics") or {}
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
        kind=_kind(results),
        model_key=identity.key,
        model_detail=identity.detail,
        headline=_headline(results.get("headline")),
        lines=lines,
        schema_version=version_of(raw_results),
    )
    view.overall, view.by_language = _figures(metrics, languages)
    return view


def read_sample_lines(path: Path) -> list[tuple[int, dict[str, Any] | None]]:
    """``(line number, sample)`` of every non-blank line of a ``samples.jsonl``, in file order
    (lines split at ``\\n`` only); a line that is not a JSON object is kept as None, so the
    pages count it, never hide it."""
    import json

    out: list[tuple[int, dict[str, Any] | None]] = []
    if not path.is_file():
        return out
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except (ValueError, RecursionError):
            sample = None
        out.append((number, sample if isinstance(sample, dict) else None))
    return out


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


def _kind(results: Mapping[str, Any]) -> str:
    """What the pages call a run's kind: ``analysis``, ``text-to-image``, ``vision`` (its prompts
    carried images) or ``text``."""
    kind = results.get("kind")
    if kind == "analysis":
        return "analysis"
    if kind == "image":
        return "text-to-image"
    return "vision" if results.get("prompt_images") else "text"


def _headline(headline: Any) -> Figure | None:
    """``results.json``'s headline as a figure (None when the run has none)."""
    if not isinstance(headline, Mapping) or not isinstance(headline.get("value"), int | float):
        return None
    ci = headline.get("ci95")
    interval = None
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, int | float) for x in ci):
        interval = (float(ci[0]), float(ci[1]))
    n, sem = headline.get("n"), headline.get("sem")
    return Figure(
        str(headline.get("metric")),
        float(headline["value"]),
        interval,
        n if isinstance(n, int) else None,
        float(sem) if isinstance(sem, int | float) else None,
    )


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
