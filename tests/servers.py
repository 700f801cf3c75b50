"""Servers the tests start and stop themselves, all on 127.0.0.1:

* ``serve_folder``: the standard library's HTTP server serving a folder (real bytes);
* ``local_hub``: ``olah``, a real implementation of the Hub's download API, serving plain git
  repositories from ``mirrors-path`` fully offline (clients reach it through ``HF_ENDPOINT``);
* ``failing_hub``: a FAKE of the Hub's write API whose only job is to fail mid-upload;
* ``fake_hub``: a FAKE of the Hub's commit API that records the pull requests it is sent;
* ``serve_process``: start any server process and wait until its health URL answers;
* ``sparql_endpoint``: oxigraph, a real SPARQL server, over a Turtle file;
* ``sparql_proxy``: relays to that endpoint and fails on cue (429, 503, bad bodies, delays).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


class _Server(ThreadingHTTPServer):
    """A threading HTTP server with a listen backlog large enough for concurrent clients
    (Python's default of 5 makes bursts of connections fail or wait for SYN retries)."""

    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A client that hung up (a timed-out or size-capped request, on purpose) is not an
        error of the test server: stay quiet; anything else is printed as usual."""
        import sys

        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


@contextmanager
def running(handler, **attrs) -> Iterator[_Server]:
    """Serve ``handler`` on a free loopback port in a background thread until the block ends;
    ``attrs`` become attributes of the server (state shared with the handler)."""
    server = _Server(("127.0.0.1", 0), handler)
    for key, value in attrs.items():
        setattr(server, key, value)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_process(
    cmd: list[str],
    *,
    health_url: str,
    log_path: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float = 120.0,
) -> Iterator[subprocess.Popen]:
    """Run a server process until the block ends; wait until ``health_url`` answers (any HTTP
    status counts as up). Its output goes to ``log_path``, shown if it dies on start."""
    log = open(log_path, "w")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited on start: {log_path.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(health_url, timeout=2)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{cmd[0]} did not answer {health_url} in {timeout_s} s") from None
                time.sleep(0.3)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on a free loopback port; yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    with running(handler) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/"


@dataclass(frozen=True)
class LocalHub:
    url: str
    mirrors: Path

    def repo_path(self, repo_id: str) -> Path:
        """Where a dataset repo must live for the server to serve it."""
        return self.mirrors / "datasets" / repo_id

    def publish(self, dataset: str, version: str, **plan) -> object:
        """Plan and publish a release of ``dataset`` into this hub (``plan``: ``source``,
        ``out_root``, ... of ``plan_release``); the verified publish result."""
        from culturebench.release import plan_release, publish_release
        from culturebench.release.targets import GitTarget

        target = GitTarget(self.repo_path(f"culturebench/{dataset}"))
        published = publish_release(plan_release(dataset, version, target, **plan), target)
        assert published.verified
        return published

    def client_env(self, home: Path) -> dict[str, str]:
        """The environment of a process that reads from this hub (online, HF cache in ``home``)."""
        return {
            **os.environ,
            "HF_ENDPOINT": self.url,
            "HF_HUB_OFFLINE": "0",
            "HF_DATASETS_OFFLINE": "0",
            "HF_HOME": str(home),
        }


def _olah_cli() -> str:
    found = shutil.which("olah-cli") or str(Path(sys.executable).with_name("olah-cli"))
    if not Path(found).exists():
        raise RuntimeError("olah-cli not installed (pip install -e '.[dev]')")
    return found


@contextmanager
def local_hub(root: Path, timeout_s: float = 60.0) -> Iterator[LocalHub]:
    """Start olah on a free loopback port with ``root/mirrors`` as its mirrors path."""
    port = free_port()
    mirrors = root / "mirrors"
    (mirrors / "datasets").mkdir(parents=True, exist_ok=True)
    config = root / "olah.toml"
    config.write_text(
        "[basic]\n"
        'host = "127.0.0.1"\n'
        f"port = {port}\n"
        f'repos-path = "{root / "repos"}"\n'
        'mirror-scheme = "http"\n'
        f'mirror-netloc = "127.0.0.1:{port}"\n'
        f'mirror-lfs-netloc = "127.0.0.1:{port}"\n'
        f'mirrors-path = ["{mirrors}"]\n'
        "[accessibility]\n"
        "offline = true\n",
        encoding="utf-8",
    )
    with serve_process(
        [_olah_cli(), "-c", str(config), "--log-path", str(root / "logs")],
        health_url=f"http://127.0.0.1:{port}/api/datasets/none/none",
        log_path=root / "olah.out",
        env={**os.environ, "HF_HUB_OFFLINE": "0"},
        cwd=root,
        timeout_s=timeout_s,
    ):
        yield LocalHub(f"http://127.0.0.1:{port}", mirrors)


class _FailingHubHandler(BaseHTTPRequestHandler):
    """FAKE of the Hub's write API, for one purpose: failing mid-upload. It accepts repo
    creation, then drops the connection on the upload (preupload/commit) requests, and
    records every request so a test can assert that no tag was ever requested."""

    requests: list[tuple[str, str]]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _record(self) -> None:
        self.server.requests.append((self.command, self.path))  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self._record()
        if self.path.startswith("/api/repos/create"):
            self._json(200, {"url": f"http://{self.headers['Host']}/datasets/org/x", "name": "org/x"})
            return
        if self.path.startswith("/api/validate-yaml"):
            self._json(200, {"errors": [], "warnings": []})
            return
        # Upload requests: the network "fails" mid-upload.
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self) -> None:
        self._record()
        self._json(404, {"error": "not found"})

    do_HEAD = do_GET


@contextmanager
def failing_hub() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Start the failure-injecting fake on a free loopback port; yield (url, requests)."""
    with running(_FailingHubHandler, requests=[]) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]


@contextmanager
def never_answers() -> Iterator[tuple[str, list]]:
    """A server on 127.0.0.1 that accepts every connection and never sends a byte (nor closes):
    a stalled Hub, mirror or endpoint. Yields (base URL with a trailing slash, the connections
    accepted so far); closes them and its socket on exit."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/", accepted
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
        listener.close()


def png_bytes(size: tuple[int, int] = (64, 64), seed: int = 0) -> bytes:
    """A real PNG (a smooth gradient with a seeded pattern) made with Pillow."""
    import io
    import random

    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.linear_gradient("L").resize(size).convert("RGB")
    draw = ImageDraw.Draw(img)
    for _ in range(6):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        r = max(size) // 6
        draw.ellipse(
            (x - r, y - r, x + r, y + r), fill=(rng.randrange(256), rng.randrange(256), rng.randrange(256))
        )
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


class _Handler(BaseHTTPRequestHandler):
    """A quiet handler with one way to answer (no body for HEAD)."""

    protocol_version = "HTTP/1.1"
    default_type = "text/plain"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(
        self, status: int, body: bytes = b"", ctype: str | None = None, headers: dict | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype or self.default_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _LinkHandler(_Handler):
    """Routes for the URL checker's tests; ``server.state`` lets a test change answers."""

    default_type = "image/png"

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        server = self.server
        path = self.path.split("?")[0]
        with server.lock:  # type: ignore[attr-defined]
            server.hits[path] = server.hits.get(path, 0) + 1  # type: ignore[attr-defined]
            hits = server.hits[path]  # type: ignore[attr-defined]
        state = server.state  # type: ignore[attr-defined]
        image, other = state["image"], state["other_image"]
        port = server.server_address[1]
        routes = {
            "/ok.png": lambda: self._send(200, image),
            "/404.png": lambda: self._send(404, b"gone", "text/plain"),
            "/410.png": lambda: self._send(410, b"gone for good", "text/plain"),
            "/flaky.png": lambda: (
                self._send(500, b"oops", "text/plain") if hits == 1 else self._send(200, image)
            ),
            "/ratelimited.png": lambda: (
                self._send(429, b"slow down", "text/plain", {"Retry-After": "1"})
                if hits == 1
                else self._send(200, image)
            ),
            "/slow.png": lambda: (time.sleep(state["slow_s"]), self._send(200, image)),
            "/other-host.png": lambda: self._send(
                302, b"", "text/plain", {"Location": f"http://localhost:{port}/ok.png"}
            ),
            "/loop-a": lambda: self._send(302, b"", "text/plain", {"Location": "/loop-b"}),
            "/loop-b": lambda: self._send(302, b"", "text/plain", {"Location": "/loop-a"}),
            "/soft404.png": lambda: self._send(200, b"<html><body>Page not found</body></html>", "text/html"),
            "/wrong-type.png": lambda: self._send(200, b"this is not an image at all", "text/plain"),
            "/octet.png": lambda: self._send(200, image, "application/octet-stream"),
            "/changed.png": lambda: self._send(200, other),
            "/truncated.png": lambda: self._send(200, image[: len(image) // 2]),
            "/huge.png": lambda: self._send(200, state["huge_image"]),
            "/page.html": lambda: self._send(200, b"<html>recipe</html>", "text/html"),
            "/nohead.html": lambda: (
                self._send(405, b"", "text/plain")
                if self.command == "HEAD"
                else self._send(200, b"<html>ok</html>", "text/html")
            ),
            "/toggle.png": lambda: (
                self._send(200, image) if state.get("toggle_ok") else self._send(404, b"", "text/plain")
            ),
        }
        routes.get(path, lambda: self._send(404, b"no such route", "text/plain"))()


@contextmanager
def link_server() -> Iterator[tuple[str, ThreadingHTTPServer]]:
    """The URL checker's test server on 127.0.0.1; yields (base URL, server)."""
    state = {
        "image": png_bytes(seed=1),
        "other_image": png_bytes(seed=2),
        "huge_image": _solid_png(3000, 3000),
        "slow_s": 1.5,
        "toggle_ok": False,
    }
    with running(_LinkHandler, lock=threading.Lock(), hits={}, state=state) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}", server


def _solid_png(width: int, height: int) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


COMMONS_WIKI = "https://commons.wikimedia.org/wiki/"


class _CommonsReplayHandler(BaseHTTPRequestHandler):
    """REPLAY of the Wikimedia Commons API (api.php), not an implementation of it: it answers
    the two query shapes culturebench sends (``list=allimages&aisha1=`` and
    ``prop=imageinfo&iiprop=extmetadata|url&titles=``, formatversion 2) from a fixture, in the
    documented response shape."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        from urllib.parse import parse_qs, urlsplit

        params = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        files = self.server.files  # type: ignore[attr-defined]  # title -> {sha1, license, artist, ...}
        self.server.requests.append(params)  # type: ignore[attr-defined]
        if params.get("list") == "allimages":
            hits = [
                {"name": t[5:], "title": t} for t, f in files.items() if f["sha1"] == params.get("aisha1")
            ]
            body = {"batchcomplete": True, "query": {"allimages": hits[:1]}}
        elif params.get("prop") == "imageinfo":
            pages = []
            for title in params.get("titles", "").split("|"):
                f = files.get(title)
                if f is None:
                    pages.append({"ns": 6, "title": title, "missing": True})
                    continue
                meta = {
                    "LicenseShortName": {"value": f["license"], "source": "commons-desc-page"},
                    "LicenseUrl": {"value": f["license_url"], "source": "commons-desc-page"},
                    "Artist": {
                        "value": f'<a href="//commons.wikimedia.org/wiki/User:X">{f["artist"]}</a>',
                        "source": "commons-desc-page",
                    },
                    "Credit": {"value": "Own work", "source": "commons-desc-page"},
                }
                pages.append(
                    {
                        "ns": 6,
                        "title": title,
                        "imageinfo": [
                            {
                                "url": f"https://upload.wikimedia.org/wikipedia/commons/x/xx/{title[5:]}",
                                "descriptionurl": COMMONS_WIKI + title.replace(" ", "_"),
                                "extmetadata": meta,
                            }
                        ],
                    }
                )
            body = {"batchcomplete": True, "query": {"pages": pages}}
        else:
            body = {"error": {"code": "badvalue", "info": "unsupported request"}}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def commons_replay(files: dict[str, dict]) -> Iterator[tuple[str, list[dict]]]:
    """Start the Commons API replay on 127.0.0.1; yields (api URL, requests seen)."""
    with running(_CommonsReplayHandler, files=files, requests=[]) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/w/api.php", server.requests  # type: ignore[attr-defined]


class _ImagesHandler(_Handler):
    """HAND-WRITTEN FAKE of the OpenAI Images API (``POST /v1/images/generations``): no local
    implementation of that protocol exists to start, so this one draws a real PNG whose
    pattern is seeded by the prompt, answers ``b64_json`` or ``url`` (served here too, under
    ``/files/``), and plays back scripted failures (``server.script``: a list of status codes
    answered before the real answers, e.g. [429] with ``Retry-After: 0``)."""

    def do_POST(self) -> None:
        import base64
        import hashlib

        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})  # type: ignore[attr-defined]
        if self.path != "/v1/images/generations":
            self._send(404, b'{"error": "not found"}', "application/json")
            return
        if server.script:  # type: ignore[attr-defined]
            status = server.script.pop(0)  # type: ignore[attr-defined]
            self._send(
                status, b'{"error": {"message": "scripted"}}', "application/json", {"Retry-After": "0"}
            )
            return
        width, height = (int(v) for v in body["size"].split("x"))
        seed = int(hashlib.sha256(body["prompt"].encode()).hexdigest()[:8], 16)
        png = png_bytes((width, height), seed=seed)
        mode = server.mode  # type: ignore[attr-defined]
        if mode == "url":
            name = f"{seed}.png"
            server.files[name] = png  # type: ignore[attr-defined]
            item = {"url": f"http://127.0.0.1:{server.server_address[1]}/files/{name}"}
        elif mode == "bad-base64":
            item = {"b64_json": "not base64 !!"}
        elif mode == "not-image":
            item = {"b64_json": base64.b64encode(b"<html>hello</html>").decode()}
        else:
            item = {"b64_json": base64.b64encode(png).decode()}
        self._send(200, json.dumps({"created": 0, "data": [item]}).encode(), "application/json")

    def do_GET(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        data = self.server.files.get(name)  # type: ignore[attr-defined]
        if data is None:
            self._send(404, b"not found", "text/plain")
        else:
            self._send(200, data, "image/png")


@contextmanager
def fake_openai_images(mode: str = "b64", script: list[int] | None = None) -> Iterator[_Server]:
    """Start the hand-written OpenAI Images fake on 127.0.0.1; ``server.requests`` records
    every call, ``server.base_url`` is the ``/v1`` base."""
    with running(_ImagesHandler, requests=[], files={}, mode=mode, script=list(script or [])) as server:
        server.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
        yield server


def _oxigraph_cli() -> str:
    found = shutil.which("oxigraph") or str(Path(sys.executable).with_name("oxigraph"))
    if not Path(found).exists():
        raise RuntimeError(
            "the oxigraph server is not installed (pip install oxigraph; the dev extra has it)"
        )
    return found


@contextmanager
def sparql_endpoint(turtle: Path, workdir: Path) -> Iterator[str]:
    """A real SPARQL endpoint: oxigraph loads ``turtle`` into a store under ``workdir`` and
    serves it read-only on 127.0.0.1; yields the query URL. Stopped by its PID."""
    store = workdir / "oxigraph-store"
    cli = _oxigraph_cli()
    subprocess.run(
        [cli, "load", "--location", str(store), "--file", str(turtle)], check=True, capture_output=True
    )
    port = free_port()
    cmd = [cli, "serve-read-only", "--location", str(store), "--bind", f"127.0.0.1:{port}"]
    with serve_process(cmd, health_url=f"http://127.0.0.1:{port}/", log_path=workdir / "oxigraph.log"):
        yield f"http://127.0.0.1:{port}/query"


class _SparqlProxyHandler(_Handler):
    """Relays each request to the real endpoint behind it, unless the next step of the
    server's script says to fail first: ``429:N`` (Retry-After N), ``503``, ``garbage`` (a
    200 whose body is not JSON), ``nobindings`` (JSON without results), ``sleep:S`` (answer
    after S seconds). Not a fake of the protocol: every answer it relays is oxigraph's."""

    def _handle(self) -> None:
        server = self.server
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server.seen.append({"path": self.path, "user_agent": self.headers.get("User-Agent")})
        step = server.script.pop(0) if server.script else "forward"
        if step.startswith("429"):
            self._send(429, b"Too Many Requests", headers={"Retry-After": step.split(":")[1]})
            return
        if step == "503":
            self._send(503, b"Service Unavailable")
            return
        if step == "garbage":
            self._send(200, b'{"head": {"vars": ["fid"]}, "results": ', "application/sparql-results+json")
            return
        if step == "nobindings":
            self._send(200, b'{"head": {"vars": []}}', "application/sparql-results+json")
            return
        if step.startswith("sleep:"):
            time.sleep(float(step.split(":")[1]))
        request = urllib.request.Request(
            server.upstream + self.path[self.path.index("?") :] if "?" in self.path else server.upstream,
            data=body or None,
            headers={k: v for k, v in self.headers.items() if k.lower() in ("accept", "content-type")},
            method=self.command,
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                self._send(answer.status, answer.read(), answer.headers.get("Content-Type", ""))
        except urllib.error.HTTPError as exc:
            self._send(exc.code, exc.read(), exc.headers.get("Content-Type", "text/plain"))

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()


@contextmanager
def sparql_proxy(upstream: str, script: list[str] | None = None) -> Iterator[_Server]:
    """A loopback proxy in front of a real SPARQL endpoint that fails on cue (see
    :class:`_SparqlProxyHandler`); ``server.seen`` lists the requests, ``server.script`` the
    steps still to come. Its query URL is ``f"http://127.0.0.1:{server.server_port}/query"``."""
    with running(_SparqlProxyHandler, upstream=upstream, script=list(script or []), seen=[]) as server:
        yield server


# ---------------------------------------------------------------- fake_hub
# A FAKE of the Hugging Face Hub's commit API, for the pull requests of `eval results`.
#
# A last resort: no local implementation of the Hub's upload protocol exists (the local Hub
# server the other tests use, olah, serves downloads only: GET/HEAD and paths-info, no preupload
# or commit). It implements exactly the two requests huggingface_hub 2.x sends to open a pull
# request that adds small files (docs/design/interop-formats.md, section 2), and records them:
#
# * ``POST /api/models/{repo}/preupload/{revision}``: JSON ``{"files": [{path, sample, size}]}``,
#   answered ``{"files": [{path, uploadMode: "regular", shouldIgnore: false}]}``;
# * ``POST /api/models/{repo}/commit/{revision}?create_pr=1``: NDJSON, a ``header`` line
#   (summary, description) then one ``file`` line per file (base64 content), answered
#   ``{commitUrl, commitOid, pullRequestUrl}`` with ``pullRequestUrl`` ending ``/discussions/N``;
# * the same two under ``/api/spaces/`` (a plain commit, no ``create_pr``: `site --to`),
#   ``POST /api/repos/create`` (the Space's creation), recorded and answered as created, and
#   ``POST /api/validate-yaml`` (a README's header must be a YAML mapping; no schema check).
#
# Anything else is answered 404 and recorded. It listens on 127.0.0.1 only (port 0: a free one),
# in a thread of the test process.

_PREUPLOAD = re.compile(r"^/api/(?:models|spaces)/(?P<repo>[^/]+/[^/]+)/preupload/(?P<rev>[^/]+)$")
_COMMIT = re.compile(r"^/api/(?:models|spaces)/(?P<repo>[^/]+/[^/]+)/commit/(?P<rev>[^/]+)$")


@dataclass
class PullRequest:
    """One commit the fake accepted: where, with which query and token, and its files."""

    repo: str
    revision: str
    create_pr: bool
    summary: str
    description: str
    authorization: str
    files: dict[str, bytes]
    number: int


@dataclass
class FakeHub:
    """The running fake: its URL, every request seen and the pull requests opened."""

    url: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    pulls: list[PullRequest] = field(default_factory=list)
    created: list[dict] = field(default_factory=list)  # bodies of POST /api/repos/create
    cards: list[str] = field(default_factory=list)  # READMEs sent to POST /api/validate-yaml


class _CommitHandler(_Handler):
    hub: FakeHub

    def _reply(self, status: int, body: dict) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:
        hub = self.server.hub  # type: ignore[attr-defined]
        hub.requests.append(("POST", self.path))
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        body = self._body()
        if match := _PREUPLOAD.match(path):
            files = json.loads(body)["files"]
            self._reply(
                200,
                {
                    "files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
                    ]
                },
            )
            return
        if match := _COMMIT.match(path):
            self._commit(hub, match["repo"], match["rev"], parse_qs(parts.query), body)
            return
        if path == "/api/validate-yaml":  # huggingface_hub checks a README's YAML header first
            self._validate_yaml(hub, json.loads(body))
            return
        if path == "/api/repos/create":  # a Space (`site --to`): recorded, answered as created
            request = json.loads(body)
            hub.created.append(request)
            name = f"{request.get('organization')}/{request.get('name')}"
            self._reply(200, {"url": f"{hub.url}/spaces/{name}", "name": name})
            return
        self._reply(404, {"error": f"the fake Hub has no {path}"})

    def _validate_yaml(self, hub: FakeHub, request: dict) -> None:
        """The card's front matter must parse as a YAML mapping (the real endpoint also checks
        the Hub's metadata schema; the fake does not)."""
        import yaml

        text = str(request.get("content", ""))
        header = text.split("---", 2)[1] if text.startswith("---") and text.count("---") >= 2 else ""
        try:
            ok = isinstance(yaml.safe_load(header), dict)
        except yaml.YAMLError:
            ok = False
        hub.cards.append(text)
        if ok:
            self._reply(200, {"errors": [], "warnings": []})
        else:
            self._reply(400, {"error": "the README's YAML header is not a mapping"})

    def _commit(self, hub: FakeHub, repo: str, revision: str, query: dict, body: bytes) -> None:
        header: dict = {}
        files: dict[str, bytes] = {}
        for line in body.decode("utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            if item["key"] == "header":
                header = item["value"]
            elif item["key"] == "file":
                value = item["value"]
                files[value["path"]] = base64.b64decode(value["content"])
            else:
                self._reply(400, {"error": f"the fake Hub takes no {item['key']!r} lines"})
                return
        number = len(hub.pulls) + 1
        hub.pulls.append(
            PullRequest(
                repo=repo,
                revision=revision,
                create_pr=query.get("create_pr") == ["1"],
                summary=str(header.get("summary", "")),
                description=str(header.get("description", "")),
                authorization=self.headers.get("Authorization", ""),
                files=files,
                number=number,
            )
        )
        oid = hashlib.sha1(body).hexdigest()
        self._reply(
            200,
            {
                "commitUrl": f"{hub.url}/{repo}/commit/{oid}",
                "commitOid": oid,
                "pullRequestUrl": f"{hub.url}/{repo}/discussions/{number}",
            },
        )

    def do_GET(self) -> None:
        self.server.hub.requests.append((self.command, self.path))  # type: ignore[attr-defined]
        self._reply(404, {"error": "the fake Hub serves no downloads"})

    do_HEAD = do_GET


@contextmanager
def fake_hub() -> Iterator[FakeHub]:
    """Start the fake of the Hub's commit API (above) on a free loopback port; yield it."""
    with running(_CommitHandler, hub=FakeHub("")) as server:
        server.hub.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
        yield server.hub  # type: ignore[attr-defined]


# ---------------------------------------------------------------- counting_proxy
class _CountingProxy(BaseHTTPRequestHandler):
    """Forwards every request, bytes unchanged, to the real server behind it, and counts the
    completions asked and their answers' statuses (not a fake: the answers are the upstream
    server's). While ``hold`` is set it forwards the first ``let_through`` requests, then reads
    each request and never answers (a stalled endpoint at the same URL), counting them in
    ``held``, until ``hold`` is cleared."""

    def log_message(self, format, *args) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if self.command == "POST" else None
        server = self.server
        if server.hold.is_set():  # type: ignore[attr-defined]
            with server.lock:  # type: ignore[attr-defined]
                passing = server.let_through > 0  # type: ignore[attr-defined]
                if passing:
                    server.let_through -= 1  # type: ignore[attr-defined]
                else:
                    server.held += 1  # type: ignore[attr-defined]
            while not passing and server.hold.is_set():  # type: ignore[attr-defined]
                time.sleep(0.05)
            if not passing:
                self.close_connection = True  # the client that asked has long gone: no answer
                return
        completion = self.path.endswith("/completions")
        request = urllib.request.Request(
            self.server.upstream + self.path,  # type: ignore[attr-defined]
            data=body,
            method=self.command,
            headers={k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                status, headers, data = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as exc:
            status, headers, data = exc.code, exc.headers, exc.read()
        if completion:
            with self.server.lock:  # type: ignore[attr-defined]
                self.server.completions += 1  # type: ignore[attr-defined]
                self.server.statuses.append(status)  # type: ignore[attr-defined]
                self.server.bodies.append(body)  # type: ignore[attr-defined]
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _forward


@contextmanager
def counting_proxy(upstream: str) -> Iterator[tuple[str, _Server]]:
    """A proxy on a free loopback port in front of ``upstream`` (``http://127.0.0.1:P/v1``):
    yields its base URL (same path) and the server, whose ``completions`` counts the
    completion requests that went through and ``statuses`` lists the upstream's answers;
    ``hold.set()`` makes it a server that accepts and never answers until ``hold.clear()``."""
    from urllib.parse import urlsplit

    parts = urlsplit(upstream)
    with running(
        _CountingProxy,
        upstream=f"{parts.scheme}://{parts.netloc}",
        completions=0,
        statuses=[],
        bodies=[],
        lock=threading.Lock(),
        hold=threading.Event(),
        held=0,
        let_through=0,
    ) as server:
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}{parts.path}", server
        finally:
            server.hold.clear()  # type: ignore[attr-defined]  (held requests end, the server stops)


# ---------------------------------------------------------------- rate_limited_chat
class _RateLimitedChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint (a hand-written stand-in: it answers a fixed text)
    that enforces ``rps`` requests per one-second window the way OpenAI says so: every answer
    carries ``x-ratelimit-limit-requests``, ``-remaining-requests`` and ``-reset-requests``
    (``250ms``), and a request over the limit is a 429 naming the reset (and ``Retry-After``
    when ``retry_after`` is set)."""

    def log_message(self, format, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server = self.server
        now = time.monotonic()
        with server.lock:  # type: ignore[attr-defined]
            window = int(now)
            if window != server.window:  # type: ignore[attr-defined]
                server.window, server.used = window, 0  # type: ignore[attr-defined]
            allowed = server.used < server.rps  # type: ignore[attr-defined]
            if allowed:
                server.used += 1  # type: ignore[attr-defined]
                server.ok.append(now)  # type: ignore[attr-defined]
            else:
                server.refused += 1  # type: ignore[attr-defined]
            remaining = server.rps - server.used  # type: ignore[attr-defined]
        reset_ms = max(1, int((window + 1 - now) * 1000))
        if allowed:
            time.sleep(server.latency_s)  # type: ignore[attr-defined]
        body = (
            {"choices": [{"message": {"role": "assistant", "content": "Україна"}}]}
            if allowed
            else {"error": {"message": "Rate limit reached for requests", "type": "requests"}}
        )
        data = json.dumps(body).encode()
        self.send_response(200 if allowed else 429)
        self.send_header("x-ratelimit-limit-requests", str(server.rps))  # type: ignore[attr-defined]
        self.send_header("x-ratelimit-remaining-requests", str(remaining))
        self.send_header("x-ratelimit-reset-requests", f"{reset_ms}ms")
        if not allowed and server.retry_after:  # type: ignore[attr-defined]
            self.send_header("Retry-After", "1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def rate_limited_chat(rps: int, *, latency_s: float = 0.05, retry_after: bool = False) -> Iterator[_Server]:
    """:class:`_RateLimitedChat` on a free loopback port; ``server.url`` is its ``/v1`` base,
    ``server.ok`` the times of the answered requests, ``server.refused`` the 429s sent."""
    with running(
        _RateLimitedChat, rps=rps, latency_s=latency_s, retry_after=retry_after, window=-1, used=0, ok=[],
        refused=0, lock=threading.Lock(),
    ) as server:  # fmt: skip
        server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
        yield server


class _ScriptedChat(_Handler):
    """An OpenAI-compatible chat endpoint (a hand-written stand-in: it answers a fixed text)
    that first plays back ``server.script``: (status, Retry-After) pairs, one per request, e.g.
    ``(503, "nan")``, then answers every request."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server = self.server
        with server.lock:  # type: ignore[attr-defined]
            server.calls += 1  # type: ignore[attr-defined]
            step = server.script.pop(0) if server.script else None  # type: ignore[attr-defined]
        if step is not None:
            status, retry_after = step
            body = json.dumps({"error": {"message": "scripted"}}).encode()
            self._send(status, body, "application/json", {"Retry-After": retry_after})
            return
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Україна"}}]}).encode()
        self._send(200, body, "application/json")


@contextmanager
def scripted_chat(script: list[tuple[int, str]]) -> Iterator[_Server]:
    """:class:`_ScriptedChat` on a free loopback port; ``server.url`` is its ``/v1`` base,
    ``server.calls`` the requests it was sent."""
    with running(_ScriptedChat, script=list(script), calls=0, lock=threading.Lock()) as server:
        server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
        yield server


@contextmanager
def transformers_serve(model: Path, log_dir: Path) -> Iterator[str]:
    """`transformers serve` (a real OpenAI-compatible server) with ``model`` on a free loopback
    port, started and stopped here; yields its ``/v1`` base URL."""
    port = free_port()
    exe = Path(sys.executable).with_name("transformers")
    with serve_process(
        [str(exe), "serve", str(model), "--host", "127.0.0.1", "--port", str(port)],
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=log_dir / "serve.log",
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    ):
        yield f"http://127.0.0.1:{port}/v1"
