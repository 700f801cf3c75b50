"""Where per-shard tasks run: on a Dask distributed cluster (a scheduler address), or on this
machine with Dask's own schedulers (one process: synchronous; more: a local process pool).
The task function is the same either way; each task writes its own part file, so a retried
task never adds to a result twice. A scheduler address is checked before any work (HOST:PORT
or tcp://HOST:PORT), and a cluster that cannot be reached or a worker process that died is a
one-line error."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# distributed's address schemes a scheduler address may carry (inproc:// is in-process only)
SCHEDULER_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")
_ADDRESS = re.compile(
    r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]@]+)"
    r":(?P<port>[0-9]{1,5})/?$"
)


def check_scheduler(address: str, option: str = "--scheduler") -> str:
    """``address`` when it is a Dask scheduler address (``HOST:PORT`` or ``tcp://HOST:PORT``,
    also tls://, ucx://, ws://, wss://); a one-line UsageError otherwise."""
    from culturebench.errors import UsageError
    from culturebench.safe_http import redact

    match = _ADDRESS.match(address.strip())
    scheme = (match["scheme"] or "tcp").lower() if match else None
    if match is None or scheme not in SCHEDULER_SCHEMES or not 1 <= int(match["port"]) <= 65535:
        raise UsageError(
            f"{option} {redact(address)!r}: expected a Dask scheduler address HOST:PORT or "
            "tcp://HOST:PORT (e.g. tcp://127.0.0.1:8786)"
        )
    return address.strip()


# The running task's progress within its item (bytes read), while the synchronous engine runs
# it in this process; tasks in other processes count per finished item.
_IN_TASK: list[Callable[[int], None]] = []


def report(done: int) -> None:
    """Called by a task as it reads its item: how far it is (bytes). Only the synchronous
    engine listens; elsewhere it does nothing."""
    if _IN_TASK:
        _IN_TASK[-1](done)


def _within_item(progress: Callable[[int, int], None], base: int, cap: int, total: int, done: int) -> None:
    """``progress`` for ``done`` units of the running item (``cap`` of them, after ``base``)."""
    progress(base + min(max(done, 0), cap), total)


def run_tasks(
    function: Callable[..., Any],
    items: Sequence[Any],
    *,
    kwargs: dict[str, Any],
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    sizes: Sequence[int] | None = None,
) -> None:
    """``function(item, **kwargs)`` for every item (results are the part files it writes).
    ``progress(done, total)`` counts items, or bytes when ``sizes`` (of the items) are given:
    per finished item, and within an item on the synchronous engine. Local process workers
    are never more than the items."""
    weights = [max(int(s), 1) for s in sizes] if sizes is not None else [1] * len(items)
    total = sum(weights)
    finished = 0

    def done_item(index: int) -> None:
        nonlocal finished
        finished += weights[index]
        if progress:
            progress(finished, total)

    if progress:
        progress(0, total)
    if scheduler:
        _run_on_cluster(function, items, kwargs, check_scheduler(scheduler), done_item)
        return
    import dask

    # the arguments go in a partial and the keys are given: otherwise dask walks and hashes
    # every argument (the whole spec, per task) to name it, ~15 ms a task
    name = getattr(function, "__name__", "task")
    bound = dask.delayed(functools.partial(function, **kwargs), name=name)
    keys = [f"{name}-{i}" for i in range(len(items))]
    tasks = [bound(item, dask_key_name=key) for item, key in zip(items, keys, strict=True)]
    if workers <= 1 or len(items) <= 1:
        for index, task in enumerate(tasks):
            if progress:
                base, cap = finished, weights[index]
                _IN_TASK.append(functools.partial(_within_item, progress, base, cap, total))
            try:
                task.compute(scheduler="synchronous")
            finally:
                if progress:
                    _IN_TASK.pop()
            done_item(index)
        return
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from dask.callbacks import Callback

    from culturebench.errors import CultureBenchError

    index_of = {key: i for i, key in enumerate(keys)}

    def posttask(key, *_: object) -> None:  # runs here, in the scheduling thread
        if key in index_of:
            done_item(index_of[key])

    # fork where there is one: spawn would re-import the caller's __main__ (a notebook,
    # stdin), which a worker cannot always do; the workers only run the task function
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    try:
        with (
            ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=context) as pool,
            Callback(posttask=posttask),
        ):
            dask.compute(*tasks, scheduler="processes", pool=pool)
    except BrokenProcessPool:
        raise CultureBenchError(
            "a worker process died (killed, or out of memory?); rerun (finished shards are "
            "kept) with fewer --workers"
        ) from None


def _run_on_cluster(
    function: Callable[..., Any],
    items: Sequence[Any],
    kwargs: dict[str, Any],
    scheduler: str,
    done_item: Callable[[int], None],
) -> None:
    """The tasks on a Dask distributed cluster; a scheduler that cannot be reached, or a task
    that failed on every try for a reason of the cluster's (a worker lost), is one line."""
    from culturebench.errors import CultureBenchError
    from culturebench.safe_http import redact

    try:
        from distributed import Client, as_completed
    except ImportError:
        raise CultureBenchError(
            "--scheduler needs Dask distributed (pip install 'dask[distributed]', or the corpus extra)"
        ) from None
    from distributed import KilledWorker

    try:
        client = Client(scheduler, timeout="30s")
    except (OSError, TimeoutError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CultureBenchError(f"--scheduler {redact(scheduler)}: cannot connect ({first})") from None
    with client:
        futures = {
            client.submit(function, item, **kwargs, pure=False, retries=2): i for i, item in enumerate(items)
        }
        for future in as_completed(futures):
            try:
                future.result()  # a task that failed every retry raises here, with its error
            except (KilledWorker, OSError) as exc:
                item = items[futures[future]]
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                raise CultureBenchError(
                    f"--scheduler {redact(scheduler)}: the task for {getattr(item, 'url', item)} "
                    f"failed on the cluster ({type(exc).__name__}: {first})"
                ) from None
            done_item(futures[future])


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
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(old, dict) and old.get("spec") == digest and old.get("shard") == shard_id


def write_part(path: Path, part: dict[str, Any]) -> str:
    """Write a part file atomically; its path."""
    from culturebench.atomic import write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(part, ensure_ascii=False) + "\n")
    return str(path)
