"""World Wide Dishes commands: ``culturebench eval wwd-community-review``. (App. G.1 CLIP
descriptor scores are the ``clip-descriptors`` task of ``culturebench eval run``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli.output import console


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("wwd-community-review")(community_review_cmd)


#: the ``eval paper wwd`` item this command repeats (paper.yaml ``items``); its comparison.csv
#: holds the cells of Tables 2 and 3 (item Table 3 shows the table3 rows)
ITEM = "Table 2"


def community_review_cmd(
    reviews: Annotated[
        Path, typer.Argument(help="Community_Review_Generated_Dish_Images.csv (upstream data/).")
    ],
    out: Annotated[Path, typer.Option(help="Folder for table2.csv, table3.csv, comparison.csv.")] = Path(
        "out/runs/wwd_community_review"
    ),
    overwrite: Annotated[bool, typer.Option(help="Replace earlier tables at --out.")] = False,
) -> None:
    """Tables 2 and 3 of the paper from the published community reviews, compared cell by cell.
    Items Table 2 and Table 3 of `culturebench eval paper wwd --input reviews=CSV`, written as
    CSV tables."""
    from culturebench.datasets.wwd.community_review import write_outputs
    from culturebench.eval.paper_report import run_item
    from culturebench.outputs import OutputKind, check_output, staged_output

    kind = OutputKind("wwd-community-review", ("table2.csv", "comparison.csv"))
    check_output(out, kind, overwrite=overwrite)  # before reading anything

    def job() -> tuple[dict, list[Path]]:
        with staged_output(out, kind, overwrite=overwrite) as staged:
            _item, ctx = run_item("wwd", ITEM, staged, inputs={"reviews": reviews})
            data = ctx.data["community_review"]
            names = [p.name for p in write_outputs(data["tables"], data["comparison"], staged)]
        return data, [out / name for name in names]

    data, paths = job()
    console.print("items Table 2 and Table 3 of `culturebench eval paper wwd`")
    for path in paths:
        console.print(f"wrote {path}")
    comparison = data["comparison"]
    equal = sum(r["equal"] for r in comparison)
    console.print(
        f"{data['reviews']} reviews ({data['without_model']} without a model left out); "
        f"{equal} of {len(comparison)} printed cells reproduced exactly"
    )
