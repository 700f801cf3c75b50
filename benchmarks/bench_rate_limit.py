"""Benchmark: the OpenAI-compatible backend against a local endpoint that enforces a rate
limit (``--rps`` requests per one-second window, with OpenAI's ``x-ratelimit-*`` headers;
tests/servers.py). Prints the answered requests per second against the limit itself (goal:
within 10%), and the 429s, for the adaptive client (headers read, requests in flight halved on
a 429) and, as the baseline in the same run, the same client with the adaptation switched off
(it only backs off each refused request on its own).

    python benchmarks/bench_rate_limit.py [--rps 20] [--requests 400] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

from culturebench.eval.backends import rate_limit
from culturebench.eval.backends.base import Request, SamplingParams
from culturebench.eval.backends.openai_backend import OpenAIBackend


def _servers():
    path = Path(__file__).resolve().parent.parent / "tests" / "servers.py"
    spec = importlib.util.spec_from_file_location("servers", path)
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules["servers"] = module
    spec.loader.exec_module(module)
    return module


class _Ignoring(rate_limit.AdaptiveLimit):
    """The baseline: a fixed number in flight, no header read, no shared pause."""

    def answered(self, status, headers):
        return None

    def pause(self, seconds: float) -> None:
        time.sleep(min(seconds, 1.0))  # only the refused sender waits


def run(servers, rps: int, n: int, concurrency: int, adaptive: bool) -> tuple[float, int]:
    with servers.rate_limited_chat(rps=rps, latency_s=0.02) as server:
        engine = OpenAIBackend(
            "m",
            base_url=server.url,
            sampling=SamplingParams(max_new_tokens=4),
            concurrency=concurrency,
            max_retries=50,
            backoff_s=0.05,
        )
        if not adaptive:
            engine.limit = _Ignoring(concurrency)
        start = time.perf_counter()
        engine.generate([Request(f"r{i}", "Откуда борщ?") for i in range(n)])
        took = time.perf_counter() - start
        return n / took, server.refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rps", type=int, default=20)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    servers = _servers()
    for name, adaptive in (("ignoring the limits (baseline)", False), ("adaptive", True)):
        rate, refused = run(servers, args.rps, args.requests, args.concurrency, adaptive)
        print(
            f"{name:>31}: {rate:5.1f} requests/s = {rate / args.rps:.2f}x the limit of {args.rps}/s; "
            f"{refused} 429s for {args.requests} requests ({refused / args.requests:.0%})"
        )


if __name__ == "__main__":
    main()
