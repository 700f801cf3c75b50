"""``culturebench site``: a static results site from run folders, reproductions, ``eval
paper`` outputs, release folders and URL-check reports (:mod:`culturebench.site`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli.commands import CommandSet
from culturebench.cli.options import deprecated_alias
from culturebench.cli.output import console
from culturebench.cli.progress import steps

commands = CommandSet()


@commands.command("site")
@deprecated_alias("--to-space", "to")
def site_cmd(
    folders: Annotated[
        list[Path],
        typer.Argument(
            help="Run, reproduction, `eval paper`, release or URL-check folders, or folders holding them."
        ),
    ],
    out: Annotated[
        Path, typer.Option(help="The site's folder (new, or an earlier site with --overwrite).")
    ] = Path("out/site"),
    overwrite: Annotated[bool, typer.Option(help="Replace an earlier site in --out.")] = False,
    serve: Annotated[
        bool,
        typer.Option(help="Then serve it on 127.0.0.1 until Ctrl-C (a preview; the files need no server)."),
    ] = False,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port for --serve (0: a free one).")] = 8000,
    to: Annotated[
        str | None,
        typer.Option("--to", help="Then publish it as a static Hugging Face Space ORG/NAME (one commit)."),
    ] = None,
    private: Annotated[bool, typer.Option(help="With --to: create the Space private.")] = False,
) -> None:
    """Build a static site: a leaderboard (ours beside the papers' printed rows), a page per
    run (metrics by language, maps or bars by country or region, confusion matrices), every
    sample with filters and search, comparisons of runs of one task, the papers' items, and a
    review of each release (images and licences, near-duplicates, findings, broken links).
    Opens from disk; needs no server and no network."""
    from culturebench.site.build import build_site

    with steps("building the site") as step:
        summary = build_site(folders, out, overwrite=overwrite, progress=step)
    console.print(
        f"site: {summary.runs} runs ({summary.samples:,} samples), {summary.compares} comparisons, "
        f"{summary.papers} paper reports, {summary.releases} releases -> {out}/index.html "
        f"({summary.files} files, {summary.bytes / 1e6:.1f} MB)"
    )
    for line in summary.passed_over:
        console.print(f"not shown: {line}")
    if to:
        from culturebench.site.space import publish_space

        url = publish_space(out, to, private=private)
        console.print(f"published: {url}")
    if serve:
        from culturebench.site.serve import serve_site

        serve_site(out, port, announce=lambda url: console.print(f"serving {url} (Ctrl-C stops)"))
