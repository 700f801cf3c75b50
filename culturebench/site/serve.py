"""A local preview of a built site: its folder served read-only on 127.0.0.1 (never on other
interfaces), until Ctrl-C, with the site's Content-Security-Policy as a header. The site needs
no server; this only saves opening the file."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from culturebench.errors import UsageError


class _Quiet(SimpleHTTPRequestHandler):
    """The site's files, each answer with the site's Content-Security-Policy (the pages carry it
    too, as a ``<meta>``; the header adds ``frame-ancestors``, which a ``<meta>`` cannot)."""

    def end_headers(self) -> None:
        from culturebench.site.safety import CSP_HEADER

        self.send_header("Content-Security-Policy", CSP_HEADER)
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def site_server(folder: str | Path, port: int = 0) -> Iterator[str]:
    """Serve ``folder`` on ``127.0.0.1:port`` (0: a free port) in a thread; yields its URL."""
    import threading

    root = Path(folder)
    if not (root / "index.html").is_file():
        raise UsageError(f"{root}: not a built site (no index.html)")
    handler = functools.partial(_Quiet, directory=str(root))
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise UsageError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})") from None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()
        server.server_close()


def serve_site(folder: str | Path, port: int, *, announce: Callable[[str], None]) -> None:
    """Serve until interrupted (``culturebench site --serve``)."""
    import time

    with site_server(folder, port) as url:
        announce(url)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
