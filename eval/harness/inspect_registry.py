"""The ``inspect_ai`` entry point: importing this module registers every harness task of every
dataset as ``culturebench/<dataset>_<task>`` (``inspect list tasks``, ``inspect eval
culturebench/...``)."""

from __future__ import annotations

from culturebench import registry
from culturebench.eval.harness.common import harness_name, harness_tasks
from culturebench.eval.harness.inspect_tasks import make_task

TASKS = {
    harness_name(dataset, cls.name): make_task(dataset, cls.name)
    for dataset in registry.datasets()
    for cls in harness_tasks(dataset)
}
globals().update(TASKS)  # each task is an attribute of this module, as Inspect expects

__all__ = sorted(TASKS)
