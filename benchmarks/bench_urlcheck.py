"""Benchmark: check 1,000 image URLs on local servers that answer each request in ~1 s.

The URLs are spread over 50 loopback host names (127.0.0.2 ... 127.0.0.51, 20 URLs each), each
served by its own HTTP server; the checker keeps its politeness settings (per-host concurrency
and delay between request starts to one host). The baseline, measured in the same run, is the
checker with one request at a time (20 URLs, extrapolated to 1,000).

The dead-host row checks the same number of URLs on hosts that cannot be reached, with the
default retries (3, backoff 1 + 2 + 4 s): half on loopback ports that refuse connections, half
on names under ``.invalid`` that a resolver wrapper in this process answers "not known" after
``--resolve-latency`` seconds (no query leaves the machine; offline lookups here took 3 ms to
10 s). Its baseline is the rule before dead hosts were remembered, computed: every URL paid its
retries' backoff, ``per-host`` at a time per host, hosts in parallel. With ``--release DIR``
the release's own URLs are checked as ``check-urls`` checks them (offline: every host fails).

    python benchmarks/bench_urlcheck.py [--urls 1000] [--hosts 50] [--per-host 2] [--delay 0.25] \
        [--resolve-latency 1.0] [--release dist/wwd/1.1.0]
"""

from __future__ import annotations

import argparse
import io
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from PIL import Image

from culturebench.urlcheck import CheckConfig, UrlChecker, UrlItem

LATENCY_S = 1.0


def _png() -> bytes:
    buf = io.BytesIO()
    Image.linear_gradient("L").resize((32, 32)).save(buf, format="PNG")
    return buf.getvalue()


BODY = _png()


class SlowImage(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        time.sleep(LATENCY_S)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def start(host: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, 0), SlowImage)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def items_for(servers: list[ThreadingHTTPServer], n: int) -> list[UrlItem]:
    out = []
    for i in range(n):
        host, port = servers[i % len(servers)].server_address[:2]
        out.append(UrlItem(f"http://{host}:{port}/img{i}.png", "image", "bench", "default", str(i), "images"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--per-host", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--resolve-latency", type=float, default=1.0)
    parser.add_argument("--release", default=None, help="also check this release's URLs as check-urls does")
    args = parser.parse_args()
    servers = [start(f"127.0.0.{i + 2}") for i in range(args.hosts)]
    try:
        allow = ("127.0.0.0/8",)
        sequential = UrlChecker(
            CheckConfig(concurrency=1, per_host=1, per_host_delay_s=0.0, allow=allow, retries=0)
        )
        sample = items_for(servers, 20)
        t0 = time.perf_counter()
        sequential.check_all(sample)
        per_url = (time.perf_counter() - t0) / len(sample)
        baseline = per_url * args.urls

        config = CheckConfig(
            concurrency=args.concurrency,
            per_host=args.per_host,
            per_host_delay_s=args.delay,
            allow=allow,
            retries=0,
        )
        items = items_for(servers, args.urls)
        t0 = time.perf_counter()
        results = UrlChecker(config).check_all(items)
        elapsed = time.perf_counter() - t0
    finally:
        for server in servers:
            server.shutdown()
    ok = sum(r.status == "ok" for r in results)
    print(f"{args.urls} URLs on {args.hosts} hosts, each answering in ~{LATENCY_S:.0f} s")
    print(
        f"politeness: {args.per_host} in flight per host, >= {args.delay} s between starts per host, "
        f"{args.concurrency} overall"
    )
    print(f"{'run':40s} {'seconds':>8s} {'x baseline':>11s}")
    print(f"{'baseline: one at a time (extrapolated)':40s} {baseline:8.1f} {1.0:11.2f}")
    print(f"{'checker with politeness':40s} {elapsed:8.1f} {baseline / elapsed:11.2f}")
    print(f"ok: {ok}/{len(results)}; target < 30 s: {'met' if elapsed < 30 else 'MISSED'}")
    dead_hosts_row(args)


def dead_hosts_row(args: argparse.Namespace) -> None:
    """The same number of URLs on dead hosts (refusing ports and names that do not resolve)."""
    import socket

    real = socket.getaddrinfo

    def resolver(host: object, *rest: object, **kwargs: object) -> object:
        if str(host).endswith(".invalid"):
            time.sleep(args.resolve_latency)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *rest, **kwargs)  # type: ignore[arg-type]

    closed = []
    for i in range(args.hosts // 2):
        sock = socket.socket()
        sock.bind((f"127.0.0.{i + 2}", 0))  # bound, never listening: connections are refused
        closed.append(sock)
    bases = [f"http://127.0.0.{i + 2}:{s.getsockname()[1]}" for i, s in enumerate(closed)]
    bases += [f"http://dead-{i}.example.invalid" for i in range(args.hosts - len(closed))]
    items = [
        UrlItem(f"{bases[i % len(bases)]}/img{i}.png", "image", "bench", "default", str(i), "images")
        for i in range(args.urls)
    ]
    config = CheckConfig(
        concurrency=16, per_host=args.per_host, per_host_delay_s=args.delay, allow=("127.0.0.0/8",)
    )
    socket.getaddrinfo = resolver  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        results = UrlChecker(config).check_all(items)
        elapsed = time.perf_counter() - t0
    finally:
        socket.getaddrinfo = real
        for sock in closed:
            sock.close()
    backoff = sum(config.backoff_s * 2**i for i in range(config.retries))
    per_host = -(-args.urls // len(bases))
    before = per_host * backoff / config.per_host
    classes = sorted({(r.status, tuple(r.problems), r.unreachable) for r in results}, key=str)
    unresolved = len(bases) - len(closed)
    print(
        f"\n{args.urls} URLs on {len(bases)} dead hosts ({len(closed)} refusing, {unresolved} not resolving"
    )
    print(f"after {args.resolve_latency:g} s), default retries and 16 in flight")
    print(f"{'run':40s} {'seconds':>8s} {'x before':>11s}")
    print(f"{'before: retries per URL (computed)':40s} {before:8.1f} {1.0:11.2f}")
    print(f"{'checker, dead hosts remembered':40s} {elapsed:8.1f} {before / elapsed:11.2f}")
    print(f"report classes: {classes}")
    if args.release:
        from culturebench.urlcheck.collect import collect_urls

        release_items = collect_urls(args.release)
        hosts = len({item.url.split("/")[2] for item in release_items})
        t0 = time.perf_counter()
        found = UrlChecker(CheckConfig()).check_all(release_items)
        took = time.perf_counter() - t0
        broken = sum(r.status == "broken" for r in found)
        verdict = "met" if took < 30 else "MISSED"
        print(f"\n{args.release}: {len(release_items)} URLs on {hosts} hosts, default settings: {took:.1f} s")
        print(f"({broken} broken; target < 30 s offline: {verdict})")


if __name__ == "__main__":
    main()
