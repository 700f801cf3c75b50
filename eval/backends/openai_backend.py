"""OpenAI-compatible chat-completions backend (``vllm serve``, ``transformers serve``, ...):
concurrent requests with a connection pool sized to the concurrency, timeouts, retries with
exponential backoff on 429/5xx, timeouts and dropped connections (``Retry-After`` honoured).
An endpoint that cannot be reached at all (connection refused, host name not resolved) fails
at once with one line naming the URL and how to set it: nothing listens there, and retrying
would only delay the message."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturebench.errors import CultureBenchError
from culturebench.eval.backends.base import Backend, Request, SamplingParams, package_versions, request_seed
from culturebench.eval.backends.options import BackendOption
from culturebench.eval.backends.rate_limit import AdaptiveLimit
from culturebench.retry_after import retry_after_seconds
from culturebench.safe_http import redact

if TYPE_CHECKING:
    import requests

RETRY_STATUS = {408, 429, 500, 502, 503, 504}  # other 4xx are the request's fault: never retried
MAX_RETRY_AFTER_S = 60.0


Opt = BackendOption
CLIENT_OPTIONS = (
    Opt("base_url", "str", None, "The server's base URL (…/v1); default $OPENAI_BASE_URL or 127.0.0.1:8000."),
    Opt("api_key_env", "str", "OPENAI_API_KEY", "The environment variable holding the key (never the key).",
        variable=True),
    Opt("concurrency", "int", 4, "Requests in flight.", minimum=1, maximum=1024),
    Opt("timeout", "float", 120.0, "Seconds per request.", minimum=0.001, maximum=86400),
    Opt("max_retries", "int", 5, "Retries on 429, 5xx, timeouts and dropped connections (refused: none).",
        minimum=0, maximum=100),
)  # fmt: skip
CLIENT_CHUNK_PER_SLOT = 16  # requests handed over per call: 16 per slot in flight


DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
HOW_TO_SET = (
    "start the server there, or point at yours with --base-url URL "
    "(--model-arg base_url=URL, or $OPENAI_BASE_URL); a hosted API such as OpenAI's "
    "needs --base-url https://api.openai.com/v1 and OPENAI_API_KEY"
)


class EndpointError(CultureBenchError):
    """The endpoint kept failing (or answered with a non-retryable error: ``status``)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EndpointClient:
    """HTTP plumbing shared by the OpenAI-compatible backends: base URL checked at once, a
    bounded thread pool and a connection pool of the same size, timeouts, retries with
    exponential backoff on 429/5xx, timeouts and dropped connections (``Retry-After``
    honoured), an unreachable endpoint reported at once, credentials never shown in errors."""

    def _init_client(
        self,
        base_url: str | None,
        *,
        concurrency: int,
        timeout_s: float,
        max_retries: int,
        backoff_s: float,
        api_key_env: str = "OPENAI_API_KEY",
    ) -> None:
        if base_url:
            self.base_url_from = "--base-url"
        elif os.environ.get("OPENAI_BASE_URL"):
            self.base_url_from = "$OPENAI_BASE_URL"
        else:
            self.base_url_from = "the default, no --base-url given"
        self.base_url = _checked_base_url(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.limit = AdaptiveLimit(concurrency)  # requests in flight, adapted to the provider's limits
        self._session: requests.Session | None = None
        self._session_lock = threading.Lock()

    def session(self) -> Any:
        """The shared ``requests.Session``, made once; its connection pool holds as many
        connections as requests are in flight (no "Connection pool is full" discards)."""
        import requests
        from requests.adapters import HTTPAdapter

        with self._session_lock:
            if self._session is None:
                session = requests.Session()
                adapter = HTTPAdapter(pool_connections=1, pool_maxsize=max(self.concurrency, 1))
                session.mount("http://", adapter)
                session.mount("https://", adapter)
                self._session = session
            return self._session

    def post_json(self, path: str, body: dict[str, Any], request_id: str) -> Any:
        """``POST {base_url}/{path}`` with ``body``; the decoded JSON of a 200 answer."""
        return self.call("POST", path, request_id, json=body)

    def call(self, method: str, path: str, request_id: str, *, text: bool = False, **send: Any) -> Any:
        """``method {base_url}/{path}`` (``send``: what ``requests`` sends: ``json``, ``files``,
        ``data``) with the retries, backoff and rate limits above; the decoded JSON of a 200
        answer, or with ``text`` its body as text (a batch's output file)."""
        import requests

        session = self.session()
        headers = {"Content-Type": "application/json"} if "json" in send else {}
        key = os.environ.get(getattr(self, "api_key_env", "OPENAI_API_KEY"))
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = f"{self.base_url}/{path}"
        shown = redact(url)  # what errors print: never credentials
        last: str = ""
        for attempt in range(self.max_retries + 1):
            self.limit.acquire()  # a free slot, and no pause a rate limit asked for
            try:
                resp = session.request(method, url, headers=headers, timeout=self.timeout_s, **send)
            except (
                requests.exceptions.InvalidURL,
                requests.exceptions.InvalidSchema,
                requests.exceptions.MissingSchema,
                requests.exceptions.InvalidHeader,
            ) as exc:
                raise EndpointError(
                    f"{shown}: {type(exc).__name__}: {redact(exc)} (configuration error, not retried)"
                ) from None
            except requests.RequestException as exc:
                unreachable = _unreachable(exc)
                if unreachable:  # nothing listens there (or no such host): retrying only delays
                    raise EndpointError(
                        f"{shown}: {unreachable} ({self.base_url_from}); {HOW_TO_SET}"
                    ) from None
                last = f"{type(exc).__name__}: {redact(exc)}"
                delay = self.backoff_s * 2**attempt
            else:
                throttled = self.limit.answered(resp.status_code, resp.headers)
                if resp.status_code == 200:
                    if text:
                        return resp.content.decode("utf-8", errors="replace")
                    try:
                        return resp.json()
                    except ValueError:
                        raise EndpointError(f"{shown}: answer is not JSON (request {request_id})") from None
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                if resp.status_code not in RETRY_STATUS:
                    raise EndpointError(f"{shown}: {last} (request {request_id})", resp.status_code)
                if resp.status_code == 429:  # every sender waits (AdaptiveLimit.acquire), not just this one
                    wait = throttled if throttled is not None else self.backoff_s * 2**attempt
                    self.limit.pause(min(wait, MAX_RETRY_AFTER_S))
                    delay = 0.0
                else:
                    delay = (
                        retry_after_seconds(resp.headers.get("Retry-After")) or self.backoff_s * 2**attempt
                    )
                    delay = min(delay, MAX_RETRY_AFTER_S)
            finally:
                self.limit.release()
            if attempt < self.max_retries and delay:
                time.sleep(delay)
        raise EndpointError(
            f"{shown}: gave up after {self.max_retries + 1} attempts: {last} (request {request_id})"
        )

    def chunk_size(self, batch_size: int) -> int:
        """Enough requests to keep ``concurrency`` in flight between two checkpoints."""
        return max(batch_size, self.concurrency * CLIENT_CHUNK_PER_SLOT)

    def map_concurrently(self, function: Any, items: Sequence[Any]) -> list[Any]:
        """``function`` over ``items`` on at most ``concurrency`` threads, results in order.
        Stoppable while requests hang: the caller waits in short slices, so SIGTERM and Ctrl-C
        are handled at once, and the threads are abandoned rather than joined (daemon threads:
        a read that never ends cannot hold the process; a pool's exit would wait for it).
        The first error raised by ``function`` is raised here and no further item starts."""
        from culturebench.stoppable import run_stoppable

        answers: list[Any] = [None] * len(items)
        numbered = list(enumerate(items))
        for index, answer in run_stoppable(
            lambda pair: (pair[0], function(pair[1])), numbered, self.concurrency
        ):
            answers[index] = answer
        return answers


def _window_check(value: str) -> int:
    """``batch_window``: a completion window such as ``24h`` (ValueError saying what else)."""
    from culturebench.eval.backends.batch_schema import window_seconds

    return window_seconds(value)


BATCH_OPTIONS = (
    Opt("batch", "bool", False, "Send the run through the provider's Batch API (about half the price, "
        "answers within batch_window); a killed run resumes polling its batches."),
    Opt("batch_window", "str", "24h", "The batches' completion window (a duration: 24h, 7d).",
        check=_window_check),
    Opt("batch_poll", "float", 30.0, "Seconds between two polls of a batch.", minimum=0.0, maximum=3600),
    Opt("batch_max_wait", "float", None, "Seconds a call waits for its batches at most, then ends in one "
        "line (a rerun resumes them); default: until the end of their completion window.",
        minimum=0.0, maximum=30 * 86400),
    Opt("batch_max_requests", "int", 50_000, "Requests per batch file (OpenAI's limit); more are split.",
        minimum=1, maximum=10_000_000),
    Opt("batch_max_bytes", "int", 200 * 1024 * 1024, "Bytes per batch file (OpenAI's limit); more are split.",
        minimum=1024, maximum=1 << 40),
    Opt("batch_rounds", "int", 3, "Batches sent for the requests that failed or expired, the first included.",
        minimum=1, maximum=20),
)  # fmt: skip
BATCH_CHUNK = 1 << 30  # a batch run hands every pending request over at once: one set of batches


class OpenAIBackend(EndpointClient, Backend):
    """Calls ``POST {base_url}/chat/completions``; the API key comes from the environment
    variable ``api_key_env`` names (``OPENAI_API_KEY``), never from the command line. With
    ``batch`` the requests go through the Batch API instead
    (:mod:`~culturebench.eval.backends.openai_batch`)."""

    name = "openai"
    CONSTRAINS_JSON = True  # response_format json_schema
    SUMMARY = "any OpenAI-compatible chat endpoint (vllm serve, transformers serve, Ollama, hosted APIs)"
    SHARED_FLAGS = ("base_url", "concurrency")
    OPTIONS = CLIENT_OPTIONS + BATCH_OPTIONS

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        revision: str | None = None,
        sampling: SamplingParams | None = None,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        timeout: float | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        batch: bool = False,
        batch_window: str = "24h",
        batch_poll: float = 30.0,
        batch_max_wait: float | None = None,
        batch_max_requests: int = 50_000,
        batch_max_bytes: int = 200 * 1024 * 1024,
        batch_rounds: int = 3,
    ) -> None:
        Backend.__init__(self, model, revision=revision, sampling=sampling)
        self.batch = batch
        self.batch_window = batch_window
        self.batch_poll = batch_poll
        self.batch_max_wait = batch_max_wait
        if batch:  # (also when given as arguments, not --model-arg)
            _check_batch_options(self.name, batch_window, batch_poll, batch_max_wait)
        self.batch_max_requests = batch_max_requests
        self.batch_max_bytes = batch_max_bytes
        self.batch_rounds = batch_rounds
        self.run_folder: Path | None = None
        if batch:  # every pending request in one call: one set of batches, resumable as a whole
            self.chunk = BATCH_CHUNK
        self._init_client(
            base_url,
            concurrency=concurrency,
            timeout_s=timeout if timeout is not None else timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            api_key_env=api_key_env,
        )

    def payload(self, request: Request) -> dict[str, Any]:
        """The JSON body for one request (greedy: temperature 0, the run's seed; sampling: the
        request's own seed, :func:`~culturebench.eval.backends.base.request_seed`)."""
        seed = self.sampling.seed if self.sampling.greedy else request_seed(self.sampling.seed, request.id)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages(),
            "max_tokens": self.sampling.max_new_tokens,
            "temperature": self.sampling.temperature,
            "seed": seed,
        }
        if request.json_schema:  # structured outputs: the answer follows the schema
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reading", "strict": True, "schema": json.loads(request.json_schema)},
            }
        return body

    def _complete(self, request: Request) -> str:
        answer = self.post_json("chat/completions", self.payload(request), request.id)
        try:
            return str(answer["choices"][0]["message"]["content"] or "").strip()
        except (KeyError, IndexError, TypeError):
            raise EndpointError(
                f"{redact(self.base_url)}/chat/completions: answer has no choices[0].message.content "
                f"(request {request.id})"
            ) from None

    def generate(self, requests: Sequence[Request]) -> list[str]:
        if self.batch:
            from culturebench.eval.backends.openai_batch import BatchRun

            return BatchRun(self, self.run_folder).answers(requests)
        return self.map_concurrently(self._complete, requests)

    def chunk_size(self, batch_size: int) -> int:
        return BATCH_CHUNK if self.batch else super().chunk_size(batch_size)

    def bind_run_folder(self, folder: Path) -> None:
        self.run_folder = folder

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": redact(self.base_url)}

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench", "requests"])


def _check_batch_options(backend: str, window: Any, poll: Any, max_wait: Any) -> None:
    """The batch options as :func:`~culturebench.eval.backends.options.parse_model_args` checks
    them (a window of ``none`` included), for a backend made with arguments."""
    from culturebench.errors import UsageError
    from culturebench.eval.backends.options import parse_model_args

    try:
        _window_check(window)
    except ValueError as exc:
        raise UsageError(f"--model-arg batch_window={window}: {backend} expects {exc}") from None
    parse_model_args(backend, BATCH_OPTIONS, [("batch_poll", poll), ("batch_max_wait", max_wait)])


def _unreachable(exc: BaseException) -> str | None:
    """Why the endpoint could not be reached at all ("connection refused", "cannot resolve
    the host name"), or None for a failure worth retrying (timeouts, dropped connections)."""
    import socket

    from urllib3.exceptions import NameResolutionError

    from culturebench.safe_http import linked_errors

    for current in linked_errors(exc):
        if isinstance(current, ConnectionRefusedError):
            return "connection refused: nothing listens there"
        if isinstance(current, (NameResolutionError, socket.gaierror)):
            return "cannot resolve the host name"
    return None


def _checked_base_url(url: str) -> str:
    """The endpoint base URL without a trailing slash; a URL without an http(s) scheme or
    host is a configuration error, reported at once (not after minutes of retries)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(
            f"--base-url {redact(url)!r} must be an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1"
        )
    return url.strip().rstrip("/")
