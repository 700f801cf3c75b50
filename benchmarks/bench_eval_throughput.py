"""Benchmark: generation throughput (prompts/s) per backend on the same tiny local model and
the same BORSCH origin-QA prompts. Ratios are against transformers at batch size 1 measured
in the same run. vLLM is measured only where a CUDA GPU and vllm are present.

    python benchmarks/bench_eval_throughput.py [--prompts 80] [--tokens 32]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from culturebench.eval.backends.base import Request, SamplingParams
from culturebench.eval.tasks import get_task
from culturebench.eval.tiny import build_tiny_llama


def prompts(n: int) -> list[Request]:
    task = get_task("borsch", "origin-qa")
    names = ["БОРЩ", "ПЛОВ", "СЫРНИКИ", "ДРАНИКИ", "ХАЧАПУРИ", "ПЕЛЬМЕНИ", "МАМАЛЫГА", "ЧАК-ЧАК"]
    rows = [
        {"id": f"b{i}", "name_ru": nm, "name_uk": nm, "origins": ["UA"], "images": []}
        for i, nm in enumerate(names)
    ]
    reqs, _ = task.build(rows, ["ru", "uk"])
    return [r.request for r in (reqs * (n // len(reqs) + 1))[:n]]


def rate(engine, requests: list[Request]) -> float:
    engine.generate(requests[:2])  # warm-up
    start = time.perf_counter()
    engine.generate(requests)
    return len(requests) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=80)
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    sampling = SamplingParams(max_new_tokens=args.tokens)
    model = build_tiny_llama(Path(tempfile.mkdtemp(prefix="cb-tiny-")))
    requests = prompts(args.prompts)
    results: dict[str, float] = {}

    from culturebench.eval.backends.transformers_backend import TransformersBackend

    for batch in (1, 8, 32):
        results[f"transformers (batch {batch})"] = rate(
            TransformersBackend(str(model), sampling=sampling, batch_size=batch), requests
        )

    port = _free_port()
    exe = Path(sys.executable).with_name("transformers")
    server = subprocess.Popen(
        [str(exe), "serve", str(model), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        _wait(f"http://127.0.0.1:{port}/health")
        from culturebench.eval.backends.openai_backend import OpenAIBackend

        engine = OpenAIBackend(
            str(model), base_url=f"http://127.0.0.1:{port}/v1", sampling=sampling, concurrency=4
        )
        results["openai HTTP -> transformers serve (4 in flight)"] = rate(engine, requests)
    finally:
        server.terminate()
        server.wait(timeout=15)

    try:
        import torch
        import vllm  # noqa: F401

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        from culturebench.eval.backends.vllm_backend import VLLMBackend

        results["vllm (GPU)"] = rate(
            VLLMBackend(str(model), sampling=sampling, max_model_len=512, gpu_memory_utilization=0.3),
            requests,
        )
        results["transformers (GPU, batch 32)"] = rate(
            TransformersBackend(str(model), sampling=sampling, batch_size=32, device="cuda"), requests
        )

    base = results["transformers (batch 1)"]
    print(f"{len(requests)} prompts, {args.tokens} new tokens each, tiny Llama (2 layers, hidden 32)")
    print(f"{'backend':48s} {'prompts/s':>10s} {'x baseline':>11s}")
    for name, value in results.items():
        print(f"{name:48s} {value:10.1f} {value / base:11.2f}")
    if not has_gpu:
        print("vLLM: not measured (no CUDA GPU / vllm here)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(url: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not come up")


if __name__ == "__main__":
    main()
