"""The URL checker against a real HTTP server on 127.0.0.1 with one route per failure mode;
history (newly broken / fixed / still broken); the CLI; URL collection from real releases."""

from __future__ import annotations

import io
import json
from pathlib import Path

import imagehash
import pyarrow as pa
import pytest
from PIL import Image
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.manifest import write_manifest
from culturebench.parquet_io import write_split
from culturebench.urlcheck import CheckConfig, UrlChecker, UrlItem, collect_urls
from culturebench.urlcheck.history import Diff, load_history, update_history

pytestmark = pytest.mark.integration

FAST = CheckConfig(
    timeout_s=0.5,
    retries=2,
    backoff_s=0.05,
    concurrency=8,
    per_host=4,
    per_host_delay_s=0.0,
    max_image_pixels=1_000_000,
    allow=("127.0.0.1",),
)


def item(base: str, path: str, kind: str = "image", phash: str | None = None) -> UrlItem:
    return UrlItem(
        url=base + path, kind=kind, dataset="t", config="c", row_id=path, field="links", expected_phash=phash
    )


@pytest.fixture(scope="module")
def server(servers):
    with servers.link_server() as (base, srv):
        yield base, srv


@pytest.fixture(scope="module")
def results(server):
    base, srv = server
    original = str(imagehash.phash(Image.open(io.BytesIO(srv.state["image"])).convert("RGB")))
    paths = [
        "/ok.png",
        "/404.png",
        "/410.png",
        "/flaky.png",
        "/ratelimited.png",
        "/slow.png",
        "/other-host.png",
        "/loop-a",
        "/soft404.png",
        "/wrong-type.png",
        "/octet.png",
        "/truncated.png",
        "/huge.png",
    ]
    items = [item(base, p) for p in paths]
    items.append(item(base, "/changed.png", phash=original))
    items += [item(base, "/page.html", "page"), item(base, "/nohead.html", "page")]
    checked = UrlChecker(FAST).check_all(items)
    return {r.url[len(base) :]: r for r in checked}, srv


@pytest.mark.parametrize(
    ("path", "status", "problems"),
    [
        ("/ok.png", "ok", []),
        ("/404.png", "broken", ["http_404"]),
        ("/410.png", "broken", ["http_410"]),
        ("/flaky.png", "ok", []),
        ("/ratelimited.png", "ok", []),
        ("/slow.png", "broken", ["timeout"]),
        ("/other-host.png", "warning", ["cross_host_redirect"]),
        ("/loop-a", "broken", ["redirect_loop"]),
        ("/soft404.png", "broken", ["soft_404"]),
        ("/wrong-type.png", "broken", ["not_an_image"]),
        ("/octet.png", "warning", ["content_type_mismatch"]),
        ("/changed.png", "broken", ["image_changed"]),
        ("/truncated.png", "broken", ["image_truncated"]),
        ("/huge.png", "broken", ["image_too_many_pixels"]),
        ("/page.html", "ok", []),
        ("/nohead.html", "ok", []),
    ],
)
def test_each_failure_mode(results, path: str, status: str, problems: list[str]) -> None:
    got = results[0][path]
    assert (got.status, got.problems) == (status, problems), got


def test_retries_honour_retry_after_and_5xx(results) -> None:
    checked, srv = results
    assert checked["/flaky.png"].attempts == 2 and srv.hits["/flaky.png"] == 2
    assert checked["/ratelimited.png"].attempts == 2
    assert checked["/ratelimited.png"].elapsed_s >= 1.0  # waited for Retry-After: 1
    assert checked["/slow.png"].attempts == 3  # timeouts are retried, then reported


def test_redirects_are_recorded(results, server) -> None:
    base, _ = server
    hop = results[0]["/other-host.png"]
    assert hop.redirects == [base.replace("127.0.0.1", "localhost") + "/ok.png"]
    assert hop.final_url == hop.redirects[0] and hop.phash
    loop = results[0]["/loop-a"]
    assert loop.redirects == [base + "/loop-b", base + "/loop-a"]


def test_head_falls_back_to_get(results) -> None:
    assert results[1].hits["/nohead.html"] == 2 and results[1].hits["/page.html"] == 1


def test_private_addresses_are_refused_unless_allowed(server) -> None:
    base, srv = server
    before = srv.hits.get("/ok.png", 0)
    blocked = UrlChecker(CheckConfig(retries=0)).check(item(base, "/ok.png"))
    assert blocked.status == "broken" and blocked.problems == ["blocked_address"]
    assert srv.hits.get("/ok.png", 0) == before  # no request was made
    assert (
        UrlChecker(CheckConfig(retries=0, allow=("127.0.0.0/8",))).check(item(base, "/ok.png")).status == "ok"
    )


def test_byte_limit(server) -> None:
    base, _ = server
    tiny = CheckConfig(retries=0, max_image_bytes=100, allow=("127.0.0.1",))
    assert UrlChecker(tiny).check(item(base, "/ok.png")).problems == ["image_too_large"]


def test_history_reports_newly_broken_fixed_and_still_broken(server) -> None:
    base, srv = server
    history = load_history(None)
    checker = UrlChecker(FAST)
    items = [item(base, "/toggle.png"), item(base, "/404.png"), item(base, "/ok.png")]
    srv.state["toggle_ok"] = False
    first = update_history(history, checker.check_all(items), "2026-01-01T00:00:00+00:00")
    assert sorted(first.newly_broken) == [base + "/404.png", base + "/toggle.png"]
    srv.state["toggle_ok"] = True
    second = update_history(history, checker.check_all(items), "2026-07-01T00:00:00+00:00")
    assert second.newly_fixed == [base + "/toggle.png"] and second.newly_broken == []
    assert second.still_broken == {base + "/404.png": "2026-01-01T00:00:00+00:00"}
    assert history["urls"][base + "/ok.png"]["baseline_phash"]
    assert [r["broken"] for r in history["runs"]] == [2, 1]
    assert isinstance(first, Diff)


def test_baseline_hash_from_history_detects_a_replaced_image(server) -> None:
    base, srv = server
    history = load_history(None)
    update_history(history, UrlChecker(FAST).check_all([item(base, "/toggle.png")]), "t0")
    srv.state["toggle_ok"] = True
    update_history(history, UrlChecker(FAST).check_all([item(base, "/toggle.png")]), "t1")
    srv.state["image"], original = srv.state["other_image"], srv.state["image"]
    try:
        from culturebench.urlcheck.history import baseline_phashes

        again = UrlChecker(FAST, baseline_phash=baseline_phashes(history)).check(item(base, "/toggle.png"))
        assert again.problems == ["image_changed"]
    finally:
        srv.state["image"] = original


def _release_with_links(folder: Path, urls: list[tuple[str, str]]) -> Path:
    from datasets import Features, List, Value

    features = Features(
        {"id": Value("string"), "links": List({"kind": Value("string"), "url": Value("string")})}
    )
    rows = [{"id": f"r{i}", "links": [{"kind": kind, "url": url}]} for i, (kind, url) in enumerate(urls)]
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


def test_cli_writes_report_history_and_exit_code(server, tmp_path: Path) -> None:
    base, srv = server
    srv.state["toggle_ok"] = True
    release = _release_with_links(
        tmp_path / "release",
        [("cc_image", base + "/ok.png"), ("cc_image", base + "/toggle.png"), ("recipe", base + "/page.html")],
    )
    args = [
        "check-urls",
        str(release),
        "--report",
        str(tmp_path / "rep"),
        "--allow",
        "127.0.0.1",
        "--delay",
        "0",
        "--timeout",
        "2",
        "--retries",
        "0",
    ]
    runner = CliRunner()
    assert runner.invoke(app, args).exit_code == 0
    srv.state["toggle_ok"] = False
    second = runner.invoke(app, args)
    assert second.exit_code == 1, second.output  # something newly broke
    report = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert report["changes"]["newly_broken"] == [base + "/toggle.png"]
    assert report["summary"]["by_kind"] == {"image": 2, "page": 1}
    summary = (tmp_path / "rep" / "summary.md").read_text(encoding="utf-8")
    assert "**Newly broken: 1**" in summary and "/toggle.png" in summary
    assert len(json.loads((tmp_path / "rep" / "history.json").read_text(encoding="utf-8"))["runs"]) == 2
    third = runner.invoke(app, args)
    assert third.exit_code == 0  # still broken, not newly broken
    srv.state["toggle_ok"] = True


def test_collect_urls_from_real_releases(borsch_release, wwd_release) -> None:
    borsch = collect_urls(borsch_release.folder)
    assert len(borsch) == 7095 and {u.kind for u in borsch} == {"image"}
    assert all(u.expected_sha256 is None or len(u.expected_sha256) == 64 for u in borsch)
    wwd = collect_urls(wwd_release.folder)
    kinds = {u.kind for u in wwd}
    assert kinds == {"image", "page"}
    assert not [u for u in wwd if not u.url.startswith("http")]
    sample = collect_urls(wwd_release.folder, sample=25)
    assert len(sample) == 25 and sample == collect_urls(wwd_release.folder, sample=25)


@pytest.mark.unit
def test_scheduled_workflow_runs_check_urls() -> None:
    import yaml

    path = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "check-urls.yml"
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["schedule"][0]["cron"].split()[2] == "1"  # monthly, on the 1st
    steps = workflow["jobs"]["check"]["steps"]
    commands = "\n".join(step.get("run", "") for step in steps)
    assert "culturebench check-urls" in commands and "gh issue create" in commands
    assert any(step.get("uses", "").startswith("actions/upload-artifact") for step in steps)
    assert set(workflow["jobs"]["check"]["strategy"]["matrix"]["dataset"]) >= {"borsch", "wwd"}


@pytest.mark.unit
def test_retry_after_parsing() -> None:
    from datetime import datetime, timedelta, timezone
    from email.utils import format_datetime

    from culturebench.retry_after import retry_after_seconds

    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 20 < retry_after_seconds(later) <= 30


# ---------------------------------------------------------------------- dead hosts
@pytest.fixture()
def dead_hosts(monkeypatch):
    """Hosts that fail every way a scheduled check meets: a port bound but not listening
    (refused), a server that resets each connection, a plain-HTTP server asked for TLS,
    and a name that does not resolve. The unresolvable name is answered by a local resolver
    wrapper (``socket.getaddrinfo`` raising EAI_NONAME for ``*.invalid``), so no DNS query
    leaves the machine; every other name goes to the real resolver."""
    import socket
    import struct
    import threading

    real = socket.getaddrinfo

    def resolver(host, *args, **kwargs):
        if str(host).endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    resetting = socket.socket()
    resetting.bind(("127.0.0.1", 0))
    resetting.listen(8)
    stop = threading.Event()

    def reset_all() -> None:
        resetting.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = resetting.accept()
            except OSError:
                continue
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # RST instead of FIN

    thread = threading.Thread(target=reset_all, daemon=True)
    thread.start()
    try:
        yield {
            "refused": f"http://127.0.0.1:{closed.getsockname()[1]}/a.png",
            "reset": f"http://127.0.0.1:{resetting.getsockname()[1]}/a.png",
            "unresolvable": "http://no-such-host.invalid/a.png",
        }
    finally:
        stop.set()
        thread.join(5)
        closed.close()
        resetting.close()


def test_dead_hosts_are_findings_and_the_check_goes_on(server, dead_hosts) -> None:
    """Regression: a refused connection raised UnboundLocalError and aborted the whole check."""
    base, _ = server
    tls = base.replace("http://", "https://") + "/ok.png"  # TLS handshake against plain HTTP
    urls = [*dead_hosts.values(), tls, base + "/ok.png"]
    items = [UrlItem(url=u, kind="image", dataset="t", config="c", row_id=str(i), field="f") for i, u in
             enumerate(urls)]  # fmt: skip
    got = {r.url: r for r in UrlChecker(FAST).check_all(items)}
    assert len(got) == len(urls)
    for name, url in dead_hosts.items():
        assert got[url].status == "broken" and got[url].problems == ["connection_error"], (name, got[url])
    # a reset is retried, then reported; no such host, or a refusal, is final at once
    assert got[dead_hosts["reset"]].attempts == FAST.retries + 1
    assert got[dead_hosts["refused"]].attempts == 1 and got[dead_hosts["unresolvable"]].attempts == 0
    assert got[dead_hosts["refused"]].unreachable == "connect"
    assert got[dead_hosts["unresolvable"]].unreachable == "dns"
    assert "cannot resolve no-such-host.invalid" in got[dead_hosts["unresolvable"]].error
    assert got[tls].status == "broken" and got[tls].problems == ["connection_error"], got[tls]
    assert got[base + "/ok.png"].status == "ok"  # the check survived to the end


@pytest.mark.unit
def test_a_dead_host_is_dead_for_the_rest_of_the_check(dead_hosts) -> None:
    """Many URLs on a host whose name does not resolve, and on one that refuses: the first is
    dead before its URLs are checked (names are looked up first), the second after one
    request; their URLs are all reported with the same cause and class, without another
    request, a retry or a wait for the host's turn."""
    from dataclasses import replace

    config = replace(FAST, per_host=1, retries=3, backoff_s=5.0, per_host_delay_s=5.0)
    urls = [dead_hosts["unresolvable"].replace("a.png", f"{i}.png") for i in range(6)]
    urls += [dead_hosts["refused"].replace("a.png", f"{i}.png") for i in range(6)]
    items = [UrlItem(url=u, kind="image", dataset="t", config="c", row_id=str(i), field="f") for i, u in
             enumerate(urls)]  # fmt: skip
    got = UrlChecker(config).check_all(items)
    for host, how, tried in ((urls[:6], "dns", 0), (urls[6:], "connect", 1)):
        results = [r for r in got if r.url in host]
        # the name is looked up before the checks (no request at all); the refusal costs one
        assert sum(r.attempts for r in results) == tried, results
        assert {r.unreachable for r in results} == {how}
        assert all(r.problems == ["connection_error"] for r in results)
        assert sum("dead for the rest of this check" in (r.error or "") for r in results) >= 5
        assert max(r.elapsed_s for r in results) < config.backoff_s  # no backoff, no host delay


def test_cli_check_survives_dead_hosts(server, dead_hosts, tmp_path: Path) -> None:
    base, _ = server
    links = [("cc_image", u) for u in dead_hosts.values()] + [("cc_image", base + "/ok.png")]
    release = _release_with_links(tmp_path / "release", links)
    args = ["check-urls", str(release), "--report", str(tmp_path / "rep"), "--allow", "127.0.0.1",
            "--delay", "0", "--timeout", "2", "--retries", "0"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # newly broken links, reported, not a crash
    assert "unexpected" not in result.output
    report = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert sorted(report["changes"]["newly_broken"]) == sorted(dead_hosts.values())
