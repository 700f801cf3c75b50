"""Numbers and labels as the site prints them (the same figures as the run reports)."""

from __future__ import annotations

import math
from typing import Any


def number(value: Any, digits: int = 3) -> str:
    """A metric value: 3 decimals, whole numbers without them, ``-`` for none or NaN."""
    if value is None or isinstance(value, bool):
        return "-" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "-"
        return f"{value:.{digits}f}"
    return str(value)


def count(value: Any) -> str:
    """A sample count: ``1,204``; ``-`` when unknown."""
    if isinstance(value, bool) or value is None:
        return "-"
    if isinstance(value, int | float) and float(value).is_integer():
        return f"{int(value):,}"
    return str(value)


def sort_key(value: Any) -> str:
    """What a table cell sorts by (``data-sort``): numbers as numbers, the rest as text."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return repr(float(value))
    return "" if value is None else str(value)
