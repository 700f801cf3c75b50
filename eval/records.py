"""The records a run folder holds, typed and versioned: what ``run.json`` (:class:`RunInfo`),
each line of ``samples.jsonl`` (:class:`Sample`) and ``results.json`` (:class:`Results`) may
contain, the fields every reader can rely on, and the one function that reads an older folder as
the current schema (:func:`upgrade`). docs/run-folder.md describes the schema for people.

They are ``TypedDict`` s, not classes with behaviour: the files are JSON, written and read by
other tools too (Inspect, lm-evaluation-harness, Every Eval Ever, people with ``jq``), and a
record read from disk is the same value the run loop wrote. Every key is optional to the type
checker (``total=False``) because records of older runs lack later keys; which keys a finished
run always has is checked where the file is read (:func:`~culturebench.eval.run_folder.read_run`,
:func:`~culturebench.eval.run_folder.read_results`).

Schema versions (``schema_version`` in ``run.json`` and ``results.json``):

1. (no ``schema_version`` key) the folders written before it: samples hold only their task's
   own fields, results name no headline, kind or model label.
2. every sample also holds the normalised :data:`RECORD_KEYS` (``score``, ``answer``,
   ``status``, ``group``, ``images``: :func:`record_fields`), and ``results.json`` names its
   ``headline``, ``kind``, ``model_label``, ``interval`` and whether its prompts held images.

A sample line holds, besides the keys below, the fields of its task: the row's metadata
(``Task.meta``) and its scores (``Task.score``). Each task says which of its fields are the
normalised ones through its :class:`SampleRule` (``Task.sample_rule``).

Who writes what: :mod:`~culturebench.eval.runner` (``eval run``), :mod:`~culturebench.eval.score`
(``eval score``) and :mod:`~culturebench.eval.merge` (``eval merge``) write all three;
:mod:`~culturebench.eval.run_folder` reads and checks them; :mod:`~culturebench.eval.run_report`,
:mod:`~culturebench.eval.compare`, the results site, :mod:`~culturebench.eval.paper_report`,
:mod:`~culturebench.eval.every_eval_ever` and :mod:`~culturebench.eval.hub_results` read them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

# ``run.json``'s and the provenance's ``dataset``: a pin written by
# :meth:`~culturebench.eval.dataset_ref.DatasetRef.to_pin` and read back by ``DatasetRef.from_pin``
Pin = dict[str, Any]


class ShardPart(TypedDict, total=False):
    """Which part of a run a folder holds (``--shard K/N``, :mod:`~culturebench.eval.shards`)."""

    index: int
    count: int


class RunInfo(TypedDict, total=False):
    """``run.json``: what a run is. Everything but ``coverage``, ``shard``, the model's
    ``versions``/``runtime`` and the location-only task options is its identity
    (:func:`~culturebench.eval.run_folder.identity`): a resume must match it."""

    # the dataset revision and task (task_identity)
    dataset: Pin
    schema_version: int  # :data:`SCHEMA_VERSION` (absent: version 1)
    task: str
    task_options: dict[str, Any]
    config: str | None
    split: str | None
    location_options: list[str]
    # eval run
    languages: list[str]
    limit: int | None
    limit_rows: str
    model: dict[str, Any]
    prompt_sha256: dict[str, str]
    requests: int
    requests_sha256: str
    seeds: list[int]
    sampling_per_seed: dict[str, dict[str, Any]]
    coverage: dict[str, Any]
    shard: ShardPart
    # an analysis task: the pinned inputs it read
    inputs: dict[str, Any]
    # eval score: the recorded outputs it scored
    mode: str
    generations: list[dict[str, Any]]
    layout: str | None
    harness: str  # the harness whose logs were scored (inspect, lm-eval)
    matcher: dict[str, Any]
    answer_reader: dict[str, Any]  # a model reading the answers (eval/answers/model_reader.py)


class Provenance(RunInfo, total=False):
    """``results.json``'s ``provenance``: the run's :class:`RunInfo` (less coverage and shard)
    and the code that produced it."""

    culturebench_git: str | None
    culturebench_version: str
    packages: dict[str, str]


class Sample(TypedDict, total=False):
    """One line of ``samples.jsonl`` (the keys every task's samples share; the task's own
    fields come beside them)."""

    id: str  # request id, ``@<seed>`` appended when the run has seeds
    run: str  # the run key (:func:`~culturebench.eval.run_folder.run_key`) of ``eval run``
    seed: int | None
    prompt: str
    n_images: int
    output: Any  # the model's text; anything else is flagged ``invalid_output``
    invalid_output: str  # the JSON type of an output that was not text
    scored_chars: int  # a very long output was scored on this many characters
    image_sha256: str  # text-to-image runs: the stored PNG's hash (``output`` is its path)
    row_id: str
    lang: str
    # the normalised fields (schema version 2, :func:`record_fields`)
    score: float | None  # the task's per-sample score
    answer: str | list[str] | None  # what was read from the output; None when nothing was
    status: str  # one of STATUSES
    group: str | None  # the sample's breakdown group (continent, country, category, ...)
    images: list[str]  # thumbnails of the prompt's images, relative to the run folder


class Headline(TypedDict, total=False):
    """``results.json``'s ``headline``: the one number a run is known by (the task's headline
    metric, top level, or pooled over its groups weighted by their sample counts)."""

    metric: str
    value: float | None
    ci95: list[float] | None
    sem: float | None
    n: int | None


class Results(TypedDict, total=False):
    """``results.json``: the metrics of a run and where they came from."""

    schema_version: int  # :data:`SCHEMA_VERSION` (absent: version 1)
    headline: Headline | None
    kind: str  # one of KINDS
    prompt_images: bool  # the prompts carried images (a vision-language run)
    model_label: str | None  # the model as pages and tables name it (None: no model)
    interval: str  # how the headline's 95% interval was made: one of INTERVALS
    coverage: dict[str, Any]
    provenance: Provenance
    skipped_rows: dict[str, int]
    samples: int
    invalid_outputs: int
    outputs_cut_for_scoring: int
    metrics: dict[str, Any]
    shard: str  # a part of a run: "K/N" (its metrics cover only that part)
    # eval score
    items: int
    seeds: list[int]
    duplicate_generations: int
    judge_missing: int
    judge_unparsed: int
    answer_reader: dict[str, Any]


class OutputCounts(TypedDict):
    """Outputs that were not text, and outputs scored in part (beside every run's metrics)."""

    invalid_outputs: int
    outputs_cut_for_scoring: int


# ------------------------------------------------------------------------- the schema, version 2
SCHEMA_VERSION = 2

# a sample's ``status``: its output was not text (``failed``); nothing could be read from it
# (``unparsed``: the task's parser or judge says so, or the reading is empty); it was scored on
# its first characters only (``cut``); it has a score (``scored``), or its task gives none
# (``unscored``: a generation scored later by a judge, an image, a description)
SCORED, CUT, UNPARSED, FAILED, UNSCORED = "scored", "cut", "unparsed", "failed", "unscored"
STATUSES = (SCORED, CUT, UNPARSED, FAILED, UNSCORED)
# ``results.json``'s ``kind``: a model's text answers read by the task (``generation``), an
# option letter read from them (``multiple-choice``), images drawn (``image``), or metrics
# computed from files with no model answering (``analysis``)
KINDS = ("generation", "multiple-choice", "image", "analysis")
# ``results.json``'s ``interval``: how the headline's 95% interval was made
# (:func:`culturebench.eval.metrics.mean_interval`'s methods, ``sem`` for a mean ± SEM, ``none``;
# ``unknown``: an analysis run's, or a version-1 folder's read without its samples)
INTERVALS = ("wilson", "wilson-bound", "bootstrap", "sem", "none", "unknown")
# the normalised keys every sample of schema version 2 holds (``images`` only when its prompt
# carried images)
RECORD_KEYS = ("score", "answer", "status", "group", "images")
THUMBS = "thumbs"  # the run folder's thumbnails of its prompts' images

# the conventional names of a task's fields: a task's rule falls back on them, and a version-1
# sample is read through them. The per-sample score (first that is a number or truth value) ...
SCORE_FIELDS = ("correct", "score", "accuracy", "jaccard")
# ... what the task read from the answer (first present: countries, an option letter, a rating)
ANSWER_FIELDS = ("predicted", "pred", "parsed_answer", "letter", "rating", "judge_answer")
# ... the row's reporting group (first present and not empty; a list is joined with ", ")
GROUP_FIELDS = (
    "continents", "gold_origins", "origins", "gold_countries", "question_type", "food_type", "category",
    "cuisine_category", "cuisine",
)  # fmt: skip


@dataclass(frozen=True)
class SampleRule:
    """Which of a task's sample fields are the normalised ones (``Task.sample_rule``).

    ``score``: the keys of the per-sample score, the first present that is a number or a truth
    value; with ``all_true``, every key must be present and the score is 1 when all are true,
    else 0 (ASH's "has ingredients and instructions"). ``answer``: the keys of what was read
    from the output (first present; an empty reading is ``unparsed`` unless
    ``empty_is_unparsed`` is false). ``group``: the keys of the breakdown group (first present
    and not empty). ``unparsed``: the keys whose value ``False`` says nothing was read (a
    parser's ``parsed``, a judge's ``judge_parsed``); ``unparsed_true``: those whose value
    ``True`` says so."""

    score: tuple[str, ...] = SCORE_FIELDS
    all_true: bool = False
    answer: tuple[str, ...] = ANSWER_FIELDS
    group: tuple[str, ...] = GROUP_FIELDS
    unparsed: tuple[str, ...] = ("parsed", "judge_parsed")
    unparsed_true: tuple[str, ...] = ("unparsed",)
    empty_is_unparsed: bool = True


CONVENTIONAL = SampleRule()  # the conventional names: version-1 samples, tasks that declare none


class RecordFields(TypedDict, total=False):
    """The normalised fields of one sample (:func:`record_fields`)."""

    score: float | None
    answer: str | list[str] | None
    status: str
    group: str | None


def record_fields(sample: Mapping[str, Any], rule: SampleRule = CONVENTIONAL) -> RecordFields:
    """The normalised ``score``, ``answer``, ``status`` and ``group`` of ``sample`` (its task's
    fields, read through ``rule``); a pure function of the sample, so a resumed, merged, cached
    or re-scored run writes the same bytes."""
    score = _score(sample, rule)
    answer_key = next((k for k in rule.answer if k in sample), None)
    answer = _answer(sample.get(answer_key)) if answer_key else None
    if "invalid_output" in sample:
        status = FAILED
    elif (
        any(sample.get(k) is False for k in rule.unparsed)
        or any(sample.get(k) is True for k in rule.unparsed_true)
        or (rule.empty_is_unparsed and answer_key is not None and answer in (None, "", []))
    ):
        status = UNPARSED
    elif "scored_chars" in sample:
        status = CUT
    else:
        status = SCORED if score is not None else UNSCORED
    return {
        "score": score,
        "answer": None if status in (UNPARSED, FAILED) else answer,
        "status": status,
        "group": _group(sample, rule.group),
    }


def _score(sample: Mapping[str, Any], rule: SampleRule) -> float | None:
    if rule.all_true:
        if not rule.score or any(k not in sample for k in rule.score):
            return None
        return 1.0 if all(sample[k] for k in rule.score) else 0.0
    for key in rule.score:
        value = sample.get(key)
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, int | float) and math.isfinite(value):
            return float(value)
    return None


def _answer(value: Any) -> str | list[str] | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [v if isinstance(v, str) else _text(v) for v in value]
    return value if isinstance(value, str) else _text(value)


def _text(value: Any) -> str:
    import json

    return (
        json.dumps(value, ensure_ascii=False, sort_keys=True)
        if isinstance(value, dict | list)
        else str(value)
    )


def _group(sample: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = sample.get(key)
        if isinstance(value, list):
            if value:
                return ", ".join(map(str, value))
        elif value not in (None, ""):
            return str(value)
    return None


@dataclass(frozen=True)
class Value:
    """A run's headline (leaderboard) value: the number, its sample count, the groups it pools
    (group -> (value, n)) and, for a single headline, its 95% CI or SEM."""

    value: float
    n: int | None
    groups: dict[str, tuple[float, int | None]]
    ci95: tuple[float, float] | None = None
    sem: float | None = None


def leaderboard_value(metrics: Mapping[str, Any], metric: str, *, where: str = "results.json") -> Value:
    """``metric`` of a run: the top-level headline, else the one group's, else the mean over
    the groups weighted by their sample counts (the metrics are means over samples, so this is
    the mean over all the run's samples). A metric the run lacks raises ``CultureBenchError``."""
    from culturebench.errors import CultureBenchError
    from culturebench.eval.metric_shapes import headlines

    found = [h for h in headlines(metrics) if h.metric == metric]
    top = [h for h in found if h.group == "all"]
    if top or len(found) == 1:
        h = (top or found)[0]
        groups = {} if h.group == "all" else {h.group: (h.value, h.n)}
        return Value(float(h.value), h.n, groups, h.ci95, h.sem)
    if not found:
        raise CultureBenchError(f"{where}: no value of the leaderboard metric {metric!r}")
    if any(h.n is None for h in found):
        raise CultureBenchError(f"{where}: {metric!r} has groups without a sample count; cannot pool them")
    n = sum(h.n or 0 for h in found)
    pooled = sum(h.value * (h.n or 0) for h in found) / n if n else 0.0
    return Value(pooled, n, {h.group: (h.value, h.n) for h in found})


def headline_of(metrics: Mapping[str, Any], metric: str | None) -> Headline | None:
    """The headline a run is known by: ``metric`` (the task's declared headline metric) as
    :func:`leaderboard_value` reads it, else the first top-level headline of the metrics, else
    the first headline of any group; None when the metrics hold no number."""
    from culturebench.errors import CultureBenchError
    from culturebench.eval.metric_shapes import headlines

    if metric:
        try:
            got = leaderboard_value(metrics, metric)
        except CultureBenchError:
            pass
        else:
            return _headline(metric, got.value, got.ci95, got.sem, got.n)
    found = headlines(metrics)
    top = [h for h in found if h.group == "all"] or found
    if not top:
        return None
    h = top[0]
    return _headline(h.metric, float(h.value), h.ci95, h.sem, h.n)


def _headline(
    metric: str, value: float, ci95: tuple[float, float] | None, sem: float | None, n: int | None
) -> Headline:
    return {
        "metric": metric,
        "value": value if math.isfinite(value) else None,
        "ci95": [ci95[0], ci95[1]] if ci95 is not None else None,
        "sem": sem,
        "n": int(n) if n is not None else None,
    }


def interval_kind(headline: Headline | None, samples: Sequence[Mapping[str, Any]]) -> str:
    """How the headline's interval was made (one of :data:`INTERVALS`), by the rules of
    :func:`culturebench.eval.metrics.mean_interval` applied to the samples' scores: ``wilson``
    for scores of 0 and 1, else ``bootstrap`` at enough units (rows, per seed), else
    ``wilson-bound`` for scores in [0, 1]; ``sem`` for a mean ± SEM, ``none`` without one."""
    from culturebench.eval.metrics import BOOTSTRAP, MIN_BOOTSTRAP_UNITS, WILSON, WILSON_BOUND

    if not headline or headline.get("ci95") is None:
        return "sem" if headline and headline.get("sem") is not None else "none"
    if not samples:  # an analysis run: its task made the interval from its own inputs
        return "unknown"
    scores = [s["score"] for s in samples if isinstance(s.get("score"), int | float)]
    if scores and all(v in (0.0, 1.0) for v in scores):
        return WILSON
    units = {(s.get("row_id", s.get("id")), s.get("seed")) for s in samples}
    if len(units) >= MIN_BOOTSTRAP_UNITS:
        return BOOTSTRAP
    return WILSON_BOUND


def model_name(prov: Mapping[str, Any]) -> str | None:
    """A run's model as a short label when no paper names it: the last part of its Hub id or
    path (recorded outputs scored by ``eval score``: their layout); None without a model."""
    from culturebench.eval.model_id import ModelId

    if not prov.get("model"):
        return None
    return ModelId.from_provenance(prov).name


# ------------------------------------------------------------------- reading older versions
def version_of(record: Mapping[str, Any]) -> int:
    """The schema version a ``run.json`` or ``results.json`` declares (1: none declared)."""
    version = record.get("schema_version")
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def upgrade(
    run: Mapping[str, Any] | None,
    results: Mapping[str, Any] | None,
    samples: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[RunInfo | None, Results | None, list[Sample]]:
    """A run folder's records read as the current schema: each record is brought from the
    version it was written in to the next (:data:`STEPS`: 1 -> 2 -> ...) until it is at
    :data:`SCHEMA_VERSION`. The one place an older folder is read; every reader goes through
    it. A sample's own version is its folder's, except that a sample without a ``status`` is
    of version 1 (a run begun by an older culturebench and resumed by this one). A record of a
    later version than this code knows raises ``CultureBenchError`` (update culturebench).
    Nothing is changed on disk; the records given are not modified."""
    from culturebench.errors import CultureBenchError

    version = min(version_of(r) for r in (run, results) if r is not None) if (run or results) else 1
    if version > SCHEMA_VERSION:
        raise CultureBenchError(
            f"a run folder of schema version {version}; this culturebench reads up to version "
            f"{SCHEMA_VERSION} (update culturebench)"
        )
    state = _Folder(
        dict(run) if run is not None else None,
        dict(results) if results is not None else None,
        [dict(s) for s in samples or ()],
        samples is not None,
    )
    for step in range(version, SCHEMA_VERSION):
        STEPS[step](state)
    # samples of an older version in a newer folder (a resumed run) are brought up on their own
    if any("status" not in s for s in state.samples):
        state.samples = [s if "status" in s else _sample_1_to_2(s) for s in state.samples]
    return (
        cast(RunInfo | None, state.run),
        cast(Results | None, state.results),
        cast(list[Sample], state.samples),
    )


@dataclass
class _Folder:
    run: dict[str, Any] | None
    results: dict[str, Any] | None
    samples: list[dict[str, Any]]
    samples_given: bool


def _sample_1_to_2(sample: dict[str, Any]) -> dict[str, Any]:
    return {**sample, **record_fields(sample, CONVENTIONAL)}


def _1_to_2(folder: _Folder) -> None:
    """Version 1 -> 2: the normalised sample fields read through the conventional field names
    (:data:`CONVENTIONAL`; no thumbnails: version 1 kept none); the results' headline (version 1
    does not name the task's: the first of :data:`SCORE_FIELDS` among its metrics, pooled over
    its groups, else its first headline), kind (from what the run recorded), model label (the
    model's short name: a paper's name for it is not known without the paper), interval and
    prompt images."""
    folder.samples = [_sample_1_to_2(s) for s in folder.samples]
    if folder.run is not None:
        folder.run["schema_version"] = 2
    if folder.results is None:
        return
    results = folder.results
    prov = results.get("provenance") or {}
    metrics = results.get("metrics") or {}
    headline = None
    if isinstance(metrics, Mapping):
        from culturebench.eval.metric_shapes import headlines

        named = {h.metric for h in headlines(metrics)}
        headline = headline_of(metrics, next((m for m in SCORE_FIELDS if m in named), None))
    parsers = (results.get("coverage") or {}).get("parsers_used") or {}
    if prov.get("inputs") is not None and not prov.get("model"):
        kind = "analysis"
    elif any("image_sha256" in s for s in folder.samples):
        kind = "image"
    elif isinstance(parsers, list | Mapping) and "letters" in parsers:
        kind = "multiple-choice"
    else:
        kind = "generation"
    results.update(
        schema_version=2,
        headline=headline,
        kind=kind,
        model_label=model_name(prov) if isinstance(prov, Mapping) else None,
        interval=interval_kind(headline, folder.samples) if folder.samples_given else "unknown",
        prompt_images=any((s.get("n_images") or 0) > 0 for s in folder.samples),
    )


# version N -> N + 1, for every N below SCHEMA_VERSION
STEPS: dict[int, Callable[[_Folder], None]] = {1: _1_to_2}
