"""What every harness route shares: which tasks a harness can run, their names there, the
paper's generation settings, and the requests of a pinned release."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.dataset_ref import DatasetRef, load_rows, resolve_dataset
from culturebench.eval.records import RECORD_KEYS
from culturebench.eval.tasks import AnalysisTask, Task, TaskRequest, get_task
from culturebench.eval.tasks.base import job_id

PACKAGE = "culturebench"  # the Inspect entry point's name and the lm-eval task prefix


def harness_tasks(dataset: str) -> list[type[Task]]:
    """The tasks of ``dataset`` a harness can run: a model answers in text about dataset rows
    (text and VQA tasks); not a judge of another run's outputs (``Task.in_harnesses``), an
    analysis or a text-to-image task."""
    from culturebench.eval.tasks import registry

    out = []
    for cls in registry().get(dataset, {}).values():
        text = cls.output_kind == "text" and not issubclass(cls, AnalysisTask)
        if cls.in_harnesses and text and cls.needs_dataset:
            out.append(cls)
    return out


def harness_name(dataset: str, task: str) -> str:
    """``<dataset>_<task>`` with underscores (``borsch_origin_qa``): a valid Python and
    Inspect name; Inspect shows it as ``culturebench/borsch_origin_qa``, lm-eval as
    ``culturebench_borsch_origin_qa``."""
    return f"{dataset}_{task}".replace("-", "_")


def parse_harness_name(name: str) -> tuple[str, str]:
    """``(dataset, task)`` of a harness task name in any of its forms
    (``culturebench/borsch_origin_qa``, ``culturebench_borsch_origin_qa``, ``borsch_origin_qa``);
    :class:`UsageError` when it names none of ours."""
    from culturebench import registry

    short = name.split("/")[-1]
    if short.startswith(PACKAGE + "_"):
        short = short[len(PACKAGE) + 1 :]
    for dataset in registry.datasets():
        for cls in harness_tasks(dataset):
            if harness_name(dataset, cls.name) == short:
                return dataset, cls.name
    raise UsageError(f"{name!r} is not a culturebench harness task")


@dataclass(frozen=True)
class PaperSettings:
    """The generation settings the paper used for a task (its ``grid:`` cell)."""

    max_new_tokens: int
    temperature: float
    seeds: tuple[int, ...] | None
    source: str  # where they come from (``paper.yaml`` grid cell)

    def describe(self) -> str:
        seeds = f", seeds {list(self.seeds)}" if self.seeds else ""
        return f"max_new_tokens {self.max_new_tokens}, temperature {self.temperature}{seeds}"


def paper_settings(dataset: str, task: str) -> PaperSettings:
    """The decoding of the first ``grid:`` cell that runs ``task`` with no options (the
    grid's default sampling when no cell runs it): what ``eval reproduce`` uses."""
    from culturebench.eval.grid import GridError, load_grid

    try:
        grid = load_grid(dataset)
    except GridError:
        return PaperSettings(200, 0.0, None, "culturebench's default (the dataset has no grid)")
    cells = [c for c in grid.cells if c.task == task and not c.options] or [
        c for c in grid.cells if c.task == task
    ]
    if cells:
        cell = cells[0]
        return PaperSettings(
            cell.max_new_tokens, cell.temperature, cell.seeds, f"{grid.path.name} grid cell {cell.name!r}"
        )
    first = grid.cells[0]
    return PaperSettings(first.max_new_tokens, first.temperature, None, f"{grid.path.name} grid default")


@dataclass
class HarnessRequests:
    """A task's requests from a pinned release, as a harness runs them."""

    dataset: str
    task: Task
    ref: DatasetRef
    langs: list[str]
    requests: list[TaskRequest]
    skipped: dict[str, int]
    settings: PaperSettings

    @property
    def pin(self) -> dict[str, Any]:
        """The dataset revision the requests come from (:meth:`DatasetRef.to_pin`)."""
        return self.ref.to_pin()


def harness_requests(
    dataset: str,
    task_name: str,
    *,
    revision: str | None = None,
    local: str | None = None,
    repo: str | None = None,
    langs: Sequence[str] | None = None,
    pin: dict[str, Any] | None = None,
) -> HarnessRequests:
    """The requests of ``dataset``/``task_name`` (the same ids and prompts as ``eval run``)
    from a release folder (``local``), a Hub revision (pinned to its commit) or an exact
    ``pin`` (a ``DatasetRef`` dict written by ``export lm-eval``, checked: a local release must
    still have the same manifest sha256)."""
    task = get_task(dataset, task_name)
    chosen = list(langs or task.languages)
    unknown = [lang for lang in chosen if lang not in task.languages]
    if unknown:
        raise UsageError(
            f"{dataset}/{task.name} has no prompts in {unknown[0]!r} (languages: {', '.join(task.languages)})"
        )
    ref = pinned(dataset, pin) if pin else resolve_dataset(dataset, revision=revision, local=local, repo=repo)
    rows = load_rows(ref, task.config, task.split, None)
    requests, skipped = task.build(rows, chosen)
    if not requests:
        raise CultureBenchError(f"{dataset}/{task.name}: no requests from {ref.location} ({len(rows)} rows)")
    return HarnessRequests(dataset, task, ref, chosen, requests, skipped, paper_settings(dataset, task.name))


def pinned(dataset: str, pin: dict[str, Any]) -> DatasetRef:
    """The exact release a harness log or an exported task names (``DatasetRef`` as a dict);
    a local release whose manifest changed since is an error."""
    from culturebench.hashing import sha256_file

    ref = DatasetRef.from_pin(pin, where="the recorded release reference")
    if ref.dataset != dataset:
        raise CultureBenchError(f"pinned release is of {ref.dataset!r}, not {dataset!r}")
    if ref.source == "local":
        from pathlib import Path

        manifest = Path(ref.location) / "manifest.json"
        if not manifest.is_file():
            raise CultureBenchError(f"pinned release folder {ref.location} is gone (no manifest.json)")
        if sha256_file(manifest) != ref.manifest_sha256:
            raise CultureBenchError(
                f"release folder {ref.location} changed since the tasks were exported (manifest sha256 "
                f"differs); export again"
            )
    return ref


def sample_record(item: TaskRequest, seed: int | None) -> dict[str, Any]:
    """One request as a harness document: its generation id, prompt and what scoring needs
    (``meta``, JSON text so every harness stores it as it is)."""
    return {
        "id": job_id(item.request.id, seed),
        "prompt": item.request.prompt,
        "meta": json.dumps(item.meta, ensure_ascii=False, sort_keys=True),
    }


def scored(task: Task, item: TaskRequest, output: Any, seed: int | None) -> dict[str, Any]:
    """The sample ``eval run`` would write for ``output`` (the task's own scoring)."""
    sample = task.scored_sample(item, output)
    sample["id"] = job_id(item.request.id, seed)
    if seed is not None:
        sample["seed"] = seed
    return sample


def score_values(sample: dict[str, Any], meta: dict[str, Any]) -> dict[str, float | bool]:
    """The per-sample scores of a scored sample (what :meth:`Task.score` added, not the
    request's ``meta``) that are numbers or booleans: what a harness can show and average."""
    keep = set(sample) - set(meta) - SAMPLE_KEYS
    return {k: sample[k] for k in sorted(keep) if isinstance(sample[k], (bool, int, float))}


# keys of every scored sample that are not the task's scores (Task.scored_sample, the runner)
SAMPLE_KEYS = frozenset(
    {"id", "prompt", "n_images", "output", "seed", "run", "invalid_output", "scored_chars", "image_sha256"}
) | frozenset(RECORD_KEYS)  # the run folder's normalised fields (eval/records.py)


def top_level(metrics: dict[str, Any]) -> dict[str, float]:
    """The headline numbers of a task's metrics as one flat row (what a harness shows):
    ``{metric: value}`` for the overall numbers, ``{group_metric: value}`` for a task whose
    results are all per group (e.g. WWD's description: failure modes per continent)."""
    from culturebench.eval.run_report import headlines

    items = headlines(metrics)
    overall = [h for h in items if h.group == "all"]
    return {(h.metric if overall else f"{h.group}_{h.metric}"): float(h.value) for h in overall or items}
