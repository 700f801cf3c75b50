"""Run one evaluation: resolve the dataset to an immutable revision, build the task's
requests, generate with a backend, append each scored sample to ``samples.jsonl`` as it
arrives (fsync per batch), then aggregate into ``results.json`` and ``report.md``.

A killed run resumes: samples already on disk are kept (a torn last line is dropped) and only
the missing ones are generated. Greedy decoding makes a resumed run end with the same
outputs as an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.backends import Backend
from culturebench.eval.backends.base import package_versions
from culturebench.eval.backends.image_base import ImageBackend
from culturebench.eval.tasks import AnalysisTask, TaskRequest, get_task
from culturebench.hashing import sha256_file, sha256_text
from culturebench.jsonsafe import json_text

SAMPLES = "samples.jsonl"
RUN = "run.json"
RESULTS = "results.json"


class RunMismatch(CultureBenchError):
    """The output folder holds a different run (other dataset revision, model, prompts...)."""


class SamplesError(CultureBenchError):
    """``samples.jsonl`` has a corrupt line, or lines that belong to another run."""


@dataclass(frozen=True)
class DatasetRef:
    """An immutable dataset revision: a Hub commit sha or a local release's manifest hash."""

    dataset: str
    source: str  # "hub" or "local"
    location: str  # repo id or folder
    requested_revision: str | None
    commit_sha: str | None
    manifest_sha256: str | None
    version: str | None


def resolve_dataset(dataset: str, *, revision: str | None, local: str | None, repo: str | None) -> DatasetRef:
    """Pin the dataset before any model runs: a Hub revision becomes its commit sha."""
    if local:
        from culturebench.manifest import read_manifest

        folder = Path(local)
        manifest = folder / "manifest.json"
        if not manifest.is_file():
            raise CultureBenchError(f"{folder} is not a release folder (no manifest.json)")
        info = read_manifest(folder)
        if info.get("dataset") != dataset:
            raise CultureBenchError(f"{folder} is a release of {info.get('dataset')!r}, not {dataset!r}")
        return DatasetRef(
            dataset, "local", str(folder.resolve()), None, None, sha256_file(manifest), info.get("version")
        )
    from huggingface_hub import HfApi

    repo_id = repo or f"culturebench/{dataset}"
    try:
        info = HfApi().dataset_info(repo_id, revision=revision or "main")
    except Exception as exc:  # offline, no such repo or revision, HTTP errors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CultureBenchError(
            f"cannot resolve dataset {repo_id}@{revision or 'main'} on the Hub: {first} "
            "(offline? use --local with a release folder)"
        ) from None
    version = revision if revision and revision.startswith("v") else None
    return DatasetRef(dataset, "hub", repo_id, revision, info.sha, None, version)


def load_rows(ref: DatasetRef, config: str, split: str, limit: int | None) -> list[dict[str, Any]]:
    """Rows of one split, in file order, from the pinned revision."""
    from datasets.utils.logging import disable_progress_bar

    from datasets import Image, load_dataset

    disable_progress_bar()
    try:
        if ref.source == "local":
            ds = load_dataset(ref.location, config, split=split)
        else:
            ds = load_dataset(ref.location, config, split=split, revision=ref.commit_sha)
    except (CultureBenchError, OSError):
        raise
    except Exception as exc:  # a damaged Parquet file, an unknown config, a schema mismatch
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise CultureBenchError(
            f"cannot read config {config!r} ({split}) of {ref.location}: {type(exc).__name__}: {first} "
            "(check the release with `culturebench validate`)"
        ) from None
    if limit is not None:
        ds = ds.select(range(min(limit, ds.num_rows)))
    if "images" in ds.features:  # keep encoded bytes; backends decode themselves
        feature = ds.features["images"]
        inner = dict(feature.feature)
        inner["image"] = Image(decode=False)
        ds = ds.cast_column("images", type(feature)(inner))
    return list(ds)


def git_sha() -> str | None:
    """Commit of the culturebench checkout running this (None outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(Path(__file__).resolve().parent), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return sha + ("-dirty" if dirty else "")


def read_samples(
    path: Path, *, run_key: str | None = None, expected_ids: set[str] | None = None
) -> list[dict[str, Any]]:
    """Samples on disk, each id once (the first line of an id wins; later duplicates are
    ignored). A torn last line (killed mid-write) is cut off the file. A corrupt line
    elsewhere, a line of another run (other ``run`` key, or an id this run never asked
    for) raise :class:`SamplesError` naming the file and line."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    keep = raw if raw.endswith(b"\n") or not raw else raw[: raw.rfind(b"\n") + 1]
    if keep != raw:
        with open(path, "r+b") as handle:
            handle.truncate(len(keep))
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line_no, line in enumerate(keep.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise SamplesError(
                f"{path}, line {line_no}: corrupt sample (not JSON: {why}); delete the line to "
                "regenerate that sample"
            ) from None
        if not isinstance(sample, dict) or not isinstance(sample.get("id"), str):
            raise SamplesError(f"{path}, line {line_no}: not a sample (no string 'id')")
        if run_key is not None and sample.get("run") != run_key:
            raise SamplesError(
                f"{path}, line {line_no}: sample {sample['id']!r} belongs to another run "
                f"(run key {sample.get('run')!r}, this run {run_key!r}); use another --out"
            )
        if expected_ids is not None and sample["id"] not in expected_ids:
            raise SamplesError(
                f"{path}, line {line_no}: sample {sample['id']!r} is not a request of this run; "
                "use another --out"
            )
        if sample["id"] in seen:
            continue
        seen.add(sample["id"])
        out.append(sample)
    return out


def _read_json_object(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise CultureBenchError(f"{path.parent} is not {what} (no {path.name})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise CultureBenchError(f"{path}: corrupt ({why})") from None
    if not isinstance(data, dict):
        raise CultureBenchError(f"{path}: corrupt (not a JSON object)")
    return data


def read_run(folder: str | Path) -> dict[str, Any]:
    """``run.json`` of a run folder; CultureBenchError when missing, corrupt or incomplete."""
    run = _read_json_object(Path(folder) / RUN, "an eval run folder")
    if not isinstance(run.get("dataset"), dict) or "dataset" not in run["dataset"] or "task" not in run:
        raise CultureBenchError(f"{Path(folder) / RUN}: incomplete (no dataset/task)")
    return run


def read_results(folder: str | Path) -> dict[str, Any]:
    """``results.json`` of a finished run; CultureBenchError when missing or malformed."""
    results = _read_json_object(Path(folder) / RESULTS, "a finished eval run")
    prov = results.get("provenance")
    if (
        not isinstance(prov, dict)
        or not isinstance(prov.get("dataset"), dict)
        or "task" not in prov
        or not isinstance(results.get("metrics"), dict)
    ):
        raise CultureBenchError(f"{Path(folder) / RESULTS}: not a culturebench results file")
    return results


def check_out_dir(out: Path) -> None:
    """Refuse an output path that is a file, a release folder, or inside a release, run or
    corpus-count folder (:func:`culturebench.outputs.check_parents`: a run would add files
    they must not hold)."""
    from culturebench.outputs import check_parents, protected_folder

    if out.exists() and not out.is_dir():
        raise CultureBenchError(f"--out {out} is a file, not a folder")
    if protected_folder(out) == "release folder":
        raise CultureBenchError(f"--out {out} is inside the release folder {out}; write runs elsewhere")
    check_parents(out, "--out")


def check_run_dir(out: Path) -> None:
    """A run folder is new, empty, or holds a run (``run.json``, then checked by
    :func:`_check_run`); a folder of anything else is refused, never written into."""
    from culturebench.outputs import clean_leftovers

    check_out_dir(out)
    clean_leftovers(out)
    if out.is_dir() and any(out.iterdir()) and not (out / RUN).is_file():
        raise RunMismatch(
            f"--out {out} holds files that are not a culturebench run (no {RUN}); refusing to write "
            "into it (give a new or empty folder)"
        )


def identity(run_info: dict[str, Any]) -> dict[str, Any]:
    """What determines a run's outputs: ``run_info`` without library versions and without the
    task options that only locate an input whose content another option pins by sha256 (so a
    copied or moved pipeline folder still resumes)."""
    info = dict(run_info)
    if isinstance(info.get("model"), dict):
        info["model"] = {k: v for k, v in info["model"].items() if k != "versions"}
    located = set(info.pop("location_options", []) or [])
    if located and isinstance(info.get("task_options"), dict):
        info["task_options"] = {k: v for k, v in info["task_options"].items() if k not in located}
    return info


def run_key(run_info: dict[str, Any]) -> str:
    """Short fingerprint of :func:`identity`; every sample line carries it so lines of
    another run are recognised."""
    return sha256_text(json.dumps(identity(run_info), sort_keys=True, ensure_ascii=False))[:16]


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
) -> dict[str, Any]:
    """Run (or resume) one evaluation and return the results dict (also on disk).
    ``seeds``: generate every request once per seed (sample ids ``<request>@<seed>``), with
    the backend's sampling seed set to it; metrics aggregate over all (item, seed) samples.
    ``task_options`` go to the task (e.g. ``{"generations": DIR, "repeats": 3}`` for ASH judge).
    A text-to-image task (``output_kind`` "image") takes an image backend and stores one PNG
    per (request, seed) under ``images/``; an :class:`AnalysisTask` takes no backend."""
    from culturebench.errors import UsageError

    task = get_task(dataset, task_name, **(task_options or {}))
    langs = list(langs or task.languages)
    unknown = [lang for lang in langs if lang not in task.languages]
    if unknown:
        raise UsageError(
            f"{dataset}/{task_name} has no prompts in {', '.join(map(repr, unknown))} "
            f"(languages: {', '.join(task.languages)})"
        )
    out = Path(out_dir)
    check_run_dir(out)
    from culturebench.outputs import writer_lock

    with writer_lock(out):  # one writer per run folder: a second run into --out stops here
        if task.needs_dataset:
            ref = resolve_dataset(dataset, revision=revision, local=local, repo=repo)
            rows = load_rows(ref, task.config, task.split, limit)
        else:
            ref = source_ref(dataset, task.source_dataset())
            rows = []
        if isinstance(task, AnalysisTask):
            return _run_analysis(task, task_name, ref, out, langs, rows, progress)
        if backend is None:
            raise UsageError(f"{dataset}/{task_name} needs a model: give --model")
        kind = getattr(backend, "output_kind", "text")
        if kind != task.output_kind:
            want = (
                "a text-to-image backend (--backend diffusers or openai-images)"
                if task.output_kind == "image"
                else "a text or vision-language backend"
            )
            raise UsageError(f"{dataset}/{task_name} needs {want}; --backend {backend.name} makes {kind}")
        requests, skipped = task.build(rows, langs)
        if not task.needs_dataset and limit is not None:
            requests = requests[:limit]
        if not requests:  # a run of nothing is not a result: say why instead of exiting 0
            why = ", ".join(f"{n} {reason}" for reason, n in skipped.items()) if skipped else "no rows"
            raise CultureBenchError(
                f"{dataset}/{task_name}: nothing to run ({len(rows)} rows, skipped: {why}); "
                "for image tasks build the release with images first (culturebench build ... --images)"
            )
        run_info = {
            **task_identity(ref, task_name, task),
            "languages": langs,
            "limit": limit,
            "model": backend.describe(),
            "prompt_sha256": task.prompt_hashes(langs),
            "requests": len(requests),
            "requests_sha256": sha256_text(
                "\n".join(r.request.id + "\t" + r.request.prompt for r in requests)
            ),
        }
        base_sampling = backend.sampling
        if seeds:
            run_info["seeds"] = list(seeds)
            run_info["sampling_per_seed"] = {
                str(s): replace(base_sampling, seed=int(s)).to_dict() for s in seeds
            }
        jobs = [(r, s) for s in seeds for r in requests] if seeds else [(r, None) for r in requests]
        resuming = _check_run(out / RUN, run_info)
        key = run_key(run_info)
        if not resuming:
            backend.load()  # a model that cannot load fails here, before run.json exists
            out.mkdir(parents=True, exist_ok=True)
            _write_json(out / RUN, run_info)

        samples_path = out / SAMPLES
        ids = {_job_id(r, s) for r, s in jobs}
        existing = read_samples(samples_path, run_key=key, expected_ids=ids)
        if task.output_kind == "image":
            check_images(out, existing)
        done = {s["id"] for s in existing}
        pending = [(r, s) for r, s in jobs if _job_id(r, s) not in done]
        if resuming and pending:
            backend.load()  # a finished run is re-aggregated without loading the model
        if progress:
            progress(len(jobs) - len(pending), len(jobs))
        _generate_pending(task, backend, out, pending, key, batch_size, progress, total=len(jobs))

        order = {_job_id(r, s): i for i, (r, s) in enumerate(jobs)}
        samples = sorted(
            read_samples(samples_path, run_key=key, expected_ids=ids),
            key=lambda s: order.get(s["id"], len(order)),
        )
        results = {
            "provenance": {
                **run_info,
                "culturebench_git": git_sha(),
                "packages": package_versions(
                    [
                        "culturebench",
                        "datasets",
                        "huggingface_hub",
                        "pyarrow",
                        "pymorphy3",
                        "babel",
                        "rapidfuzz",
                    ]
                ),
            },
            "skipped_rows": skipped,
            "samples": len(samples),
            **output_counts(samples),
            "metrics": task.aggregate(samples),
        }
        _write_json(out / RESULTS, results)
        from culturebench.eval.report import write_report

        write_report([out], out / "report.md")
        problem = task.unusable(samples)
        if problem:
            raise CultureBenchError(f"{dataset}/{task_name}: {problem}; the run's files are kept in {out}")
        return results


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
) -> None:
    """Generate the ``pending`` (request, seed) jobs in batches, seed by seed, appending each
    scored sample to ``samples.jsonl`` (fsync per batch, so a killed run resumes from the last
    batch); ``progress(done, total)`` after each batch. The backend's sampling is restored
    afterwards. A full disk names ``samples.jsonl`` and keeps what was written."""
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
                for start in range(0, len(todo), batch_size):
                    batch = todo[start : start + batch_size]
                    if task.output_kind == "image":
                        pngs = backend.generate_images([r.request for r in batch])
                        outputs = [
                            store_image(out, _job_id(r, seed), png)
                            for r, png in zip(batch, pngs, strict=True)
                        ]
                    else:
                        outputs = backend.generate([r.request for r in batch])
                    for item, output in zip(batch, outputs, strict=True):
                        extra = {"image_sha256": output[1]} if isinstance(output, tuple) else {}
                        text = output[0] if isinstance(output, tuple) else output
                        sample = {**_sample(task, item, text), **extra, "run": key, "id": _job_id(item, seed)}
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


IMAGES = "images"


def store_image(out: Path, job_id: str, png: bytes) -> tuple[str, str]:
    """Write one generated image as ``images/<safe id>-<hash>.png`` (atomically) and return
    (path relative to the run folder, sha256 of the bytes)."""
    import re

    from culturebench.atomic import write_bytes_atomic
    from culturebench.hashing import sha256_bytes

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", job_id)[:80]
    rel = f"{IMAGES}/{safe}-{sha256_text(job_id)[:8]}.png"
    write_bytes_atomic(out / rel, png)
    return rel, sha256_bytes(png)


def check_images(out: Path, samples: Sequence[dict[str, Any]]) -> None:
    """Every recorded image is on disk with the sha256 its sample line records; otherwise a
    :class:`SamplesError` naming the sample (delete its line to regenerate it)."""
    for sample in samples:
        path = out / str(sample.get("output", ""))
        if not path.is_file() or sha256_file(path) != sample.get("image_sha256"):
            raise SamplesError(
                f"{out / SAMPLES}: sample {sample['id']!r}: image {path} is missing or altered "
                "(sha256 differs from the sample line); delete that line to regenerate it"
            )


def read_input_run(
    folder: str | Path, *, dataset: str, tasks: Sequence[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(run.json, samples) of an earlier run used as a task's input: it must be a run of
    ``dataset`` with one of ``tasks`` and hold samples; images it made are checked against the
    sha256 their samples record. Errors name the folder."""
    path = Path(folder)
    run = read_run(path)
    if run["dataset"].get("dataset") != dataset or run.get("task") not in tasks:
        raise CultureBenchError(
            f"{path} is a {run['dataset'].get('dataset')}/{run.get('task')} run, not {dataset} "
            f"{' or '.join(tasks)}"
        )
    samples = read_samples(path / SAMPLES)
    if not samples:
        raise CultureBenchError(f"{path}: no samples yet ({SAMPLES} is empty)")
    if any("image_sha256" in s for s in samples):
        check_images(path, samples)
    return run, samples


def samples_sha256(folder: str | Path) -> str:
    """sha256 of a run's ``samples.jsonl``: how a later stage pins the run it read."""
    path = Path(folder) / SAMPLES
    if not path.is_file():
        raise CultureBenchError(f"{Path(folder)}: no {SAMPLES} (not a run folder, or not started)")
    return sha256_file(path)


def source_ref(dataset: str, info: dict[str, Any] | None) -> DatasetRef:
    """The dataset revision of a task's inputs (``Task.source_dataset``); a ref with source
    ``none`` when the inputs are published files outside any release."""
    if info is None:
        return DatasetRef(dataset, "none", "", None, None, None, None)
    try:
        return DatasetRef(**info)
    except TypeError:
        raise CultureBenchError(f"input run's dataset reference is malformed: {info!r}") from None


def _run_analysis(
    task: AnalysisTask,
    task_name: str,
    ref: DatasetRef,
    out: Path,
    langs: Sequence[str],
    rows: Sequence[dict[str, Any]],
    progress: Callable[[int, int], None] | None,
) -> dict[str, Any]:
    """Compute an analysis task into ``out`` (run.json, results.json, report.md and the
    task's own files). A folder holding another run is refused; the same run is recomputed
    (its inputs are pinned by hash, so the result is the same)."""
    run_info = {**task_identity(ref, task_name, task), "languages": list(langs), "inputs": task.inputs()}
    path = out / RUN
    if path.exists():
        old, new = identity(_read_json_object(path, "an eval run folder")), identity(run_info)
        keys = ("dataset", "task", "task_options", "inputs")
        diff = [k for k in keys if old.get(k) != new.get(k)]
        if diff:
            raise RunMismatch(
                f"{out} holds a different run (differs in: {', '.join(diff)}); use another --out"
            )
    out.mkdir(parents=True, exist_ok=True)
    _write_json(path, run_info)
    metrics = task.analyse(out, rows, progress)
    results = {
        "provenance": {
            **run_info,
            "culturebench_git": git_sha(),
            "packages": package_versions(["culturebench", "numpy", "transformers", "torch"]),
        },
        "skipped_rows": {},
        "samples": int(metrics.get("n", 0)) if isinstance(metrics.get("n"), int) else 0,
        "metrics": metrics,
    }
    _write_json(out / RESULTS, results)
    from culturebench.eval.report import write_report

    write_report([out], out / "report.md")
    return results


def task_identity(ref: DatasetRef, task_name: str, task: Any) -> dict[str, Any]:
    """What names a run's dataset revision and task (shared by ``eval run`` and ``eval score``)."""
    out = {
        "dataset": asdict(ref),
        "task": task_name,
        "task_options": task.task_options,
        "config": task.config,
        "split": task.split,
    }
    if getattr(task, "location_options", ()):
        out["location_options"] = list(task.location_options)
    return out


def _job_id(item: TaskRequest, seed: int | None) -> str:
    return item.request.id if seed is None else f"{item.request.id}@{seed}"


# The longest answer scored: a model that never stops (or a recorded 40 MB cell) is scored on
# its first MAX_SCORED_CHARS characters, and the sample says so (``scored_chars``). The
# papers' answers are at most a few hundred tokens (200 new tokens in BORSCH and WWD).
MAX_SCORED_CHARS = 20_000


def _sample(task, item: TaskRequest, output: Any) -> dict[str, Any]:
    """One scored sample. An output that is not text (a recorded ``["A"]`` or ``12``) is the
    model's failure: scored as the empty answer and flagged ``invalid_output`` (its JSON type),
    never read through ``str()``. A very long answer is scored on its first
    :data:`MAX_SCORED_CHARS` characters (flagged ``scored_chars``); the whole output is kept."""
    flags: dict[str, Any] = {}
    text = output
    if not isinstance(output, str):
        flags["invalid_output"] = _json_type(output)
        text = ""
    elif len(output) > MAX_SCORED_CHARS:
        flags["scored_chars"] = MAX_SCORED_CHARS
        text = output[:MAX_SCORED_CHARS]
    return {
        "id": item.request.id,
        **item.meta,
        "prompt": item.request.prompt,
        "n_images": len(item.request.images),
        "output": output,
        **flags,
        **task.score(item.meta, text),
    }


def _json_type(value: Any) -> str:
    names = {list: "array", dict: "object", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def output_counts(samples: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many outputs were not text (scored as failures) and how many were scored only in
    part (longer than :data:`MAX_SCORED_CHARS`): reported beside every run's metrics."""
    return {
        "invalid_outputs": sum("invalid_output" in s for s in samples),
        "outputs_cut_for_scoring": sum("scored_chars" in s for s in samples),
    }


def _check_run(path: Path, info: dict[str, Any]) -> bool:
    """Refuse to mix runs: everything that determines the outputs must match to resume.
    Returns whether ``path`` holds this very run (a resume)."""
    if not path.exists():
        return False
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(old, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RunMismatch(
            f"{path} is corrupt ({exc}); remove it (or the folder) or use another --out"
        ) from None
    keys = ("dataset", "task", "languages", "limit", "prompt_sha256", "requests_sha256", "seeds")
    diff = [k for k in keys if old.get(k) != info.get(k)]
    old_model = {k: v for k, v in (old.get("model") or {}).items() if k != "versions"}
    new_model = {k: v for k, v in info["model"].items() if k != "versions"}
    if old_model != new_model:
        diff.append("model")
    if diff:
        raise RunMismatch(
            f"{path.parent} holds a different run (differs in: {', '.join(diff)}); use another --out"
        )
    return True


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from culturebench.atomic import write_text_atomic

    write_text_atomic(path, json_text(data, indent=2, sort_keys=True))
