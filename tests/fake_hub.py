"""A FAKE of the Hugging Face Hub's commit API, for the pull requests of `eval results`.

A last resort: no local implementation of the Hub's upload protocol exists (the local Hub
server the other tests use, olah, serves downloads only: GET/HEAD and paths-info, no preupload
or commit). It implements exactly the two requests huggingface_hub 2.x sends to open a pull
request that adds small files (docs/design/interop-formats.md, section 2), and records them:

* ``POST /api/models/{repo}/preupload/{revision}``: JSON ``{"files": [{path, sample, size}]}``,
  answered ``{"files": [{path, uploadMode: "regular", shouldIgnore: false}]}``;
* ``POST /api/models/{repo}/commit/{revision}?create_pr=1``: NDJSON, a ``header`` line
  (summary, description) then one ``file`` line per file (base64 content), answered
  ``{commitUrl, commitOid, pullRequestUrl}`` with ``pullRequestUrl`` ending ``/discussions/N``.

Anything else is answered 404 and recorded. It listens on 127.0.0.1 only (port 0: a free one),
in a thread of the test process.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

PREUPLOAD = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/preupload/(?P<rev>[^/]+)$")
COMMIT = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/commit/(?P<rev>[^/]+)$")


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


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:
        hub = self.server.hub  # type: ignore[attr-defined]
        hub.requests.append(("POST", self.path))
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        body = self._body()
        if match := PREUPLOAD.match(path):
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
        if match := COMMIT.match(path):
            self._commit(hub, match["repo"], match["rev"], parse_qs(parts.query), body)
            return
        self._reply(404, {"error": f"the fake Hub has no {path}"})

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
    """Start the fake on a free loopback port in a thread; yield it; stop it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.hub = FakeHub(f"http://127.0.0.1:{server.server_address[1]}")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.hub  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
