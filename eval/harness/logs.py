"""Logs written by other harnesses, read as generations for ``eval score``: Inspect ``.eval``
logs (through ``inspect_ai.log.read_eval_log``) and lm-evaluation-harness ``--log_samples``
files (``samples_<task>_<time>.jsonl`` beside their ``results_<time>.json``).

Each log names its culturebench task, the model and the settings it ran with (carried into
``run.json`` so ``eval paper`` sets that model beside the paper's rows) and the release its
requests were built from (used when ``eval score`` is given no release)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, Location, SourceError
from culturebench.eval.harness.common import parse_harness_name
from culturebench.filecache import FileCache

INSPECT = "inspect-ai"
LM_EVAL = "lm-eval"


@dataclass
class HarnessLog:
    """One harness log: its task, its answers (as ``eval score`` generations), the model and
    settings it ran with, and the release it was made from (when it says)."""

    path: Path
    harness: str  # INSPECT or LM_EVAL
    dataset: str
    task: str
    generations: list[Any]  # culturebench.eval.generation.Generation
    model: dict[str, Any]
    pin: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)


def harness_of(path: Path) -> str | None:
    """Which harness wrote ``path`` (None: a plain generations file)."""
    if path.suffix == ".eval":
        return INSPECT
    if path.suffix == ".jsonl" and path.name.startswith("samples_") and path.is_file():
        with open(path, encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
        try:
            record = json.loads(first)
        except ValueError:
            return None
        if isinstance(record, dict) and {"doc", "resps", "doc_id"} <= set(record):
            return LM_EVAL
    return None


# every task of one `eval score` (and the command's choice of tasks) reads the same logs
_LOGS: FileCache[HarnessLog] = FileCache()


def read_harness_log(path: Path) -> HarnessLog:
    """The log at ``path`` (read once per process while unchanged)."""
    if not path.is_file():
        raise SourceError(Location(str(path)), "no such file" if not path.exists() else "not a file")
    return _LOGS.get(path, lambda p: read_inspect(p) if harness_of(p) == INSPECT else read_lm_eval(p))


# ----------------------------------------------------------------------------- Inspect
def read_inspect(path: Path) -> HarnessLog:
    """An Inspect ``.eval`` (or ``.json``) log of a culturebench task. Epoch ``k`` of a sample
    is the paper's ``k``-th seed when the task ran the paper's seeds, else seed ``k - 1`` (one
    epoch: no seed)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise CultureBenchError(
            f"{path.name} is an Inspect log: reading it needs inspect-ai "
            "(pip install 'culturebench[interop]')"
        ) from None
    from culturebench.eval.generation import Generation

    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # not a zip, a damaged or foreign log
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise SourceError(Location(path.name), f"not a readable Inspect log: {first}") from None
    if log.status != "success":
        raise SourceError(
            Location(path.name), f"Inspect log of a run that did not finish (status {log.status})"
        )
    info = (log.eval.metadata or {}).get("culturebench") or {}
    dataset, task = _task_of(path, info.get("dataset"), info.get("task"), log.eval.task)
    seeds = info.get("seeds") or None
    epochs = log.eval.config.epochs or 1
    generations = []
    for number, sample in enumerate(log.samples or [], start=1):
        if sample.error:
            raise SourceError(
                Location(path.name, number, "error"), f"sample {sample.id!r} failed: {sample.error}"
            )
        seed = _epoch_seed(sample.epoch, epochs, seeds)
        generations.append(Generation(str(sample.id), seed, sample.output.completion, path.name, number))
    config = log.plan.config.model_dump(exclude_none=True)
    sampling = {
        "max_new_tokens": config.get("max_tokens"),
        "temperature": config.get("temperature"),
        "seed": config.get("seed"),
    }
    model = {
        "backend": INSPECT,
        "model": log.eval.model,
        "model_args": log.eval.model_args or {},
        "sampling": {k: v for k, v in sampling.items() if v is not None},
        "versions": dict(log.eval.packages or {}),
        "harness": {
            "name": "inspect_ai",
            "version": (log.eval.packages or {}).get("inspect_ai"),
            "task": log.eval.task,
            "task_args": {k: v for k, v in (log.eval.task_args or {}).items() if v is not None},
            "epochs": epochs,
            "generate_config": config,
            "log": path.name,
            "created": log.eval.created,
        },
    }
    return HarnessLog(path, INSPECT, dataset, task, generations, model, info.get("pin"), {"epochs": epochs})


def _epoch_seed(epoch: int, epochs: int, seeds: list[int] | None) -> int | None:
    """The seed of Inspect epoch ``epoch`` (1-based): none for a one-epoch run, the paper's
    seed of that index when the run used the paper's seeds, else ``epoch - 1``."""
    if epochs <= 1:
        return None
    return seeds[epoch - 1] if seeds and epoch <= len(seeds) else epoch - 1


# ------------------------------------------------------------------------- lm-eval
def read_lm_eval(path: Path) -> HarnessLog:
    """An lm-evaluation-harness ``--log_samples`` file of an exported culturebench task; the
    model and generation settings come from the ``results_<time>.json`` beside it."""
    from culturebench.eval.generation import Generation
    from culturebench.eval.tasks.base import split_job_id
    from culturebench.inputs import read_jsonl

    name, _, stamp = path.stem[len("samples_") :].rpartition("_")
    results = _lm_eval_results(path, stamp)
    config = (results.get("configs") or {}).get(name) or {}
    pin_info = (config.get("metadata") or {}).get("culturebench") or {}
    dataset, task = _task_of(path, pin_info.get("dataset"), pin_info.get("task"), name)
    generations = []
    for number, record in read_jsonl(path, what="an lm-eval samples file"):
        doc = record.get("doc")
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise SourceError(
                Location(path.name, number, "doc.id"),
                "no culturebench id in the document (not a task exported by `culturebench export lm-eval`)",
            )
        answers = record.get("filtered_resps") or [r[0] for r in record.get("resps") or [] if r]
        if not answers:
            raise SourceError(Location(path.name, number, "resps"), "no answer")
        request, seed = split_job_id(doc["id"])
        output = answers[0] if not isinstance(answers[0], list) else answers[0][0]
        generations.append(Generation(request, int(seed) if seed else None, output, path.name, number))
    model_args = (results.get("config") or {}).get("model_args")
    model = {
        "backend": LM_EVAL,
        "model": _lm_eval_model(results, path),
        "model_args": _model_args(model_args),
        "sampling": _lm_eval_sampling(config.get("generation_kwargs") or {}),
        "versions": {
            "lm_eval": str(results.get("lm_eval_version", "")),
            "transformers": str(results.get("transformers_version", "")),
        },
        "harness": {
            "name": "lm_eval",
            "version": results.get("lm_eval_version"),
            "task": name,
            "model_type": (results.get("config") or {}).get("model"),
            "generation_kwargs": config.get("generation_kwargs"),
            "chat_template": bool(results.get("chat_template")),
            "samples": path.name,
            "results": results.get("_file"),
            "date": results.get("date"),
        },
    }
    return HarnessLog(path, LM_EVAL, dataset, task, generations, model, pin_info.get("pin"))


def _lm_eval_results(samples: Path, stamp: str) -> dict[str, Any]:
    """The ``results_<stamp>.json`` written with a samples file ({} when it is not there)."""
    path = samples.with_name(f"results_{stamp}.json")
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SourceError(Location(path.name), f"not JSON: {exc}") from None
    return {**data, "_file": path.name} if isinstance(data, dict) else {}


def _lm_eval_model(results: dict[str, Any], samples: Path) -> str:
    """The model an lm-eval run used: ``pretrained=`` of its model_args, else its folder name."""
    args = _model_args((results.get("config") or {}).get("model_args"))
    return str(args.get("pretrained") or results.get("model_name") or samples.parent.name.replace("__", "/"))


def _model_args(value: Any) -> dict[str, Any]:
    """lm-eval's ``model_args`` (``"a=1,b=2"`` or a dict) as a dict."""
    if isinstance(value, dict):
        return dict(value)
    if not isinstance(value, str) or not value.strip():
        return {}
    out = {}
    for part in value.split(","):
        key, _, val = part.partition("=")
        if key.strip():
            out[key.strip()] = val.strip()
    return out


def _lm_eval_sampling(kwargs: dict[str, Any]) -> dict[str, Any]:
    """lm-eval ``generation_kwargs`` in culturebench's sampling names."""
    greedy = kwargs.get("do_sample") is False
    out = {
        "max_new_tokens": kwargs.get("max_gen_toks"),
        "temperature": 0.0 if greedy else kwargs.get("temperature"),
    }
    return {k: v for k, v in out.items() if v is not None}


def _task_of(path: Path, dataset: Any, task: Any, harness_task: str) -> tuple[str, str]:
    """``(dataset, task)`` of a log: what culturebench recorded in it, else its task name."""
    if isinstance(dataset, str) and isinstance(task, str):
        return dataset, task
    try:
        return parse_harness_name(harness_task)
    except CultureBenchError:
        raise SourceError(
            Location(path.name, None, "task"), f"{harness_task!r} is not a culturebench task"
        ) from None
