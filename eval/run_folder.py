"""A run folder, read and written in one place: ``run.json`` (what the run is: its
identity), ``samples.jsonl`` (one scored sample per line, appended as they arrive),
``results.json`` (metrics and provenance), ``images/`` of text-to-image runs; the checks that
keep two runs from mixing in one folder, and earlier runs read as a later task's input. Where
a folder may be written at all (markers, locks, refusals) is :mod:`culturebench.outputs`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from culturebench.errors import CultureBenchError
from culturebench.eval.dataset_ref import DatasetRef
from culturebench.eval.records import OutputCounts, Results, RunInfo, Sample
from culturebench.hashing import sha256_file, sha256_text
from culturebench.jsonsafe import json_text

SAMPLES = "samples.jsonl"
RUN = "run.json"
RESULTS = "results.json"
# what a run records of its model that does not determine the outputs: library versions and
# the speed-only engine options (parallel sizes, batch size, ...), free to change on resume
SPEED_ONLY = ("versions", "runtime")


class RunMismatch(CultureBenchError):
    """The output folder holds a different run (other dataset revision, model, prompts...)."""


class SamplesError(CultureBenchError):
    """``samples.jsonl`` has a corrupt line, or lines that belong to another run."""


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
) -> list[Sample]:
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

    def corrupt(why: str, _last: bool) -> str:
        return f"corrupt sample (not JSON: {why}); delete the line to regenerate that sample"

    def of_this_run(sample: Sample) -> str | None:
        if run_key is not None and sample.get("run") != run_key:
            return (
                f"sample {sample['id']!r} belongs to another run (run key {sample.get('run')!r}, "
                f"this run {run_key!r}); use another --out"
            )
        if expected_ids is not None and sample["id"] not in expected_ids:
            return f"sample {sample['id']!r} is not a request of this run; use another --out"
        return None

    text = keep.decode("utf-8", errors="replace")
    return parse_sample_lines(text, str(path), SamplesError, not_json=corrupt, check=of_this_run)


def parse_sample_lines(
    text: str,
    where: str,
    error: type[Exception],
    *,
    not_json: Callable[[str, bool], str],
    check: Callable[[Sample], str | None] | None = None,
) -> list[Sample]:
    """The samples of a ``samples.jsonl`` text, each id once (the first line of an id wins).
    Lines are split at ``\\n`` only: ``str.splitlines()`` also splits at U+2028, U+0085 ...,
    which a model's answer may hold and ``json_text`` writes raw. A line that is not JSON
    raises ``error`` with ``not_json(why, is_last_line)``; one that is not an object
    with a string ``id``, or that ``check`` refuses (its message), raises ``error`` too,
    each naming ``where`` and the line."""
    lines = text.split("\n")
    out: list[Sample] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except (ValueError, RecursionError) as exc:  # ValueError: also a number of 4,301+ digits
            if isinstance(exc, json.JSONDecodeError):
                why = exc.msg
            else:
                why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
            raise error(f"{where}, line {number}: {not_json(why, number == len(lines))}") from None
        if not isinstance(sample, dict) or not isinstance(sample.get("id"), str):
            raise error(f"{where}, line {number}: not a sample (no string 'id')")
        problem = check(cast(Sample, sample)) if check else None
        if problem:
            raise error(f"{where}, line {number}: {problem}")
        if sample["id"] not in seen:
            seen.add(sample["id"])
            out.append(cast(Sample, sample))
    return out


def read_run_samples(folder: Path) -> list[Sample]:
    """A finished run's ``samples.jsonl``, read without changing it: each id once (the first
    line of an id wins, as the run's own reader has it). A line that is not JSON is an error
    naming the file and the line; a last line cut short (no newline, not JSON) says the file
    was truncated."""
    path = Path(folder) / SAMPLES
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise CultureBenchError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise CultureBenchError(f"{path}, line {line}: not UTF-8 text") from None

    def cut_or_not_json(why: str, last: bool) -> str:
        if last:  # the last line, without its newline
            return (
                f"truncated (the last line is cut short: {why}); the run's samples are incomplete: "
                "resume or re-run it"
            )
        return f"not a JSON sample ({why})"

    return parse_sample_lines(text, str(path), CultureBenchError, not_json=cut_or_not_json)


def read_json_object(path: Path, what: str) -> dict[str, Any]:
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


def read_run(folder: str | Path) -> RunInfo:
    """``run.json`` of a run folder; CultureBenchError when missing, corrupt or incomplete."""
    data = read_json_object(Path(folder) / RUN, "an eval run folder")
    if not isinstance(data.get("dataset"), dict) or "dataset" not in data["dataset"] or "task" not in data:
        raise CultureBenchError(f"{Path(folder) / RUN}: incomplete (no dataset/task)")
    run = cast(RunInfo, data)
    run["task"] = _current_name(run["dataset"]["dataset"], run["task"])
    return run


def read_results(folder: str | Path) -> Results:
    """``results.json`` of a finished run; CultureBenchError when missing or malformed."""
    data = read_json_object(Path(folder) / RESULTS, "a finished eval run")
    prov = data.get("provenance")
    if (
        not isinstance(prov, dict)
        or not isinstance(prov.get("dataset"), dict)
        or "task" not in prov
        or not isinstance(data.get("metrics"), dict)
    ):
        raise CultureBenchError(f"{Path(folder) / RESULTS}: not a culturebench results file")
    prov["task"] = _current_name(prov["dataset"].get("dataset"), prov["task"])
    return cast(Results, data)


def _current_name(dataset: Any, task: Any) -> Any:
    """A run recorded under a task's old name reads as the task's current name."""
    from culturebench.eval.tasks import canonical_name

    return canonical_name(dataset, task) if isinstance(dataset, str) and isinstance(task, str) else task


def holds_work(folder: Path, records: Collection[str]) -> bool:
    """Whether ``folder`` (a run folder, or a reproduction of several) holds anything a resume
    would keep: an answer (a non-empty ``samples.jsonl``), or any file besides the ``records``
    its command writes at the start (``run.json``, ``shard.json``, ...), e.g. a submitted
    batch's ``batches.json`` or an image."""
    for path in Path(folder).rglob("*"):
        if path.is_dir() and not path.is_symlink():
            continue
        if path.name in records or (path.name == SAMPLES and path.is_file() and not path.stat().st_size):
            continue
        return True
    return False


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


def identity(run_info: Mapping[str, Any]) -> dict[str, Any]:
    """What determines a run's outputs: ``run_info`` without its coverage (what it measured,
    :mod:`culturebench.eval.coverage`), without library versions and without the
    task options that only locate an input whose content another option pins by sha256 (so a
    copied or moved pipeline folder still resumes)."""
    # a part of a run is the run; the coverage describes the run, it does not determine it (nor
    # did the response cache's hits, which run.json recorded before issue 53: such a run resumes)
    # nor does the schema version the folder's records are written in
    info = {k: v for k, v in run_info.items() if k not in ("shard", "coverage", "cache", "schema_version")}
    if isinstance(info.get("model"), dict):
        info["model"] = {k: v for k, v in info["model"].items() if k not in SPEED_ONLY}
    located = set(info.pop("location_options", []) or [])
    if located and isinstance(info.get("task_options"), dict):
        info["task_options"] = {k: v for k, v in info["task_options"].items() if k not in located}
    return info


def without_part(run_info: RunInfo) -> RunInfo:
    """``run_info`` without what describes this folder's part of the run (``shard``, and the
    ``coverage`` measured on it): the run's provenance in ``results.json``."""
    return cast(RunInfo, {k: v for k, v in run_info.items() if k not in ("shard", "coverage")})


def run_key(run_info: Mapping[str, Any]) -> str:
    """Short fingerprint of :func:`identity`; every sample line carries it so lines of
    another run are recognised."""
    return sha256_text(json.dumps(identity(run_info), sort_keys=True, ensure_ascii=False))[:16]


IMAGES = "images"


def keep_thumbnails(out: Path, images: Sequence[bytes]) -> list[str]:
    """Thumbnails of a prompt's images, kept in the run folder as ``thumbs/<sha256>.jpg`` (once
    per image content; a file already there is the same bytes) so that a viewer draws a sample
    without the dataset: the sample's ``images``, paths relative to the folder. An image that
    does not decode has no thumbnail."""
    from culturebench.atomic import write_bytes_atomic
    from culturebench.eval.records import THUMBS
    from culturebench.hashing import sha256_bytes
    from culturebench.images.thumbnail import thumbnail_jpeg

    kept = []
    for data in images:
        rel = f"{THUMBS}/{sha256_bytes(data)[:20]}.jpg"
        if not (out / rel).is_file():
            jpeg = thumbnail_jpeg(data)
            if jpeg is None:
                continue
            write_bytes_atomic(out / rel, jpeg)
        kept.append(rel)
    return kept


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


def check_images(out: Path, samples: Sequence[Sample]) -> None:
    """Every recorded image is on disk with the sha256 its sample line records; otherwise a
    :class:`SamplesError` naming the sample (delete its line to regenerate it)."""
    for sample in samples:
        path = out / str(sample.get("output", ""))
        if not path.is_file() or sha256_file(path) != sample.get("image_sha256"):
            raise SamplesError(
                f"{out / SAMPLES}: sample {sample['id']!r}: image {path} is missing or altered "
                "(sha256 differs from the sample line); delete that line to regenerate it"
            )


def read_input_run(folder: str | Path, *, dataset: str, tasks: Sequence[str]) -> tuple[RunInfo, list[Sample]]:
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


def task_identity(ref: DatasetRef, task_name: str, task: Any) -> RunInfo:
    """What names a run's dataset revision and task (shared by ``eval run`` and ``eval score``),
    with the schema version its records are written in."""
    from culturebench.eval.records import SCHEMA_VERSION

    out: RunInfo = {
        "schema_version": SCHEMA_VERSION,
        "dataset": ref.to_pin(),
        "task": task_name,
        "task_options": task.task_options,
        "config": task.config,
        "split": task.split,
    }
    if task.location_options:
        out["location_options"] = list(task.location_options)
    return out


def output_counts(samples: Sequence[Sample]) -> OutputCounts:
    """How many outputs were not text (scored as failures) and how many were scored only in
    part (longer than :data:`MAX_SCORED_CHARS`): reported beside every run's metrics."""
    return {
        "invalid_outputs": sum("invalid_output" in s for s in samples),
        "outputs_cut_for_scoring": sum("scored_chars" in s for s in samples),
    }


def check_run(path: Path, info: Mapping[str, Any]) -> bool:
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
    keys = ("dataset", "task", "languages", "limit", "limit_rows", "prompt_sha256", "requests_sha256",
            "seeds", "model")  # fmt: skip
    old_id, new_id = identity(old), identity(info)  # the model without versions and runtime
    diff = [k for k in keys if old_id.get(k) != new_id.get(k)]
    if diff:
        raise RunMismatch(
            f"{path.parent} holds a different run (differs in: {', '.join(diff)}); use another --out"
        )
    check_shard(old, info, path.parent)  # the same part of it (a shard, or the whole run)
    return True


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """A run record, refused (nothing written) when it would hold a credential."""
    from culturebench.atomic import write_text_atomic
    from culturebench.secrets import refuse_credentials

    text = json_text(data, indent=2, sort_keys=True)
    refuse_credentials(path, text, formats=True)
    write_text_atomic(path, text)


def describe_shard(shard: Any) -> str:
    return f"{shard['index']}/{shard['count']}" if isinstance(shard, dict) else "?"


def check_shard(old: Mapping[str, Any], new: Mapping[str, Any], folder: Path) -> None:
    """A folder resumes only as the part it is: the same shard, or the whole run."""
    before, now = old.get("shard"), new.get("shard")
    if before == now:
        return
    if before is None:
        raise RunMismatch(
            f"{folder} holds this run unsharded; resume it without --shard, or give another --out "
            f"for shard {describe_shard(now)}"
        )
    hint = f"give --shard {describe_shard(before)} to resume it" + (
        "" if now is None else f", or another --out for shard {describe_shard(now)}"
    )
    raise RunMismatch(f"{folder} holds shard {describe_shard(before)} of this run; {hint}")
