"""Validation of the toy dataset: a pandera schema and one cross-row rule."""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa

from culturebench.validation.findings import Finding

SCHEMAS = {
    "default": pa.DataFrameSchema(
        {
            "id": pa.Column(str, pa.Check.str_startswith("toy-"), unique=True),
            "country": pa.Column(str),
            "capital": pa.Column(str),
        },
        strict=True,
        name="toy/default",
    )
}
CROSS_CHECKS = ("cross:one_capital_per_country",)


def cross_checks(frames: dict[str, pd.DataFrame]) -> list[Finding]:
    frame = frames["default"]
    dupes = frame[frame["country"].duplicated()]
    return [
        Finding("cross:one_capital_per_country", f"{country} listed twice", config="default", field="country")
        for country in dupes["country"]
    ]
