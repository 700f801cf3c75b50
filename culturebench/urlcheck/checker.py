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

Stoppable: names are resolved on a helper thread with a bounded wait, every request has a
wall-clock deadline, and :meth:`UrlChecker.stop` (called when the caller is interrupted, e.g.
by SIGTERM or Ctrl-C) wakes every blocked read, ends every wait and leaves the pool without
waiting for it, so a check against hosts that never answer stops within a second or two.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urljoin, urlsplit

from culturebench import __version__
from culturebench.retry_after import retry_after_seconds
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
RESOLVED_TTL_S = 300.0  # a host that resolved is not resolved again (by us) for this long


class Stopped(Exception):
    """The check was stopped (:meth:`UrlChecker.stop`); raised inside the worker threads."""


class _ResolveFailed(OSError):
    """A host name did not resolve (or not within the time allowed: ``timed_out``)."""

    timed_out = False


class _ResolveTimedOut(_ResolveFailed):
    """The resolver gave no answer in time: retried like any timeout."""

    timed_out = True


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
    # host names looked up at once before the check (the resolver's time, not the hosts')
    resolve_concurrency: int = 256


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
    unreachable: str | None = None  # "dns" or "connect": the host itself was never reached

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _HostDied(Exception):
    """The host was found dead while this request waited for its turn."""


class _HostGate:
    """At most ``limit`` requests in flight per host, starts at least ``delay`` apart; the
    waits end early once ``stop`` is set (raising :class:`Stopped`) or the host is in ``dead``
    (the checker's dead hosts; raising :class:`_HostDied`)."""

    STEP_S = 0.05  # how often a wait looks at the stop and dead marks

    def __init__(
        self,
        limit: int,
        delay: float,
        stop: threading.Event | None = None,
        dead: Mapping[str, object] | None = None,
    ) -> None:
        self.limit, self.delay, self.stop = limit, delay, stop or threading.Event()
        self.dead: Mapping[str, object] = dead if dead is not None else {}
        self._sems: dict[str, threading.Semaphore] = {}
        self._next: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def _check(self, host: str) -> None:
        if self.stop.is_set():
            raise Stopped()
        if host in self.dead:
            raise _HostDied(host)

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
                while not sem.acquire(timeout=gate.STEP_S):
                    gate._check(host)
                try:
                    gate._check(host)
                    with gate._lock:
                        start = max(time.monotonic(), gate._next[host])
                        gate._next[host] = start + gate.delay
                    while (pause := start - time.monotonic()) > 0:
                        gate.stop.wait(min(pause, gate.STEP_S))
                        gate._check(host)
                except BaseException:
                    sem.release()
                    raise

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
        self._stop = threading.Event()
        # host (netloc) -> why it is dead for the rest of this check: its name did not resolve,
        # or it refused a connection; its other URLs are reported at once, not retried, and
        # the ones waiting for the host's turn stop waiting
        self._dead: dict[str, OSError] = {}
        self._gate = _HostGate(self.config.per_host, self.config.per_host_delay_s, self._stop, self._dead)
        self._local = threading.local()
        self._deadlines: set[Any] = set()  # the deadlines of the checks in flight
        self._deadlines_lock = threading.Lock()
        self._resolved: dict[str, float] = {}  # host -> when it last resolved

    # ------------------------------------------------------------------ stopping
    def stop(self) -> None:
        """Stop the check: no new request starts, every wait ends and every blocked read is
        woken (its socket shut down). Safe to call from any thread, more than once."""
        self._stop.set()
        with self._deadlines_lock:
            deadlines = list(self._deadlines)
        for deadline in deadlines:
            deadline._expire()  # shuts the sockets down: a blocked recv returns at once

    def _sleep(self, seconds: float) -> None:
        """Sleep, or raise :class:`Stopped` as soon as the check is stopped."""
        if self._stop.wait(max(seconds, 0.0)) or self._stop.is_set():
            raise Stopped()

    def _resolve(self, host: str, port: int) -> None:
        """Resolve ``host`` on a daemon helper thread and wait at most ``timeout_s`` (or until
        stopped): a resolver that never answers cannot hold a worker, nor the process at exit.
        Raises :class:`_ResolveFailed`; success is remembered for :data:`RESOLVED_TTL_S`."""
        now = time.monotonic()
        if now - self._resolved.get(host, -RESOLVED_TTL_S) < RESOLVED_TTL_S:
            return
        outcome: list[BaseException | None] = []
        done = threading.Event()

        def lookup() -> None:
            try:
                socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                outcome.append(None)
            except (OSError, UnicodeError) as exc:
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=lookup, name=f"resolve {host}", daemon=True).start()
        waited = 0.0
        while not done.wait(0.2):
            waited += 0.2
            if self._stop.is_set():
                raise Stopped()
            if waited >= self.config.timeout_s:
                raise _ResolveTimedOut(f"cannot resolve {host}: no answer within {self.config.timeout_s:g} s")
        if outcome and outcome[0] is not None:
            raise _ResolveFailed(f"cannot resolve {host}: {outcome[0]}")
        self._resolved[host] = time.monotonic()

    # ------------------------------------------------------------------ HTTP
    def _session(self):
        if not hasattr(self._local, "session"):
            self._local.session = guarded_session(self.config.allow, self.config.user_agent)
        return self._local.session

    def _request(self, method: str, url: str, result: UrlResult):
        """One request with retries; returns the response or raises the last error."""
        import requests

        parts = urlsplit(url)
        host = parts.netloc
        port = _port(parts)
        last_exc: Exception | None = None
        for attempt in range(self.config.retries + 1):
            if self._stop.is_set():
                raise Stopped()
            self._raise_if_dead(host)  # no request, no wait for the host's turn, no retries
            deadline = self._local.deadline
            try:
                with self._gate(host):
                    result.attempts += 1
                    self._resolve(parts.hostname or "", port)
                    deadline.arm(self.config.timeout_s)  # wall clock: request, headers and body
                    if self._stop.is_set():  # stopped while waiting above: arming cleared the expiry
                        raise Stopped()  # that stop() set, so no socket opened now would be shut
                    resp = self._session().request(
                        method, url, timeout=self.config.timeout_s, allow_redirects=False, stream=True
                    )
            except _HostDied:  # found dead while this request waited for its turn
                self._raise_if_dead(host)
                raise
            except (requests.Timeout, requests.ConnectionError, _ResolveFailed) as caught:
                if self._stop.is_set():
                    raise Stopped() from None
                exc: Exception = caught
                if deadline.expired:
                    exc = requests.Timeout(f"no response within {self.config.timeout_s:g} s (deadline)")
                cause = _dead_host(exc)
                if cause is not None:  # no such host, or nothing listens: retrying only waits
                    self._dead.setdefault(host, cause)
                    raise cause from None
                last_exc = exc
                if attempt < self.config.retries:
                    self._sleep(self.config.backoff_s * 2**attempt)
                    continue
                raise exc from None
            if resp.status_code in RETRY_STATUS and attempt < self.config.retries:
                delay = retry_after_seconds(resp.headers.get("Retry-After"))
                resp.close()
                if delay is None:
                    delay = self.config.backoff_s * 2**attempt
                self._sleep(min(delay, self.config.max_retry_after_s))
                continue
            return resp
        raise last_exc or RuntimeError("unreachable")

    def resolve_hosts(self, items: Sequence[UrlItem]) -> None:
        """Look up every host name of ``items`` at once (``resolve_concurrency`` lookups in
        flight: the system resolver can take seconds per name, which the per-host checks would
        otherwise wait for one worker at a time). A name that does not resolve makes its host
        dead before any of its URLs is checked; a lookup that times out is left to the checks
        (and their retries); one that resolves is not looked up again."""
        hosts: dict[str, tuple[str, int]] = {}
        for item in items:
            parts = urlsplit(item.url)
            try:
                port = _port(parts)
            except ValueError:  # a bad port: the URL's own check reports it
                continue
            if parts.hostname:
                hosts.setdefault(parts.netloc, (parts.hostname, port))
        if not hosts:
            return

        def lookup(netloc: str) -> None:
            try:
                self._resolve(*hosts[netloc])
            except _ResolveFailed as exc:
                if not exc.timed_out:
                    self._dead.setdefault(netloc, exc)

        workers = max(1, min(self.config.resolve_concurrency, len(hosts)))
        lookups = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="urlcheck-resolve")
        try:
            for done in [lookups.submit(lookup, netloc) for netloc in hosts]:
                done.result()  # Stopped ends the check here, as in the checks themselves
        except BaseException:  # interrupted: stop every lookup's wait, leave without them
            self.stop()
            lookups.shutdown(wait=False, cancel_futures=True)
            raise
        lookups.shutdown(wait=True)

    def _raise_if_dead(self, host: str) -> None:
        """Report a URL of a host found dead earlier in this check, with the same cause."""
        dead = self._dead.get(host)
        if dead is not None:
            raise type(dead)(f"{dead} (the host is dead for the rest of this check: not retried)")

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
                with self._deadlines_lock:
                    self._deadlines.add(deadline)
                if self._stop.is_set():
                    raise Stopped()
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
            result.unreachable = "connect" if _connect_failure(exc) else None
        except (requests.ConnectionError, OSError) as exc:
            result.problems.append("connection_error")
            result.error = f"{type(exc).__name__}: {exc}"
            result.unreachable = (
                "dns" if isinstance(exc, _ResolveFailed) else ("connect" if _connect_failure(exc) else None)
            )
        finally:
            with self._deadlines_lock:
                self._deadlines.discard(self._local.deadline)
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
        """Check every item; hosts are interleaved so one slow host does not hold the pool.

        When the caller is interrupted (KeyboardInterrupt, or SystemExit from a SIGTERM
        handler) the check is stopped (:meth:`stop`), queued checks are cancelled and the pool
        is left without waiting; the interruption is raised again and nothing is returned."""
        order = _interleave_by_host(items)
        results: dict[str, UrlResult] = {}
        pool = ThreadPoolExecutor(max_workers=self.config.concurrency, thread_name_prefix="urlcheck")
        try:
            self.resolve_hosts(order)
            futures: list[Future[UrlResult]] = [pool.submit(self.check, item) for item in order]
            for done, future in enumerate(as_completed(futures), start=1):
                result = future.result()
                results[result.url] = result
                if progress:
                    progress(done, len(order))
        except BaseException:
            self.stop()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return [results[item.url] for item in items]


def _port(parts: Any) -> int:
    """The port a URL (``urlsplit``'s parts) connects to: its own, else its scheme's."""
    return parts.port or (443 if parts.scheme == "https" else 80)


def _dead_host(exc: BaseException) -> OSError | None:
    """Why the host of a failed request is dead for the rest of the check (its name did not
    resolve, or it refused the connection), or None for a failure worth retrying (timeouts,
    resets, TLS errors)."""
    from culturebench.safe_http import linked_errors

    if isinstance(exc, _ResolveFailed):
        return None if exc.timed_out else exc
    for current in linked_errors(exc):
        if isinstance(current, ConnectionRefusedError):
            return ConnectionRefusedError(f"connection refused: {exc}")
    return None


def _connect_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (a requests/urllib3 error, possibly wrapped) means the connection was
    never made: refused, unreachable, name not resolved, or timed out while connecting."""
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    from culturebench.safe_http import linked_errors

    never_connected = (NewConnectionError, ConnectTimeoutError, _ResolveFailed, ConnectionRefusedError)
    return any(isinstance(current, never_connected) for current in linked_errors(exc))


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
