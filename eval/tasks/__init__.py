"""Evaluation tasks (lm-evaluation-harness style: a task knows its dataset config, its
prompt templates, how to score one output and how to aggregate). Each dataset's tasks live
in its folder (the modules ``dataset.yaml`` code.tasks names, each with a ``TASKS`` dict)
and are found through the dataset registry; an old task name (``Task.aliases``) still finds
its task, with a warning."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from culturebench.eval.tasks.base import AnalysisTask, Task, TaskRequest


def registry() -> dict[str, dict[str, type[Task]]]:
    """dataset -> task name -> task class, for every registered dataset."""
    from culturebench import registry as datasets

    return {name: entry.tasks() for name, entry in datasets.datasets().items()}


def find_task(dataset: str, name: str) -> type[Task] | None:
    """The task class ``name`` stands for in ``dataset``: the task of that name, or the task it
    is an old name of (:attr:`Task.aliases`); None for a dataset or task this install does not
    have. The one place an old task name is resolved."""
    tasks = registry().get(dataset, {})
    if name in tasks:
        return tasks[name]
    return next((cls for cls in tasks.values() if name in cls.aliases), None)


def task_class(dataset: str, name: str) -> type[Task]:
    """The class of task ``name`` (or one of its old names, :attr:`Task.aliases`, with a
    warning) of ``dataset``; :class:`UsageError` naming the choices."""
    from culturebench.errors import UsageError

    tasks = registry().get(dataset)
    if not tasks:
        raise UsageError(f"no evaluation tasks for dataset {dataset!r} (have: {', '.join(registry())})")
    cls = find_task(dataset, name)
    if cls is None:
        raise UsageError(f"unknown task {name!r} for {dataset} (have: {', '.join(tasks)})")
    if name not in tasks:
        import warnings

        warnings.warn(
            f"task {dataset}/{name} is now called {cls.name!r}; the old name is accepted until "
            "culturebench 0.3",
            FutureWarning,
            stacklevel=2,
        )
    return cls


def canonical_name(dataset: str, name: str) -> str:
    """``name``, or the current name of the task an old name (alias) stands for; an unknown
    dataset or task is returned as it is (an old run folder stays readable)."""
    cls = find_task(dataset, name)
    return name if cls is None else cls.name


def report_sections_of(results: Mapping[str, Any]) -> Callable[..., list[str]] | None:
    """The report sections of a result's task (``Task.report_sections``), found by the dataset
    and task its provenance names; None for a task this install does not have (a report of
    someone else's run still shows the generic tables)."""
    prov = results.get("provenance") or {}
    dataset, name = (prov.get("dataset") or {}).get("dataset"), prov.get("task")
    if not isinstance(dataset, str) or not isinstance(name, str):
        return None
    cls = find_task(dataset, name)
    return cls.report_sections if cls is not None else None


def get_task(dataset: str, name: str, **options: Any) -> Task:
    """The task ``name`` of ``dataset`` with ``options``; :class:`UsageError` otherwise."""
    return task_class(dataset, name)(**options)


__all__ = [
    "AnalysisTask",
    "Task",
    "TaskRequest",
    "canonical_name",
    "find_task",
    "get_task",
    "registry",
    "report_sections_of",
    "task_class",
]
