"""``eval merge``: the N finished shards of one run (:mod:`culturebench.eval.shards`) joined
into the folder one process would have written, byte for byte: the same identity in every
shard, every part 1..N once, every generation of the whole run exactly once, samples in the
whole run's order, aggregated by the same code that finishes ``eval run``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.records import Results, RunInfo, Sample
from culturebench.eval.run_folder import describe_shard as _describe
from culturebench.eval.shards import SHARD_FILE


class MergeError(CultureBenchError):
    """Shards that do not make up one whole run."""


def _read_shard(folder: Path) -> tuple[RunInfo, dict[str, Any], dict[str, Any]]:
    """(run.json, results.json, shard.json) of a finished shard; errors name the folder."""
    from culturebench.eval.run_folder import RESULTS, read_json_object, read_run

    run = read_run(folder)
    if not isinstance(run.get("shard"), dict):
        raise MergeError(
            f"{folder}: not a shard (its run.json names no shard); merge the folders of `--shard K/N` runs"
        )
    if not (folder / RESULTS).is_file():
        raise MergeError(
            f"{folder}: shard {_describe(run['shard'])} is not finished (no {RESULTS}); rerun its "
            "`eval run ... --shard` command to resume it"
        )
    table = read_json_object(folder / SHARD_FILE, "a shard folder")
    if not isinstance(table.get("positions"), dict) or not isinstance(table.get("total"), int):
        raise MergeError(f"{folder / SHARD_FILE}: corrupt (no positions/total)")
    return run, read_json_object(folder / RESULTS, "a finished shard"), table


def merge_shards(folders: Sequence[str | Path], out: str | Path) -> Results:
    """Merge the finished shards of one run into ``out`` (new or empty): the same identity in
    every shard, every part 1..N once, every generation of the whole run exactly once. Writes
    ``run.json``, ``samples.jsonl`` (in the whole run's order), ``results.json`` and
    ``report.md`` (and ``images/`` of a text-to-image run, ``thumbs/`` of a run whose prompts
    held images) as one process writes them, staged
    and renamed into place; returns the results."""
    import os
    import shutil

    from culturebench.atomic import publish_dir, staging_dir
    from culturebench.eval.run_folder import (
        RUN,
        SAMPLES,
        check_images,
        check_run_dir,
        identity,
        read_samples,
        run_key,
        write_json,
    )
    from culturebench.jsonsafe import json_text
    from culturebench.outputs import writer_lock

    paths = [Path(f) for f in folders]
    if not paths:
        raise UsageError("eval merge: give the shard folders")
    out = Path(out)
    check_merge_out(out, paths)
    shards = [(path, *_read_shard(path)) for path in paths]
    first_path, first_run = shards[0][0], shards[0][1]
    # the one-process run.json (without the cache hits a shard recorded before issue 53)
    whole = cast(RunInfo, {k: v for k, v in first_run.items() if k not in ("shard", "cache")})
    want = identity(first_run)
    by_index: dict[int, Path] = {}
    count = first_run["shard"]["count"]
    for path, run, _results, _table in shards:
        got = identity(run)  # the identity of a shard is the whole run's
        if got != want:
            diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
            raise MergeError(
                f"{path} is a shard of another run than {first_path} (differs in: {', '.join(diff)})"
            )
        index = run["shard"]["index"]
        if run["shard"]["count"] != count:
            raise MergeError(f"{path} is shard {_describe(run['shard'])}, {first_path} one of {count}")
        if index in by_index:
            raise MergeError(f"shard {index}/{count} is given twice: {by_index[index]} and {path}")
        by_index[index] = path
    missing = [str(i) for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise MergeError(f"missing shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {count}")
    total = shards[0][3]["total"]
    key = run_key(whole)
    placed: dict[int, tuple[Sample, Path]] = {}  # position in the run -> (sample, its shard)
    for path, run, _results, table in shards:
        positions = table["positions"]
        samples = read_samples(path / SAMPLES, run_key=key, expected_ids=set(positions))
        if len(samples) != len(positions):
            raise MergeError(
                f"{path}: shard {_describe(run['shard'])} has {len(samples)} of its {len(positions)} "
                "samples; rerun it to resume"
            )
        if table["total"] != total:
            raise MergeError(
                f"{path / SHARD_FILE}: {table['total']} generations in the run, {first_path}: {total}"
            )
        if any("image_sha256" in s for s in samples):
            check_images(path, samples)
        for sample in samples:
            position = positions[sample["id"]]
            if position in placed:
                raise MergeError(f"{path}: sample {sample['id']!r} is also in another shard")
            placed[position] = (sample, path)
    if len(placed) != total or set(placed) != set(range(total)):
        raise MergeError(f"the shards hold {len(placed)} of the run's {total} generations")
    check_run_dir(out)
    check_merge_out(out, paths)  # again: unchanged while the shards were read?
    skipped = shards[0][2].get("skipped_rows", {})
    ordered = [placed[i] for i in range(total)]
    for sample, _ in ordered:  # a shard written before issue 53 flagged its cache's answers
        cast(dict[str, Any], sample).pop("cached", None)
    with writer_lock(out), staging_dir(out) as staged:
        write_json(staged / RUN, whole)
        with open(staged / SAMPLES, "w", encoding="utf-8") as handle:
            for sample, source in ordered:
                # the images it made, and the thumbnails of its prompt's images
                made = [str(sample["output"])] if "image_sha256" in sample else []
                for rel in [*made, *(sample.get("images") or [])]:
                    target = staged / rel
                    if not target.is_file():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(source / rel, target)
                handle.write(json_text(sample, sort_keys=True))
            handle.flush()
            os.fsync(handle.fileno())
        results = _finish(whole, staged, [sample for sample, _ in ordered], skipped)
        if out.is_dir():
            out.rmdir()  # empty (checked above); the staged folder takes its place
        publish_dir(staged, out)
    return results


def check_merge_out(out: Path, inputs: Sequence[Path] = (), flag: str = "--out") -> None:
    """The merged folder must be new or empty, and writable: never a file or link, a release or
    run folder, a folder holding anything (the user's files, an earlier merge), a folder inside a
    release or run or inside one of the ``inputs`` (the shard folders), or a read-only folder.
    One line each; called before anything is read or written."""
    from culturebench.outputs import (
        OutputRefused,
        check_folder_path,
        check_parents,
        check_writable,
        kind_of,
        protected_folder,
    )

    out = check_folder_path(out, flag)
    check_parents(out, flag)
    where = out.resolve()
    for given in inputs:
        if given.is_dir() and (where == given.resolve() or given.resolve() in where.parents):
            raise OutputRefused(
                f"{flag} {out} is inside the shard folder {given}; merge into a folder outside the "
                "shards (nothing was written)"
            )
    if out.is_dir() and any(out.iterdir()):
        what = protected_folder(out)
        found = kind_of(out)
        held = (
            f"it is a {what}"
            if what
            else f"it holds a {found} output"
            if found
            else "it holds files culturebench did not write"
        )
        raise OutputRefused(
            f"{flag} {out} is not empty ({held}); merge into a new or empty folder (nothing was written)"
        )
    check_writable(out, flag)


def _finish(run_info: RunInfo, out: Path, samples: list[Sample], skipped: dict[str, int]) -> Results:
    """Aggregate the merged samples exactly as ``eval run`` finishes a run."""
    from culturebench.eval.runner import finish_run
    from culturebench.eval.tasks import get_task

    task = get_task(run_info["dataset"]["dataset"], run_info["task"], **(run_info.get("task_options") or {}))
    return finish_run(task, out, run_info, samples, skipped)


def merge_reproductions(folders: Sequence[str | Path], out: str | Path) -> list[str]:
    """Merge the shard folders of one ``eval reproduce --shard K/N`` cell by cell into ``out``
    (new or empty; it becomes a reproduction folder whose cells are whole runs); returns the
    merged cell names. Every record is checked first, and the whole merge is staged beside
    ``out`` and renamed into place at the end: a cell that does not merge leaves nothing behind
    (no merged cell, no ``reproduce.json``), so the same command works once it is fixed."""
    from culturebench.eval.grid import load_grid
    from culturebench.eval.reproduce import REPRODUCE, REPRODUCTION, read_record, record_text
    from culturebench.eval.run_folder import write_json
    from culturebench.outputs import staged_output

    paths = [Path(f) for f in folders]
    if not paths:
        raise UsageError("eval merge: give the shard folders")
    out = Path(out)
    check_merge_out(out, paths)
    records = []
    for folder in paths:
        record = read_record(folder, strict=True)
        if record is None:
            raise MergeError(f"{folder}: not a reproduction folder (no {REPRODUCE})")
        records.append((folder, record))
    datasets = list(dict.fromkeys(str(r["dataset"]) for _, r in records))
    if len(datasets) != 1:
        raise MergeError(f"the reproduction folders are of different datasets ({', '.join(datasets)})")
    grid = load_grid(datasets[0])
    cells = list(dict.fromkeys(c for _, r in records for c in r["cells"]))
    for folder, record in records:
        unknown = [c for c in record["cells"] if c not in grid.names]
        if unknown:
            raise MergeError(
                f"{folder / REPRODUCE}: {unknown[0]!r} is not a cell of the {datasets[0]} grid "
                f"(cells: {', '.join(grid.names)})"
            )
        lacking = [c for c in cells if c not in record["cells"]]
        if lacking:
            raise MergeError(f"{folder} has no cell {lacking[0]!r} (run that shard with the same cells)")
    first = records[0][1]
    with staged_output(out, REPRODUCTION, overwrite=False, dataset=datasets[0]) as staged:
        for cell in cells:
            merge_shards([folder / cell for folder, _ in records], staged / cell)
        write_json(staged / REPRODUCE, record_text(datasets[0], first.get("model"), cells, None))
    return cells
