"""BORSCH §5 as one resumable pipeline: description -> translation -> images -> scores ->
correlations, each stage an ``eval run`` in its own sub-folder of ``--out``.

Each stage pins its input stage by the sha256 of that stage's ``samples.jsonl`` (a task
option recorded in ``run.json``). A rerun therefore resumes every stage that is the same run
(nothing regenerated) and redoes exactly the stages whose own settings or inputs changed: such
a stage's old folder is moved aside to ``<stage>.stale-<k>`` (never deleted: generated images
may have cost money) and the stage runs again, and so does every stage after it, because its
input hash changed. Stage timings go to ``pipeline.json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.jsonsafe import json_text

STAGES = ("1-description", "2-translation", "3-images", "4-scores", "5-correlations")


@dataclass
class PipelineSpec:
    """What the pipeline runs. Backends are made by factories, only for stages that run."""

    out: Path
    local: str | None = None
    revision: str | None = None
    repo: str | None = None
    config: str = "parallel"
    langs: list[str] | None = None
    limit: int | None = None
    describer: Callable[[], Any] | None = None
    translator: Callable[[], Any] | None = None  # None: the describer writes English
    t2i: Callable[[], Any] | None = None
    images_per_dish: int = 1
    dinov2: str = ""
    qa: str | None = None
    vqa: str | None = None
    human: str | None = None
    batch_size: int = 8
    stage_options: dict[str, dict[str, Any]] = field(default_factory=dict)


def _samples(folder: Path) -> int:
    path = folder / "samples.jsonl"
    if not path.is_file():
        return 0
    data = path.read_bytes()  # complete lines only: a torn last line is not a sample
    return sum(1 for line in data[: data.rfind(b"\n") + 1].splitlines() if line.strip())


def _move_aside(folder: Path) -> Path:
    k = 1
    while (target := folder.with_name(f"{folder.name}.stale-{k}")).exists():
        k += 1
    folder.rename(target)
    return target


def run_pipeline(
    spec: PipelineSpec,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    log: Callable[[str], None] = lambda _msg: None,
) -> dict[str, Any]:
    """Run (or resume) every stage; returns the ``pipeline.json`` record. ``spec.out`` must be
    new, empty or an earlier pipeline folder (locked while this runs)."""
    from culturebench.outputs import OutputKind, resumable_output

    with resumable_output(spec.out, OutputKind("borsch-description", ("pipeline.json",))):
        return _run(spec, progress, log)


def _run(
    spec: PipelineSpec,
    progress: Callable[[str, int, int], None] | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    from culturebench.atomic import write_text_atomic
    from culturebench.eval.run_folder import RunMismatch
    from culturebench.eval.runner import run_eval

    out = spec.out
    folders = {name: out / name for name in STAGES}
    common = {"local": spec.local, "revision": spec.revision, "repo": spec.repo}
    config = {"config": spec.config} if spec.config != "parallel" else {}
    plan: list[tuple[str, str, Callable[[], Any] | None, dict[str, Any], dict[str, Any]]] = [
        ("1-description", "description", spec.describer, config, {**common, "limit": spec.limit}),
    ]
    text_stage = "1-description"
    if spec.translator is not None:
        plan.append(("2-translation", "translate", spec.translator, {"source": str(folders[text_stage])}, {}))
        text_stage = "2-translation"
    seeds = list(range(spec.images_per_dish))
    plan.append(
        ("3-images", "description-images", spec.t2i, {"source": str(folders[text_stage])}, {"seeds": seeds})
    )
    score_options = {"source": str(folders["3-images"]), "model": spec.dinov2, **config}
    plan.append(("4-scores", "description-scores", None, score_options, common))
    correlate = {k: v for k, v in {"qa": spec.qa, "vqa": spec.vqa, "human": spec.human}.items() if v}
    if correlate:
        plan.append(
            (
                "5-correlations",
                "description-correlations",
                None,
                {"scores": str(folders["4-scores"]), **correlate},
                {},
            )
        )

    record: dict[str, Any] = {"stages": []}
    for stage, task, factory, options, extra in plan:
        folder = folders[stage]
        options = {**options, **spec.stage_options.get(stage, {})}
        backend = factory() if factory is not None else None
        before = _samples(folder)
        moved = None
        start = time.perf_counter()

        def call(stage=stage, folder=folder, task=task, backend=backend, options=options, extra=extra):
            report = (lambda done, total: progress(stage, done, total)) if progress else None
            return run_eval(
                "borsch",
                task,
                backend,
                folder,
                langs=spec.langs,
                batch_size=spec.batch_size,
                task_options=options,
                progress=report,
                **extra,
            )

        try:
            results = call()
        except RunMismatch:
            moved = _move_aside(folder)
            log(f"{stage}: settings or inputs changed; previous outputs moved to {moved.name}")
            before = 0
            results = call()
        seconds = time.perf_counter() - start
        after = _samples(folder)
        entry = {
            "stage": stage,
            "task": task,
            "folder": str(folder),
            "seconds": round(seconds, 3),
            "samples": results.get("samples"),
            "new_samples": max(0, after - before),
            "rerun_because_changed": moved is not None,
        }
        record["stages"].append(entry)
        log(f"{stage}: {entry['samples']} items, {entry['new_samples']} new, {seconds:.1f} s")
    write_text_atomic(out / "pipeline.json", json_text(record, indent=2))
    return record
