"""Guarded outgoing HTTP: the one way culturebench fetches URLs taken from data.

Three holes are closed here, in one place, for the URL checker and the image stage alike:

* **One parser.** A URL is refused when it has a backslash, whitespace or control
  characters, user info (``user@host``), or when Python's ``urlsplit`` and urllib3 (the
  parser the HTTP client really uses) disagree on its host. ``http://127.0.0.1:1\\@8.8.8.8/``
  is refused, not checked as 8.8.8.8 and fetched from 127.0.0.1.
* **The connected address is the checked address.** The guarded session's connections
  resolve the host themselves, refuse it if any resolved address is not global
  (``ipaddress.is_global``: private, loopback, link-local, carrier-grade NAT 100.64/10,
  reserved, multicast, IPv4-mapped forms of those) unless ``allow`` names it, and connect to
  that very address. Every redirect hop opens its connection the same way, and DNS
  rebinding between check and connect has no window.
* **A wall-clock deadline.** Socket timeouts bound each read, not a whole response: a
  server dribbling one byte a second never trips them. :class:`Deadline` shuts the
  request's sockets down when its time is up, whatever phase the request is in.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from culturebench.errors import CultureBenchError

if TYPE_CHECKING:
    from urllib3.connectionpool import HTTPConnectionPool

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class BlockedAddress(CultureBenchError):
    """The URL is ambiguous, or its host resolves to an address we must not contact."""


def parse_allow(values: Iterable[str]) -> tuple[Network, ...]:
    """``--allow`` values (addresses or networks) as networks; a bad one is a
    :class:`~culturebench.errors.UsageError` with a one-line message naming it."""
    from culturebench.errors import UsageError

    out = []
    for value in values:
        try:
            out.append(ipaddress.ip_network(str(value).strip(), strict=False))
        except ValueError:
            raise UsageError(
                f"--allow {value!r}: not an IP address or network (e.g. 127.0.0.1 or 10.0.0.0/8)"
            ) from None
    return tuple(out)


def is_public(address: Address) -> bool:
    """True for a globally routable unicast address (IPv4-mapped IPv6 judged as its IPv4)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def check_url(url: str) -> str:
    """Refuse an ambiguous or non-http(s) URL; return its host (lower case, no brackets)."""
    from urllib3.util import parse_url

    if not isinstance(url, str) or not url:
        raise BlockedAddress("empty URL")
    if "\\" in url:
        raise BlockedAddress("URL contains a backslash (ambiguous authority)")
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in url):
        raise BlockedAddress("URL contains whitespace or control characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BlockedAddress(f"scheme {parts.scheme!r} is not http(s)")
    if "@" in parts.netloc:
        raise BlockedAddress("URL carries user info (user@host): refused as ambiguous")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
        theirs = parse_url(url).host
    except ValueError as exc:
        raise BlockedAddress(f"unparseable URL authority: {exc}") from None
    ours = (parts.hostname or "").strip("[]").lower()
    if not ours:
        raise BlockedAddress("URL has no host")
    if (theirs or "").strip("[]").lower() != ours:
        raise BlockedAddress(f"URL parsers disagree on the host ({ours!r} vs {theirs!r})")
    return ours


def resolve_checked(host: str, port: int, allowed: Sequence[Network] = ()) -> list[str]:
    """Resolve ``host``; raise :class:`BlockedAddress` if any address is not public and not
    allowed. Returns the addresses to connect to, in resolver order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError(f"cannot resolve {host}: {exc}") from exc
    out: list[str] = []
    for info in infos:
        text = str(info[4][0])
        address = ipaddress.ip_address(text.split("%")[0])
        if not any(address in net for net in allowed) and not is_public(address):
            raise BlockedAddress(f"{host} resolves to non-public address {address}")
        if text not in out:
            out.append(text)
    return out


def check_target(url: str, allowed: Iterable[str] = ()) -> None:
    """Pre-flight check of a URL (syntax + current resolution). The guarded session checks
    again at connect time, which is what actually protects; this gives an early message."""
    host = check_url(url)
    port = urlsplit(url).port or (443 if url.lower().startswith("https") else 80)
    resolve_checked(host, port, parse_allow(allowed))


# ---------------------------------------------------------------------- deadline
_local = threading.local()


class Deadline:
    """Wall-clock limit for the requests made by this thread inside ``with``.

    ``arm(seconds)`` (re)starts the clock, e.g. once per attempt. When it runs out, every
    socket the guarded connections used since the last ``arm`` is shut down, which wakes a
    blocked read at once; the request then fails and :meth:`expired` is true.
    """

    def __init__(self, seconds: float | None = None) -> None:
        self._initial = seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer: threading.Timer | None = None
        self.expired = False
        self.seconds = seconds

    def __enter__(self) -> Deadline:
        self._outer = getattr(_local, "deadline", None)
        _local.deadline = self
        if self._initial is not None:
            self.arm(self._initial)
        return self

    def __exit__(self, *exc: object) -> None:
        self._cancel()
        _local.deadline = self._outer

    def arm(self, seconds: float) -> None:
        self._cancel()
        with self._lock:
            self._sockets = []
            self.expired = False
            self.seconds = seconds
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def register(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            if self.expired:
                _shutdown(sock)
            else:
                self._sockets.append(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def raise_if_expired(self, url: str) -> None:
        """Raise ``requests.Timeout`` when the deadline ran out (call after a failure, or
        after reading a body that may have been cut short by the shutdown)."""
        import requests

        if self.expired:
            raise requests.Timeout(f"{url}: no complete response within {self.seconds:g} s (deadline)")


def _shutdown(sock: socket.socket) -> None:
    # the plain socket's shutdown (also for TLS sockets: it acts on the file descriptor)
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _register(sock: socket.socket | None) -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.register(sock)


# ---------------------------------------------------------------------- session
def _guarded_connection(base: type, allowed: tuple[Network, ...]) -> type:
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
    from urllib3.util import connection

    class GuardedConnection(base):  # type: ignore[misc, valid-type]
        def _new_conn(self) -> socket.socket:
            addresses = resolve_checked(self._dns_host, self.port, allowed)
            last: OSError | None = None
            for address in addresses:  # connect to the address that was checked, nothing else
                try:
                    sock = connection.create_connection(
                        (address, self.port),
                        self.timeout,
                        source_address=self.source_address,
                        socket_options=self.socket_options,
                    )
                except TimeoutError as exc:
                    raise ConnectTimeoutError(self, f"Connection to {self.host} timed out") from exc
                except OSError as exc:
                    last = exc
                    continue
                _register(sock)
                return sock
            # the last address's error is the cause: a refusal stays a ConnectionRefusedError
            raise NewConnectionError(self, f"Failed to establish a new connection: {last}") from last

        def request(self, *args, **kwargs):  # a reused keep-alive socket joins the deadline too
            _register(self.sock)
            return super().request(*args, **kwargs)

    GuardedConnection.__name__ = f"Guarded{base.__name__}"
    return GuardedConnection


def _guarded_pool(base: type[HTTPConnectionPool], allowed: tuple[Network, ...]) -> type:
    return type(
        f"Guarded{base.__name__}",
        (base,),
        {"ConnectionCls": _guarded_connection(base.ConnectionCls, allowed)},
    )


def guarded_session(allow: Iterable[str] = (), user_agent: str | None = None):
    """A ``requests.Session`` whose every connection (first request and each redirect hop)
    passes :func:`check_url` and connects only to a checked, public (or allowed) address.
    Proxies from the environment are ignored (they would connect on our behalf)."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    allowed = parse_allow(allow)

    class GuardedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args, **kwargs) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {
                "http": _guarded_pool(HTTPConnectionPool, allowed),
                "https": _guarded_pool(HTTPSConnectionPool, allowed),
            }

        def send(self, request, *args, **kwargs):
            check_url(request.url)
            return super().send(request, *args, **kwargs)

    session = requests.Session()
    session.trust_env = False
    if user_agent:
        session.headers["User-Agent"] = user_agent
    adapter = GuardedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def read_capped(resp, limit: int) -> bytes | None:
    """The response body, or None as soon as it exceeds ``limit`` bytes."""
    buf = bytearray()
    for chunk in resp.iter_content(1 << 16):
        buf.extend(chunk)
        if len(buf) > limit:
            return None
    return bytes(buf)


# ---------------------------------------------------------------------- redaction
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]*)@")
_SECRET_PARAM = re.compile(
    r"(?P<key>[?&;](?:access_token|token|api_key|apikey|key|sig|signature|password|secret|"
    r"X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)=)[^&#\s]*",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_-]{8,})\b")


def redact(text: object) -> str:
    """``text`` with credentials removed: URL user info (``https://***@host``), secret query
    parameters (token, signature, key, ...) and Hub/OpenAI-style tokens. Used wherever a
    URL or an error about one is printed or recorded."""
    out = _USERINFO.sub(lambda m: f"{m['scheme']}***@", str(text))
    out = _SECRET_PARAM.sub(lambda m: f"{m['key']}***", out)
    return _BEARER.sub("***", out)


def linked_errors(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it wraps (``args``, urllib3's ``reason``, ``__cause__``,
    ``__context__``), each once: how a requests error is searched for its root cause."""
    seen: set[int] = set()
    todo: list[object] = [exc]
    while todo:
        current = todo.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [*current.args, getattr(current, "reason", None), current.__cause__, current.__context__]
