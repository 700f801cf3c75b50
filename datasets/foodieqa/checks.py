"""FoodieQA validation: per-config schemas (four options or four images, label 0-3, English
required on the image tasks) and cross-field rules (text QA English given in full or not at
all; ids carry their task prefix; every image has bytes)."""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa

from culturebench.validation.findings import Finding
from culturebench.validation.pandera_utils import each
from culturebench.validation.rows import iter_rows

CROSS_CHECKS = ("cross:english_complete", "cross:images_present")
PREFIX = {"multi_image": "mivqa-", "single_image": "sivqa-", "text": "textqa-"}


def _n_strings(n: int):
    return lambda v: hasattr(v, "__len__") and len(v) == n and all(isinstance(x, str) and x for x in v)


def _n_images(n: int):
    return lambda v: hasattr(v, "__len__") and len(v) == n and all(isinstance(x, dict) for x in v)


def _columns(config: str) -> dict[str, pa.Column]:
    text = pa.Column(str, pa.Check.str_length(min_value=1))
    optional = pa.Column(str, nullable=True)
    cols = {
        "id": pa.Column(str, pa.Check.str_startswith(PREFIX[config]), unique=True),
        "question": text,
    }
    if config == "multi_image":
        cols |= {
            "question_en": text,
            "question_type": optional,
            "label": pa.Column(int, pa.Check.isin([0, 1, 2, 3])),
            "images": pa.Column(object, each(_n_images(4), "four_images", "exactly four images")),
        }
        return cols
    four = each(_n_strings(4), "four_choices", "exactly four non-empty choices")
    cols["choices"] = pa.Column(object, four)
    if config == "single_image":
        cols |= {
            "question_en": text,
            "choices_en": pa.Column(object, four),
            "question_type": optional,
            "food_name": optional,
            "food_type": optional,
            "food_location": optional,
            "label": pa.Column(int, pa.Check.isin([0, 1, 2, 3])),
            "images": pa.Column(object, each(_n_images(1), "one_image", "exactly one image")),
        }
        return cols
    cols |= {
        "question_en": optional,
        "choices_en": pa.Column(object, nullable=True),
        "question_type": optional,
        "food_name": optional,
        "cuisine_type": optional,
        "label": pa.Column(int, pa.Check.isin([0, 1, 2, 3])),
    }
    return cols


SCHEMAS = {
    name: pa.DataFrameSchema(_columns(name), strict=True, ordered=True, name=f"foodieqa/{name}")
    for name in PREFIX
}


def cross_checks(frames: dict[str, pd.DataFrame]) -> list[Finding]:
    out: list[Finding] = []
    for index, row in iter_rows(frames["text"]):
        has_q = isinstance(row["question_en"], str)
        choices = row["choices_en"]
        has_c = choices is not None and not (isinstance(choices, float) and pd.isna(choices))
        if has_q != has_c or (has_c and not _n_strings(4)(list(choices))):
            out.append(
                Finding(
                    "cross:english_complete",
                    "English must be given in full (question_en and four choices_en) or not at all",
                    config="text",
                    row=int(index),
                    row_id=row["id"],
                    field="choices_en",
                )
            )
    for config in ("multi_image", "single_image"):
        for index, row in iter_rows(frames[config]):
            for i, record in enumerate(row["images"]):
                image = record.get("image") if isinstance(record, dict) else None
                if not isinstance(image, dict) or not image.get("bytes"):
                    name = record.get("file") if isinstance(record, dict) else "?"
                    out.append(
                        Finding(
                            "cross:images_present",
                            f"image {i} ({name}) has no bytes",
                            config=config,
                            row=int(index),
                            row_id=row["id"],
                            field="images",
                        )
                    )
    return out
