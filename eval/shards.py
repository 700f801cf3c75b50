"""Shards of one run: ``eval run --shard K/N`` generates the K-th of N parts of a run, and
``eval merge`` puts the N finished parts together into the folder one process would have
written, byte for byte.

A shard is cut by the sampled unit: the dish, the question (a request's ``row_id``), so every
prompt, template, language and seed of one unit lands in one shard and a bootstrap over units
never straddles shards. Units are dealt round-robin in the order the task builds them (unit
``i`` goes to shard ``i mod N + 1``): the partition depends only on the run's requests, which
``run.json`` pins by sha256, so any scheduler (a Slurm array, a Kubernetes job, a shell loop,
one process per GPU) can run the shards in any order, on any machine, and kill and resume
them.

A shard's folder is a valid run folder: ``run.json`` is the whole run's (same identity, same
request hash) plus ``shard`` (which part it is, never part of the identity, so its sample
lines are the ones the whole run writes), ``samples.jsonl`` holds its part, ``results.json``
aggregates its part and says ``"shard": "K/N"``; ``shard.json`` lists where each of its
generations stands in the whole run, which is all ``eval merge`` needs besides the samples.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import UsageError
from culturebench.eval.records import ShardPart

SHARD_FILE = "shard.json"


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"K/N"`` (1 <= K <= N) -> Shard; a one-line UsageError otherwise."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
        if not match:
            raise UsageError(f"--shard {text!r}: expected K/N, e.g. 2/4 (the second of four shards)")
        index, count = int(match.group(1)), int(match.group(2))
        if count < 1 or not 1 <= index <= count:
            raise UsageError(f"--shard {text!r}: K must be between 1 and N (shards are numbered 1..N)")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def to_dict(self) -> ShardPart:
        return {"index": self.index, "count": self.count}


def unit_of(item: Any) -> str:
    """The sampled unit of a task request: its row (dish, question), else the request itself."""
    return str(item.meta.get("row_id", item.request.id))


def check_count(shard: Shard, units: int, where: str = "the run") -> None:
    """Refuse a split into more shards than ``units`` (``where``: what has them, e.g. "the
    run", "cell 'country'"): some shards would have nothing to do, and a split with an empty
    part can never be merged. One line naming the units and the largest accepted count."""
    if shard.count > units:
        idle = shard.count - units
        raise UsageError(
            f"--shard {shard}: {shard.count} shards would leave {idle} with nothing to do ({where} has "
            f"{units} unit{'s' if units != 1 else ''}: dishes or questions); use at most {units} "
            f"shard{'s' if units != 1 else ''} (--shard K/{units} or fewer)"
        )


def shard_jobs(jobs: Sequence[tuple[Any, Any]], shard: Shard) -> tuple[list[tuple[Any, Any]], list[int]]:
    """The (request, seed) jobs of ``shard`` and their positions in ``jobs``: units dealt
    round-robin in the order they first appear. A split into more shards than the jobs have
    units is refused (:func:`check_count`), whichever part ``shard`` is."""
    order: dict[str, int] = {}
    for item, _seed in jobs:
        order.setdefault(unit_of(item), len(order))
    check_count(shard, len(order))
    kept, positions = [], []
    for position, job in enumerate(jobs):
        if order[unit_of(job[0])] % shard.count == shard.index - 1:
            kept.append(job)
            positions.append(position)
    return kept, positions


def write_shard_file(
    out: Path, shard: Shard, ids: Sequence[str], positions: Sequence[int], total: int
) -> None:
    """``shard.json``: this shard's generation ids and their positions among the whole run's
    ``total`` generations (derived from the requests; rewritten on every start and resume)."""
    from culturebench.eval.run_folder import write_json

    write_json(
        out / SHARD_FILE,
        {"shard": str(shard), "total": total, "positions": dict(zip(ids, positions, strict=True))},
    )
