"""World Wide Dishes commands: ``culturebench eval wwd-community-review``. (App. G.1 CLIP
descriptor scores are the ``clip-descriptors`` task of ``culturebench eval run``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli_support import console, or_exit


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("wwd-community-review")(community_review_cmd)


def community_review_cmd(
    reviews: Annotated[
        Path, typer.Argument(help="Community_Review_Generated_Dish_Images.csv (upstream data/).")
    ],
    out: Annotated[Path, typer.Option(help="Folder for table2.csv, table3.csv, comparison.csv.")] = Path(
        "out/runs/wwd_community_review"
    ),
    overwrite: Annotated[bool, typer.Option(help="Replace earlier tables at --out.")] = False,
) -> None:
    """Tables 2 and 3 of the paper from the published community reviews, compared cell by cell."""
    from culturebench.cards.paper import load_paper
    from culturebench.datasets.wwd.community_review import (
        compare_with_paper,
        read_reviews,
        tables,
        write_outputs,
    )
    from culturebench.outputs import OutputKind, check_output, staged_output
    from culturebench.spec import load_spec

    kind = OutputKind("wwd-community-review", ("table2.csv", "comparison.csv"))
    or_exit(lambda: check_output(out, kind, overwrite=overwrite))  # before reading anything
    rows, dropped = or_exit(lambda: read_reviews(reviews))
    ours = tables(rows)
    comparison = compare_with_paper(ours, load_paper(load_spec("wwd"))["community_review"])

    def write() -> list[Path]:
        with staged_output(out, kind, overwrite=overwrite) as staged:
            names = [p.name for p in write_outputs(ours, comparison, staged)]
        return [out / name for name in names]

    for path in or_exit(write):
        console.print(f"wrote {path}")
    equal = sum(r["equal"] for r in comparison)
    console.print(
        f"{len(rows)} reviews ({dropped} without a model left out); "
        f"{equal} of {len(comparison)} printed cells reproduced exactly"
    )
