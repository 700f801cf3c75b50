"""SELECT queries against a SPARQL endpoint, the way a public service such as the Wikidata
Query Service expects to be asked: SPARQLWrapper with JSON results, a descriptive User-Agent,
a timeout, page by page (``ORDER BY`` + ``LIMIT``/``OFFSET``), retries with backoff on 429
and 5xx that honour ``Retry-After``, and a cache keyed by the endpoint and the exact query.

Errors are :class:`SparqlError` with one line naming the endpoint and the page.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.error
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from culturebench.errors import CultureBenchError, UsageError
from culturebench.http import retry_after_seconds

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_WAIT = 300.0  # never sleep longer than this for one Retry-After


class SparqlError(CultureBenchError):
    """A query that could not be answered (after its retries)."""


@dataclass
class Page:
    """One page of results: its rows (variable -> value, unbound left out) and when it was
    fetched (from the cache: when it was first fetched)."""

    rows: list[dict[str, str]]
    retrieved_at: str
    cached: bool


@dataclass
class SparqlClient:
    """A polite client of one endpoint. ``sleep`` is how it waits between tries (tests pass
    a recorder; the default is :func:`time.sleep`)."""

    endpoint: str
    user_agent: str
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 2.0  # first wait without Retry-After; doubles with each try
    cache_dir: Path | None = None
    refresh: bool = False  # ignore cached pages (still writes the new ones)
    sleep: Callable[[float], None] = time.sleep
    requests: int = field(default=0, init=False)  # HTTP requests sent, retries included

    def __post_init__(self) -> None:
        parts = urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--endpoint {self.endpoint!r}: expected an http(s) URL of a SPARQL endpoint")
        if parts.username or parts.password:
            raise UsageError("--endpoint: credentials in the URL are not accepted")

    def select_pages(self, query: str, page_size: int) -> Iterator[Page]:
        """The rows of ``query`` (a SELECT ending in a total ORDER BY; LIMIT and OFFSET are
        added here), page after page until a short page."""
        offset = 0
        while True:
            paged = f"{query.rstrip()}\nLIMIT {page_size}\nOFFSET {offset}"
            page = self.select(paged, label=f"offset {offset}")
            yield page
            if len(page.rows) < page_size:
                return
            offset += page_size

    def select(self, query: str, *, label: str = "query") -> Page:
        """One SELECT, from the cache when it holds this endpoint's answer to this query."""
        path = self._cache_path(query)
        if path is not None and path.exists() and not self.refresh:
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
                return Page(_rows(stored["response"], self.endpoint, label), stored["retrieved_at"], True)
            except (ValueError, KeyError, SparqlError):
                pass  # a damaged cache entry is fetched again
        retrieved_at = datetime.now(UTC).isoformat(timespec="seconds")
        response = self._fetch(query, label)
        rows = _rows(response, self.endpoint, label)
        if path is not None:
            from culturebench.atomic import write_text_atomic

            path.parent.mkdir(parents=True, exist_ok=True)
            record = {"endpoint": self.endpoint, "query": query, "retrieved_at": retrieved_at}
            write_text_atomic(path, json.dumps({**record, "response": response}, ensure_ascii=False))
        return Page(rows, retrieved_at, False)

    def _cache_path(self, query: str) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(f"{self.endpoint}\n{query}".encode()).hexdigest()
        return Path(self.cache_dir) / key[:2] / f"{key}.json"

    def _fetch(self, query: str, label: str) -> Any:
        from SPARQLWrapper import JSON, SPARQLWrapper
        from SPARQLWrapper.SPARQLExceptions import SPARQLWrapperException

        from culturebench.safe_http import redact

        where = f"{redact(self.endpoint)} ({label})"
        wait = self.backoff
        for attempt in range(self.retries + 1):
            client = SPARQLWrapper(self.endpoint, agent=self.user_agent)
            client.setQuery(query)
            client.setReturnFormat(JSON)
            client.setTimeout(max(1, round(self.timeout)))
            self.requests += 1
            retry_after: float | None = None
            try:
                response = client.query()
                body = response.response.read()
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRY_STATUS or attempt == self.retries:
                    raise SparqlError(f"{where}: HTTP {exc.code} {exc.reason}{_tries(attempt)}") from None
                retry_after = retry_after_seconds(exc.headers.get("Retry-After") if exc.headers else None)
            except SPARQLWrapperException as exc:  # 400, 401, 404, 414, 500: SPARQLWrapper's own
                status = _status_of(exc)
                if status not in RETRY_STATUS or attempt == self.retries:
                    raise SparqlError(f"{where}: {_describe(exc, status)}{_tries(attempt)}") from None
            except TimeoutError:
                if attempt == self.retries:
                    raise SparqlError(f"{where}: {_timed_out(self.timeout, attempt)}") from None
            except urllib.error.URLError as exc:
                if not isinstance(exc.reason, TimeoutError):
                    raise SparqlError(f"{where}: cannot connect ({exc.reason})") from None
                if attempt == self.retries:
                    raise SparqlError(f"{where}: {_timed_out(self.timeout, attempt)}") from None
            else:
                try:
                    return json.loads(body)
                except ValueError as exc:
                    raise SparqlError(f"{where}: malformed SPARQL JSON response ({exc})") from None
            delay = min(MAX_WAIT, retry_after if retry_after is not None else wait)
            self.sleep(delay)
            wait *= 2
        raise AssertionError("unreachable")  # pragma: no cover


def _timed_out(timeout: float, attempt: int) -> str:
    return f"timed out after {timeout:g} s{_tries(attempt)}"


def _tries(attempt: int) -> str:
    return f" (after {attempt + 1} tries)" if attempt else ""


def _describe(exc: Exception, status: int | None) -> str:
    """``HTTP 404 EndPointNotFound: <first line the server said>``."""
    said = getattr(exc, "response", None) or b""
    if isinstance(said, bytes):
        said = said.decode("utf-8", "replace")
    first = next((line.strip() for line in str(said).splitlines() if line.strip()), "")
    head = f"HTTP {status} {type(exc).__name__}" if status else type(exc).__name__
    return f"{head}: {first[:200]}" if first else head


def _status_of(exc: Exception) -> int | None:
    """The HTTP status behind one of SPARQLWrapper's exceptions."""
    from SPARQLWrapper import SPARQLExceptions as E

    for kind, status in (
        (E.EndPointInternalError, 500),
        (E.QueryBadFormed, 400),
        (E.EndPointNotFound, 404),
        (E.Unauthorized, 401),
        (E.URITooLong, 414),
    ):
        if isinstance(exc, kind):
            return status
    return None


def _rows(response: Any, endpoint: str, label: str) -> list[dict[str, str]]:
    """Bindings as plain dicts (variable -> lexical value); a response that is not SPARQL
    JSON results is an error."""
    from culturebench.safe_http import redact

    bindings = response.get("results", {}).get("bindings") if isinstance(response, dict) else None
    if not isinstance(bindings, list) or not isinstance(response.get("head"), dict):
        raise SparqlError(
            f"{redact(endpoint)} ({label}): malformed SPARQL JSON response (no head, results.bindings)"
        )
    rows = []
    for number, binding in enumerate(bindings, start=1):
        if not isinstance(binding, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("value"), str) for v in binding.values()
        ):
            raise SparqlError(f"{redact(endpoint)} ({label}): malformed binding {number}")
        rows.append({name: value["value"] for name, value in binding.items()})
    return rows
