"""Benchmark: what the response cache costs a run that gets no hit, and what a hit saves.

1. Per request, with an empty cache (every request a miss): the key (the model's identity and
   the request, images by sha256), the lookup and the store, over 5,000 BORSCH-sized prompts
   in chunks of 128. Printed in microseconds per request.
2. A warm `eval run` (the tiny random Llama, BORSCH origin-qa, 40 rows) with the cache off and
   on with an empty cache (no hits): the ratio is the slowdown (goal: at most 1.05). Then the
   same run into a new folder with the cache full (every request a hit): its time against
   the run that generated.

    python benchmarks/bench_response_cache.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from culturebench.eval.backends.base import Request
from culturebench.eval.response_cache import ResponseCache, model_identity, request_key

MODEL = {
    "backend": "transformers",
    "model": "/models/tiny",
    "weights_sha256": "ab" * 32,
    "model_revision": None,
}
SAMPLING = {"max_new_tokens": 200, "temperature": 0.0, "seed": 0}


def per_request_us(n: int = 5_000, chunk: int = 128) -> float:
    model = model_identity(MODEL)
    requests = [
        Request(f"r{i}:ru:0", f"Из какой страны или каких стран происходит блюдо №{i}? " * 3)
        for i in range(n)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "responses.sqlite")
        start = time.perf_counter()
        for at in range(0, n, chunk):
            part = requests[at : at + chunk]
            keys = [request_key(model, r, SAMPLING) for r in part]
            found = cache.get_many([k for k in keys if k])
            cache.put_many([(k, "tiny", "Россия") for k in keys if k and k not in found])
        took = time.perf_counter() - start
        cache.close()
    return took / n * 1e6


def eval_runs(repeat: int) -> None:
    from culturebench.builders import get_builder
    from culturebench.eval.backends.transformers_backend import TransformersBackend
    from culturebench.eval.runner import run_eval
    from culturebench.eval.tiny import build_tiny_llama

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = build_tiny_llama(work / "tiny")
        release = get_builder("borsch").build(out_root=work / "dist").folder

        def run(name: str, cache: bool) -> float:
            backend = TransformersBackend(str(model))
            start = time.perf_counter()
            run_eval(
                "borsch",
                "origin-qa",
                backend,
                work / name,
                local=str(release),
                limit=40,
                response_cache=cache,
            )
            return time.perf_counter() - start

        run("warmup", False)
        off, empty, full = [], [], []
        for i in range(repeat):
            off.append(run(f"off-{i}", False))
            os.environ["CULTUREBENCH_RESPONSE_CACHE"] = str(work / f"cache-{i}")
            empty.append(run(f"empty-{i}", True))  # a new cache: every request a miss
            full.append(run(f"full-{i}", True))  # the same cache: every request a hit
    base = statistics.median(off)
    print(
        f"eval run, 400 requests: cache off {base:.2f} s; empty cache (no hit) "
        f"{statistics.median(empty):.2f} s = {statistics.median(empty) / base:.3f}x; "
        f"full cache (all hits) {statistics.median(full):.2f} s = {statistics.median(full) / base:.3f}x"
    )
    verdict = "PASS" if statistics.median(empty) / base <= 1.05 else "FAIL"
    print(f"{verdict}: with no hits the run slows by at most 5%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"per request (key + lookup + store, empty cache): {per_request_us():.0f} µs")
    eval_runs(args.repeat)


if __name__ == "__main__":
    main()
