"""``culturebench export lm-eval DATASET --out DIR``: a task folder for lm-evaluation-harness
(0.4.13; ``lm_eval --include_path DIR --tasks culturebench_<dataset>_<task>``).

The folder holds one YAML per text task of the dataset, a group YAML
(``culturebench_<dataset>``: every task of it) and a ``utils.py`` whose functions call
:mod:`culturebench.eval.harness.lm_eval_support`: the documents are the requests ``eval run``
builds (same ids and prompts) from the release the export pinned (a Hub commit sha, or a local
release checked by its manifest sha256 every time the task loads), each answer is scored by the
task's own ``score``, and the metrics are the task's own ``aggregate``. Generation settings are
the paper's (``paper.yaml`` grid): ``max_gen_toks``, greedy or the temperature, no stop string
but the model's end of sequence; a task the paper ran with seeds gets one document per seed
(``<request>@<seed>``; the sampling seed is lm-eval's ``--seed``).

Tasks with images (VQA) are not exported: lm-eval's multimodal route (``hf-multimodal``,
``doc_to_image``) is a different request shape; use the Inspect tasks for them."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import yaml

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.harness.common import PACKAGE, harness_name, harness_requests, harness_tasks
from culturebench.eval.harness.lm_eval_support import META, metric_names


def lm_eval_task_name(dataset: str, task: str) -> str:
    """The lm-eval task name: ``culturebench_<dataset>_<task>`` (underscores)."""
    return f"{PACKAGE}_{harness_name(dataset, task)}"


def export_lm_eval(
    dataset: str,
    out: str | Path,
    *,
    tasks: list[str] | None = None,
    revision: str | None = None,
    local: str | None = None,
    repo: str | None = None,
    progress: Any = None,
) -> list[Path]:
    """Write the task folder into ``out`` (a new or empty folder, or an earlier export of the
    same dataset, replaced); returns the files written. ``tasks``: a subset (default every
    text task)."""
    from culturebench.atomic import publish_dir, staging_dir

    chosen = _chosen(dataset, tasks)
    out = Path(out)
    _check_out(out, dataset)
    written: dict[str, str] = {}
    metrics: dict[str, list[str]] = {}
    pin = None  # the release is resolved once (a Hub revision: one lookup), then pinned
    for index, cls in enumerate(chosen):
        loaded = harness_requests(dataset, cls.name, revision=revision, local=local, repo=repo, pin=pin)
        pin = loaded.pin
        names = metric_names(loaded.task, loaded.requests)
        if not names:
            raise CultureBenchError(f"{dataset}/{cls.name}: its aggregate reports no number to export")
        metrics[f"{dataset}/{cls.name}"] = names
        name = lm_eval_task_name(dataset, cls.name)
        written[f"{name}.yaml"] = _task_yaml(dataset, cls, loaded, names)
        if progress:
            progress(index + 1, len(chosen))
    group = f"{PACKAGE}_{dataset}"
    written[f"{group}.yaml"] = _dump(
        {
            "group": group,
            "task": [lm_eval_task_name(dataset, c.name) for c in chosen],
            "metadata": {"version": 1.0},
        }
    )
    written["utils.py"] = _utils_py(dataset, metrics)
    with staging_dir(out) as stage:  # the whole folder appears at once, or not at all
        for file, text in written.items():
            (stage / file).write_text(text, encoding="utf-8")
        (stage / MARKER).write_text(dataset + "\n", encoding="utf-8")
        publish_dir(stage, out, overwrite=out.exists())
    return [out / f for f in written]


MARKER = ".culturebench-lm-eval"  # names the dataset of an export folder (so it may be replaced)


def _chosen(dataset: str, tasks: list[str] | None) -> list[Any]:
    """The text tasks to export (VQA tasks cannot run in lm-eval's text route)."""
    from culturebench import registry

    registry.get(dataset)  # an unknown dataset: the registry's error, naming the datasets
    available = [cls for cls in harness_tasks(dataset) if not cls.needs_images]
    if not available:
        raise UsageError(f"{dataset} has no text task lm-eval can run")
    if not tasks:
        return available
    by_name = {cls.name: cls for cls in available}
    unknown = [t for t in tasks if t not in by_name]
    if unknown:
        raise UsageError(
            f"--task {unknown[0]}: not a text task of {dataset} lm-eval can run (have: {', '.join(by_name)})"
        )
    return [by_name[t] for t in tasks]


def _check_out(out: Path, dataset: str) -> None:
    """``out`` is new, empty, or an earlier export of ``dataset``, and not inside a release or
    run folder (:func:`~culturebench.outputs.check_parents`); anything else is refused."""
    from culturebench.outputs import check_parents, check_writable

    if out.is_symlink():
        raise UsageError(f"--out {out} is a symbolic link; give a real path (nothing was written)")
    check_parents(out, "--out")
    check_writable(out, "--out")  # before any task is exported
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()):
        marker = out / MARKER
        if not marker.is_file():
            raise UsageError(f"--out {out} holds other files; give a new or empty folder")
        held = marker.read_text(encoding="utf-8").strip()
        if held != dataset:
            raise UsageError(f"--out {out} holds the lm-eval export of {held!r}, not {dataset!r}")


def _task_yaml(dataset: str, cls: Any, loaded: Any, metrics: list[str]) -> str:
    settings = loaded.settings
    greedy = settings.temperature == 0.0
    generation = {"until": [], "do_sample": not greedy, "max_gen_toks": settings.max_new_tokens}
    if not greedy:
        generation["temperature"] = settings.temperature
    seeds = list(settings.seeds) if settings.seeds else None
    doc = {
        "task": lm_eval_task_name(dataset, cls.name),
        "tag": [PACKAGE, f"{PACKAGE}_{dataset}"],
        "custom_dataset": _Function("utils.docs"),
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{meta}}",
        "process_results": _Function("utils.process_results"),
        "generation_kwargs": generation,
        "metric_list": [{"metric": m, "aggregation": _Function(f"utils.{_agg_name(m)}")} for m in metrics],
        "metadata": {
            "version": 1.0,
            META: {
                "dataset": dataset,
                "task": cls.name,
                "languages": loaded.langs,
                "seeds": seeds,
                "pin": loaded.pin,
                "requests": len(loaded.requests),
                "settings": settings.describe(),
                "settings_source": settings.source,
            },
        },
    }
    head = (
        f"# {dataset}/{cls.name}: {cls().describe() or cls.name}\n"
        f"# Paper's decoding ({settings.source}): {settings.describe()}.\n"
    )
    return head + _dump(doc)


def _utils_py(dataset: str, metrics: dict[str, list[str]]) -> str:
    """The folder's ``utils.py``: thin calls into culturebench, one aggregation per metric."""
    from culturebench import __version__

    names = sorted({m for ms in metrics.values() for m in ms})
    lines = [
        f'"""lm-evaluation-harness functions of the culturebench {dataset} tasks.',
        "",
        f"Written by `culturebench export lm-eval` (culturebench {__version__}) on "
        f"{dt.date.today().isoformat()}; the scoring is culturebench's own (installed alongside).",
        'Do not edit: export again."""',
        "",
        "from culturebench.eval.harness import lm_eval_support as cb",
        "",
        f"METRICS = {metrics!r}",
        "",
        "",
        "def docs(**metadata):",
        '    """The task\'s documents from its pinned release (custom_dataset)."""',
        "    return cb.load_docs(metadata)",
        "",
        "",
        "def process_results(doc, results):",
        '    """The task\'s own score of one answer."""',
        '    return cb.process_results(doc, results, METRICS[doc["task"]])',
    ]
    for name in names:
        lines += ["", "", f"def {_agg_name(name)}(items):", f"    return cb.aggregate(items, {name!r})"]
    return "\n".join(lines) + "\n"


def _agg_name(metric: str) -> str:
    return "agg_" + re.sub(r"\W", "_", metric)


class _Function(str):
    """A ``!function`` reference in the task YAML."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


def _dump(doc: dict[str, Any]) -> str:
    return yaml.dump(doc, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=110)
