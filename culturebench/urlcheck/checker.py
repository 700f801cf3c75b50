"""Check URLs politely and thoroughly.

* concurrency overall and per host, with a minimum delay between requests to one host;
* timeouts; retries with exponential backoff on 5xx, 429 (``Retry-After`` honoured, capped),
  timeouts and connection errors;
* HEAD first for pages, falling back to GET when HEAD is refused; GET (streamed, size-capped)
  for images;
* redirects followed by hand: every hop is recorded, loops detected, cross-host hops flagged,
  and each hop passes the private-address guard;
* images: content type, byte and pixel limits checked before decoding, truncated files
  detected, a perceptual hash compared with the one recorded at release time (or the first
  one seen by this checker) to catch a silently replaced image; HTML served with 200 where an
  image was expected is a soft 404.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urljoin, urlsplit

from culturebench import __version__
from culturebench.http import retry_after_seconds
from culturebench.safe_http import BlockedAddress, Deadline, check_url, guarded_session, read_capped
from culturebench.urlcheck.collect import UrlItem

RETRY_STATUS = {429, 500, 502, 503, 504}
HEAD_REFUSED = {400, 403, 405, 501}
WARNING_PROBLEMS = {"cross_host_redirect", "content_type_mismatch"}
_IMAGE_PROBLEMS = {  # safe_decode reasons -> URL-check problem codes
    "not_an_image": "not_an_image",
    "too_many_pixels": "image_too_many_pixels",
    "too_large": "image_too_large",
    "truncated": "image_truncated",
}


@dataclass(frozen=True)
class CheckConfig:
    """Limits and politeness. Defaults suit a scheduled job against public hosts."""

    timeout_s: float = 15.0
    retries: int = 3
    backoff_s: float = 1.0
    max_retry_after_s: float = 60.0
    concurrency: int = 16
    per_host: int = 2
    per_host_delay_s: float = 0.5
    max_redirects: int = 10
    max_image_bytes: int = 20 * 1024 * 1024
    max_image_pixels: int = 40_000_000
    phash_max_distance: int = 10
    allow: tuple[str, ...] = ()
    user_agent: str = f"culturebench-urlcheck/{__version__}"


@dataclass
class UrlResult:
    """What one URL check found."""

    url: str
    kind: str
    status: str  # "ok", "warning" or "broken"
    problems: list[str] = field(default_factory=list)
    http_status: int | None = None
    final_url: str | None = None
    redirects: list[str] = field(default_factory=list)
    content_type: str | None = None
    size: int | None = None
    phash: str | None = None
    error: str | None = None
    attempts: int = 0
    elapsed_s: float = 0.0
    dataset: str | None = None
    row_id: str | None = None
    field: str | None = None
    checked_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _HostGate:
    """At most ``limit`` requests in flight per host, starts at least ``delay`` apart."""

    def __init__(self, limit: int, delay: float) -> None:
        self.limit, self.delay = limit, delay
        self._sems: dict[str, threading.Semaphore] = {}
        self._next: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def _semaphore(self, host: str) -> threading.Semaphore:
        with self._lock:  # one semaphore per host, even when two threads meet a host at once
            if host not in self._sems:
                self._sems[host] = threading.Semaphore(self.limit)
            return self._sems[host]

    def __call__(self, host: str):
        gate = self
        sem = self._semaphore(host)

        class _Slot:
            def __enter__(self_inner):
                sem.acquire()
                with gate._lock:
                    start = max(time.monotonic(), gate._next[host])
                    gate._next[host] = start + gate.delay
                pause = start - time.monotonic()
                if pause > 0:
                    time.sleep(pause)

            def __exit__(self_inner, *exc):
                sem.release()

        return _Slot()


class UrlChecker:
    """Checks :class:`UrlItem` s; ``baseline_phash`` maps URL -> perceptual hash seen before."""

    def __init__(
        self, config: CheckConfig | None = None, *, baseline_phash: dict[str, str] | None = None
    ) -> None:
        self.config = config or CheckConfig()
        self.baseline = dict(baseline_phash or {})
        self._gate = _HostGate(self.config.per_host, self.config.per_host_delay_s)
        self._local = threading.local()

    # ------------------------------------------------------------------ HTTP
    def _session(self):
        if not hasattr(self._local, "session"):
            self._local.session = guarded_session(self.config.allow, self.config.user_agent)
        return self._local.session

    def _request(self, method: str, url: str, result: UrlResult):
        """One request with retries; returns the response or raises the last error."""
        import requests

        host = urlsplit(url).netloc
        last_exc: Exception | None = None
        for attempt in range(self.config.retries + 1):
            result.attempts += 1
            deadline = self._local.deadline
            try:
                with self._gate(host):
                    deadline.arm(self.config.timeout_s)  # wall clock: request, headers and body
                    resp = self._session().request(
                        method, url, timeout=self.config.timeout_s, allow_redirects=False, stream=True
                    )
            except (requests.Timeout, requests.ConnectionError) as caught:
                exc: Exception = caught
                if deadline.expired:
                    exc = requests.Timeout(f"no response within {self.config.timeout_s:g} s (deadline)")
                last_exc = exc
                if attempt < self.config.retries:
                    time.sleep(self.config.backoff_s * 2**attempt)
                    continue
                raise exc from None
            if resp.status_code in RETRY_STATUS and attempt < self.config.retries:
                delay = retry_after_seconds(resp.headers.get("Retry-After"))
                resp.close()
                if delay is None:
                    delay = self.config.backoff_s * 2**attempt
                time.sleep(min(delay, self.config.max_retry_after_s))
                continue
            return resp
        raise last_exc or RuntimeError("unreachable")

    # ------------------------------------------------------------------ one URL
    def check(self, item: UrlItem) -> UrlResult:
        import requests

        started = time.monotonic()
        result = UrlResult(
            url=item.url,
            kind=item.kind,
            status="ok",
            dataset=item.dataset,
            row_id=item.row_id,
            field=item.field,
            checked_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        try:
            with Deadline() as deadline:
                self._local.deadline = deadline
                resp = self._follow(item, result)
                if resp is not None:
                    with resp:
                        try:
                            self._inspect(item, resp, result)
                        except (requests.RequestException, OSError):
                            deadline.raise_if_expired(item.url)
                            raise
                        deadline.raise_if_expired(item.url)
        except BlockedAddress as exc:
            result.problems.append("blocked_address")
            result.error = str(exc)
        except requests.Timeout as exc:
            result.problems.append("timeout")
            result.error = f"{type(exc).__name__}: {exc}"
        except (requests.ConnectionError, OSError) as exc:
            result.problems.append("connection_error")
            result.error = f"{type(exc).__name__}: {exc}"
        result.elapsed_s = round(time.monotonic() - started, 3)
        hard = [p for p in result.problems if p not in WARNING_PROBLEMS]
        result.status = "broken" if hard else ("warning" if result.problems else "ok")
        return result

    def _follow(self, item: UrlItem, result: UrlResult):
        url = item.url
        seen = {url}
        method = "GET" if item.kind == "image" else "HEAD"
        origin_host = urlsplit(url).hostname
        while True:
            check_url(url)  # the guarded session checks the address it connects to
            resp = self._request(method, url, result)
            if method == "HEAD" and resp.status_code in HEAD_REFUSED:
                resp.close()
                method = "GET"
                resp = self._request(method, url, result)
            if 300 <= resp.status_code < 400 and resp.headers.get("Location"):
                target = urljoin(url, resp.headers["Location"])
                resp.close()
                result.redirects.append(target)
                if urlsplit(target).hostname != origin_host and "cross_host_redirect" not in result.problems:
                    result.problems.append("cross_host_redirect")
                if target in seen:
                    result.problems.append("redirect_loop")
                    result.final_url = target
                    return None
                if len(result.redirects) > self.config.max_redirects:
                    result.problems.append("too_many_redirects")
                    return None
                seen.add(target)
                url = target
                continue
            result.final_url = url
            return resp

    def _inspect(self, item: UrlItem, resp, result: UrlResult) -> None:
        result.http_status = resp.status_code
        result.content_type = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower() or None
        length = resp.headers.get("Content-Length")
        result.size = int(length) if length and length.isascii() and length.isdigit() else None
        if resp.status_code >= 400:
            result.problems.append(f"http_{resp.status_code}")
            return
        if item.kind != "image":
            return
        if result.content_type == "text/html":
            result.problems.append("soft_404")  # an HTML page where an image was expected
            return
        if result.size is not None and result.size > self.config.max_image_bytes:
            result.problems.append("image_too_large")
            return
        data = read_capped(resp, self.config.max_image_bytes)
        if data is None:
            result.problems.append("image_too_large")
            return
        result.size = len(data)
        self._inspect_image(item, data, result)

    def _inspect_image(self, item: UrlItem, data: bytes, result: UrlResult) -> None:
        import imagehash

        from culturebench.images.decode import ImageError, safe_decode

        try:  # the image stage's safe decoder: limits first, any decoder failure is a result
            decoded = safe_decode(
                data, max_bytes=self.config.max_image_bytes, max_pixels=self.config.max_image_pixels
            )
            result.phash = str(imagehash.phash(decoded.image))
        except ImageError as exc:
            result.problems.append(_IMAGE_PROBLEMS.get(exc.reason, "image_undecodable"))
            result.error = str(exc)[:300]
            return
        if result.content_type and not result.content_type.startswith("image/"):
            result.problems.append("content_type_mismatch")
        expected = item.expected_phash or self.baseline.get(item.url)
        if expected:
            distance = imagehash.hex_to_hash(expected) - imagehash.hex_to_hash(result.phash)
            if distance > self.config.phash_max_distance:
                result.problems.append("image_changed")
                result.error = f"perceptual hash distance {distance} > {self.config.phash_max_distance}"

    # ------------------------------------------------------------------ many URLs
    def check_all(
        self, items: Sequence[UrlItem], progress: Callable[[int, int], None] | None = None
    ) -> list[UrlResult]:
        """Check every item; hosts are interleaved so one slow host does not hold the pool."""
        order = _interleave_by_host(items)
        results: dict[str, UrlResult] = {}
        done = 0
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            for result in pool.map(self.check, order):
                results[result.url] = result
                done += 1
                if progress:
                    progress(done, len(order))
        return [results[item.url] for item in items]


def _interleave_by_host(items: Sequence[UrlItem]) -> list[UrlItem]:
    queues: dict[str, deque[UrlItem]] = defaultdict(deque)
    for item in items:
        queues[urlsplit(item.url).netloc].append(item)
    out: list[UrlItem] = []
    while queues:
        for host in list(queues):
            out.append(queues[host].popleft())
            if not queues[host]:
                del queues[host]
    return out
