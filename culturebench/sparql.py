"""SELECT queries against a SPARQL endpoint, the way a public service such as the Wikidata
Query Service expects to be asked: the SPARQL 1.1 protocol (GET with ``query=``, JSON results)
with a descriptive User-Agent, page by page (``ORDER BY`` + ``LIMIT``/``OFFSET``), retries
with backoff on 429, 5xx and timeouts that honour ``Retry-After``, and a cache keyed by the
endpoint and the exact query.

Every request goes through the guarded HTTP of :mod:`culturebench.safe_http`, like the rest
of culturebench's outgoing traffic:

* a wall-clock deadline of ``timeout`` seconds per request (headers and body; redirect hops
  included), so a server dripping a byte at a time cannot hold it past the timeout;
* a size cap (``max_bytes``): a larger answer is refused without buffering more than that;
* redirects are followed by hand (at most :data:`MAX_REDIRECTS`), and every hop, the first
  included, connects only to a public address or one that ``allow`` names;
* at most ``max_pages`` pages and ``max_rows`` rows, a page longer than its ``LIMIT`` is
  refused, and a page that repeats the previous one (a server ignoring ``OFFSET``) stops the
  paging, so a misbehaving server cannot page forever.

Errors are :class:`SparqlError` with one line naming the endpoint and the page.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from culturebench.errors import CultureBenchError, UsageError
from culturebench.retry_after import retry_after_seconds

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_WAIT = 300.0  # never sleep longer than this for one Retry-After
MAX_REDIRECTS = 5
MAX_BYTES = 64 * 1024 * 1024  # one answer; a Wikidata page of 10,000 dishes is about 5 MB
MAX_PAGES = 1000
MAX_ROWS = 2_000_000
ERROR_BODY_BYTES = 4096  # what is read of an error answer, for its first line
ACCEPT = "application/sparql-results+json, application/json;q=0.9"


class SparqlError(CultureBenchError):
    """A query that could not be answered (after its retries)."""


@dataclass
class Page:
    """One page of results: its rows (variable -> value, unbound left out) and when it was
    fetched (from the cache: when it was first fetched)."""

    rows: list[dict[str, str]]
    retrieved_at: str
    cached: bool


class _Retry(Exception):
    """One attempt failed in a way worth another try; ``message`` if it was the last."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


@dataclass
class SparqlClient:
    """A polite, bounded client of one endpoint. ``sleep`` is how it waits between tries
    (tests pass a recorder; the default is :func:`time.sleep`). ``allow`` lists the
    non-public addresses or networks it may contact (e.g. ``127.0.0.1`` for a local
    endpoint); anything else non-public is refused, redirect targets included."""

    endpoint: str
    user_agent: str
    timeout: float = 60.0  # wall clock per request (redirect hops included)
    retries: int = 4
    backoff: float = 2.0  # first wait without Retry-After; doubles with each try
    cache_dir: Path | None = None
    refresh: bool = False  # ignore cached pages (still writes the new ones)
    sleep: Callable[[float], None] = time.sleep
    allow: tuple[str, ...] = ()
    max_bytes: int = MAX_BYTES  # per answer
    max_pages: int = MAX_PAGES  # per select_pages
    max_rows: int = MAX_ROWS  # per select_pages
    requests: int = field(default=0, init=False)  # HTTP requests sent, retries and redirects included
    _session: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        from culturebench.safe_http import BlockedAddress, check_url, parse_allow

        parts = urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--endpoint {self.endpoint!r}: expected an http(s) URL of a SPARQL endpoint")
        if parts.username or parts.password:
            raise UsageError("--endpoint: credentials in the URL are not accepted")
        try:
            check_url(self.endpoint)
        except BlockedAddress as exc:
            raise UsageError(f"--endpoint {self.endpoint!r}: {exc}") from None
        self.allow = tuple(str(a) for a in self.allow)
        parse_allow(self.allow)  # a bad --allow is a usage error now, not at the first request
        for name in ("max_bytes", "max_pages", "max_rows"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1")

    def close(self) -> None:
        """Close the HTTP session (a later request opens a new one)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def select_pages(self, query: str, page_size: int) -> Iterator[Page]:
        """The rows of ``query`` (a SELECT ending in a total ORDER BY; LIMIT and OFFSET are
        added here), page after page until a short page. A page with more rows than
        ``page_size``, a page equal to the previous one, more than ``max_pages`` pages or
        more than ``max_rows`` rows is a :class:`SparqlError`."""
        from culturebench.safe_http import redact

        offset = pages = rows = 0
        previous: list[dict[str, str]] | None = None
        try:
            while True:
                where = f"{redact(self.endpoint)} (offset {offset})"
                if pages >= self.max_pages:
                    raise SparqlError(
                        f"{where}: more than {self.max_pages} pages of {page_size} rows (max_pages); "
                        "is the server ignoring OFFSET?"
                    )
                paged = f"{query.rstrip()}\nLIMIT {page_size}\nOFFSET {offset}"
                page = self.select(paged, label=f"offset {offset}")
                pages += 1
                rows += len(page.rows)
                if len(page.rows) > page_size:
                    raise SparqlError(
                        f"{where}: {len(page.rows)} rows for LIMIT {page_size}; the server ignores LIMIT"
                    )
                if page.rows and page.rows == previous:
                    raise SparqlError(
                        f"{where}: the page repeats the previous page's {len(page.rows)} rows; "
                        "the server ignores OFFSET"
                    )
                if rows > self.max_rows:
                    raise SparqlError(f"{where}: more than {self.max_rows} rows (max_rows)")
                yield page
                if len(page.rows) < page_size:
                    return
                previous = page.rows
                offset += page_size
        finally:
            self.close()

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
        """The parsed JSON answer to ``query``, after up to ``retries`` retries."""
        from culturebench.safe_http import redact

        where = f"{redact(self.endpoint)} ({label})"
        wait = self.backoff
        for attempt in range(self.retries + 1):
            try:
                body = self._attempt(query, where)
            except _Retry as retry:
                if attempt == self.retries:
                    raise SparqlError(f"{where}: {retry.message}{_tries(attempt)}") from None
                delay = retry.retry_after if retry.retry_after is not None else wait
                self.sleep(min(MAX_WAIT, delay))
                wait *= 2
                continue
            try:
                return json.loads(body)
            except ValueError as exc:
                raise SparqlError(f"{where}: malformed SPARQL JSON response ({_one_line(exc)})") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, query: str, where: str) -> bytes:
        """One request (and its redirect hops) under one wall-clock deadline: the body, or
        :class:`_Retry` for a failure worth retrying, or :class:`SparqlError`."""
        import requests

        from culturebench.safe_http import BlockedAddress, Deadline, check_url, guarded_session, redact

        if self._session is None:
            self._session = guarded_session(self.allow, self.user_agent)
        url: str = self.endpoint
        params: dict[str, str] | None = {"query": query}
        timed_out = f"timed out after {self.timeout:g} s"
        with Deadline(self.timeout) as deadline:
            try:
                for hop in range(MAX_REDIRECTS + 1):
                    self.requests += 1
                    try:
                        resp = self._session.get(
                            url,
                            params=params,
                            headers={"Accept": ACCEPT},
                            timeout=self.timeout,
                            allow_redirects=False,
                            stream=True,
                        )
                    except requests.Timeout:
                        raise _Retry(timed_out) from None
                    except requests.ConnectionError as exc:
                        if deadline.expired:
                            raise _Retry(timed_out) from None
                        raise SparqlError(f"{where}: cannot connect ({_reason(exc)})") from None
                    with resp:
                        location = resp.headers.get("Location")
                        if resp.is_redirect and location:
                            target = urljoin(resp.url, location)
                            if hop == MAX_REDIRECTS:
                                raise SparqlError(f"{where}: more than {MAX_REDIRECTS} redirects")
                            try:
                                check_url(target)
                            except BlockedAddress as exc:
                                raise SparqlError(
                                    f"{where}: redirect to {redact(target)} refused: {exc}"
                                ) from None
                            url, params = target, None  # the target carries its own query string
                            continue
                        return self._body(resp, where, deadline, timed_out)
                raise AssertionError("unreachable")  # pragma: no cover
            except BlockedAddress as exc:
                hop_url = redact(url)
                via = "" if url == self.endpoint else f"redirect to {hop_url} "
                raise SparqlError(
                    f"{where}: {via}refused: {exc} (pass --allow ADDRESS to contact a non-public address)"
                ) from None

    def _body(self, resp, where: str, deadline, timed_out: str) -> bytes:
        """The answer's body, read within the deadline and the size cap."""
        import requests
        from urllib3.exceptions import HTTPError as Urllib3Error

        from culturebench.safe_http import read_capped

        status = resp.status_code
        if status >= 400:
            try:
                said = read_capped(resp, ERROR_BODY_BYTES)
            except (requests.RequestException, Urllib3Error, OSError):
                said = None
            text = f"HTTP {status} {resp.reason or ''}".rstrip()
            first = _first_line(said)
            if status in RETRY_STATUS:
                delay = retry_after_seconds(resp.headers.get("Retry-After"))
                raise _Retry(f"{text}: {first}" if first and first != resp.reason else text, delay)
            raise SparqlError(f"{where}: {text}: {first}" if first else f"{where}: {text}")
        if status != 200:
            raise SparqlError(f"{where}: HTTP {status} {resp.reason or ''}".rstrip())
        length = resp.headers.get("Content-Length", "")
        if length.isascii() and length.isdigit() and int(length) > self.max_bytes:
            raise SparqlError(
                f"{where}: answer of {int(length)} bytes is over the limit of {self.max_bytes} (max_bytes)"
            )
        try:
            body = read_capped(resp, self.max_bytes)
        except (requests.RequestException, Urllib3Error, OSError) as exc:
            if deadline.expired or _is_timeout(exc):
                raise _Retry(timed_out) from None
            raise _Retry(f"connection broken while reading the answer ({_reason(exc)})") from None
        if deadline.expired:  # the shutdown may have cut a body without a length short
            raise _Retry(timed_out)
        if body is None:
            raise SparqlError(f"{where}: answer over the limit of {self.max_bytes} bytes (max_bytes)")
        return body


def _tries(attempt: int) -> str:
    return f" (after {attempt + 1} tries)" if attempt else ""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _first_line(said: bytes | None) -> str:
    text = (said or b"").decode("utf-8", "replace")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return _one_line(first)[:200]


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the errors inside it (``reason``, a first argument, ``__context__``)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for inner in (getattr(current, "reason", None), *current.args[:1], current.__context__):
            if isinstance(inner, BaseException):
                todo.append(inner)


def _is_timeout(exc: BaseException) -> bool:
    """A socket read that timed out, however requests and urllib3 wrapped it."""
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    return any(isinstance(e, TimeoutError | Urllib3Timeout) for e in _causes(exc))


def _reason(exc: BaseException) -> str:
    """The innermost cause of a requests/urllib3 error, on one line, without the URL
    (``[Errno 111] Connection refused``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        inner = getattr(current, "reason", None)
        if isinstance(inner, BaseException):
            current = inner
            continue
        if current.args and isinstance(current.args[0], BaseException):
            current = current.args[0]
            continue
        break
    text = str(current)
    if "Failed to establish a new connection: " in text:
        text = text.split("Failed to establish a new connection: ", 1)[1]
    from culturebench.safe_http import redact

    return redact(_one_line(text))[:200]


def _rows(response: Any, endpoint: str, label: str) -> list[dict[str, str]]:
    """Bindings as plain dicts (variable -> lexical value); a response that is not SPARQL
    JSON results is an error."""
    from culturebench.safe_http import redact

    results = response.get("results") if isinstance(response, dict) else None
    bindings = results.get("bindings") if isinstance(results, dict) else None
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
