"""CulinaryASH commands: ``culturebench eval ash-summary``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli.output import console


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("ash-summary")(eval_ash_summary_cmd)


#: the ``eval paper ash`` item this command repeats (paper.yaml ``items``)
ITEM = "Figure 1"


def eval_ash_summary_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Folders of ash judge runs (generator x judge).")],
    out: Annotated[Path, typer.Option(help="Folder for ash_summary.json and the heatmaps.")] = Path(
        "out/runs/ash_summary"
    ),
    overwrite: Annotated[bool, typer.Option(help="Replace an earlier summary at --out.")] = False,
) -> None:
    """CulinaryASH: generator x judge means/SDs (heatmap PNGs), top/bottom cuisines, agreement.
    Item Figure 1 of `culturebench eval paper ash`, written on its own."""
    from culturebench.eval.paper_report import Run, run_item
    from culturebench.outputs import OutputKind, staged_output

    def job():
        kind = OutputKind("ash-summary", ("ash_summary.json",))
        with staged_output(out, kind, overwrite=overwrite) as staged:
            # the item reads the folders itself, strictly (datasets/ash/summary.py)
            _item, ctx = run_item("ash", ITEM, staged, runs=[Run.unread(f, "judge") for f in runs])
            return ctx.data["ash_summary"]

    result = job()
    console.print(f"item {ITEM} of `culturebench eval paper ash`")
    for criterion, block in result["criteria"].items():
        console.print(f"{criterion}: alpha (interval, all judges) = {block['alpha_interval_all_judges']}")
    console.print(f"wrote {out / 'ash_summary.json'} and {len(result['criteria'])} heatmaps")
