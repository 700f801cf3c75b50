"""Probe cases (issue 12, security): each reproduces a hole an adversarial probe found on
the old main and asserts it is closed. Servers are real, on 127.0.0.1, started here."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

import pytest

from culturebench.images.fetch import FetchRequest, ImageCache, fetch_images
from culturebench.safe_http import BlockedAddress, check_target, check_url, guarded_session, is_public
from culturebench.urlcheck import CheckConfig, UrlChecker
from culturebench.urlcheck.collect import UrlItem

pytestmark = pytest.mark.unit


class _Handler(BaseHTTPRequestHandler):
    """/img: a PNG; /redirect-to?u=URL: 302 there; /slow: one byte a second, forever-ish."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.hits.append(self.path)
        if self.path.startswith("/redirect-to?u="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.end_headers()
        elif self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", "200")
            self.end_headers()
            for _ in range(200):
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.5)
        else:
            body = self.server.png
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    do_HEAD = do_GET


def _item(url: str) -> UrlItem:
    return UrlItem(url=url, kind="image", dataset="probe", config="default", row_id="r1", field="images")


@pytest.fixture
def loopback(servers):
    with servers.running(_Handler, hits=[], png=servers.png_bytes()) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}", server


# 1. one parser: the backslash/userinfo trick is refused, never fetched from loopback
@pytest.mark.integration
@pytest.mark.parametrize(
    "template",
    [
        "{base}\\@8.8.8.8/img",
        "{base}/img\\x",
        "http://user:pw@{hostport}/img",
        "http://8.8.8.8@{hostport}/img",
        "{base}/img with space",
        "{base}/img\t",
    ],
)
def test_ambiguous_urls_are_refused_and_loopback_never_hit(loopback, template, tmp_path):
    base, server = loopback
    url = template.format(base=base, hostport=base.removeprefix("http://"))
    with pytest.raises(BlockedAddress):
        check_url(url)
    result = UrlChecker(CheckConfig(retries=0, per_host_delay_s=0)).check(_item(url))
    assert result.status == "broken" and "blocked_address" in result.problems
    fetched = fetch_images([FetchRequest(url, url)], cache=ImageCache(tmp_path))
    assert fetched[url].error == "blocked" and fetched[url].data is None
    assert server.hits == []


@pytest.mark.integration
def test_guard_checks_the_address_actually_connected(loopback):
    base, server = loopback
    # No --allow: the loopback address is refused at connect time by the session itself.
    with pytest.raises(BlockedAddress):
        guarded_session().get(f"{base}/img", timeout=5)
    assert server.hits == []
    # Allowed: the very same session class connects.
    assert guarded_session(["127.0.0.1"]).get(f"{base}/img", timeout=5).status_code == 200


# 2. the image fetcher checks every redirect hop
@pytest.mark.integration
def test_image_fetch_redirect_to_loopback_is_blocked(loopback, tmp_path):
    base, server = loopback
    hop = f"{base}/redirect-to?u=http://127.0.0.2:{base.rsplit(':', 1)[1]}/img"
    got = fetch_images([FetchRequest(hop, hop)], cache=ImageCache(tmp_path), allow=("127.0.0.1",))
    assert got[hop].error == "blocked"
    assert got[hop].data is None
    assert server.hits == ["/redirect-to?u=" + hop.split("=", 1)[1]]  # the second hop never connected


@pytest.mark.integration
def test_url_checker_redirect_hop_to_loopback_is_blocked(loopback):
    base, _server = loopback
    hop = f"{base}/redirect-to?u=http://127.0.0.2:{base.rsplit(':', 1)[1]}/img"
    config = CheckConfig(retries=0, per_host_delay_s=0, allow=("127.0.0.1",))
    result = UrlChecker(config).check(_item(hop))
    assert "blocked_address" in result.problems


# 3. every non-global range is blocked (is_global, not a hand list)
@pytest.mark.parametrize(
    "address",
    [
        "100.64.0.1",
        "100.100.100.200",
        "127.0.0.1",
        "10.1.2.3",
        "169.254.169.254",
        "192.168.1.1",
        "172.16.0.1",
        "198.18.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "::1",
        "fc00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::ffff:100.64.0.1",
    ],
)
def test_non_public_addresses_are_blocked(address):
    import ipaddress

    assert not is_public(ipaddress.ip_address(address))
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(BlockedAddress):
        check_target(f"http://{host}/x")


def test_public_addresses_pass():
    import ipaddress

    assert is_public(ipaddress.ip_address("8.8.8.8"))
    assert is_public(ipaddress.ip_address("2606:4700::1111"))


# 12. a wall-clock deadline per request
@pytest.mark.integration
def test_slow_drip_server_is_cut_at_the_deadline(loopback, tmp_path):
    base, _server = loopback
    url = f"{base}/slow"
    config = CheckConfig(timeout_s=1.5, retries=0, per_host_delay_s=0, allow=("127.0.0.1",))
    started = time.monotonic()
    result = UrlChecker(config).check(_item(url))
    elapsed = time.monotonic() - started
    assert "timeout" in result.problems, result
    assert elapsed < 6, elapsed
    started = time.monotonic()
    got = fetch_images(
        [FetchRequest(url, url)], cache=ImageCache(tmp_path), allow=("127.0.0.1",), timeout_s=1.5
    )
    assert got[url].error == "timeout"
    assert time.monotonic() - started < 6


# 11. one hostile image is that image's failure, never the stage's
def _hostile_images() -> dict[str, bytes]:
    import io
    import struct
    import zlib

    from PIL import Image

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buf, "PNG")
    png = buf.getvalue()
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), "blue").save(buf, "JPEG")
    jpeg = buf.getvalue()
    return {
        "iccp.png": png[:33]
        + chunk(b"iCCP", b"p\x00\x00" + zlib.compress(b"\x00" * 20_000_000, 9))
        + png[33:],
        "ztxt.png": png[:33] + chunk(b"zTXt", b"c\x00\x00" + zlib.compress(b"A" * 20_000_000, 9)) + png[33:],
        "cut-header.jpg": jpeg[:30],
        "good.png": png,
    }


def test_hostile_images_fail_alone(tmp_path) -> None:
    from culturebench.buildlog import BuildLog
    from culturebench.images.policy import ImagePolicy
    from culturebench.images.stage import ImageOptions, run_image_stage

    cache = ImageCache(tmp_path / "cache")
    images = []
    for name, data in _hostile_images().items():
        sha = cache.put(data)
        images.append(
            {"url": f"https://example.invalid/{name}", "sha256": sha, "file": name, "license": "cc0-1.0"}
        )
    rows = {"default": {"test": [{"id": "d1", "images": images}]}}
    policy = ImagePolicy(embed_licenses=["cc0-1.0"], max_bytes=50_000_000, max_pixels=40_000_000)
    run_image_stage(rows, policy, ImageOptions(offline=True, cache=cache), BuildLog())
    status = {i["file"]: i["status"] for i in images}
    assert status["good.png"] == "embedded"
    assert status["iccp.png"].startswith("failed:") and status["ztxt.png"].startswith("failed:")
    assert status["cut-header.jpg"].startswith("failed:")


# 18. one semaphore per host even under forced thread switching (was created without a lock)
def test_host_gate_creates_one_semaphore_per_host() -> None:
    import sys
    import threading

    from culturebench.urlcheck.checker import _HostGate

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):
            gate = _HostGate(limit=1, delay=0)
            got: list[object] = []
            barrier = threading.Barrier(16)

            def grab(gate=gate, got=got, barrier=barrier) -> None:
                barrier.wait()
                got.append(gate._semaphore("h.example"))

            threads = [threading.Thread(target=grab) for _ in range(16)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len({id(s) for s in got}) == 1
    finally:
        sys.setswitchinterval(old)
