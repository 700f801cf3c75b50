"""``eval merge``: the N finished shards of one run (:mod:`culturebench.eval.shards`) joined
into the folder one process would have written, byte for byte: the same identity in every
shard, every part 1..N once, every generation of the whole run exactly once, samples in the
whole run's order, aggregated by the same code that finishes ``eval run``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.run_folder import describe_shard as _describe
from culturebench.eval.shards import SHARD_FILE


class MergeError(CultureBenchError):
    """Shards that do not make up one whole run."""


def _read_shard(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
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


def merge_shards(folders: Sequence[str | Path], out: str | Path) -> dict[str, Any]:
    """Merge the finished shards of one run into ``out`` (new or empty): the same identity in
    every shard, every part 1..N once, every generation of the whole run exactly once. Writes
    ``run.json``, ``samples.jsonl`` (in the whole run's order), ``results.json`` and
    ``report.md`` (and ``images/`` of a text-to-image run) as one process writes them, staged
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
    shards = [(path, *_read_shard(path)) for path in paths]
    first_path, first_run = shards[0][0], shards[0][1]
    whole = {k: v for k, v in first_run.items() if k != "shard"}  # the one-process run.json
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
    placed: dict[int, dict[str, Any]] = {}
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
            placed[position] = {**sample, "_from": path}
    if len(placed) != total or set(placed) != set(range(total)):
        raise MergeError(f"the shards hold {len(placed)} of the run's {total} generations")
    out = Path(out)
    check_run_dir(out)
    if out.is_dir() and any(out.iterdir()):
        raise MergeError(f"--out {out} is not empty; merge into a new folder")
    skipped = shards[0][2].get("skipped_rows", {})
    with writer_lock(out), staging_dir(out) as staged:
        write_json(staged / RUN, whole)
        ordered = [placed[i] for i in range(total)]
        with open(staged / SAMPLES, "w", encoding="utf-8") as handle:
            for sample in ordered:
                source = sample.pop("_from")
                if "image_sha256" in sample:
                    target = staged / str(sample["output"])
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source / str(sample["output"]), target)
                handle.write(json_text(sample, sort_keys=True))
            handle.flush()
            os.fsync(handle.fileno())
        results = _finish(whole, staged, ordered, skipped)
        if out.is_dir():
            out.rmdir()  # empty (checked above); the staged folder takes its place
        publish_dir(staged, out)
    return results


def _finish(
    run_info: dict[str, Any], out: Path, samples: list[dict[str, Any]], skipped: dict[str, int]
) -> dict[str, Any]:
    """Aggregate the merged samples exactly as ``eval run`` finishes a run."""
    from culturebench.eval.runner import finish_run
    from culturebench.eval.tasks import get_task

    task = get_task(run_info["dataset"]["dataset"], run_info["task"], **(run_info.get("task_options") or {}))
    return finish_run(task, out, run_info, samples, skipped)


def merge_reproductions(folders: Sequence[str | Path], out: str | Path) -> list[str]:
    """Merge the shard folders of one ``eval reproduce --shard K/N`` cell by cell into ``out``
    (a reproduction folder whose cells are whole runs); returns the merged cell names."""
    from culturebench.eval.reproduce import read_record, write_record

    records = [(Path(f), read_record(Path(f)) or {}) for f in folders]
    datasets = {r.get("dataset") for _, r in records}
    if len(datasets) != 1:
        raise MergeError(
            f"the reproduction folders are of different datasets ({', '.join(map(str, datasets))})"
        )
    cells = list(dict.fromkeys(c for _, r in records for c in r["cells"]))
    for folder, record in records:
        lacking = [c for c in cells if c not in record["cells"]]
        if lacking:
            raise MergeError(f"{folder} has no cell {lacking[0]!r} (run that shard with the same cells)")
    out = Path(out)
    for cell in cells:
        merge_shards([folder / cell for folder, _ in records], out / cell)
    first = records[0][1]
    write_record(out, str(first["dataset"]), first.get("model"), cells, None)
    return cells
