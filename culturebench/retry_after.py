"""The wait a ``Retry-After`` header asks for, read defensively: delta-seconds or an HTTP date
to seconds, capped at a day; a value that names no usable wait (garbage, NaN, infinity, a
negative number) is ignored so the caller backs off on its own. Used by the clients that
retry (the URL checker, the SPARQL client, the OpenAI-compatible backend and its rate
limiter)."""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from culturebench.checked_numbers import finite_float

MAX_RETRY_AFTER_S = 86_400.0  # a longer wait is cut to a day; each caller cuts it further (60 s)


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), at most
    :data:`MAX_RETRY_AFTER_S`. A value that names no wait is ignored (None: the caller backs
    off on its own): no header, text that is neither a number nor a date, NaN, infinity
    (``inf``, ``1e999``) or a negative number of seconds. A date in the past is 0."""
    if not value:
        return None
    seconds = finite_float(value)
    if seconds is not None:
        return min(seconds, MAX_RETRY_AFTER_S) if seconds >= 0 else None
    if _numeric(value):
        return None  # a number, but not a finite one (NaN, infinity): not a date either
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    try:
        wait = (when - datetime.now(timezone.utc)).total_seconds()
    except OverflowError:
        return None
    return min(max(wait, 0.0), MAX_RETRY_AFTER_S)


def _numeric(value: str) -> bool:
    """Text ``float()`` reads (``1e999``: infinity)."""
    try:
        float(value)
    except ValueError:
        return False
    return True
