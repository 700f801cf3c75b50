"""Benchmark: check 1,000 image URLs on local servers that answer each request in ~1 s.

The URLs are spread over 50 loopback host names (127.0.0.2 ... 127.0.0.51, 20 URLs each), each
served by its own HTTP server; the checker keeps its politeness settings (per-host concurrency
and delay between request starts to one host). The baseline, measured in the same run, is the
checker with one request at a time (20 URLs, extrapolated to 1,000).

    python benchmarks/bench_urlcheck.py [--urls 1000] [--hosts 50] [--per-host 2] [--delay 0.25]
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


if __name__ == "__main__":
    main()
