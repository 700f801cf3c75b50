"""CulinaryASH validation: schema, and the full cross product (every cuisine with every dish
exactly once, 30/6/4 cuisines per category, instruction = template filled in)."""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa

from culturebench.validation.findings import Finding
from culturebench.validation.rows import iter_rows

CATEGORY_SIZES = {"regional": 30, "religious": 6, "historical": 4}
CROSS_CHECKS = ("cross:full_cross_product", "cross:instruction_text")

SCHEMAS = {
    "default": pa.DataFrameSchema(
        {
            "id": pa.Column(str, pa.Check.str_matches(r"^ash-[a-z0-9-]+$"), unique=True),
            "cuisine": pa.Column(str, pa.Check.str_length(min_value=1)),
            "cuisine_category": pa.Column(str, pa.Check.isin(sorted(CATEGORY_SIZES))),
            "base_dish": pa.Column(str, pa.Check.str_length(min_value=1)),
            "instruction": pa.Column(str, pa.Check.str_length(min_value=20)),
        },
        unique=["cuisine", "base_dish"],
        strict=True,
        ordered=True,
        name="ash/default",
    )
}


def cross_checks(frames: dict[str, pd.DataFrame]) -> list[Finding]:
    out: list[Finding] = []
    df = frames["default"]
    dishes = sorted(set(df["base_dish"]))
    per_cuisine = df.groupby("cuisine")["base_dish"].nunique()
    for cuisine, n in per_cuisine.items():
        if n != len(dishes):
            out.append(
                Finding(
                    "cross:full_cross_product",
                    f"{cuisine}: {n} of {len(dishes)} base dishes",
                    config="default",
                    field="base_dish",
                )
            )
    categories = df.groupby("cuisine")["cuisine_category"].agg(lambda s: sorted(set(s)))
    for cuisine, cats in categories.items():
        if len(cats) != 1:
            out.append(
                Finding("cross:full_cross_product", f"{cuisine} in categories {cats}", config="default")
            )
    sizes = df.drop_duplicates("cuisine")["cuisine_category"].value_counts().to_dict()
    if sizes != CATEGORY_SIZES:
        out.append(
            Finding(
                "cross:full_cross_product",
                f"cuisines per category {sizes}, the paper has {CATEGORY_SIZES}",
                config="default",
                field="cuisine_category",
            )
        )
    for index, row in iter_rows(df):
        if (
            f"{row['cuisine']} cuisine" not in row["instruction"]
            or f"Dish: {row['base_dish']}." not in row["instruction"]
        ):
            out.append(
                Finding(
                    "cross:instruction_text",
                    "instruction does not name its cuisine and dish",
                    config="default",
                    row=int(index),
                    row_id=row["id"],
                    field="instruction",
                )
            )
    return out
