"""The shapes of a task's metrics, read as they are (:mod:`culturebench.eval.run_report` and the
run folder's schema, :mod:`culturebench.eval.records`, read them): a metric is a number, or a
statistic ``{"mean": ..., "ci95": [lo, hi]}`` / ``{"mean": ..., "sem": ...}``; metrics may be
grouped (e.g. by prompt language: ``{"ru": {"n": 15, "jaccard": {...}}}``), and a breakdown is
a mapping of rows that share numeric fields (``per_country``, ``per_category``, ...)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Headline:
    """One headline number of a run."""

    group: str  # "all" or a group such as a prompt language
    metric: str
    value: float
    ci95: tuple[float, float] | None = None
    sem: float | None = None
    n: int | None = None

    # set when the statistic has a ``ci95`` key whose bounds are null (too few units for one)
    no_interval: bool = False

    def formatted(self) -> str:
        """The value with its 95% interval or ± SEM, or why it has none: a null ``ci95`` (too few
        units) and an SEM of zero at fewer than :data:`MIN_BOOTSTRAP_UNITS` values (all values
        equal: a zero-width "interval" that is not one) are said in words."""
        from culturebench.eval.metrics import MIN_BOOTSTRAP_UNITS

        if self.ci95 is not None:
            return f"{self.value:.3f} [{self.ci95[0]:.3f}, {self.ci95[1]:.3f}]"
        if self.sem is not None:
            if self.sem == 0 and (self.n is None or self.n < MIN_BOOTSTRAP_UNITS):
                n = "?" if self.n is None else self.n
                return f"{self.value:.3f} (SEM 0 at n = {n} < {MIN_BOOTSTRAP_UNITS}: no interval)"
            return f"{self.value:.3f} ± {self.sem:.3f}"
        if self.no_interval:
            return f"{self.value:.3f} (no interval: n < {MIN_BOOTSTRAP_UNITS})"
        return f"{self.value:.4g}" if isinstance(self.value, float) else str(self.value)


def is_number(value: Any) -> bool:
    """A number that is not a truth value."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_stat(value: Any) -> bool:
    """A statistic: a mapping with a numeric ``mean`` (and its ``ci95`` or ``sem``)."""
    return isinstance(value, Mapping) and is_number(value.get("mean"))


def _interval(ci: Any) -> tuple[float, float] | None:
    """A ``ci95`` as two finite floats, or None (absent, null bounds, NaN)."""
    import math

    if not isinstance(ci, Sequence) or isinstance(ci, str) or len(ci) != 2 or not all(map(is_number, ci)):
        return None
    lo, hi = float(ci[0]), float(ci[1])
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def _headline(group: str, metric: str, value: Any, n: Any) -> Headline | None:
    if is_stat(value):
        interval = _interval(value.get("ci95"))
        return Headline(
            group,
            metric,
            float(value["mean"]),
            interval,
            float(value["sem"]) if is_number(value.get("sem")) else None,
            int(value["n"]) if is_number(value.get("n")) else n,
            no_interval="ci95" in value and interval is None,
        )
    if is_number(value) and not _is_count(metric):
        return Headline(group, metric, value, n=n)
    return None


def is_count_column(name: str) -> bool:
    """Whether a column or key holds counts (``n``, ``n_items``, ``count``, ``items``,
    ``samples``, ``*_count``): printed as whole numbers, never ``8.000``."""
    name = name.lower()
    return name in ("n", "count", "items", "samples") or name.startswith("n_") or name.endswith("_count")


def count_text(value: Any) -> str:
    """A count as people write it: ``8`` and ``1,204``, not ``8.0``; other values unchanged."""
    if is_number(value) and float(value).is_integer():
        return f"{int(value):,}"
    return "" if value is None else str(value)


def _is_count(key: str) -> bool:
    """``n`` and ``n_*`` are sample sizes shown beside the metrics, not metrics."""
    return key == "n" or key.startswith("n_")


def _is_group(value: Any) -> bool:
    """A block of metrics for one group: it has an ``n`` or statistics among its values."""
    return isinstance(value, Mapping) and (
        is_number(value.get("n")) or any(is_stat(v) for v in value.values())
    )


def headlines(metrics: Mapping[str, Any]) -> list[Headline]:
    """Every headline number of a metrics dict, top level ("all") and per group."""
    out: list[Headline] = []
    n_all = metrics.get("n") if is_number(metrics.get("n")) else None
    for key, value in metrics.items():
        item = _headline("all", key, value, n_all)
        if item is not None:
            out.append(item)
        elif _is_group(value) and not _is_breakdown(value):
            n = value.get("n") if is_number(value.get("n")) else None
            for metric, inner in value.items():
                item = _headline(str(key), metric, inner, n)
                if item is not None:
                    out.append(item)
    return out


def _is_series(value: Any) -> bool:
    """Numbers keyed by a label (e.g. a metric per prompt variant); a statistic (``mean`` with
    its ``sem``) is not one: the headline table shows it, with its interval."""
    return isinstance(value, Mapping) and len(value) > 0 and all(is_number(v) for v in value.values())


def _is_breakdown(value: Any) -> bool:
    """Rows keyed by a label, each a mapping with at least one number or statistic."""
    return (
        isinstance(value, Mapping)
        and len(value) > 0
        and all(isinstance(v, Mapping) for v in value.values())
        and all(any(is_number(x) or is_stat(x) for x in v.values()) for v in value.values())
        and not any(is_number(v) for v in value.values())
    )


def breakdowns(metrics: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(group, name, rows)`` of every breakdown table, top level and per group."""
    out = []
    for key, value in metrics.items():
        if _is_group(value):
            for name, inner in value.items():
                if _is_breakdown(inner):
                    out.append((str(key), name, inner))
                elif _is_series(inner) and not _is_count(name) and not is_stat(inner):
                    out.append((str(key), name, {label: {"value": v} for label, v in inner.items()}))
        elif _is_breakdown(value):
            out.append(("all", key, value))
        elif _is_series(value) and not _is_count(key) and not is_stat(value):
            out.append(("all", key, {label: {"value": v} for label, v in value.items()}))
    return out


def cell_text(value: Any, n: Any = None) -> str:
    """One table cell: a statistic with its CI or SEM (or why it has none), a number, or blank;
    ``n``: the row's count, when the statistic has none of its own."""
    if is_stat(value):
        interval = _interval(value.get("ci95"))
        sem = float(value["sem"]) if is_number(value.get("sem")) else None
        count = value.get("n") if is_number(value.get("n")) else n
        no_interval = "ci95" in value and interval is None
        return Headline(
            "", "", float(value["mean"]), interval, sem, count if is_number(count) else None, no_interval
        ).formatted()
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value) if is_number(value) else ""
