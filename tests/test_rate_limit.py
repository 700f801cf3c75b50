"""Rate limits (eval/backends/rate_limit.py): the OpenAI-compatible backend reads
``x-ratelimit-*`` headers and ``Retry-After``, halves the requests in flight on a 429 and
grows them back, and pauses every sender, not only the refused one. Against a local endpoint
that enforces a limit per one-second window (tests/servers.py, a hand-written stand-in of the
OpenAI headers): every request is answered, and the 429s stay few (no storm)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from culturebench.eval.backends.base import Request, SamplingParams
from culturebench.eval.backends.openai_backend import OpenAIBackend
from culturebench.eval.backends.rate_limit import MAX_PAUSE_S, AdaptiveLimit, duration_seconds
from culturebench.retry_after import MAX_RETRY_AFTER_S, retry_after_seconds

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("1.5", 1.5),
        ("soon", None),
        ("", None),
    ],
)
def test_reset_durations(text: str, seconds: float | None) -> None:
    assert duration_seconds(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_a_429_halves_the_requests_in_flight_and_answers_grow_them_back() -> None:
    limit = AdaptiveLimit(16)
    assert limit.answered(429, {"Retry-After": "2"}) == 2.0
    assert limit.limit == 8
    assert (
        limit.answered(429, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "750ms"})
        == 0.75
    )
    assert limit.limit == 4 and limit.throttled == 2
    for _ in range(4 + 5 + 6):  # a run of `limit` answers adds one slot
        limit.answered(200, {})
    assert limit.limit == 7
    assert limit.answered(429, {}) is None  # no hint: the client backs off itself


def test_an_exhausted_limit_pauses_before_a_429() -> None:
    import time

    limit = AdaptiveLimit(4)
    limit.answered(200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms"})
    start = time.monotonic()
    limit.acquire()
    limit.release()
    assert time.monotonic() - start >= 0.25  # the next sender waited for the reset


@pytest.mark.integration
@pytest.mark.parametrize("retry_after", [False, True])
def test_every_request_answered_without_a_storm(servers, retry_after: bool) -> None:
    with servers.rate_limited_chat(rps=20, retry_after=retry_after) as server:
        engine = OpenAIBackend(
            "m", base_url=server.url, sampling=SamplingParams(max_new_tokens=4), concurrency=16, max_retries=8
        )
        answers = engine.generate([Request(f"r{i}", "Откуда борщ?") for i in range(90)])
    assert answers == ["Україна"] * 90
    assert len(server.ok) == 90
    # read, the limits keep 429s few: the senders pause at "remaining 0" until the reset, and a
    # 429 halves the requests in flight (benchmarks/bench_rate_limit.py compares a client that
    # ignores them: it is refused several times more often)
    assert server.refused <= 0.25 * 90, server.refused  # typically a few; ignoring the limits, more than 90
    assert engine.limit.throttled == server.refused and engine.limit.lowest < 16


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("nan", None),
        ("NaN", None),
        ("inf", None),
        ("-inf", None),
        ("1e999", None),  # infinity once read
        ("-3", None),
        ("1e308", MAX_RETRY_AFTER_S),  # huge: capped (and each caller caps again, at 60 s)
        ("2.5", 2.5),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: now
    ],
)
def test_a_retry_after_that_names_no_wait_is_ignored_and_a_huge_one_capped(value: str, seconds) -> None:
    assert retry_after_seconds(value) == seconds
    wait = AdaptiveLimit(4).answered(429, {"Retry-After": value})
    assert wait == seconds


def test_reset_headers_that_are_no_number_never_stall_the_senders() -> None:
    """``x-ratelimit-reset-requests: inf`` with nothing remaining: the pause is capped (before,
    every sender waited forever)."""
    import time

    assert duration_seconds("nan") is None and duration_seconds("inf") is None
    assert duration_seconds("9" * 400 + "h") is None
    limit = AdaptiveLimit(4)
    limit.answered(200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1e308"})
    assert limit.budget_until - time.monotonic() <= MAX_PAUSE_S


@pytest.mark.integration
def test_retry_after_nan_from_a_real_endpoint_is_ignored_and_every_request_answered(servers) -> None:
    """A local endpoint answers 503 and 429 with Retry-After values that name no wait (nan,
    inf, a negative, infinity spelled 1e999): the client backs off on its own and gets its
    answer (before, NaN reached time.sleep and the run crashed)."""
    script = [(503, "nan"), (429, "nan"), (503, "inf"), (429, "-1"), (503, "1e999")]
    with servers.scripted_chat(script) as server:
        engine = OpenAIBackend(
            "m", base_url=server.url, sampling=SamplingParams(max_new_tokens=4), concurrency=1,
            max_retries=6, backoff_s=0.01,
        )  # fmt: skip
        answers = engine.generate([Request("r0", "Откуда борщ?")])
    assert answers == ["Україна"] and server.calls == len(script) + 1


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.floats().map(str), st.integers().map(str)))
def test_any_retry_after_is_none_or_a_finite_wait(value: str) -> None:
    import math

    seconds = retry_after_seconds(value)
    assert seconds is None or (math.isfinite(seconds) and 0 <= seconds <= MAX_RETRY_AFTER_S)
    reset = duration_seconds(value)
    assert reset is None or (math.isfinite(reset) and reset >= 0)
    headers = {
        "Retry-After": value,
        "x-ratelimit-remaining-requests": value,
        "x-ratelimit-reset-requests": value,
    }
    wait = AdaptiveLimit(4).answered(429, headers)
    assert wait is None or (math.isfinite(wait) and wait >= 0)
    AdaptiveLimit(4).answered(200, headers)
