"""The SPARQL client's bounds, against real servers on 127.0.0.1 only: oxigraph over the
Wikidata fixture, a proxy in front of it that rewrites LIMIT/OFFSET the way a broken server
would, and small misbehaving servers (a byte every 0.5 s, an endless body, redirects to
private and link-local addresses, an endless series of pages). Every failure is one line
naming the endpoint and the page; nothing leaves the loopback interface."""

from __future__ import annotations

import json
import re
import socket
import time
import tracemalloc
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from typer.testing import CliRunner

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "wikidata_fixture.ttl"
LOOPBACK = ("127.0.0.1",)


@pytest.fixture(scope="module")
def endpoint(servers, tmp_path_factory):
    with servers.sparql_endpoint(FIXTURE, tmp_path_factory.mktemp("oxigraph")) as url:
        yield url


@pytest.fixture
def connects(monkeypatch):
    """Every address a socket of this process connects to during the test."""
    seen: list[str] = []
    real = socket.socket.connect

    def connect(sock, address):
        seen.append(str(address[0]) if isinstance(address, tuple) else str(address))
        return real(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


def _client(url: str, **kw):
    from culturebench.sparql import SparqlClient

    kw.setdefault("allow", LOOPBACK)
    kw.setdefault("retries", 0)
    kw.setdefault("sleep", lambda s: None)
    return SparqlClient(url, "culturebench-test/0 (tests@example.org)", **kw)


def _fetch(url: str, out: Path, **kw):
    from culturebench.datasets.borsch.wikidata import fetch_candidates

    kw.setdefault("allow", LOOPBACK)
    kw.setdefault("sleep", lambda s: None)
    return fetch_candidates(url, "ru", out, cache_dir=None, **kw)


def _error(call) -> str:
    from culturebench.sparql import SparqlError

    with pytest.raises(SparqlError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message, message
    return message


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def _head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()


# ---------------------------------------------------------------------- deadline
class _Drip(_Quiet):
    """A 200 whose body comes one byte every 0.5 s (a read timeout never trips); with
    ``server.length`` a Content-Length is declared, otherwise the body ends at close."""

    def do_GET(self) -> None:
        headers = {"Content-Type": "application/sparql-results+json"}
        if self.server.length:
            headers["Content-Length"] = "1000"
        self._head(200, headers)
        body = b'{"head": {"vars": []}, "results": {"bindings": []}}'
        for byte in body[:30]:  # at most 15 s, ended early when the client hangs up
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.5)


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "until-close"])
def test_a_dripping_server_is_cut_off_at_the_deadline(servers, length: bool) -> None:
    with servers.running(_Drip, length=length) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        started = time.monotonic()
        message = _error(lambda: _client(url, timeout=1.0).select("SELECT * WHERE {}", label="offset 0"))
        elapsed = time.monotonic() - started
    assert message == f"{url} (offset 0): timed out after 1 s", message
    assert elapsed < 2.5, elapsed  # the deadline, not 15 s of dripping


def test_deadline_timeouts_are_retried_then_reported_with_the_tries(servers) -> None:
    waits: list[float] = []
    with servers.running(_Drip, length=True) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        client = _client(url, timeout=1.0, retries=1, backoff=0.25, sleep=waits.append)
        message = _error(lambda: client.select("SELECT * WHERE {}", label="offset 0"))
    assert message.endswith("timed out after 1 s (after 2 tries)") and waits == [0.25]
    assert client.requests == 2


# ---------------------------------------------------------------------- size cap
class _Endless(_Quiet):
    """A 200 without a length whose body never ends (``server.sent`` counts the bytes)."""

    def do_GET(self) -> None:
        self._head(200, {"Content-Type": "application/sparql-results+json"})
        chunk = b'{"x": "' + b"a" * 65_000 + b'"},'
        for _ in range(800):  # 52 MB at most
            try:
                self.wfile.write(chunk)
            except OSError:
                return
            self.server.sent += len(chunk)


def test_an_answer_over_max_bytes_is_refused(endpoint, tmp_path: Path) -> None:
    """oxigraph's real answer (about 3 KB) against a 500-byte cap; nothing is written."""
    message = _error(lambda: _fetch(endpoint, tmp_path / "out", max_bytes=500))
    assert message.startswith(f"{endpoint} (offset 0): answer ") and "over the limit of 500" in message
    assert message.endswith("(max_bytes)") and not (tmp_path / "out").exists()


def test_an_endless_body_is_not_buffered_past_the_cap(servers) -> None:
    cap = 1 << 20
    with servers.running(_Endless, sent=0) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        tracemalloc.start()
        try:
            message = _error(
                lambda: _client(url, max_bytes=cap).select("SELECT * WHERE {}", label="offset 0")
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        time.sleep(0.2)
        sent = server.sent
    assert message == f"{url} (offset 0): answer over the limit of {cap} bytes (max_bytes)"
    assert peak < 4 * cap, peak  # the cap plus one chunk, not the 52 MB on offer
    assert sent < 20_000_000, sent  # the client hung up


# ---------------------------------------------------------------------- redirects
class _Redirect(_Quiet):
    """Answers every request with ``server.status`` and ``Location: server.target``."""

    def do_GET(self) -> None:
        self.server.hits += 1
        self._head(self.server.status, {"Location": self.server.target, "Content-Length": "0"})


@pytest.mark.parametrize(
    ("target", "refusal"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 resolves to non-public address"),
        ("http://10.0.0.1:8890/sparql?query=x", "10.0.0.1 resolves to non-public address 10.0.0.1"),
        ("http://[::ffff:10.0.0.1]/sparql", "resolves to non-public address ::ffff:a00:1"),
        ("file:///etc/passwd", "scheme 'file' is not http(s)"),
    ],
)
def test_a_redirect_to_a_private_address_is_refused_before_connecting(
    servers, connects: list[str], target: str, refusal: str
) -> None:
    with servers.running(_Redirect, status=302, target=target, hits=0) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        message = _error(lambda: _client(url).select("SELECT * WHERE {}", label="offset 0"))
        assert server.hits == 1
    assert message.startswith(f"{url} (offset 0): redirect to {target} refused: "), message
    assert refusal in message
    assert connects and set(connects) == {"127.0.0.1"}  # nothing but the loopback was contacted


def test_redirects_within_allow_are_followed_and_bounded(
    endpoint, servers, connects: list[str], tmp_path: Path
) -> None:
    with servers.running(_Redirect, status=307, target="", hits=0) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        query = "SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s LIMIT 2"
        server.target = f"{endpoint}?{urlencode({'query': query})}"  # to oxigraph, allowed
        page = _client(url).select(query)
        assert len(page.rows) == 2 and server.hits == 1
        server.target = "/query"  # to itself, for ever
        message = _error(lambda: _client(url).select(query, label="offset 0"))
    assert message == f"{url} (offset 0): more than 5 redirects"
    assert set(connects) == {"127.0.0.1"}


def test_a_loopback_endpoint_needs_allow(endpoint, connects: list[str], tmp_path: Path) -> None:
    message = _error(lambda: _fetch(endpoint, tmp_path / "out", allow=()))
    assert message == (
        f"{endpoint} (offset 0): refused: 127.0.0.1 resolves to non-public address 127.0.0.1 "
        "(pass --allow ADDRESS to contact a non-public address)"
    )
    assert connects == [] and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------- pages and rows
class _Rewriting(_Quiet):
    """Relays to oxigraph after rewriting the query the way a broken server reads it:
    ``server.mode`` "no-offset" drops OFFSET (the same page for ever), "no-limit" drops
    LIMIT and OFFSET (everything, whatever LIMIT says). The answers are oxigraph's."""

    def do_GET(self) -> None:
        params = parse_qs(urlsplit(self.path).query)
        query = params["query"][0]
        query = re.sub(r"\nOFFSET \d+\s*$", "", query)
        if self.server.mode == "no-limit":
            query = re.sub(r"\nLIMIT \d+\s*$", "", query)
        self.server.hits += 1
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy: loopback only
        request = urllib.request.Request(
            f"{self.server.upstream}?{urlencode({'query': query})}",
            headers={"Accept": "application/sparql-results+json"},
        )
        with opener.open(request, timeout=10) as answer:
            body = answer.read()
        self._head(200, {"Content-Type": "application/sparql-results+json", "Content-Length": str(len(body))})
        self.wfile.write(body)


def test_a_server_ignoring_offset_is_stopped_at_the_repeated_page(endpoint, servers, tmp_path) -> None:
    with servers.running(_Rewriting, upstream=endpoint, mode="no-offset", hits=0) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        message = _error(lambda: _fetch(url, tmp_path / "out", page_size=3))
        assert server.hits == 2
    assert message == (
        f"{url} (offset 3): the page repeats the previous page's 3 rows; the server ignores OFFSET"
    )
    assert not (tmp_path / "out").exists()


def test_a_server_ignoring_limit_is_refused(endpoint, servers, tmp_path) -> None:
    with servers.running(_Rewriting, upstream=endpoint, mode="no-limit", hits=0) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        message = _error(lambda: _fetch(url, tmp_path / "out", page_size=3))
        assert server.hits == 1
    assert message == f"{url} (offset 0): 7 rows for LIMIT 3; the server ignores LIMIT"


def test_row_and_page_caps(endpoint, tmp_path: Path) -> None:
    """7 rows in pages of 2: a cap of 5 rows stops at the third page, a cap of 3 pages at the
    fourth; caps the query fits in change nothing."""
    assert _error(lambda: _fetch(endpoint, tmp_path / "a", page_size=2, max_rows=5)) == (
        f"{endpoint} (offset 4): more than 5 rows (max_rows)"
    )
    assert _error(lambda: _fetch(endpoint, tmp_path / "b", page_size=2, max_pages=3)) == (
        f"{endpoint} (offset 6): more than 3 pages of 2 rows (max_pages); is the server ignoring OFFSET?"
    )
    record = _fetch(endpoint, tmp_path / "c", page_size=2, max_rows=7, max_pages=4)
    assert record["rows"] == 7 and record["pages"] == 4
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


class _EverNew(_Quiet):
    """Full pages of rows never seen before, for ever (no repeat to catch)."""

    def do_GET(self) -> None:
        self.server.hits += 1
        size = int(re.search(r"LIMIT (\d+)", parse_qs(urlsplit(self.path).query)["query"][0]).group(1))
        rows = [{"n": {"type": "literal", "value": f"{self.server.hits}-{i}"}} for i in range(size)]
        body = json.dumps({"head": {"vars": ["n"]}, "results": {"bindings": rows}}).encode()
        self._head(200, {"Content-Type": "application/sparql-results+json", "Content-Length": str(len(body))})
        self.wfile.write(body)


def test_endless_pages_stop_at_max_pages(servers) -> None:
    with servers.running(_EverNew, hits=0) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        client = _client(url, max_pages=20)
        pages: list = []
        message = _error(lambda: pages.extend(client.select_pages("SELECT ?n WHERE {} ORDER BY ?n", 10)))
        assert server.hits == 20 and client.requests == 20
    assert (
        message
        == f"{url} (offset 200): more than 20 pages of 10 rows (max_pages); is the server ignoring OFFSET?"
    )


# ---------------------------------------------------------------------- command line
def test_cli_allow_and_limits(endpoint, tmp_path: Path) -> None:
    from culturebench.cli import app

    runner = CliRunner()
    base = ["borsch", "wikidata", "--endpoint", endpoint, "--lang", "ru", "--no-cache"]
    cases = [
        ([], "refused: 127.0.0.1 resolves to non-public address 127.0.0.1"),
        (["--allow", "127.0.0.1", "--max-bytes", "500"], "over the limit of 500"),
        (["--allow", "127.0.0.1", "--page-size", "2", "--max-rows", "3"], "more than 3 rows (max_rows)"),
        (["--allow", "localhost"], "--allow 'localhost': not an IP address or network"),
    ]
    for number, (extra, expected) in enumerate(cases):
        out = tmp_path / f"out{number}"
        result = runner.invoke(app, [*base, "--out", str(out), *extra])
        assert result.exit_code == 2, result.output
        assert expected in " ".join(result.output.split()) and not out.exists(), result.output
    ok = runner.invoke(
        app, [*base, "--out", str(tmp_path / "ok"), "--allow", "10.0.0.0/8", "--allow", "127.0.0.1"]
    )
    assert ok.exit_code == 0, ok.output
    assert "7 candidates" in " ".join(ok.output.split())


def test_user_agent_and_accept_reach_the_server(servers) -> None:
    class Record(_Quiet):
        def do_GET(self) -> None:
            self.server.seen.append((self.headers.get("User-Agent"), self.headers.get("Accept"), self.path))
            body = b'{"head": {"vars": []}, "results": {"bindings": [{}]}}'
            self._head(
                200, {"Content-Type": "application/sparql-results+json", "Content-Length": str(len(body))}
            )
            self.wfile.write(body)

    with servers.running(Record, seen=[]) as server:
        url = f"http://127.0.0.1:{server.server_port}/query"
        page = _client(url).select("SELECT * WHERE {}")
        (agent, accept, path), *_ = server.seen
    assert page.rows == [{}] and agent == "culturebench-test/0 (tests@example.org)"
    assert accept.startswith("application/sparql-results+json")
    assert parse_qs(urlsplit(path).query) == {"query": ["SELECT * WHERE {}"]}
