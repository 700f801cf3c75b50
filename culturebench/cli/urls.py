"""``culturebench check-urls``: every external URL of a release, checked on a schedule."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from culturebench.cli.commands import CommandSet
from culturebench.cli.errors import on_stop
from culturebench.cli.options import finite_number
from culturebench.cli.output import (
    console,
    err_console,
)
from culturebench.cli.progress import progress_bar

commands = CommandSet()


@commands.command("check-urls")
def check_urls_cmd(
    target: Annotated[
        str, typer.Argument(help="Release folder, dataset name (latest in --dist), or hub:ORG/NAME[@REV].")
    ],
    sample: Annotated[int | None, typer.Option(min=1, help="Check a random sample of N URLs.")] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0, help="Seed of --sample (default: the ISO week, e.g. 2026-W48 -> 202648; printed)."
        ),
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Report folder (default url-reports/<dataset>).")
    ] = None,
    history: Annotated[
        Path | None, typer.Option(help="History file (default <report>/history.json).")
    ] = None,
    dist: Annotated[Path, typer.Option(help="Root of release folders.")] = Path("dist"),
    allow: Annotated[
        list[str] | None, typer.Option(help="Private address/network to allow (e.g. 127.0.0.1).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, max=1024, help="Requests in flight overall.")] = 16,
    per_host: Annotated[int, typer.Option(min=1, max=64, help="Requests in flight per host.")] = 2,
    delay: Annotated[
        float,
        typer.Option(
            min=0.0, max=3600.0, callback=finite_number, help="Seconds between request starts to one host."
        ),
    ] = 0.5,
    timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            max=3600.0,
            callback=finite_number,
            help="Per-request timeout in seconds (also bounds each name resolution).",
        ),
    ] = 15.0,
    retries: Annotated[int, typer.Option(min=0, max=20, help="Retries on 5xx/429/timeouts.")] = 3,
    backoff: Annotated[
        float,
        typer.Option(
            min=0.0, max=600.0, callback=finite_number, help="First retry delay in seconds (doubles)."
        ),
    ] = 1.0,
) -> None:
    """Check every external URL of a release; exit 1 if anything is newly broken, 6 if the
    network itself looks down (nothing recorded). SIGTERM or Ctrl-C stops it within seconds,
    writing nothing."""
    from culturebench.release.locate import locate_release
    from culturebench.safe_http import parse_allow
    from culturebench.urlcheck import CheckConfig
    from culturebench.urlcheck.run import EXIT_NETWORK_DOWN, EXIT_NEWLY_BROKEN, check_release, week_seed

    parse_allow(allow or ())  # a bad --allow fails before any work
    folder = locate_release(target, dist)
    config = CheckConfig(
        timeout_s=timeout,
        retries=retries,
        backoff_s=backoff,
        concurrency=concurrency,
        per_host=per_host,
        per_host_delay_s=delay,
        allow=tuple(allow or ()),
    )
    if sample is not None:
        seed = week_seed() if seed is None else seed
        console.print(f"sample: {sample} URLs drawn with seed {seed} (`--seed {seed}` draws the same)")
    stopped = "no report written, the history is unchanged"
    with on_stop("check-urls", stopped), progress_bar() as bar:
        job = bar.add_task(f"checking {folder}", total=None)
        outcome = check_release(
            folder,
            config,
            report_dir=report,
            history_path=history,
            sample=sample,
            seed=seed,
            progress=lambda done, total: bar.update(job, completed=done, total=total),
        )
    summary, diff = outcome.summary, outcome.diff
    counts = ", ".join(f"{n} {status}" for status, n in summary["by_status"].items()) or "nothing"
    problems = ", ".join(f"{p} {n}" for p, n in summary["by_problem"].items()) or "none"
    console.print(f"checked {summary['checked']} URLs: {counts}; problems: {problems}")
    where = outcome.report_dir / "summary.md"
    if outcome.network_down:
        down = outcome.network_down
        err_console.print(
            f"[red]network looks down:[/] {down['unreachable_hosts']} of {down['hosts']} hosts failed "
            f"name resolution or connection and no URL answered; nothing recorded in the history "
            f"(exit {EXIT_NETWORK_DOWN}); report: {escape(str(where))}",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_NETWORK_DOWN)
    console.print(
        f"newly broken {len(diff.newly_broken)}, newly fixed {len(diff.newly_fixed)}, "
        f"still broken {len(diff.still_broken)}; report: {where} (every row: {where.parent / 'broken.csv'})"
    )
    if diff.newly_broken:
        raise typer.Exit(EXIT_NEWLY_BROKEN)
