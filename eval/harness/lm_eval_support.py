"""What the ``utils.py`` of an exported lm-evaluation-harness task folder calls (lm-eval
0.4.13): the documents of a task from its pinned release, the task's own scoring of one answer,
and the task's own aggregate as an lm-eval aggregation. Kept here, not in the exported file, so
the folder holds declarations only and the scoring is culturebench's, whatever its version."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from culturebench.eval.harness.common import harness_requests, sample_record, scored, top_level

META = "culturebench"  # the key of the task YAML's ``metadata`` holding the pin


def load_docs(metadata: dict[str, Any]) -> Any:
    """``custom_dataset``: the task's requests from its pinned release as a ``DatasetDict``
    with one ``test`` split, a document per (request, seed) with the culturebench id, prompt,
    scoring meta and task. lm-eval passes the YAML's ``metadata`` (plus the model's arguments)."""
    from datasets import Dataset, DatasetDict

    info = metadata.get(META)
    if not isinstance(info, dict):
        from culturebench.errors import CultureBenchError

        raise CultureBenchError("task YAML has no metadata.culturebench block: export it again")
    loaded = harness_requests(
        info["dataset"], info["task"], pin=info["pin"], langs=info.get("languages") or None
    )
    task_id = f"{info['dataset']}/{info['task']}"
    seeds: Sequence[int | None] = info.get("seeds") or [None]
    docs = [{**sample_record(item, seed), "task": task_id} for seed in seeds for item in loaded.requests]
    return DatasetDict({"test": Dataset.from_list(docs)})


def process_results(doc: dict[str, Any], results: Sequence[str], metrics: Sequence[str]) -> dict[str, Any]:
    """``process_results``: the sample ``eval run`` writes for the answer ``results[0]``,
    given to each of the task's ``metrics`` (their aggregations compute the task's metrics
    from the whole samples)."""
    from culturebench.eval.backends.base import Request
    from culturebench.eval.tasks import TaskRequest
    from culturebench.eval.tasks.base import split_job_id

    task = _task(doc["task"])
    request_id, seed = split_job_id(doc["id"])
    item = TaskRequest(Request(request_id, doc["prompt"], ()), json.loads(doc["meta"]))
    sample = {
        **scored(task, item, one_answer(results, doc["id"]), int(seed) if seed else None),
        "task": doc["task"],
    }
    return {name: sample for name in metrics}


def one_answer(results: Any, doc_id: str) -> str:
    """The one answer text lm-eval hands ``process_results``, in every shape it has: a list
    with one string per request (after a ``take_first`` filter), a list of lists (no filter),
    or a string; none at all is the empty answer. Several answers for one document is an
    error naming it (culturebench scores exactly one; a string is never read as letters)."""
    value = results
    while isinstance(value, list | tuple) and len(value) == 1:
        value = value[0]
    if isinstance(value, list | tuple) and not value:
        return ""
    if isinstance(value, str):
        return value
    from culturebench.errors import CultureBenchError

    if isinstance(value, list | tuple):
        raise CultureBenchError(
            f"document {doc_id!r}: lm-eval gave {len(value)} answers (repeats or several requests); "
            "culturebench scores exactly one: set repeats to 1"
        )
    raise CultureBenchError(f"document {doc_id!r}: lm-eval gave {type(value).__name__}, not an answer text")


def aggregate(items: Sequence[dict[str, Any]], metric: str) -> float:
    """An aggregation: ``metric`` of the task's own aggregate over the samples (NaN when the
    samples give none, e.g. every answer unparsed). lm-eval calls it once per metric with the
    same sample objects (:func:`process_results` hands one sample to every metric), so the
    aggregate, bootstrap included, is computed once for all of a task's metrics."""
    if not items:
        return float("nan")
    held, headline = _LAST_AGGREGATE
    if len(held) != len(items) or any(a is not b for a, b in zip(held, items, strict=False)):
        headline = top_level(_task(items[0]["task"]).aggregate(list(items)))
        _LAST_AGGREGATE[:] = [tuple(items), headline]  # holding the samples keeps identity valid
    return headline.get(metric, float("nan"))


_LAST_AGGREGATE: list[Any] = [(), {}]  # (the samples aggregated last, their headline numbers)


def metric_names(task: Any, requests: Sequence[Any]) -> list[str]:
    """The task's headline metric names (what its aggregate reports), from scoring an empty
    answer to each request: the names an exported YAML lists."""
    samples = [scored(task, item, "", None) for item in requests]
    return list(top_level(task.aggregate(samples)))


_TASKS: dict[str, Any] = {}


def _task(task_id: str) -> Any:
    """The task object of ``<dataset>/<task>`` (made once per process)."""
    from culturebench.eval.tasks import get_task

    if task_id not in _TASKS:
        dataset, _, name = task_id.partition("/")
        _TASKS[task_id] = get_task(dataset, name)
    return _TASKS[task_id]
