"""Metrics of the BORSCH paper: set overlap (Jaccard, Dice, Overlap), exact match within
one Levenshtein edit, multi-label confusion matrices, bootstrap confidence intervals."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any


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


def bootstrap_ci(
    values: Sequence[float],
    *,
    units: Sequence[Hashable] | None = None,
    iterations: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of ``values`` and a percentile bootstrap (1 - alpha) interval, deterministic for
    a given seed.

    ``units`` names the sampled unit of each value (the dish a prompt asked about; dish x
    seed where a run has seeds). The bootstrap resamples units with replacement and takes
    every value of a drawn unit, so the five prompts of one dish move together: treating
    them as independent draws would make the interval too narrow. Without ``units`` each
    value is its own unit. Vectorised: one (iterations x units) draw.
    """
    import numpy as np

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (float("nan"), float("nan"), float("nan"))
    if units is None:
        sums, counts = data, np.ones_like(data)
    else:
        if len(units) != data.size:
            raise ValueError(f"{len(units)} units for {data.size} values")
        _, inverse = np.unique(np.asarray([str(u) for u in units]), return_inverse=True)
        sums = np.bincount(inverse, weights=data)
        counts = np.bincount(inverse).astype(float)
    means = np.concatenate(
        [
            sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
            for draw in unit_draws(sums.size, iterations, seed)
        ]
    )
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (float(data.mean()), float(lo), float(hi))


def unit_draws(units: int, iterations: int, seed: int) -> Iterator[Any]:
    """Bootstrap draws of unit indices (with replacement), ``iterations`` rows of ``units``
    each, yielded in chunks of about four million cells so memory stays bounded for very
    many units; deterministic for a seed. Shared by every bootstrap in the package."""
    import numpy as np

    rng = np.random.default_rng(seed)
    chunk = max(1, 4_000_000 // units)
    for start in range(0, iterations, chunk):
        yield rng.integers(0, units, size=(min(chunk, iterations - start), units))
