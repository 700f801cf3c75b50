"""Evaluation tasks, one module per dataset (lm-evaluation-harness style: a task knows its
dataset config, its prompt templates, how to score one output and how to aggregate)."""

from __future__ import annotations

from culturebench.eval.tasks.base import Task, TaskRequest


def registry() -> dict[str, dict[str, type[Task]]]:
    """dataset -> task name -> task class."""
    from culturebench.eval.tasks import ash, borsch, foodieqa, rubin, wwd

    return {
        "borsch": borsch.TASKS,
        "wwd": wwd.TASKS,
        "rubin": rubin.TASKS,
        "foodieqa": foodieqa.TASKS,
        "ash": ash.TASKS,
    }


def get_task(dataset: str, name: str, **options) -> Task:
    """The task ``name`` of ``dataset``; :class:`UsageError` naming the choices otherwise."""
    from culturebench.errors import UsageError

    tasks = registry().get(dataset)
    if not tasks:
        raise UsageError(f"no evaluation tasks for dataset {dataset!r} (have: {', '.join(registry())})")
    if name not in tasks:
        raise UsageError(f"unknown task {name!r} for {dataset} (have: {', '.join(tasks)})")
    return tasks[name](**options)


__all__ = ["Task", "TaskRequest", "get_task", "registry"]
