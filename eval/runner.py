"""Run one evaluation: resolve the dataset to an immutable revision, build the task's
requests, generate with a backend, append each scored sample to ``samples.jsonl`` as it
arrives (fsync per batch), then aggregate into ``results.json`` and ``report.md``.

A killed run resumes: samples already on disk are kept (a torn last line is dropped) and only
the missing ones are generated. Greedy decoding makes a resumed run end with the same
outputs as an uninterrupted one. The run folder's files are read and written by
:mod:`culturebench.eval.run_folder`; the dataset revision is pinned by
:mod:`culturebench.eval.dataset_ref`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.backends import Backend
from culturebench.eval.backends.base import package_versions
from culturebench.eval.backends.image_base import ImageBackend
from culturebench.eval.coverage import coverage_of, finished, run_coverage
from culturebench.eval.dataset_ref import DatasetRef, RowChoice, load_run_rows, resolve_dataset, source_ref
from culturebench.eval.records import Results, RunInfo, Sample
from culturebench.eval.request_order import in_engine_order
from culturebench.eval.response_cache import (
    CacheCount,
    ResponseCache,
    model_identity,
    open_cache,
    request_key,
)
from culturebench.eval.run_folder import (
    RESULTS,
    RUN,
    SAMPLES,
    RunMismatch,
    check_images,
    check_run,
    check_run_dir,
    describe_shard,
    git_sha,
    holds_work,
    identity,
    keep_thumbnails,
    output_counts,
    read_json_object,
    read_samples,
    run_key,
    store_image,
    task_identity,
    without_part,
    write_json,
)
from culturebench.eval.run_report import write_report
from culturebench.eval.shards import SHARD_FILE, Shard, shard_jobs, unit_of, write_shard_file
from culturebench.eval.tasks import AnalysisTask, TaskRequest, get_task
from culturebench.eval.tasks.base import job_id
from culturebench.hashing import sha256_text
from culturebench.jsonsafe import json_text
from culturebench.outputs import kept_only_if_used, writer_lock


def run_eval(
    dataset: str,
    task_name: str,
    backend: Backend | ImageBackend | None,
    out_dir: str | Path,
    *,
    revision: str | None = None,
    local: str | None = None,
    repo: str | None = None,
    langs: Sequence[str] | None = None,
    limit: int | None = None,
    batch_size: int = 8,
    progress: Callable[[int, int], None] | None = None,
    task_options: dict[str, Any] | None = None,
    seeds: Sequence[int] | None = None,
    shard: Shard | None = None,
    first: bool = False,
    sampling_source: Mapping[str, Any] | None = None,
    response_cache: bool = True,
    on_cache: Callable[[CacheCount], None] | None = None,
) -> Results:
    """Run (or resume) one evaluation and return its results (also on disk).
    ``limit``: N rows spread over the task's reporting groups (:meth:`Task.group_field`,
    :func:`~culturebench.eval.dataset_ref.choose_rows`), or with ``first`` the first N rows.
    ``sampling_source``: where the backend's sampling settings come from when not the command
    line (``eval reproduce``: the grid cell, with the settings it ``assumed``), for the coverage.
    ``shard``: generate only that part of the run (:mod:`culturebench.eval.shards`; the
    folder is a partial run that ``eval merge`` joins with the other parts).
    ``seeds``: generate every request once per seed (sample ids ``<request>@<seed>``), with
    the backend's sampling seed set to it; metrics aggregate over all (item, seed) samples.
    ``task_options`` go to the task (e.g. ``{"generations": DIR, "repeats": 3}`` for ASH judge).
    A text-to-image task (``output_kind`` "image") takes an image backend and stores one PNG
    per (request, seed) under ``images/``; an :class:`AnalysisTask` takes no backend.
    ``response_cache``: answer text requests from the response cache shared across runs where
    it holds them, and keep new answers there (:mod:`culturebench.eval.response_cache`; off
    with False or ``$CULTUREBENCH_RESPONSE_CACHE=off``). The cache leaves no trace in the run's
    files (a warm run writes the bytes a cold one does); ``on_cache`` is told how many of the
    answers generated now it gave and how many were asked of the model (the terminal shows
    it)."""
    from culturebench.errors import UsageError

    task = get_task(dataset, task_name, **(task_options or {}))
    task_name = task.name  # an old name (alias) runs as the task's current name
    langs = list(langs or task.languages)
    unknown = [lang for lang in langs if lang not in task.languages]
    if unknown:
        raise UsageError(
            f"{dataset}/{task_name} has no prompts in {', '.join(map(repr, unknown))} "
            f"(languages: {', '.join(task.languages)})"
        )
    out = Path(out_dir)
    check_run_dir(out)
    # one writer per run folder: a second run into --out stops here; a first attempt that gets
    # no answer (an endpoint that refuses connections) leaves no folder behind
    with writer_lock(out), kept_only_if_used(out, lambda f: holds_work(f, RUN_RECORDS)):
        choice: RowChoice | None = None
        if task.needs_dataset:
            ref = resolve_dataset(dataset, revision=revision, local=local, repo=repo)
            rows, choice = load_run_rows(
                ref, task.config, task.split, limit, first=first, group_field=task.group_field
            )
        else:
            ref = source_ref(dataset, task.source_dataset())
            rows = []
        if isinstance(task, AnalysisTask):
            return _run_analysis(task, task_name, ref, out, langs, rows, progress, choice)
        _check_backend(task, backend)
        requests, skipped = task.build(rows, langs)
        if not task.needs_dataset and limit is not None:
            requests = requests[:limit]
        if not requests:  # a run of nothing is not a result: say why instead of exiting 0
            why = ", ".join(f"{n} {reason}" for reason, n in skipped.items()) if skipped else "no rows"
            raise CultureBenchError(
                f"{task.dataset}/{task_name}: nothing to run ({len(rows)} rows, skipped: {why}); "
                "for image tasks build the release with images first (culturebench build ... --images)"
            )
        run_info = _run_info(task, ref, backend, requests, langs, limit, seeds)
        if limit is not None:  # which rows a limited run asks is part of what it is
            run_info["limit_rows"] = choice.how if choice is not None else "first"
        run_info["coverage"] = run_coverage(
            task, run_info, choice=choice, requests=requests, sampling_source=sampling_source
        )
        if shard is not None:
            run_info["shard"] = shard.to_dict()
        cacheable = backend is not None and backend.CACHEABLE and task.output_kind == "text"
        cache = open_cache(response_cache and cacheable)
        if cache is not None:
            cache.check()  # a cache path that cannot hold it fails before anything is written
        count = CacheCount()
        samples = _generate(
            task, backend, out, run_info, requests, seeds, batch_size, progress, shard, cache, count
        )
        if cache is not None and on_cache is not None:
            on_cache(count)
        return finish_run(task, out, run_info, samples, skipped)


def finish_run(
    task: Any, out: Path, run_info: RunInfo, samples: list[Sample], skipped: dict[str, int]
) -> Results:
    """Aggregate a run's samples into ``results.json`` and ``report.md`` (``eval run`` at the
    end of a run, ``eval merge`` for merged shards); a run the task cannot use (e.g. every
    answer unparseable) raises after its files are written. ``results.json`` opens with the
    run's coverage (:mod:`culturebench.eval.coverage`)."""
    coverage = run_info.get("coverage")
    if not isinstance(coverage, dict):  # a run.json written before coverage was recorded
        coverage = coverage_of({"provenance": run_info})
    results: Results = {
        "coverage": finished(coverage, samples),
        "provenance": {
            **without_part(run_info),
            "culturebench_git": git_sha(),
            "packages": package_versions(PACKAGES),
        },
        "skipped_rows": skipped,
        "samples": len(samples),
        **output_counts(samples),
        "metrics": task.aggregate(samples),
    }
    results.update(schema_fields(task, results["provenance"], samples, results["metrics"]))
    if run_info.get("shard"):  # a part of a run: its metrics cover only that part
        results["shard"] = describe_shard(run_info["shard"])
    write_json(out / RESULTS, results)
    write_report([out], out / "report.md", sections=lambda _results: task.report_sections)
    problem = task.unusable(samples)
    if problem:
        raise CultureBenchError(f"{task.dataset}/{task.name}: {problem}; the run's files are kept in {out}")
    return results


# what a run writes before its first answer: a failed first attempt with only these leaves nothing
RUN_RECORDS = (RUN, SHARD_FILE)

# the libraries whose versions a run's provenance records (the backend records its own)
PACKAGES = ("culturebench", "datasets", "huggingface_hub", "pyarrow", "pymorphy3", "babel", "rapidfuzz")


def _check_backend(task: Any, backend: Backend | ImageBackend | None) -> None:
    """A model that makes what the task needs (text, or images for a text-to-image task)."""
    from culturebench.errors import UsageError
    from culturebench.eval.backends import choices_text

    if backend is None:
        raise UsageError(f"{task.dataset}/{task.name} needs a model: give --model")
    if backend.output_kind != task.output_kind:
        want = (
            f"a text-to-image backend (--backend {choices_text('image')})"
            if task.output_kind == "image"
            else f"a text or vision-language backend (--backend {choices_text('text')})"
        )
        raise UsageError(
            f"{task.dataset}/{task.name} needs {want}; --backend {backend.name} makes {backend.output_kind}"
        )


def _run_info(
    task: Any,
    ref: DatasetRef,
    backend: Any,
    requests: Sequence[TaskRequest],
    langs: Sequence[str],
    limit: int | None,
    seeds: Sequence[int] | None,
) -> RunInfo:
    """``run.json``: everything that determines the run's outputs (its identity) and more."""
    run_info: RunInfo = {
        **task_identity(ref, task.name, task),
        "languages": list(langs),
        "limit": limit,
        "model": backend.describe(),
        "prompt_sha256": task.prompt_hashes(langs),
        "requests": len(requests),
        "requests_sha256": sha256_text("\n".join(r.request.id + "\t" + r.request.prompt for r in requests)),
    }
    if seeds:
        run_info["seeds"] = list(seeds)
        run_info["sampling_per_seed"] = {
            str(s): replace(backend.sampling, seed=int(s)).to_dict() for s in seeds
        }
    return run_info


def _generate(
    task: Any,
    backend: Any,
    out: Path,
    run_info: RunInfo,
    requests: Sequence[TaskRequest],
    seeds: Sequence[int] | None,
    batch_size: int,
    progress: Callable[[int, int], None] | None,
    shard: Shard | None = None,
    cache: ResponseCache | None = None,
    count: CacheCount | None = None,
) -> list[Sample]:
    """Start or resume the run in ``out`` (refusing another run's folder), generate what is
    missing and return every sample in request order (seed by seed); with ``shard``, only
    that part's samples."""
    jobs = [(r, s) for s in seeds for r in requests] if seeds else [(r, None) for r in requests]
    resuming = check_run(out / RUN, run_info)
    positions: list[int] = []
    if shard is not None:
        total = len(jobs)
        jobs, positions = shard_jobs(jobs, shard)
        if not jobs:
            from culturebench.errors import UsageError

            units = len({unit_of(r) for r in requests})
            raise UsageError(
                f"--shard {shard}: nothing to do (the run has {units} units); use at most {units} shards"
            )
    key = run_key(run_info)
    if not resuming:
        backend.load()  # a model that cannot load fails here, before run.json exists
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / RUN, run_info)
    if shard is not None:
        write_shard_file(out, shard, [job_id(r.request.id, s) for r, s in jobs], positions, total)
    samples_path = out / SAMPLES
    ids = {job_id(r.request.id, s) for r, s in jobs}
    existing = read_samples(samples_path, run_key=key, expected_ids=ids)
    if task.output_kind == "image":
        check_images(out, existing)
    done = {s["id"] for s in existing}
    pending = [(r, s) for r, s in jobs if job_id(r.request.id, s) not in done]
    if resuming and pending:
        backend.load()  # a finished run is re-aggregated without loading the model
    if progress:
        progress(len(jobs) - len(pending), len(jobs))
    cached = (cache, model_identity(run_info.get("model") or {})) if cache is not None else None
    backend.bind_run_folder(out)
    _generate_pending(
        task, backend, out, pending, key, batch_size, progress, total=len(jobs), cache=cached, count=count
    )
    order = {job_id(r.request.id, s): i for i, (r, s) in enumerate(jobs)}
    samples = sorted(
        read_samples(samples_path, run_key=key, expected_ids=ids),
        key=lambda s: order.get(s["id"], len(order)),
    )
    return samples


def _generate_pending(
    task: Any,
    backend: Any,
    out: Path,
    pending: Sequence[tuple[TaskRequest, int | None]],
    key: str,
    batch_size: int,
    progress: Callable[[int, int], None] | None,
    *,
    total: int,
    cache: tuple[ResponseCache, dict[str, Any]] | None = None,
    count: CacheCount | None = None,
) -> None:
    """Generate the ``pending`` (request, seed) jobs seed by seed, in chunks of the size the
    backend takes at once (:meth:`Backend.chunk_size`: thousands for vLLM, which schedules its
    own batches; ``concurrency`` x 16 for an endpoint; ``batch_size`` x 16 for transformers,
    which batches them by length), appending each scored sample to ``samples.jsonl`` (fsync per
    chunk, so a killed run loses at most one chunk and resumes); ``progress(done, total)``
    after each chunk. With a ``cache`` (the cache and the model's identity), the requests it
    answers are not sent and new text answers are stored; their samples are the bytes the
    model's answer makes, and only ``count`` tells the two apart. The
    backend's sampling is restored afterwards. A full disk names ``samples.jsonl`` and keeps
    what was written."""
    from culturebench.atomic import no_room_named

    samples_path = out / SAMPLES
    base_sampling = backend.sampling
    kept = "the samples written so far are kept; rerun to resume"
    done = total - len(pending)
    try:
        with no_room_named(samples_path, kept=kept), open(samples_path, "a", encoding="utf-8") as handle:
            for seed in dict.fromkeys(s for _, s in pending):
                backend.sampling = replace(base_sampling, seed=seed) if seed is not None else base_sampling
                todo = [r for r, s in pending if s == seed]
                chunk = backend.chunk_size(batch_size)  # what the engine takes at once
                if progress and getattr(backend, "chunk", None) is None:
                    chunk = progress_chunk(chunk, batch_size, len(todo))
                for start in range(0, len(todo), chunk):
                    batch = todo[start : start + chunk]
                    if task.output_kind == "image":
                        pngs = backend.generate_images([r.request for r in batch])
                        outputs = [
                            store_image(out, job_id(r.request.id, seed), png)
                            for r, png in zip(batch, pngs, strict=True)
                        ]
                    elif cache is not None:
                        outputs, hits = _generate_cached(backend, *cache, [r.request for r in batch])
                        if count is not None:
                            count.add(hits, len(batch))
                    else:
                        outputs = in_engine_order(backend.generate, [r.request for r in batch])
                    for item, output in zip(batch, outputs, strict=True):
                        text = output[0] if isinstance(output, tuple) else output
                        sample: Sample = {
                            **task.scored_sample(item, text),
                            "run": key,
                            "id": job_id(item.request.id, seed),
                        }
                        if item.request.images:  # a viewer draws them from the run folder
                            sample["images"] = keep_thumbnails(out, item.request.images)
                        if isinstance(output, tuple):
                            sample["image_sha256"] = output[1]
                        if seed is not None:
                            sample["seed"] = seed
                        handle.write(json_text(sample, sort_keys=True))
                    handle.flush()
                    os.fsync(handle.fileno())
                    done += len(batch)
                    if progress:
                        progress(done, total)
    finally:
        backend.sampling = base_sampling


def _generate_cached(
    backend: Any, cache: ResponseCache, model: dict[str, Any], requests: Sequence[Any]
) -> tuple[list[Any], int]:
    """The answers to ``requests``: the cache's where it has them, the backend's for the rest
    (one call, in order), which are then stored. Returns the answers and how many were hits.
    ``model``: the backend's identity as the run recorded it (``run.json``'s ``model``, read
    once per run: describing a local model hashes its weights)."""
    sampling = backend.sampling.to_dict()
    keys = [request_key(model, request, sampling) for request in requests]
    found = cache.get_many([k for k in keys if k is not None])
    misses = [i for i, k in enumerate(keys) if k is None or k not in found]
    generated = in_engine_order(backend.generate, [requests[i] for i in misses]) if misses else []
    answers: list[Any] = [found.get(k) if k is not None else None for k in keys]
    label = str(model.get("model"))
    fresh: list[tuple[str, str, str]] = []
    for i, output in zip(misses, generated, strict=True):
        answers[i] = output
        key = keys[i]
        if key is not None and isinstance(output, str):
            fresh.append((key, label, output))
    cache.put_many(fresh)
    return answers, len(requests) - len(misses)


def schema_fields(
    task: Any, prov: Mapping[str, Any], samples: Sequence[Sample], metrics: Mapping[str, Any]
) -> Results:
    """What ``results.json`` says of itself (:mod:`culturebench.eval.records`, written by
    ``eval run``, ``eval score`` and ``eval merge``): its schema version, headline (the task's
    :meth:`~culturebench.eval.tasks.base.Task.headline` metric), kind, model label, how the
    headline's interval was made and whether the prompts carried images."""
    from culturebench.eval.paper_report import model_label
    from culturebench.eval.records import SCHEMA_VERSION, headline_of, interval_kind

    headline = headline_of(metrics, task.headline())
    return {
        "schema_version": SCHEMA_VERSION,
        "headline": headline,
        "kind": task.run_kind(),
        "prompt_images": any((s.get("n_images") or 0) > 0 for s in samples),
        "model_label": model_label(task.dataset, prov),
        "interval": interval_kind(headline, samples),
    }


def progress_chunk(chunk: int, batch_size: int, todo: int) -> int:
    """The chunk size when progress is shown: at most a tenth of the work, so a run reports
    (and checkpoints) about every 10%, never below one full batch. A chunk size the user set
    (vLLM's ``chunk_size``) is kept as given."""
    return max(1, min(chunk, max(batch_size, math.ceil(todo / 10))))


def _run_analysis(
    task: AnalysisTask,
    task_name: str,
    ref: DatasetRef,
    out: Path,
    langs: Sequence[str],
    rows: Sequence[dict[str, Any]],
    progress: Callable[[int, int], None] | None,
    choice: RowChoice | None = None,
) -> Results:
    """Compute an analysis task into ``out`` (run.json, results.json, report.md and the
    task's own files). A folder holding another run is refused; the same run is recomputed
    (its inputs are pinned by hash, so the result is the same)."""
    run_info: RunInfo = {
        **task_identity(ref, task_name, task),
        "languages": list(langs),
        "inputs": task.inputs(),
    }
    coverage = run_coverage(task, run_info, choice=choice)
    path = out / RUN
    if path.exists():
        old, new = identity(read_json_object(path, "an eval run folder")), identity(run_info)
        keys = ("dataset", "task", "task_options", "inputs")
        diff = [k for k in keys if old.get(k) != new.get(k)]
        if diff:
            raise RunMismatch(
                f"{out} holds a different run (differs in: {', '.join(diff)}); use another --out"
            )
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, run_info)
    metrics = task.analyse(out, rows, progress)
    results: Results = {
        "coverage": {**coverage, "samples": int(metrics["n"]) if isinstance(metrics.get("n"), int) else None},
        "provenance": {
            **run_info,
            "culturebench_git": git_sha(),
            "packages": package_versions(["culturebench", "numpy", "transformers", "torch"]),
        },
        "skipped_rows": {},
        "samples": int(metrics.get("n", 0)) if isinstance(metrics.get("n"), int) else 0,
        "metrics": metrics,
    }
    results.update(schema_fields(task, results["provenance"], [], metrics))
    write_json(out / RESULTS, results)
    write_report([out], out / "report.md", sections=lambda _results: task.report_sections)
    return results
