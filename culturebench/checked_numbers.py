"""Numbers that come from outside (a command-line option, an HTTP header, a file): read as a
finite number within its bounds, or refused. ``float()`` reads ``nan``, ``inf`` and ``1e999``
(infinity) without complaint, and a NaN passes every ``<``/``>`` bound, so every such number
goes through here: :func:`finite_float` where a bad value is ignored (a header), and
:func:`checked_number` where it is one line naming the option or the file and key."""

from __future__ import annotations

import json
import math
from typing import Any

from culturebench.errors import UsageError


def finite_float(value: Any) -> float | None:
    """``value`` as a finite float (an int or float, or text that reads as one), else None:
    NaN, infinity (``inf``, or a number too large for a float), a boolean, text that is no
    number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def checked_number(
    value: Any,
    where: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    what: str = "a finite number",
) -> float:
    """``value`` as a float when it is a finite number, at least ``minimum``, above ``above``
    and at most ``maximum``; else a :class:`UsageError` ``{where} {value}: expected {what}``
    (``where`` names the option, or the file and key)."""
    number = finite_float(value) if not isinstance(value, str) else None
    inside = number is not None and not (
        (minimum is not None and number < minimum)
        or (above is not None and number <= above)
        or (maximum is not None and number > maximum)
    )
    if number is None or not inside:
        shown = str(value) if isinstance(value, float) else json.dumps(value, default=str)
        raise UsageError(f"{where} {shown}: expected {what}")
    return number


def finite_total(value: float, where: str) -> float:
    """``value`` (a sum or product of checked numbers) when it is still finite; a
    :class:`UsageError` naming ``where`` when it overflowed to infinity (or became NaN)."""
    if not math.isfinite(value):
        raise UsageError(f"{where}: the result is too large to count (over 1.8e308); check the numbers given")
    return value
