"""Evaluation tasks (lm-evaluation-harness style: a task knows its dataset config, its
prompt templates, how to score one output and how to aggregate). Each dataset's tasks live
in its folder (``datasets/<name>/tasks.py``) and are found through the dataset registry."""

from __future__ import annotations

from culturebench.eval.tasks.base import AnalysisTask, Task, TaskRequest


def registry() -> dict[str, dict[str, type[Task]]]:
    """dataset -> task name -> task class, for every registered dataset."""
    from culturebench import registry as datasets

    return {name: entry.tasks() for name, entry in datasets.datasets().items()}


def task_class(dataset: str, name: str) -> type[Task]:
    """The class of task ``name`` of ``dataset``; :class:`UsageError` naming the choices."""
    from culturebench.errors import UsageError

    tasks = registry().get(dataset)
    if not tasks:
        raise UsageError(f"no evaluation tasks for dataset {dataset!r} (have: {', '.join(registry())})")
    if name not in tasks:
        raise UsageError(f"unknown task {name!r} for {dataset} (have: {', '.join(tasks)})")
    return tasks[name]


def get_task(dataset: str, name: str, **options) -> Task:
    """The task ``name`` of ``dataset`` with ``options``; :class:`UsageError` otherwise."""
    return task_class(dataset, name)(**options)


__all__ = ["AnalysisTask", "Task", "TaskRequest", "get_task", "registry", "task_class"]
