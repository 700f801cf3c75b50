"""RuBIN annotation check (the paper's Section 3.4): a chi-squared test of independence
between the period a question refers to and the age group of the annotator.

The paper tests "the historical period referenced in a question and the age group of the
respondent" (H0: a correct response is unrelated to the participant's age; p = 5.6e-10) and
plots mean accuracy per age group and year group (its Figure 4). It does not print its bins
or its contingency table, so ours are documented here:

- periods: before 1970, 1970-1989, 1990-2009, 2010 on (undated questions are left out);
- age groups: under 20 (below the paper's eligibility, counted separately), 20-29, 30-39,
  40-49, 50+;
- the table counts *correct* answers per (period, age group); an association means that
  which questions an age group gets right depends on the questions' period. The same test on
  *all* answers is reported beside it: an association there means that question assignment
  itself depended on age, which would confound the first test. A uniform age effect (one
  group better on every period) is *not* an association in this table; the accuracy table
  beside it shows such effects.

The check runs when ``human_answers.csv`` has an ``annotator_age`` column (whole years).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from culturebench.builders.tables import SourceRow
from culturebench.errors import SourceError

AGE_COLUMN = "annotator_age"
PERIODS = (
    ("before 1970", None, 1969),
    ("1970-1989", 1970, 1989),
    ("1990-2009", 1990, 2009),
    ("2010 on", 2010, None),
)
AGE_GROUPS = (("20-29", 20, 29), ("30-39", 30, 39), ("40-49", 40, 49), ("50+", 50, None))
ALPHA = 0.01  # the paper's significance threshold


def _bin(value: int, bins: tuple[tuple[str, int | None, int | None], ...]) -> str | None:
    for name, low, high in bins:
        if (low is None or value >= low) and (high is None or value <= high):
            return name
    return None


def annotator_age(rec: SourceRow) -> int | None:
    """The answer's ``annotator_age`` as an int (None when blank); SourceError otherwise."""
    raw = (rec.values.get(AGE_COLUMN) or "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or not 10 <= int(raw) <= 110:
        raise SourceError(
            rec.loc(AGE_COLUMN), f"annotator age {raw!r} is not a whole number of years in 10-110"
        )
    return int(raw)


def _chi2(table: dict[tuple[str, str], int]) -> dict[str, Any]:
    from scipy.stats import chi2_contingency

    periods = [p for p, *_ in PERIODS if any(table.get((p, a), 0) for a, *_ in AGE_GROUPS)]
    ages = [a for a, *_ in AGE_GROUPS if any(table.get((p, a), 0) for p, *_ in PERIODS)]
    if len(periods) < 2 or len(ages) < 2:
        return {"computed": False, "why": "fewer than two periods or age groups with answers"}
    observed = [[table.get((p, a), 0) for a in ages] for p in periods]
    result = chi2_contingency(observed, correction=False)
    expected = result.expected_freq
    return {
        "computed": True,
        "chi2": round(float(result.statistic), 4),
        "dof": int(result.dof),
        "p_value": float(result.pvalue),
        "independence_rejected_at_0.01": bool(result.pvalue < ALPHA),
        "cells": len(periods) * len(ages),
        "cells_expected_below_5": int((expected < 5).sum()),
    }


def age_year_check(
    answers: list[SourceRow], correct: dict[tuple[str, str], bool], years: dict[str, int | None]
) -> dict[str, Any]:
    """The test over ``answers`` (human-answers rows); ``correct`` maps (question id, annotator
    id) to whether that answer was right, ``years`` question ids to their year (kept questions
    only). Returns flat, card-friendly statistics."""
    if not answers or AGE_COLUMN not in answers[0].values:
        return {"computed": f"no: the human answers have no {AGE_COLUMN} column"}
    right: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    skipped: Counter[str] = Counter()
    for rec in answers:
        qid, who = (rec["question_id"] or "").strip(), (rec["annotator_id"] or "").strip()
        age = annotator_age(rec)
        if qid not in years:
            continue
        if age is None:
            skipped["no_age"] += 1
            continue
        year = years[qid]
        if year is None:
            skipped["undated_question"] += 1
            continue
        group = _bin(age, AGE_GROUPS)
        if group is None:
            skipped["below_20"] += 1
            continue
        period = _bin(year, PERIODS)
        assert period is not None  # PERIODS cover every year
        cell = (period, group)
        total[cell] += 1
        right[cell] += correct[(qid, who)]
    correct_test, all_test = _chi2(right), _chi2(total)
    out: dict[str, Any] = {
        "computed": "yes" if correct_test["computed"] else f"no: {correct_test['why']}",
        "answers_used": sum(total.values()),
        **{f"answers_skipped_{k}": v for k, v in sorted(skipped.items())},
    }
    if correct_test["computed"]:
        out.update({f"correct_{k}": v for k, v in correct_test.items() if k != "computed"})
    if all_test["computed"]:
        out.update({f"assignment_{k}": v for k, v in all_test.items() if k not in {"computed", "cells"}})
    out["accuracy_by_period_and_age"] = {
        f"{p} / {a}": round(right[(p, a)] / total[(p, a)], 3)
        for p, *_ in PERIODS
        for a, *_ in AGE_GROUPS
        if total[(p, a)]
    }
    return out
