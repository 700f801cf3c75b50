"""The task interface, the request ids and the prompt sets (templates live in
``datasets/<name>/prompts.yaml``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from culturebench.eval.backends.base import Request
from culturebench.eval.records import CONVENTIONAL, SampleRule, record_fields
from culturebench.file_memo import FileMemo
from culturebench.hashing import sha256_text
from culturebench.registry import DatasetName
from culturebench.yamlio import load_yaml

# The longest answer scored: a model that never stops (or a recorded 40 MB cell) is scored on
# its first MAX_SCORED_CHARS characters, and the sample says so (``scored_chars``). The
# papers' answers are at most a few hundred tokens (200 new tokens in BORSCH and WWD).
MAX_SCORED_CHARS = 20_000


def row_images(row: dict[str, Any]) -> tuple[bytes, ...]:
    """Encoded bytes of a row's images that have been fetched (``image`` not null), in order."""
    out = []
    for image in row.get("images") or []:
        data = image.get("image")
        if isinstance(data, dict) and data.get("bytes"):
            out.append(data["bytes"])
    return tuple(out)


def load_prompts(dataset: str) -> dict[str, Any]:
    """The parsed ``datasets/<dataset>/prompts.yaml`` (task templates and other prompts), read
    once per process while the file is unchanged (every task of a dataset shares it; callers
    must not modify it)."""
    from culturebench import registry

    return _PROMPTS.get(registry.get(dataset).folder / "prompts.yaml", load_yaml)


_PROMPTS: FileMemo[dict[str, Any]] = FileMemo(limit=16)  # one per dataset


def request_id(row_id: str, lang: str, template: int | str) -> str:
    """The id of one request: ``<row>:<lang>:<template>`` (the template's index in the task's
    prompt list). ``eval run`` and ``eval score`` both key samples by it."""
    return f"{row_id}:{lang}:{template}"


def job_id(request: str, seed: int | None) -> str:
    """The id of one generation: the request id, ``@<seed>`` when a seed was set."""
    return request if seed is None else f"{request}@{seed}"


def split_job_id(job: str) -> tuple[str, str]:
    """``(request id, seed text)`` of a generation id (seed text empty when it has none)."""
    request, _, seed = job.partition("@")
    return request, seed


@dataclass(frozen=True)
class TaskRequest:
    """A backend request plus what scoring needs (row id, language, gold answer, ...)."""

    request: Request
    meta: dict[str, Any] = field(default_factory=dict)


# The row fields datasets report by, tried in order when a task names no ``limit_group``:
# WWD's continents, BORSCH's origins (countries), RuBIN's category, CulinaryASH's cuisine
# category, FoodieQA's question type.
GROUP_FIELDS = ("continents", "origins", "category", "cuisine_category", "question_type")


class Task(ABC):
    """One evaluation task of one dataset: its prompts and its scoring.

    A task that asks one question per row, language and template (the usual case) declares
    its class attributes (``name``, ``config``, ``languages``, ``needs_images``) and fills the
    templates of ``prompts.yaml`` through :meth:`fields`; :meth:`meta` adds what scoring
    needs; :meth:`score` and :meth:`aggregate` turn outputs into metrics. Its ``dataset`` is
    the folder it lives in. Everything the runner or the report calls is declared here: the
    request loop (:meth:`build`), an optional LLM matcher (:meth:`judge_prompts`,
    :meth:`apply_judgments`), report sections (:meth:`report_sections`) and the options that
    only locate an input (``location_options``)."""

    dataset: ClassVar[str] = DatasetName()  # type: ignore[assignment]  # its dataset folder's name
    name: ClassVar[str]  # lowercase words joined by hyphens
    aliases: ClassVar[tuple[str, ...]] = ()  # former names, still accepted (CHANGELOG)
    # the release config and the languages it asks in: set on the class, or per instance by a task
    # whose options choose them (a config option)
    config: str
    split: ClassVar[str] = "test"
    needs_images: ClassVar[bool] = False
    languages: tuple[str, ...] = ()
    # "text": a text backend answers each request; "image": a text-to-image backend draws
    # one image per request (stored as PNG in the run folder, the output is its path).
    output_kind: ClassVar[str] = "text"
    # False for tasks whose inputs are another run or published files, not dataset rows
    # (they name their dataset revision through :meth:`source_dataset`).
    needs_dataset: ClassVar[bool] = True
    # options that only say where an input lives while another option pins its content by
    # sha256: recorded in run.json, not part of the run's identity (a moved folder resumes)
    location_options: ClassVar[tuple[str, ...]] = ()
    # False for a text task whose requests are not the dataset's rows asked of the model under
    # test (a judge of another run's outputs): Inspect and lm-eval do not get it
    in_harnesses: ClassVar[bool] = True
    # the answer parsers the task's scores rest on, by the names of
    # :data:`culturebench.eval.coverage.PARSERS` ("country", "letters", "ratings"); results.json
    # records their versions under coverage.parsers_used
    parsers: ClassVar[tuple[str, ...]] = ()
    # the row field ``--limit N`` spreads its rows over (its reporting groups: continent,
    # country, category; a list field by its first value); None: the first of
    # :data:`GROUP_FIELDS` the rows have
    limit_group: ClassVar[str | None] = None
    # how the task's sample fields map to the run folder's normalised ones (``score``,
    # ``answer``, ``status``, ``group``: :mod:`culturebench.eval.records`); None: read from the
    # task's ``hub.result`` declaration in ``prompts.yaml`` where it has one (its
    # ``sample_score`` and ``prediction``), before the conventional names (:meth:`sample_rule`)
    record_rule: ClassVar[SampleRule | None] = None
    # the results.json metric a run of this task is known by (its ``headline``); None: the
    # ``hub.result.metric`` declared in ``prompts.yaml``, else the metrics' first headline
    headline_metric: ClassVar[str | None] = None

    def __init__(self, **options: Any) -> None:
        """``options``: task-specific settings (e.g. the ASH judge's ``generations`` folder);
        recorded in the run's provenance. An option no ``__init__`` of the task names is a
        :class:`~culturebench.errors.UsageError` (never accepted and recorded unused)."""
        unknown = sorted(set(options) - self.accepted_options())
        if unknown:
            from culturebench.errors import UsageError

            known = ", ".join(sorted(self.accepted_options())) or "none"
            raise UsageError(
                f"--option {unknown[0]}: {self.dataset}/{self.name} has no option {unknown[0]!r} "
                f"(its options: {known}){_engine_hint(unknown[0])}"
            )
        self.task_options = options

    @classmethod
    def accepted_options(cls) -> set[str]:
        """The option names this task takes: the named parameters of its ``__init__`` chain."""
        import inspect

        names: set[str] = set()
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None or klass is Task or klass is object:
                continue
            for param in inspect.signature(init).parameters.values():
                if param.name != "self" and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                    names.add(param.name)
        return names

    @cached_property
    def prompt_file(self) -> dict[str, Any]:
        return load_prompts(self.dataset)

    def templates(self, lang: str) -> list[str]:
        try:
            return list(self.prompt_file["tasks"][self.name][lang])
        except KeyError:
            raise KeyError(f"no {lang!r} prompts for task {self.name!r} of {self.dataset}") from None

    def prompt_hashes(self, langs: Sequence[str]) -> dict[str, str]:
        """sha256 of every template used, keyed ``<task>/<lang>/<index>``."""
        return {
            f"{self.name}/{lang}/{i}": sha256_text(t)
            for lang in langs
            for i, t in enumerate(self.templates(lang))
        }

    def describe(self) -> str:
        return str(self.prompt_file["tasks"][self.name].get("description", ""))

    def group_field(self, columns: Sequence[str]) -> str | None:
        """The row field ``--limit`` spreads rows over: :attr:`limit_group`, else the first of
        :data:`GROUP_FIELDS` among ``columns`` (the split's fields), else None."""
        if self.limit_group:
            return self.limit_group
        return next((name for name in GROUP_FIELDS if name in columns), None)

    def source_dataset(self) -> dict[str, Any] | None:
        """For a task with ``needs_dataset`` False: the dataset revision its inputs were made
        from (a ``DatasetRef`` as a dict, e.g. from the input run's ``run.json``), or None
        when the inputs are published files outside any release."""
        return None

    # --------------------------------------------------------------- the request loop
    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        """Requests for ``rows`` x ``langs`` x the language's templates, in that order, with
        ids :func:`request_id`, and counts of skipped rows by reason. A task shapes its prompts
        with the hooks :meth:`images`, :meth:`fields`, :meth:`meta` and :meth:`render`; it
        overrides ``build`` only when its requests are not one per row, language and template."""
        requests: list[TaskRequest] = []
        skipped: dict[str, int] = defaultdict(int)
        for row in rows:
            images = self.images(row, skipped)
            if images is None:
                continue
            for lang in langs:
                fields = self.fields(row, lang)
                if fields is None:
                    skipped[f"no_{lang}_text"] += 1
                    continue
                extra = self.meta(row, lang)
                for index, template in enumerate(self.templates(lang)):
                    meta = {"row_id": row["id"], "lang": lang, "prompt_index": index, **extra}
                    prompt = self.render(template, fields, lang)
                    requests.append(
                        TaskRequest(Request(request_id(row["id"], lang, index), prompt, images), meta)
                    )
        return requests, dict(skipped)

    def images(self, row: dict[str, Any], skipped: dict[str, int]) -> tuple[bytes, ...] | None:
        """The images sent with every prompt of ``row``: none unless the task ``needs_images``;
        None skips the row (counting the reason in ``skipped``)."""
        if not self.needs_images:
            return ()
        images = row_images(row)
        if not images:
            skipped["no image bytes"] += 1
            return None
        return images

    def fields(self, row: dict[str, Any], lang: str) -> dict[str, Any] | None:
        """The values the ``lang`` templates are filled with (default: the row's columns);
        None when the row cannot be asked in ``lang`` (skipped, counted ``no_<lang>_text``)."""
        return row

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        """What scoring needs of ``row`` besides its id, language and template index (the gold
        answer, groups for the breakdowns); stored in every sample."""
        return {}

    def render(self, template: str, fields: dict[str, Any], lang: str) -> str:
        """One prompt: ``template`` filled with ``fields``."""
        return template.format(**fields)

    # --------------------------------------------------------- the run folder's schema
    def _hub_result(self) -> Mapping[str, Any]:
        """The task's ``hub.result`` declaration in ``prompts.yaml`` (empty when it has none)."""
        try:
            hub = (self.prompt_file.get("tasks") or {}).get(self.name, {}).get("hub")
        except (AttributeError, KeyError, OSError):
            return {}
        result = hub.get("result") if isinstance(hub, Mapping) else None
        return result if isinstance(result, Mapping) else {}

    def sample_rule(self) -> SampleRule:
        """How this task's samples give the normalised fields: :attr:`record_rule`, else its
        ``hub.result`` declaration's per-sample score (``sample_score``, by default its
        ``metric``: several keys score 1 when all are true) and answer (``prediction``), tried
        before the conventional names (:data:`~culturebench.eval.records.CONVENTIONAL`)."""
        if self.record_rule is not None:
            return self.record_rule
        declared = self._hub_result()
        score = declared.get("sample_score", declared.get("metric"))
        keys = tuple(score) if isinstance(score, list) else (score,) if isinstance(score, str) else ()
        prediction = declared.get("prediction")
        answer = (prediction,) if isinstance(prediction, str) else ()
        if len(keys) > 1:
            return replace(
                CONVENTIONAL, score=keys, all_true=True, answer=_first(answer, CONVENTIONAL.answer)
            )
        return replace(
            CONVENTIONAL,
            score=_first(keys, CONVENTIONAL.score),
            answer=_first(answer, CONVENTIONAL.answer),
        )

    def with_record_fields(self, sample: Mapping[str, Any]) -> dict[str, Any]:
        """``sample`` with its normalised fields (:func:`~culturebench.eval.records.record_fields`
        through :meth:`sample_rule`), computed anew: a re-scored sample (a judge's) gets its
        new score and status."""
        return {**sample, **record_fields(sample, self.sample_rule())}

    def headline(self) -> str | None:
        """The metric a run of this task is known by (:attr:`headline_metric`, else the
        ``hub.result.metric`` its ``prompts.yaml`` declares); None: the metrics' first headline."""
        if self.headline_metric:
            return self.headline_metric
        metric = self._hub_result().get("metric")
        return metric if isinstance(metric, str) else None

    def run_kind(self) -> str:
        """``results.json``'s ``kind`` (:data:`~culturebench.eval.records.KINDS`)."""
        if isinstance(self, AnalysisTask):
            return "analysis"
        if self.output_kind == "image":
            return "image"
        return "multiple-choice" if "letters" in self.parsers else "generation"

    # ------------------------------------------------------------------ scoring hooks
    @abstractmethod
    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        """Per-sample scores for one output (stored in the sample line)."""

    def scored_sample(self, item: TaskRequest, output: Any) -> dict[str, Any]:
        """One sample: the request, the output and :meth:`score` of it. An output that is not
        text (a recorded ``["A"]`` or ``12``) is the model's failure: scored as the empty
        answer and flagged ``invalid_output`` (its JSON type), never read through ``str()``. A
        very long answer is scored on its first :data:`MAX_SCORED_CHARS` characters (flagged
        ``scored_chars``); the whole output is kept. The sample holds the normalised fields of
        the run folder's schema (:meth:`with_record_fields`)."""
        flags: dict[str, Any] = {}
        text = output
        if not isinstance(output, str):
            flags["invalid_output"] = _json_type(output)
            text = ""
        elif len(output) > MAX_SCORED_CHARS:
            flags["scored_chars"] = MAX_SCORED_CHARS
            text = output[:MAX_SCORED_CHARS]
        sample = {
            "id": item.request.id,
            **item.meta,
            "prompt": item.request.prompt,
            "n_images": len(item.request.images),
            "output": output,
            **flags,
            **self.score(item.meta, text),
        }
        return self.with_record_fields(sample)

    def unusable(self, samples: Sequence[Mapping[str, Any]]) -> str | None:
        """Why a finished run's samples give no result at all (e.g. a judge whose every answer
        is unparseable), or None. The run then fails after writing its files, so the outputs
        can be inspected; a model answering wrongly is a result, not this."""
        return None

    @abstractmethod
    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Task metrics over all samples."""

    # ------------------------------------------------------- optional: an LLM matcher
    #: the names of the judge's answers per sample (the first items of :meth:`judge_prompts`);
    #: ``--matcher recorded`` reads recorded answers under these names
    judge_names: ClassVar[tuple[str, ...]] = ()
    #: the sample field a judge's answers score (set by the tasks that :meth:`supports_judge`)
    metric: ClassVar[str | None] = None

    def judge_prompts(self, sample: dict[str, Any]) -> list[tuple[str, str]]:
        """``(name, prompt)`` pairs a judge model answers for one scored sample
        (``--matcher llm``); only tasks that :meth:`supports_judge` define it."""
        from culturebench.errors import UsageError

        raise UsageError(f"task {self.name!r} has no LLM matcher (--matcher llm)")

    def apply_judgments(self, sample: dict[str, Any], answers: dict[str, str]) -> dict[str, Any]:
        """``sample`` re-scored from the judge's ``answers`` (by prompt name); a sample whose
        answers do not parse sets ``judge_parsed`` false and has no score."""
        raise NotImplementedError

    @classmethod
    def supports_judge(cls) -> bool:
        """Whether the task defines an LLM matcher (overrides :meth:`judge_prompts`)."""
        return cls.judge_prompts is not Task.judge_prompts

    # --------------------------------------------------------------- report sections
    @classmethod
    def report_sections(cls, results: dict[str, Any], folder: Path, rel: str) -> list[str]:
        """Markdown lines the run report adds after the generic tables of one result of this
        task (plots written into ``folder``, linked as ``rel/<file>``); none by default."""
        return []


def _first(declared: tuple[str, ...], conventional: tuple[str, ...]) -> tuple[str, ...]:
    """``declared`` keys, then the ``conventional`` ones it does not name."""
    return (*declared, *(k for k in conventional if k not in declared))


def _engine_hint(key: str) -> str:
    """``; ... use --model-arg`` when ``key`` is an engine option (a task never reads those)."""
    from culturebench.eval.backends import backend_names, backend_options

    owners = [name for name in backend_names() if any(o.name == key for o in backend_options(name))]
    return (
        f"; {key} is an option of the {'/'.join(owners)} backend: give --model-arg {key}=..."
        if owners
        else ""
    )


def _json_type(value: Any) -> str:
    names = {list: "array", dict: "object", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


class AnalysisTask(Task):
    """A task computed from files (embeddings, images of a generation run, published
    material) instead of by prompting a generation backend: ``eval run`` calls
    :meth:`analyse` once and records its metrics with the same provenance and report as any
    run. A model it needs (e.g. CLIP to embed images) comes in the ``model`` option."""

    output_kind: ClassVar[str] = "none"  # no backend generates for it

    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        return [], {}

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return {}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {}

    def prompt_hashes(self, langs: Sequence[str]) -> dict[str, str]:
        return {}

    @abstractmethod
    def inputs(self) -> dict[str, Any]:
        """Provenance of the inputs (files with sha256, models with their identity)."""

    @abstractmethod
    def analyse(self, out: Path, rows: Sequence[dict[str, Any]], progress: Any = None) -> dict[str, Any]:
        """Compute the metrics (writing any tables or plots into ``out``) and return them;
        ``rows`` are the dataset rows when the task ``needs_dataset`` (else empty)."""
