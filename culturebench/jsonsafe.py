"""JSON as culturebench writes it: never a bare ``NaN`` or ``Infinity`` (not JSON; many
readers reject it). A non-finite float is written as ``null``; whoever produced it must also
say why (e.g. a metric with ``n`` 0 reports the count of unusable answers beside it)."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, +-inf, numpy's included) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return finite(value.item())
    return value


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`finite` ``(value)`` (UTF-8 text, ``ensure_ascii`` off), with a
    final newline; ``allow_nan`` is off, so nothing non-finite can slip through."""
    kwargs.setdefault("ensure_ascii", False)
    try:  # the common case: nothing to replace (the same text, without walking the value twice)
        return json.dumps(value, allow_nan=False, **kwargs) + "\n"
    except (ValueError, TypeError):  # a NaN/inf, or a numpy value json cannot write
        return json.dumps(finite(value), allow_nan=False, **kwargs) + "\n"
