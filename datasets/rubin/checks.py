"""RuBIN validation: the paper's integrity filters as checks on the released rows, and the
RuBIN-EASY rule.

Per row: exactly four options, none empty, no two equal (case/ё/space folded), all in
Cyrillic; label 0-3 and ``answer == options[label]``; decade agrees with year; human counts
consistent. Across configs: ``easy`` is exactly the ``full`` rows with human accuracy >= 0.5.
Label positions are reported (a warning when one slot holds over 40% of the answers, as
position bias then inflates or deflates scores).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

import pandas as pd
import pandera.pandas as pa

from culturebench.choice_labels import LETTERS
from culturebench.datasets.rubin.builder import EASY_THRESHOLD, decade
from culturebench.datasets.rubin.filters import option_problems
from culturebench.validation.findings import Finding
from culturebench.validation.pandera_utils import each
from culturebench.validation.rows import iter_rows

POSITION_SHARE_WARNING = 0.4
CROSS_CHECKS = (
    "cross:option_integrity",
    "cross:answer_matches_label",
    "cross:decade_matches_year",
    "cross:easy_is_human_filter",
    "cross:label_positions",
)


def _four_strings(v: object) -> bool:
    return isinstance(v, Collection) and len(v) == 4 and all(isinstance(x, str) for x in v)


def schema(name: str) -> pa.DataFrameSchema:
    return pa.DataFrameSchema(
        {
            "id": pa.Column(str, pa.Check.str_length(min_value=1), unique=True),
            "question": pa.Column(str, pa.Check.str_length(min_value=1)),
            "options": pa.Column(object, each(_four_strings, "four_options", "exactly four string options")),
            "label": pa.Column(int, pa.Check.isin([0, 1, 2, 3])),
            "answer": pa.Column(str, pa.Check.str_length(min_value=1)),
            "category": pa.Column(str, pa.Check.str_length(min_value=1)),
            "year": pa.Column(float, pa.Check.in_range(1700, 2100), nullable=True, coerce=True),
            "decade": pa.Column(str, pa.Check.str_matches(r"^\d{3}0s$"), nullable=True),
            "human_annotators": pa.Column(int, pa.Check.ge(0)),
            "human_correct": pa.Column(int, pa.Check.ge(0)),
            "human_accuracy": pa.Column(float, pa.Check.in_range(0, 1), nullable=True),
        },
        checks=[
            pa.Check(
                lambda df: df["human_correct"] <= df["human_annotators"],
                name="human_correct_le_annotators",
                error="more correct answers than annotators",
            )
        ],
        strict=True,
        ordered=True,
        name=f"rubin/{name}",
    )


SCHEMAS = {"full": schema("full"), "easy": schema("easy")}


def _row_findings(config: str, df: pd.DataFrame) -> list[Finding]:
    out = []
    for index, row in iter_rows(df):
        options = list(row["options"])
        where = {"config": config, "row": int(index), "row_id": row["id"]}
        for _code, message in option_problems(options):
            out.append(Finding("cross:option_integrity", message, field="options", **where))
        label = int(row["label"])
        if 0 <= label < len(options) and options[label] != row["answer"]:
            out.append(
                Finding(
                    "cross:answer_matches_label",
                    f"answer {row['answer']!r} is not option {LETTERS[label]} ({options[label]!r})",
                    field="answer",
                    **where,
                )
            )
        year = None if pd.isna(row["year"]) else int(row["year"])
        dec = None if pd.isna(row["decade"]) else row["decade"]
        if dec != decade(year):
            out.append(
                Finding(
                    "cross:decade_matches_year", f"decade {dec!r} != year {year!r}", field="decade", **where
                )
            )
        n, correct, acc = row["human_annotators"], row["human_correct"], row["human_accuracy"]
        expected = correct / n if n else None
        if (expected is None) != pd.isna(acc) or (expected is not None and abs(expected - acc) > 1e-6):
            out.append(
                Finding(
                    "cross:easy_is_human_filter",
                    f"human_accuracy {acc!r} != {correct}/{n}",
                    field="human_accuracy",
                    **where,
                )
            )
    return out


def cross_checks(frames: dict[str, pd.DataFrame]) -> list[Finding]:
    full, easy = frames["full"], frames["easy"]
    out = _row_findings("full", full) + _row_findings("easy", easy)
    keep = full[full["human_accuracy"].fillna(-1) >= EASY_THRESHOLD]
    expected, got = list(keep["id"]), list(easy["id"])
    if expected != got:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        out.append(
            Finding(
                "cross:easy_is_human_filter",
                f"easy must be the full rows with human accuracy >= {EASY_THRESHOLD} in full order: "
                f"{len(missing)} missing (e.g. {missing[:3]}), {len(extra)} extra (e.g. {extra[:3]})",
                config="easy",
            )
        )
    positions = Counter(LETTERS[int(v)] for v in full["label"])
    total = sum(positions.values())
    if total:
        share = {k: positions.get(k, 0) / total for k in LETTERS}
        worst = max(share, key=share.__getitem__)
        if share[worst] > POSITION_SHARE_WARNING:
            out.append(
                Finding(
                    "cross:label_positions",
                    "correct answers are unbalanced across slots: "
                    + ", ".join(f"{k} {positions.get(k, 0)}" for k in LETTERS)
                    + f" ({worst} holds {share[worst]:.0%})",
                    severity="warning",
                    config="full",
                    field="label",
                )
            )
    return out
