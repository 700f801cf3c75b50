"""Where per-shard tasks run: on a Dask distributed cluster (a scheduler address), or on this
machine with Dask's own schedulers (one process: synchronous; more: a local process pool).
The task function is the same either way; each task writes its own part file, so a retried
task never adds to a result twice."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def run_tasks(
    function: Callable[..., Any],
    items: Sequence[Any],
    *,
    kwargs: dict[str, Any],
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """``function(item, **kwargs)`` for every item (results are the part files it writes)."""
    total = len(items)
    if progress:
        progress(0, total)
    if scheduler:
        from distributed import Client, as_completed

        with Client(scheduler, timeout="30s") as client:
            futures = [client.submit(function, item, **kwargs, pure=False, retries=2) for item in items]
            for done, future in enumerate(as_completed(futures), start=1):
                future.result()  # a task that failed every retry raises here, with its error
                if progress:
                    progress(done, total)
        return
    import dask

    # the arguments go in a partial and the keys are given: otherwise dask walks and hashes
    # every argument (the whole spec, per task) to name it, ~15 ms a task
    name = getattr(function, "__name__", "task")
    bound = dask.delayed(functools.partial(function, **kwargs), name=name)
    tasks = [bound(item, dask_key_name=f"{name}-{i}") for i, item in enumerate(items)]
    if workers <= 1:
        for done, task in enumerate(tasks, start=1):
            task.compute(scheduler="synchronous")
            if progress:
                progress(done, total)
        return
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor

    # fork where there is one: spawn would re-import the caller's __main__ (a notebook,
    # stdin), which a worker cannot always do; the workers only run the task function
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        dask.compute(*tasks, scheduler="processes", pool=pool)
    if progress:
        progress(total, total)


def part_path(parts_dir: str | Path, shard_id: str) -> Path:
    """Where a shard's part file lives."""
    return Path(parts_dir) / f"{shard_id}.json"


def has_part(path: Path, shard_id: str, digest: str) -> bool:
    """Whether ``path`` is a complete part of this shard made with these inputs (a torn or
    foreign part is recomputed)."""
    if not path.is_file():
        return False
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return old.get("spec") == digest and old.get("shard") == shard_id


def write_part(path: Path, part: dict[str, Any]) -> str:
    """Write a part file atomically; its path."""
    from culturebench.atomic import write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(part, ensure_ascii=False) + "\n")
    return str(path)
