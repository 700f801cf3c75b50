"""Rate limits (eval/backends/rate_limit.py): the OpenAI-compatible backend reads
``x-ratelimit-*`` headers and ``Retry-After``, halves the requests in flight on a 429 and
grows them back, and pauses every sender, not only the refused one. Against a local endpoint
that enforces a limit per one-second window (tests/servers.py, a hand-written stand-in of the
OpenAI headers): every request is answered, and the 429s stay few (no storm)."""

from __future__ import annotations

import pytest

from culturebench.eval.backends.base import Request, SamplingParams
from culturebench.eval.backends.openai_backend import OpenAIBackend
from culturebench.eval.backends.rate_limit import AdaptiveLimit, duration_seconds


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
