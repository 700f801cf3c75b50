"""Metrics of the BORSCH paper: set overlap (Jaccard, Dice, Overlap), exact match within
one Levenshtein edit, multi-label confusion matrices, and 95% intervals that are honest at
small n (:func:`mean_interval`).

How an interval is chosen (every report and ``eval compare`` use these rules):

- a rate (every value 0 or 1): the Wilson score interval (:func:`wilson_interval`) with n the
  number of units (dishes, questions). Where a unit holds several values (five prompts of one
  dish, five seeds), counting units instead of values is conservative: the prompts of a dish
  move together;
- another mean, at :data:`MIN_BOOTSTRAP_UNITS` units or more: the percentile bootstrap over units;
- another mean of values in [0, 1] (Jaccard, IoU) at fewer units: the Wilson bound, the
  Wilson interval of the mean at n units. A variable in [0, 1] with mean p has variance at most
  p(1 - p), so this interval is at least as wide as the binomial one: conservative, never of
  zero width;
- otherwise no interval (the bounds are None, written ``null``; reports say "n < 30").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# the fewest units (dishes, questions) a percentile bootstrap is used at; below it, a bounded
# mean gets the Wilson bound and any other mean no interval
MIN_BOOTSTRAP_UNITS = 30
WILSON = "wilson"  # a rate: the Wilson score interval over units
WILSON_BOUND = "wilson-bound"  # a mean of values in [0, 1] at few units: the conservative Wilson bound
BOOTSTRAP = "bootstrap"  # the percentile bootstrap over units
NO_INTERVAL = "none"  # too few units for a bootstrap, values not bounded in [0, 1]
INTERVAL_RULES = (
    "95% intervals: a rate (scores 0 or 1) the Wilson score interval over units (dishes, questions); "
    f"another mean the percentile bootstrap over units at {MIN_BOOTSTRAP_UNITS} units or more, below "
    "that the conservative Wilson bound for values in [0, 1] and no interval otherwise"
)


def jaccard(gold: Iterable[str], pred: Iterable[str]) -> float:
    """|G ∩ P| / |G ∪ P|; 1.0 when both are empty."""
    g, p = set(gold), set(pred)
    union = g | p
    return len(g & p) / len(union) if union else 1.0


def dice(gold: Iterable[str], pred: Iterable[str]) -> float:
    """2|G ∩ P| / (|G| + |P|); 1.0 when both are empty."""
    g, p = set(gold), set(pred)
    total = len(g) + len(p)
    return 2 * len(g & p) / total if total else 1.0


def overlap(gold: Iterable[str], pred: Iterable[str]) -> float:
    """Overlap (Szymkiewicz-Simpson) coefficient |G ∩ P| / min(|G|, |P|); 0.0 when one is empty
    and the other is not, 1.0 when both are empty."""
    g, p = set(gold), set(pred)
    if not g and not p:
        return 1.0
    smallest = min(len(g), len(p))
    return len(g & p) / smallest if smallest else 0.0


SET_METRICS: dict[str, Callable[[Iterable[str], Iterable[str]], float]] = {
    "jaccard": jaccard,
    "dice": dice,
    "overlap": overlap,
}

_WORD = re.compile(r"[\w'’ʼ-]+")


#: Version of the dish-name reading rule below (results.json ``parsers``, cards).
CONTAINS_WITHIN_EDITS_VERSION = "1"


def contains_within_edits(answer: str, name: str, max_edits: int = 1) -> bool:
    """True when some run of words in ``answer`` equals ``name`` within ``max_edits``
    Levenshtein edits (case-folded; the paper's dish-name VQA criterion)."""
    from rapidfuzz.distance import Levenshtein

    from culturebench.text import normalize_name

    target = normalize_name(name)
    if not target:
        return False
    words = [normalize_name(w) for w in _WORD.findall(answer or "")]
    span = len(target.split())
    for size in {span, max(span - 1, 1), span + 1}:
        for i in range(0, max(len(words) - size + 1, 0)):
            candidate = " ".join(words[i : i + size])
            if Levenshtein.distance(candidate, target, score_cutoff=max_edits) <= max_edits:
                return True
    return False


def multilabel_confusion(
    golds: Sequence[Iterable[str]], preds: Sequence[Iterable[str]], labels: Sequence[str]
) -> list[list[int]]:
    """Multi-label confusion matrix after Heydarian et al. (2022).

    Rows are true labels, columns predicted labels plus a final ``none`` column (a true label
    the model did not predict, when it predicted nothing wrong either). Per sample with gold
    set T and prediction P: every t in T ∩ P adds to (t, t); every wrong prediction p in P \\ T
    is charged to the missed labels T \\ P, or to all of T when nothing was missed; a missed
    label with no wrong prediction to blame adds to (t, none). Labels outside ``labels`` are
    ignored.
    """
    index = {label: i for i, label in enumerate(labels)}
    none_col = len(labels)
    matrix = [[0] * (len(labels) + 1) for _ in labels]
    for gold, pred in zip(golds, preds, strict=True):
        t = {g for g in gold if g in index}
        p = {q for q in pred if q in index}
        for label in t & p:
            matrix[index[label]][index[label]] += 1
        wrong, missed = p - t, t - p
        if wrong:
            for row in sorted(missed or t):
                for col in sorted(wrong):
                    matrix[index[row]][index[col]] += 1
        else:
            for row in sorted(missed):
                matrix[index[row]][none_col] += 1
    return matrix


def wilson_interval(successes: float, n: float, *, alpha: float = 0.05) -> tuple[float, float]:
    """The Wilson score (1 - alpha) interval of the proportion ``successes / n``. Unlike the
    normal approximation (p ± z·SEM), it is never of zero width: 0 of 10 gives [0, 0.278].
    ``successes`` may be fractional (a mean times its number of units)."""
    if n <= 0:
        raise ValueError(f"a proportion needs at least one trial (n = {n})")
    if not -1e-9 <= successes <= n + 1e-9:
        raise ValueError(f"{successes} successes out of {n}")
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2))
    p = min(max(successes / n, 0.0), 1.0)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # at p = 0 (p = 1) the lower (upper) bound is exactly 0 (1); rounding must not move it
    lo = 0.0 if p == 0.0 else max(0.0, centre - half)
    hi = 1.0 if p == 1.0 else min(1.0, centre + half)
    return (lo, hi)


@dataclass(frozen=True)
class Interval:
    """A mean with its 95% interval and how the interval was made (:data:`WILSON`,
    :data:`WILSON_BOUND`, :data:`BOOTSTRAP` or :data:`NO_INTERVAL`, whose bounds are None)."""

    mean: float
    lo: float | None
    hi: float | None
    method: str
    units: int

    def describe(self) -> str:
        """The interval's method in words, with its number of units."""
        words = {
            WILSON: "Wilson score interval",
            WILSON_BOUND: "Wilson bound (values in [0, 1])",
            BOOTSTRAP: "percentile bootstrap",
            NO_INTERVAL: f"no interval (n < {MIN_BOOTSTRAP_UNITS} units)",
        }
        return f"{words.get(self.method, self.method)} over {self.units} units"


def _unit_sums(data: Any, units: Sequence[Hashable] | None) -> tuple[Any, Any]:
    """Per-unit sums and counts of ``data`` (each value its own unit without ``units``)."""
    import numpy as np

    if units is None:
        return data, np.ones_like(data)
    if len(units) != data.size:
        raise ValueError(f"{len(units)} units for {data.size} values")
    _, inverse = np.unique(np.asarray([str(u) for u in units]), return_inverse=True)
    return np.bincount(inverse, weights=data), np.bincount(inverse).astype(float)


def mean_interval(
    values: Sequence[float],
    *,
    units: Sequence[Hashable] | None = None,
    iterations: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Interval:
    """Mean of ``values`` and a (1 - alpha) interval chosen by the rules of this module's
    docstring: Wilson for rates, the percentile bootstrap over units at
    :data:`MIN_BOOTSTRAP_UNITS` units or more, the Wilson bound for bounded means below that,
    else none. Deterministic for a given seed.

    ``units`` names the sampled unit of each value (the dish a prompt asked about; dish x
    seed where a run has seeds). The bootstrap resamples units with replacement and takes
    every value of a drawn unit, so the five prompts of one dish move together; the Wilson
    intervals count units, not values, for the same reason. Without ``units`` each value is
    its own unit. Vectorised: one (iterations x units) draw."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Interval(float("nan"), None, None, NO_INTERVAL, 0)
    sums, counts = _unit_sums(data, units)
    n_units = int(sums.size)
    mean = float(data.mean())
    if bool(np.isin(data, (0.0, 1.0)).all()):
        return Interval(mean, *wilson_interval(mean * n_units, n_units, alpha=alpha), WILSON, n_units)
    if n_units >= MIN_BOOTSTRAP_UNITS:
        means = np.concatenate(
            [
                sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
                for draw in unit_draws(n_units, iterations, seed)
            ]
        )
        lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
        return Interval(mean, float(lo), float(hi), BOOTSTRAP, n_units)
    if bool(((data >= 0.0) & (data <= 1.0)).all()):
        lo, hi = wilson_interval(mean * n_units, n_units, alpha=alpha)
        return Interval(mean, lo, hi, WILSON_BOUND, n_units)
    return Interval(mean, None, None, NO_INTERVAL, n_units)


def bootstrap_ci(
    values: Sequence[float],
    *,
    units: Sequence[Hashable] | None = None,
    iterations: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(mean, lo, hi)`` of :func:`mean_interval` (the name is kept for its callers: the
    interval is a bootstrap only where the units allow one); ``lo`` and ``hi`` are NaN where
    there is no interval (written ``null`` in results.json, "no interval" in reports)."""
    got = mean_interval(values, units=units, iterations=iterations, alpha=alpha, seed=seed)
    nan = float("nan")
    return (got.mean, nan if got.lo is None else got.lo, nan if got.hi is None else got.hi)


def unit_draws(units: int, iterations: int, seed: int) -> Iterator[Any]:
    """Bootstrap draws of unit indices (with replacement), ``iterations`` rows of ``units``
    each, yielded in chunks of about four million cells so memory stays bounded for very
    many units; deterministic for a seed. Shared by every bootstrap in the package."""
    import numpy as np

    rng = np.random.default_rng(seed)
    chunk = max(1, 4_000_000 // units)
    for start in range(0, iterations, chunk):
        yield rng.integers(0, units, size=(min(chunk, iterations - start), units))
