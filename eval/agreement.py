"""Agreement statistics the papers name: Cohen's kappa between two raters, Fleiss' kappa among
several, and Krippendorff's alpha (interval level, through the ``krippendorff`` package)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def cohen_kappa(a: list[Any], b: list[Any]) -> float | None:
    """Cohen's kappa of two raters' categorical ratings of the same items (unweighted, as
    "traditional kappa" in the paper); None when undefined (no items, or chance agreement 1)."""
    from collections import Counter

    if not a or len(a) != len(b):
        return None
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def fleiss_kappa(items: list[list[Any]], categories: Iterable[Any] = (1, 2, 3, 4, 5)) -> float | None:
    """Fleiss' kappa over items each rated by the same number of raters (>= 2); None when
    undefined."""
    cats = list(categories)
    items = [i for i in items if len(i) >= 2]
    if not items or len({len(i) for i in items}) != 1:
        return None
    raters = len(items[0])
    n = len(items)
    counts = [[row.count(c) for c in cats] for row in items]
    p_j = [sum(row[j] for row in counts) / (n * raters) for j in range(len(cats))]
    p_i = [(sum(x * x for x in row) - raters) / (raters * (raters - 1)) for row in counts]
    p_bar, p_e = sum(p_i) / n, sum(p * p for p in p_j)
    return None if p_e == 1 else (p_bar - p_e) / (1 - p_e)


def interval_alpha(units: dict[Any, dict[Any, float]], coders: Sequence[Any]) -> float | None:
    """Krippendorff's alpha (interval level) of ``coders`` over ``units`` (unit -> coder ->
    value; a missing value is left out). None with fewer than two coders or units; 1.0 when
    every value is the same (perfect agreement; the formula itself is undefined there)."""
    import krippendorff
    import numpy as np

    if len(coders) < 2 or len(units) < 2:
        return None
    data = np.array([[u.get(c, np.nan) for u in units.values()] for c in coders], dtype=float)
    values = data[~np.isnan(data)]
    if len(set(values.tolist())) < 2:
        return 1.0 if len(values) else None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
