"""How many requests an HTTP backend keeps in flight, adapted to what the provider says.

Providers limit requests and tokens per minute and say so in every answer: OpenAI and the
servers that follow it send ``x-ratelimit-remaining-requests``/``-tokens`` and
``x-ratelimit-reset-requests``/``-tokens`` (a duration: ``1s``, ``6m0s``, ``20ms``), and a
429 with ``Retry-After`` when a limit was hit. :class:`AdaptiveLimit` reads both:

* a 429 halves the requests in flight (at least one) and pauses every sender until the time
  the answer names (``Retry-After``, else the reset of the exhausted limit), so one 429 does
  not become a storm of them;
* an answer's remaining count, less the requests already in flight, is what may still be
  sent before its reset: at nothing left the senders pause until the reset, before the
  provider has to refuse anything;
* after a run of answers without a 429 the requests in flight grow by one, back up to the
  configured concurrency (additive increase, multiplicative decrease).

A header value that is no finite number (``nan``, ``inf``, ``1e999``) is ignored, as if the
answer had not sent it; a wait or reset longer than :data:`MAX_PAUSE_S` is cut to it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping

from culturebench.checked_numbers import finite_float
from culturebench.retry_after import retry_after_seconds

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_PAUSE_S = 60.0  # a longer wait is cut here (the next answer says again)


def duration_seconds(value: str | None) -> float | None:
    """``6m0s`` -> 360.0, ``20ms`` -> 0.02, ``1.5`` -> 1.5; None for anything else, NaN and
    infinity included (a negative number is 0)."""
    if not value:
        return None
    text = value.strip()
    seconds = finite_float(text)
    if seconds is not None:
        return max(seconds, 0.0)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        return None
    return finite_float(sum(float(n) * _UNITS[u] for n, u in parts))


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _remaining(headers: Mapping[str, str], what: str) -> float | None:
    return finite_float(_header(headers, f"x-ratelimit-remaining-{what}"))


class AdaptiveLimit:
    """The requests in flight (at most ``maximum``) and a pause shared by every sender."""

    def __init__(self, maximum: int) -> None:
        self.maximum = max(1, int(maximum))
        self.limit = self.maximum
        self.in_flight = 0
        self.resume_at = 0.0
        self.since_throttle = 0
        self.throttled = 0  # 429s seen
        self.lowest = self.maximum
        # requests the provider still takes until ``budget_until`` (from the last answer's
        # remaining count, less the requests sent since); None when no answer said
        self.budget: float | None = None
        self.budget_until = 0.0
        self._cond = threading.Condition()

    def acquire(self) -> None:
        """Wait for a free slot and for the end of any pause."""
        with self._cond:
            while True:
                now = time.monotonic()
                if self.budget is not None and now >= self.budget_until:
                    self.budget = None  # the window the budget was for is over
                wait = self.resume_at - now
                if self.budget is not None and self.budget <= 0:
                    wait = max(wait, self.budget_until - now)
                if wait <= 0 and self.in_flight < self.limit:
                    self.in_flight += 1
                    if self.budget is not None:
                        self.budget -= 1
                    return
                self._cond.wait(timeout=min(wait, 1.0) if wait > 0 else 1.0)

    def release(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def answered(self, status: int, headers: Mapping[str, str]) -> float | None:
        """Learn from one answer. For a 429: halve the requests in flight and return the wait
        the answer asks for (``Retry-After``, else the reset of an exhausted limit), or None
        when it names none (the caller backs off and calls :meth:`pause`). For any other
        answer: grow back towards the maximum, and pause the senders when a limit says it
        has nothing left."""
        with self._cond:
            if status == 429:
                self.throttled += 1
                self.limit = max(1, self.limit // 2)
                self.lowest = min(self.lowest, self.limit)
                self.since_throttle = 0
                return _hinted_wait(headers)
            self.since_throttle += 1
            if self.since_throttle >= self.limit and self.limit < self.maximum:
                self.limit += 1
                self.since_throttle = 0
            left = _remaining(headers, "requests")
            reset = duration_seconds(_header(headers, "x-ratelimit-reset-requests"))
            if left is not None and reset is not None:  # what may still be sent in this window
                self.budget = left - max(self.in_flight - 1, 0)
                self.budget_until = time.monotonic() + min(reset, MAX_PAUSE_S)
        exhausted = [
            duration_seconds(_header(headers, f"x-ratelimit-reset-{what}")) or 0.0
            for what in ("requests", "tokens")
            if (left := _remaining(headers, what)) is not None and left <= 0
        ]
        if exhausted:
            self.pause(max(exhausted))
        return None

    def pause(self, seconds: float) -> None:
        """Every sender waits ``seconds`` (at most :data:`MAX_PAUSE_S`) before its next request."""
        if seconds <= 0:
            return
        with self._cond:
            self.resume_at = max(self.resume_at, time.monotonic() + min(seconds, MAX_PAUSE_S))
            self._cond.notify_all()


def _hinted_wait(headers: Mapping[str, str]) -> float | None:
    """What a 429 asks to wait: its ``Retry-After``, else the reset of the limit it exhausted."""
    after = retry_after_seconds(_header(headers, "retry-after"))
    if after is not None:
        return after
    resets = [
        duration_seconds(_header(headers, f"x-ratelimit-reset-{what}"))
        for what in ("requests", "tokens")
        if (_remaining(headers, what) or 0) <= 0
    ]
    found = [r for r in resets if r is not None]
    return max(found) if found else None
