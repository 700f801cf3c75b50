"""World Wide Dishes commands: ``culturebench eval wwd-community-review``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli_support import console, or_exit


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("wwd-community-review")(community_review_cmd)
    eval_app.command("wwd-clip-descriptors")(clip_descriptors_cmd)


def community_review_cmd(
    reviews: Annotated[
        Path, typer.Argument(help="Community_Review_Generated_Dish_Images.csv (upstream data/).")
    ],
    out: Annotated[Path, typer.Option(help="Folder for table2.csv, table3.csv, comparison.csv.")] = Path(
        "runs/wwd_community_review"
    ),
) -> None:
    """Tables 2 and 3 of the paper from the published community reviews, compared cell by cell."""
    from culturebench.cards.paper import load_paper
    from culturebench.datasets.wwd.community_review import (
        compare_with_paper,
        read_reviews,
        tables,
        write_outputs,
    )
    from culturebench.spec import load_spec

    rows, dropped = or_exit(lambda: read_reviews(reviews))
    ours = tables(rows)
    comparison = compare_with_paper(ours, load_paper(load_spec("wwd"))["community_review"])
    for path in write_outputs(ours, comparison, out):
        console.print(f"wrote {path}")
    equal = sum(r["equal"] for r in comparison)
    console.print(
        f"{len(rows)} reviews ({dropped} without a model left out); "
        f"{equal} of {len(comparison)} printed cells reproduced exactly"
    )


def clip_descriptors_cmd(
    folder: Annotated[
        Path, typer.Argument(help="clip_probing folder: config.ini, descriptors_embeddings.csv, continents/.")
    ],
    out: Annotated[Path, typer.Option(help="Folder for descriptor_scores.csv and the plot.")] = Path(
        "runs/wwd_clip_descriptors"
    ),
    literal: Annotated[
        bool,
        typer.Option(help="Use the net-score formula exactly as printed (S+ - S-, see the module docs)."),
    ] = False,
) -> None:
    """App. G.1: weighted cosine descriptor scores per continent x model from CLIP embeddings."""
    from culturebench.datasets.wwd.clip_descriptors import scores, write_scores

    rows = or_exit(lambda: scores(folder, literal=literal))
    for path in write_scores(rows, out):
        console.print(f"wrote {path}")
    for row in rows:
        console.print(
            f"{row['continent']:14s} {row['model']:7s} {row['mean']:+.3f} ± {row['sem']:.3f} (n={row['n']})"
        )
