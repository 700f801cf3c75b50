"""A deadline on every Hugging Face Hub request.

huggingface_hub's HTTP client waits without limit (``timeout=None``): a Hub, mirror or proxy
that accepts the connection but never answers hangs ``eval run --revision``, a release, a
corpus listing or a model lookup until the process is killed. :func:`hub_deadline` installs a
client factory whose every request (connect, each read, each write) times out after
``CULTUREBENCH_HUB_TIMEOUT`` seconds (default :data:`DEFAULT_TIMEOUT`); each call site already
turns the timeout error into its one line. A factory the user installed is left as it is.
"""

from __future__ import annotations

import math
import os
from typing import Any

from culturebench.errors import UsageError

ENV = "CULTUREBENCH_HUB_TIMEOUT"
DEFAULT_TIMEOUT = 60.0


def hub_timeout() -> float:
    """Seconds a Hub request may take: ``CULTUREBENCH_HUB_TIMEOUT``, else the default."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{ENV}={text!r}: expected a number of seconds above 0")
    return value


def hub_deadline() -> float:
    """Install the deadline (idempotent) and return it in seconds."""
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils import _http

    seconds = hub_timeout()
    current = getattr(_http, "_GLOBAL_CLIENT_FACTORY", _http.default_client_factory)
    ours = getattr(current, "culturebench_timeout", None)
    if ours == seconds:
        return seconds
    if ours is None and current is not _http.default_client_factory:
        return seconds  # the user's own client factory decides

    def factory() -> Any:
        client = _http.default_client_factory()
        client.timeout = seconds
        return client

    factory.culturebench_timeout = seconds  # type: ignore[attr-defined]
    set_client_factory(factory)
    return seconds


def timeout_note(exc: BaseException) -> str:
    """`` (no answer within N s: CULTUREBENCH_HUB_TIMEOUT)`` when ``exc`` is a request timeout."""
    if "Timeout" in type(exc).__name__ or "timed out" in str(exc).lower():
        return f" (no answer within {hub_timeout():g} s: {ENV})"
    return ""
