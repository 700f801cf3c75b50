"""Task interface and prompt sets (templates live in ``datasets/<name>/prompts.yaml``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import yaml

from culturebench.eval.backends.base import Request
from culturebench.hashing import sha256_text
from culturebench.spec import load_spec


def row_images(row: dict[str, Any]) -> tuple[bytes, ...]:
    """Encoded bytes of a row's images that have been fetched (``image`` not null), in order."""
    out = []
    for image in row.get("images") or []:
        data = image.get("image")
        if isinstance(data, dict) and data.get("bytes"):
            out.append(data["bytes"])
    return tuple(out)


def load_prompts(dataset: str) -> dict[str, Any]:
    """The parsed ``datasets/<dataset>/prompts.yaml`` (task templates and other prompts)."""
    path = load_spec(dataset).folder / "prompts.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class TaskRequest:
    """A backend request plus what scoring needs (row id, language, gold answer, ...)."""

    request: Request
    meta: dict[str, Any] = field(default_factory=dict)


class Task(ABC):
    """One evaluation task of one dataset."""

    dataset: ClassVar[str]
    name: ClassVar[str]
    config: ClassVar[str]
    split: ClassVar[str] = "test"
    needs_images: ClassVar[bool] = False
    languages: ClassVar[tuple[str, ...]] = ()
    # "text": a text backend answers each request; "image": a text-to-image backend draws
    # one image per request (stored as PNG in the run folder, the output is its path).
    output_kind: ClassVar[str] = "text"
    # False for tasks whose inputs are another run or published files, not dataset rows
    # (they name their dataset revision through :meth:`source_dataset`).
    needs_dataset: ClassVar[bool] = True
    # options that only say where an input lives while another option pins its content by
    # sha256: recorded in run.json, not part of the run's identity (a moved folder resumes)
    location_options: ClassVar[tuple[str, ...]] = ()

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
                f"(its options: {known})"
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

    def source_dataset(self) -> dict[str, Any] | None:
        """For a task with ``needs_dataset`` False: the dataset revision its inputs were made
        from (a ``DatasetRef`` as a dict, e.g. from the input run's ``run.json``), or None
        when the inputs are published files outside any release."""
        return None

    @abstractmethod
    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        """Requests for ``rows`` in ``langs`` (fixed order) and counts of skipped rows by reason."""

    @abstractmethod
    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        """Per-sample scores for one output (stored in the sample line)."""

    def unusable(self, samples: Sequence[dict[str, Any]]) -> str | None:
        """Why a finished run's samples give no result at all (e.g. a judge whose every answer
        is unparseable), or None. The run then fails after writing its files, so the outputs
        can be inspected; a model answering wrongly is a result, not this."""
        return None

    @abstractmethod
    def aggregate(self, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Task metrics over all samples."""


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

    def aggregate(self, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
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
