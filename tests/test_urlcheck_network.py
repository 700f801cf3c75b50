"""The scheduled URL job when the network is down, its summary as an issue body, rotating
samples, stopping it (SIGTERM / Ctrl-C) while threads are blocked in DNS or on a server that
never answers, and the OpenAI-compatible routes failing fast on a refused connection.

Every server is real and on 127.0.0.1; names that must not resolve end in ``.invalid`` and
are answered by a local resolver wrapper, so no DNS query leaves the machine."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.manifest import write_manifest
from culturebench.parquet_io import write_split
from culturebench.urlcheck import UrlResult, collect_urls
from culturebench.urlcheck.history import Diff

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
FAST_ARGS = ["--allow", "127.0.0.1", "--delay", "0", "--timeout", "2", "--retries", "0"]


def _release(folder: Path, urls: list[str]) -> Path:
    """A minimal WWD-shaped release whose rows each hold one image link."""
    from datasets import Features, List, Value

    features = Features(
        {"id": Value("string"), "links": List({"kind": Value("string"), "url": Value("string")})}
    )
    rows = [{"id": f"r{i}", "links": [{"kind": "cc_image", "url": url}]} for i, url in enumerate(urls)]
    files = write_split(pa.Table.from_pylist(rows, schema=features.arrow_schema), folder, "default", "test")
    write_manifest(
        folder,
        {
            "format": 1,
            "dataset": "wwd",
            "version": "1.0.0",
            "configs": {"default": {"splits": {"test": {"num_rows": len(rows), "files": files}}}},
        },
    )
    return folder


@pytest.fixture()
def no_invalid_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """``*.invalid`` fails name resolution locally (EAI_NONAME); other names go to the resolver."""
    real = socket.getaddrinfo

    def resolver(host, *args, **kwargs):
        if str(host).endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)


@contextmanager
def refused_port() -> Iterator[int]:
    """A port bound but not listening: every connection to it is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


# ---------------------------------------------------------------------- network down
def test_network_down_is_reported_not_newly_broken(servers, no_invalid_names, tmp_path: Path) -> None:
    """A first check records answering hosts; when every host then fails name resolution or
    connection, the run says the network looks down, exits 6 and leaves the history alone
    (before: every URL listed under "Newly broken", exit 1, the history marking them broken)."""
    image = servers.png_bytes()

    class Image(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(image)))
            self.end_headers()
            self.wfile.write(image)

    report = tmp_path / "rep"
    args = lambda release: ["check-urls", str(release), "--report", str(report), *FAST_ARGS]  # noqa: E731
    with servers.running(Image) as one, servers.running(Image) as two, servers.running(Image) as three:
        ports = [s.server_address[1] for s in (one, two, three)]
        urls = [f"http://127.0.0.1:{p}/a.png" for p in ports]
        urls += ["http://images.example.invalid/b.png", "http://pages.example.invalid/c.png"]
        release = _release(tmp_path / "release", urls)
        first = CliRunner().invoke(app, args(release))
        assert first.exit_code == 1, first.output  # the two .invalid hosts are newly broken
    history = (report / "history.json").read_text(encoding="utf-8")
    # the three servers are gone: their ports refuse; the names still do not resolve
    second = CliRunner().invoke(app, args(release))
    assert second.exit_code == 6, second.output  # EXIT_NETWORK_DOWN, documented
    output = " ".join(second.output.split())
    assert "network looks down: 5 of 5 hosts" in output and "Traceback" not in output
    assert (report / "history.json").read_text(encoding="utf-8") == history  # nothing recorded
    summary = (report / "summary.md").read_text(encoding="utf-8")
    assert "**The network looks down:** 5 of 5 hosts" in summary and "Newly broken" not in summary
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    assert data["network_down"] == {"hosts": 5, "unreachable_hosts": 5, "dns_hosts": 2, "connect_hosts": 3}
    assert data["changes"]["newly_broken"] == []


def test_one_answering_host_means_the_network_is_up(servers, no_invalid_names, tmp_path: Path) -> None:
    """Dead hosts beside one that answers (even with 404) are the links' fault: reported."""

    class NotFound(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_error(404)

    with servers.running(NotFound) as srv, refused_port() as a, refused_port() as b:
        urls = [
            f"http://127.0.0.1:{srv.server_address[1]}/gone.png",
            f"http://127.0.0.1:{a}/x.png",
            f"http://127.0.0.1:{b}/x.png",
            "http://a.invalid/x.png",
        ]
        release = _release(tmp_path / "release", urls)
        result = CliRunner().invoke(
            app, ["check-urls", str(release), "--report", str(tmp_path / "rep"), *FAST_ARGS]
        )
    assert result.exit_code == 1, result.output
    assert "network looks down" not in result.output
    data = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert data["network_down"] is None and len(data["changes"]["newly_broken"]) == 4


def test_network_verdict_needs_several_hosts_and_no_answer() -> None:
    from culturebench.urlcheck.run import network_verdict

    def failed(url: str, how: str | None = "connect", status: int | None = None) -> UrlResult:
        return UrlResult(url=url, kind="image", status="broken", http_status=status, unreachable=how)

    many = [failed(f"http://h{i}.example/x") for i in range(20)]
    assert network_verdict(many) == {
        "hosts": 20,
        "unreachable_hosts": 20,
        "dns_hosts": 0,
        "connect_hosts": 20,
    }
    assert network_verdict(many[:2]) is None  # two dead hosts: could be those hosts
    assert network_verdict([*many[:18], failed("http://up.example/x", None, 404)]) is None
    # 18 of 20 hosts (90 %) never reached, two timed out after connecting: still down
    slow = [failed(f"http://slow{i}.example/x", None) for i in range(3)]
    assert network_verdict([*many[:18], *slow[:2]])
    assert network_verdict([*many[:17], *slow]) is None  # 85 %


# ---------------------------------------------------------------------- summary size
def test_summary_fits_an_issue_body_and_the_full_list_is_beside_it(tmp_path: Path) -> None:
    """3,000 newly broken URLs of 300 characters: summary.md stays under 60,000 characters
    and says where every row is; broken.csv and summary_full.md hold all of them (before:
    about 1 MB of summary.md, more than GitHub takes as an issue body)."""
    import csv

    from culturebench.urlcheck.run_files import SUMMARY_LIMIT, write_reports

    results = [
        UrlResult(
            url=f"https://images.example.org/{i:05d}/" + "x" * 270 + ".jpg",
            kind="image",
            status="broken",
            problems=["http_404"],
            http_status=404,
            row_id=f"dish-{i}",
        )
        for i in range(3000)
    ]
    diff = Diff(newly_broken=[r.url for r in results])
    write_reports(tmp_path, "wwd 1.0.0", results, diff, "2026-11-01T04:23:00+00:00")
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert len(summary) < SUMMARY_LIMIT <= 60_000
    assert "**Newly broken: 3000**" in summary and results[0].url in summary
    assert "more under “Newly broken”" in summary and "`broken.csv`" in summary
    rows = list(csv.DictReader((tmp_path / "broken.csv").open(encoding="utf-8")))
    assert [r["url"] for r in rows] == diff.newly_broken and rows[0]["section"] == "newly_broken"
    full = (tmp_path / "summary_full.md").read_text(encoding="utf-8")
    assert all(r.url in full for r in results) and "cut to fit" not in full


def test_workflow_posts_the_short_summary_and_uploads_the_full_list() -> None:
    import yaml

    path = REPO / ".github" / "workflows" / "check-urls.yml"
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["check"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    assert "--body-file" in runs and "summary.md" in runs and "artifacts" in runs
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"].rstrip("/").endswith("url-reports/${{ matrix.dataset }}")
    assert "exit == '6'" in path.read_text(encoding="utf-8")  # network down: no issue, a failed job


# ---------------------------------------------------------------------- rotating samples
def test_sample_seed_rotates_by_week_and_is_recorded(servers, tmp_path: Path) -> None:
    from culturebench.urlcheck.run import week_seed

    assert week_seed(date(2026, 11, 26)) == 202648 and week_seed(date(2027, 1, 1)) == 202653
    with servers.serve_folder(tmp_path) as base:
        urls = [f"{base}missing-{i}.png" for i in range(40)]
        release = _release(tmp_path / "release", urls)
        draws = {seed: [u.url for u in collect_urls(release, sample=5, seed=seed)] for seed in (1, 2, 3)}
        assert len({tuple(v) for v in draws.values()}) == 3  # other seeds, other URLs
        run = ["check-urls", str(release), "--sample", "5", *FAST_ARGS]
        default = CliRunner().invoke(app, [*run, "--report", str(tmp_path / "a")])
        chosen = CliRunner().invoke(app, [*run, "--seed", "2", "--report", str(tmp_path / "b")])
    assert default.exit_code == 1 and chosen.exit_code == 1, default.output + chosen.output
    assert f"seed {week_seed()}" in default.output and "--seed 2" in chosen.output
    a = json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))
    b = json.loads((tmp_path / "b" / "report.json").read_text(encoding="utf-8"))
    assert a["sample"] == {"size": 5, "seed": week_seed()} and b["sample"] == {"size": 5, "seed": 2}
    assert [r["url"] for r in b["results"]] == draws[2]
    assert f"--seed {week_seed()}" in (tmp_path / "a" / "summary.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------- stopping
_HANG_DNS = (
    "import socket, time\n"
    "real = socket.getaddrinfo\n"
    "def hang(host, *a, **k):\n"
    "    if str(host).endswith('.invalid'):\n"
    "        time.sleep(3600)\n"
    "    return real(host, *a, **k)\n"
    "socket.getaddrinfo = hang\n"
    "from culturebench.cli import main\n"
    "main()\n"
)


def _stop_check(args: list[str], sig: signal.Signals, tmp_path: Path) -> tuple[int, str, float]:
    """Start ``culturebench check-urls`` (via ``main()``, as the console script does), send
    ``sig`` after 2 s; return its exit code, stderr and the seconds it took to exit."""
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HANG_DNS, "check-urls", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2.0)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return -1, err, time.monotonic() - sent
    return proc.returncode, err, time.monotonic() - sent


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_check_exits_within_seconds(
    sig: signal.Signals, code: int, tmp_path: Path, servers
) -> None:
    """Worker threads blocked reading from a server that never answers and in name lookups
    that never return: SIGTERM / Ctrl-C ends the check in a few seconds with one line, and
    no report or history is written (before: it waited out every timeout and retry)."""
    with servers.never_answers() as (base, _accepted):
        port = int(base.rstrip("/").rsplit(":", 1)[1])
        urls = [f"http://127.0.0.1:{port}/{i}.png" for i in range(12)]
        urls += [f"http://host{i}.invalid/x.png" for i in range(4)]  # resolution hangs
        release = _release(tmp_path / "release", urls)
        args = [str(release), "--report", str(tmp_path / "rep"), "--allow", "127.0.0.1", "--delay", "0",
                "--timeout", "60", "--retries", "3", "--per-host", "4"]  # fmt: skip
        returncode, err, took = _stop_check(args, sig, tmp_path)
    # progress lines (``checking ...: 0/16``) may come first; then one line, the last
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("checking ")]
    assert returncode == code and took < 5, (returncode, took, err)
    assert len(lines) == 1 and f"check-urls stopped ({sig.name})" in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "rep" / "report.json").exists()
    assert not (tmp_path / "rep" / "summary.md").exists()
    assert not (tmp_path / "rep" / "history.json").exists()


# ---------------------------------------------------------------------- OpenAI routes
def test_openai_refused_connection_fails_at_once_naming_url_and_option() -> None:
    """Nothing listens: one line with the URL and --base-url, in well under a second
    (before: 5 retries with backoff, about a minute, then a urllib3 repr)."""
    from culturebench.eval.backends.base import Request
    from culturebench.eval.backends.openai_backend import EndpointError, OpenAIBackend
    from culturebench.eval.backends.openai_images_backend import OpenAIImagesBackend

    with refused_port() as port:
        url = f"http://127.0.0.1:{port}/v1"
        for backend, call in (
            (OpenAIBackend("m", base_url=url, max_retries=5, backoff_s=2.0), "generate"),
            (OpenAIImagesBackend("dall-e-3", base_url=url, max_retries=5, backoff_s=2.0), "generate_images"),
        ):
            started = time.monotonic()
            with pytest.raises(EndpointError) as caught:
                getattr(backend, call)([Request("r1", "x")])
            took = time.monotonic() - started
            message = str(caught.value)
            assert took < 2, (took, message)
            assert "\n" not in message and url in message and "connection refused" in message
            assert "--base-url" in message and "--model-arg base_url=" in message


def test_openai_default_endpoint_says_it_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from culturebench.eval.backends.base import Request
    from culturebench.eval.backends.openai_backend import EndpointError, OpenAIBackend

    with refused_port() as port:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
        with pytest.raises(EndpointError, match=r"\(\$OPENAI_BASE_URL\)"):
            OpenAIBackend("m").generate([Request("r1", "x")])


class _ChatHandler(BaseHTTPRequestHandler):
    """A local OpenAI-compatible chat endpoint with keep-alive connections."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(0.02)
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Україна"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_openai_pool_is_sized_to_the_concurrency(servers, caplog: pytest.LogCaptureFixture) -> None:
    """16 requests in flight against a real local server: every answer arrives and urllib3
    never discards a connection (before: "Connection pool is full" warnings past 10)."""
    from culturebench.eval.backends.base import Request
    from culturebench.eval.backends.openai_backend import OpenAIBackend

    caplog.set_level(logging.WARNING, logger="urllib3")
    with servers.running(_ChatHandler) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        backend = OpenAIBackend("m", base_url=url, concurrency=16)
        answers = backend.generate([Request(f"r{i}", "x") for i in range(96)])
    assert answers == ["Україна"] * 96
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]
