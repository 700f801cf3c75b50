"""Download images into a content-addressed cache (by sha256), verifying the recorded
checksum when there is one. Cached bytes are reused without network, so offline builds keep
working with what was fetched before; a run that was killed resumes where it stopped."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from culturebench.hashing import sha256_bytes
from culturebench.images.decode import MAX_BYTES
from culturebench.stoppable import run_stoppable

MAX_REDIRECTS = 10
CONNECT_TIMEOUT_S = 10.0  # a host that does not accept the connection fails sooner than a slow read
#: Each download's wall-clock deadline, redirects included (``--image-timeout``).
TIMEOUT_S = 30.0
#: Downloads from one host that time out in a row (no answer from it in between) before its
#: remaining downloads fail as ``timeout`` without being tried: a mirror that accepts
#: connections and never answers costs about one timeout (at most this many), not one per image.
GIVE_UP_AFTER_TIMEOUTS = 3


@dataclass(frozen=True)
class FetchRequest:
    key: str  # the image's identity in the dataset (its recorded URL)
    url: str  # where to download it from (the URL itself or a mirror)
    sha256: str | None = None


@dataclass
class FetchResult:
    key: str
    data: bytes | None
    sha256: str | None
    error: str | None = None  # checksum_mismatch, too_large, http_<code>, unavailable, blocked, timeout
    from_cache: bool = False


class ImageCache:
    """Files named by their sha256 under ``root`` (``ab/abcdef...``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def get(self, sha256: str) -> bytes | None:
        path = self.path(sha256)
        return path.read_bytes() if path.is_file() else None

    def put(self, data: bytes) -> str:
        sha = sha256_bytes(data)
        path = self.path(sha)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        return sha


def default_cache() -> ImageCache:
    from culturebench.cache_dirs import cache_root

    return ImageCache(cache_root() / "images")


def fetch_images(
    requests: Sequence[FetchRequest],
    *,
    cache: ImageCache,
    concurrency: int = 8,
    timeout_s: float = TIMEOUT_S,
    max_bytes: int = MAX_BYTES,
    allow: tuple[str, ...] = (),
    offline: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, FetchResult]:
    """Fetch every request (cache first); failures are results, never exceptions.

    Downloads go through :func:`culturebench.safe_http.guarded_session`, the URL checker's
    guard: every redirect hop connects only to a checked public (or ``allow``-ed) address,
    each connection attempt is bounded by ``CONNECT_TIMEOUT_S`` (or ``timeout_s`` when shorter),
    each read and each whole download (redirects included) by ``timeout_s``. Once
    :data:`GIVE_UP_AFTER_TIMEOUTS` downloads from one host have timed out in a row, its other
    downloads fail as ``timeout`` at once, so a host that never answers costs at most
    ``GIVE_UP_AFTER_TIMEOUTS * timeout_s`` seconds, however many images it serves. Downloads
    run on :func:`run_stoppable`'s threads, so SIGTERM and Ctrl-C stop the stage at once even
    while some are blocked (the cache only ever holds complete, checksum-named files, so the
    next run resumes). ``progress(done, total)`` counts completed downloads (0 first).
    """
    import requests as http

    from culturebench.safe_http import BlockedAddress, Deadline, check_url, guarded_session, read_capped

    local = threading.local()
    connect_s = min(CONNECT_TIMEOUT_S, timeout_s)
    lock = threading.Lock()
    timeouts: dict[str, int] = {}  # per host: downloads timed out in a row

    def session():
        if not hasattr(local, "session"):
            local.session = guarded_session(allow)
            local.session.max_redirects = MAX_REDIRECTS
        return local.session

    def one(req: FetchRequest) -> FetchResult:
        if req.sha256:
            cached = cache.get(req.sha256)
            if cached is not None:
                return FetchResult(req.key, cached, req.sha256, from_cache=True)
        if req.url.startswith("file:"):  # a local mirror folder: no network, same checks
            data = read_local(req.url, max_bytes)
            if isinstance(data, str):
                return FetchResult(req.key, None, None, data)
            return verified(req, data)
        if offline:
            return FetchResult(req.key, None, None, "unavailable")
        host = urlsplit(req.url).netloc.lower()
        with lock:
            if timeouts.get(host, 0) >= GIVE_UP_AFTER_TIMEOUTS:  # not answering: not tried
                return FetchResult(req.key, None, None, "timeout")
        result = download(req)
        with lock:
            timeouts[host] = timeouts.get(host, 0) + 1 if result.error == "timeout" else 0
        return result

    def download(req: FetchRequest) -> FetchResult:
        try:
            check_url(req.url)
            with Deadline(timeout_s) as deadline:
                try:
                    with session().get(req.url, stream=True, timeout=(connect_s, timeout_s)) as resp:
                        if resp.status_code != 200:
                            return FetchResult(req.key, None, None, f"http_{resp.status_code}")
                        data = read_capped(resp, max_bytes)
                except (http.RequestException, OSError):
                    deadline.raise_if_expired(req.url)
                    raise
                deadline.raise_if_expired(req.url)
            if data is None:
                return FetchResult(req.key, None, None, "too_large")
        except BlockedAddress:
            return FetchResult(req.key, None, None, "blocked")
        except http.Timeout:
            return FetchResult(req.key, None, None, "timeout")
        except (http.RequestException, OSError):
            return FetchResult(req.key, None, None, "unavailable")
        return verified(req, data)

    def verified(req: FetchRequest, data: bytes) -> FetchResult:
        sha = sha256_bytes(data)
        if req.sha256 and sha != req.sha256:
            return FetchResult(req.key, None, sha, "checksum_mismatch")
        cache.put(data)
        return FetchResult(req.key, data, sha)

    results: dict[str, FetchResult] = {}
    if progress:
        progress(0, len(requests))
    for done, result in enumerate(run_stoppable(one, requests, concurrency), start=1):
        results[result.key] = result
        if progress:
            progress(done, len(requests))
    return {req.key: results[req.key] for req in requests}  # request order, not completion order


def read_local(url: str, max_bytes: int) -> bytes | str:
    """The bytes of a ``file://`` URL, or the failure reason (``unavailable``, ``too_large``)."""
    from urllib.parse import unquote, urlsplit

    path = Path(unquote(urlsplit(url).path))
    try:
        if path.stat().st_size > max_bytes:
            return "too_large"
        return path.read_bytes()
    except OSError:
        return "unavailable"
