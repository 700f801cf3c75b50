"""Agreement between two paired score lists (scipy): Pearson r, Spearman rho, Kendall tau and
Lin's concordance correlation coefficient, each with the number of pairs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def lin_ccc(x: Sequence[float], y: Sequence[float]) -> float:
    """Lin's concordance correlation coefficient: 2 cov(x, y) / (var x + var y + (mean x -
    mean y)^2), population moments (ddof 0), as Lin (1989) defines it. NaN when undefined."""
    import numpy as np

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size < 2:
        return float("nan")
    covariance = float(((a - a.mean()) * (b - b.mean())).mean())
    denominator = float(a.var() + b.var() + (a.mean() - b.mean()) ** 2)
    return 2 * covariance / denominator if denominator > 0 else float("nan")


def correlations(x: Sequence[float], y: Sequence[float], *, lin: bool = False) -> dict[str, Any]:
    """``{"n", "pearson", "spearman", "kendall"[, "lin_ccc"]}``; a coefficient that is
    undefined (fewer than 3 pairs, or a constant list) is None, never a made-up number."""
    from scipy import stats

    if len(x) != len(y):
        raise ValueError(f"{len(x)} x values for {len(y)} y values")
    out: dict[str, Any] = {"n": len(x)}
    constant = len(set(x)) < 2 or len(set(y)) < 2
    for name, fn in (
        ("pearson", stats.pearsonr),
        ("spearman", stats.spearmanr),
        ("kendall", stats.kendalltau),
    ):
        out[name] = None if len(x) < 3 or constant else _finite(fn(x, y)[0])
    if lin:
        out["lin_ccc"] = None if len(x) < 3 else _finite(lin_ccc(x, y))
    return out


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
