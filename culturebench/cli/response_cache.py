"""``culturebench cache``: the response cache shared across runs
(:mod:`culturebench.eval.response_cache`): what it holds, and bounding its size."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

import typer

from culturebench.cli.options import finite_number
from culturebench.cli.output import console

cache_app = typer.Typer(
    help="The response cache shared across runs: `info` shows it, `prune` bounds it.", no_args_is_help=True
)


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


MAX_SIZE = 10**15  # 1 PB: far above what one SQLite file holds; more is a typo


def _size(text: str) -> int:
    """``500MB``, ``2GB``, ``1.5G``, ``800k`` or a number of bytes: a finite size from 0 to
    :data:`MAX_SIZE`."""
    import math

    from culturebench.errors import UsageError

    units = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15}
    raw = text.strip().lower().removesuffix("b").removesuffix("i")
    try:
        value = float(raw[:-1]) * units[raw[-1]] if raw and raw[-1] in units else float(raw)
    except (ValueError, OverflowError):
        raise UsageError(f"--max-size {text!r}: a size such as 500MB or 2GB") from None
    if not value >= 0:
        raise UsageError(f"--max-size {text!r}: a size of 0 or more")
    if not math.isfinite(value) or value > MAX_SIZE:
        raise UsageError(f"--max-size {text!r}: a finite size of at most 1PB (e.g. 500MB or 2GB)")
    return int(value)


def _cache():
    from culturebench.errors import UsageError
    from culturebench.eval.response_cache import ENV, open_cache

    cache = open_cache()
    if cache is None:
        raise UsageError(f"the response cache is off (${ENV}=off)")
    return cache


@cache_app.command("info")
def cache_info_cmd() -> None:
    """Where the cache is, how many answers it holds, of how many models, and its size."""
    stats = _cache().stats()
    console.print(f"response cache: {stats.path}")
    console.print(
        f"{stats.entries:,} answers of {stats.models:,} models, {stats.bytes / 1e6:.1f} MB; "
        f"used {_when(stats.oldest)} .. {_when(stats.newest)}"
    )


@cache_app.command("prune")
def cache_prune_cmd(
    max_size: Annotated[
        str | None,
        typer.Option(help="Drop the least recently used answers until the cache is at most this size."),
    ] = None,
    older_than_days: Annotated[
        float | None,
        typer.Option(min=0, callback=finite_number, help="Drop answers not used for this many days."),
    ] = None,
) -> None:
    """Bound the cache: by age of last use, then by size (least recently used first)."""
    from culturebench.errors import UsageError

    if max_size is None and older_than_days is None:
        raise UsageError("give --max-size and/or --older-than-days")
    limit = _size(max_size) if max_size is not None else None
    cache = _cache()
    age = older_than_days * 86400 if older_than_days is not None else None
    dropped = cache.prune(max_bytes=limit, older_than_s=age)
    stats = cache.stats()
    console.print(
        f"dropped {dropped:,} answers; {stats.entries:,} left, {stats.bytes / 1e6:.1f} MB ({stats.path})"
    )
