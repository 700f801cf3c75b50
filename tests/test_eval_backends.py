"""Backends: the OpenAI-compatible HTTP backend against a real server (`transformers serve`
with the tiny local text and vision-language models) and against a fault-injecting fake;
vLLM request building on CPU; the vLLM engine itself on a GPU (marked `gpu`)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from culturebench.eval.backends.base import Request, SamplingParams
from culturebench.eval.backends.openai_backend import EndpointError, OpenAIBackend
from culturebench.eval.backends.vllm_backend import VLLMBackend
from culturebench.eval.runner import run_eval

pytestmark = pytest.mark.integration


def _serve(model: Path, tmp_path_factory: pytest.TempPathFactory, servers):
    """`transformers serve` on 127.0.0.1 serving ``model`` (tests/servers.py)."""
    with servers.transformers_serve(model, tmp_path_factory.mktemp("serve")) as url:
        yield url


@pytest.fixture(scope="module")
def served_model(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, servers):
    """The tiny text model behind a real OpenAI-compatible server."""
    yield from _serve(tiny_model, tmp_path_factory, servers)


@pytest.fixture(scope="module")
def served_vlm(tiny_vlm: Path, tmp_path_factory: pytest.TempPathFactory, servers):
    """The tiny LLaVA-style model behind a real OpenAI-compatible server."""
    yield from _serve(tiny_vlm, tmp_path_factory, servers)


@pytest.mark.e2e
def test_openai_backend_against_a_real_server(served_model: str, tiny_model: Path) -> None:
    engine = OpenAIBackend(
        str(tiny_model), base_url=served_model, sampling=SamplingParams(max_new_tokens=8), concurrency=2
    )
    requests = [
        Request(f"r{i}", f"Из какой страны происходит блюдо {d}?")
        for i, d in enumerate(["Борщ", "Плов", "Сырники"])
    ]
    first = engine.generate(requests)
    assert len(first) == 3 and all(isinstance(t, str) for t in first)
    assert engine.generate(requests) == first  # greedy + seed: deterministic
    assert engine.describe()["base_url"] == served_model


@pytest.mark.e2e
def test_images_over_http_match_the_local_vision_backend(served_vlm: str, tiny_vlm: Path) -> None:
    """Images sent as data URLs to a real server give exactly the local processor's greedy
    output, and different images give different outputs (they reach the model)."""
    import io

    from PIL import Image

    from culturebench.eval.backends.transformers_backend import TransformersBackend

    def image(color: tuple[int, int, int], fmt: str) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (40, 30), color).save(buffer, fmt)
        return buffer.getvalue()

    prompt = "Which image shows the dish? Answer with A, B, C or D."
    requests = [
        Request("two", prompt, (image((200, 0, 0), "PNG"), image((0, 0, 200), "JPEG"))),
        Request("green", prompt, (image((0, 250, 0), "PNG"),)),
        Request("black", prompt, (image((0, 0, 0), "PNG"),)),
        Request("white", prompt, (image((255, 255, 255), "JPEG"),)),
    ]
    sampling = SamplingParams(max_new_tokens=8)
    remote = OpenAIBackend(str(tiny_vlm), base_url=served_vlm, sampling=sampling).generate(requests)
    local = TransformersBackend(str(tiny_vlm), sampling=sampling).generate(requests)
    assert remote == local
    assert len(set(local[1:])) > 1


@pytest.mark.e2e
def test_eval_run_through_the_http_backend(
    served_model: str, tiny_model: Path, borsch_release, tmp_path: Path
) -> None:
    engine = OpenAIBackend(str(tiny_model), base_url=served_model, sampling=SamplingParams(max_new_tokens=8))
    results = run_eval(
        "borsch",
        "origin-qa",
        engine,
        tmp_path / "http",
        local=str(borsch_release.folder),
        limit=1,
        langs=["uk"],
    )
    assert results["samples"] == 5 and results["provenance"]["model"]["backend"] == "openai"
    assert (tmp_path / "http" / "report.md").exists()


class _FlakyChatHandler(BaseHTTPRequestHandler):
    """FAKE of the OpenAI chat-completions API that injects failures from a script:
    each request pops the next status; 200 answers with a fixed completion."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        server = self.server
        with server.lock:  # type: ignore[attr-defined]
            server.in_flight += 1  # type: ignore[attr-defined]
            server.max_in_flight = max(server.max_in_flight, server.in_flight)  # type: ignore[attr-defined]
            status = server.script.pop(0) if server.script else 200  # type: ignore[attr-defined]
            server.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))  # type: ignore[attr-defined]
        time.sleep(0.02)
        body = (
            {"choices": [{"message": {"role": "assistant", "content": " Україна "}}]}
            if status == 200
            else {"error": "x"}
        )
        data = json.dumps(body).encode()
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with server.lock:  # type: ignore[attr-defined]
            server.in_flight -= 1  # type: ignore[attr-defined]


@pytest.fixture
def flaky(servers):
    state = {"script": [], "bodies": [], "lock": threading.Lock(), "in_flight": 0, "max_in_flight": 0}
    with servers.running(_FlakyChatHandler, **state) as server:
        yield server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_retries_on_429_and_5xx_then_succeeds(flaky) -> None:
    server, url = flaky
    server.script[:] = [429, 503, 200]
    engine = OpenAIBackend("m", base_url=url, backoff_s=0.0, max_retries=3)
    assert engine.generate([Request("a", "Откуда борщ?")]) == ["Україна"]
    assert len(server.bodies) == 3
    body = server.bodies[0]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 200 and body["seed"] == 0
    assert body["messages"] == [{"role": "user", "content": "Откуда борщ?"}]


def test_sampled_requests_carry_their_own_seed() -> None:
    """Sampling: each request's seed is the run's seed and its id (a repeat of one prompt under
    another id samples independently; a request samples the same in any batch or shard)."""
    from culturebench.eval.backends.base import SamplingParams, request_seed

    hot = OpenAIBackend(
        "m", base_url="http://127.0.0.1:9/v1", sampling=SamplingParams(temperature=0.8, seed=3)
    )
    a, b = hot.payload(Request("x:r0", "p")), hot.payload(Request("x:r1", "p"))
    assert a["seed"] == request_seed(3, "x:r0") != b["seed"] == request_seed(3, "x:r1")
    assert 0 <= a["seed"] < 2**31
    assert request_seed(4, "x:r0") != a["seed"]


def test_gives_up_and_does_not_retry_client_errors(flaky) -> None:
    server, url = flaky
    server.script[:] = [500, 500, 500]
    with pytest.raises(EndpointError, match="gave up after 3 attempts"):
        OpenAIBackend("m", base_url=url, backoff_s=0.0, max_retries=2).generate([Request("a", "x")])
    server.script[:] = [400]
    before = len(server.bodies)
    with pytest.raises(EndpointError, match="HTTP 400"):
        OpenAIBackend("m", base_url=url, backoff_s=0.0).generate([Request("b", "x")])
    assert len(server.bodies) == before + 1


def test_concurrency_is_bounded(flaky) -> None:
    server, url = flaky
    engine = OpenAIBackend("m", base_url=url, concurrency=2)
    out = engine.generate([Request(str(i), "x") for i in range(12)])
    assert out == ["Україна"] * 12
    assert 1 <= server.max_in_flight <= 2


def _png(size: int = 8) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), (10, 120, 30)).save(buf, format="PNG")
    return buf.getvalue()


def test_vllm_request_building_on_cpu() -> None:
    engine = VLLMBackend("some/model", sampling=SamplingParams(max_new_tokens=200, seed=7))
    assert engine.sampling_kwargs() == {"max_tokens": 200, "temperature": 0.0, "seed": 7}
    assert engine.engine_kwargs["limit_mm_per_prompt"] == {"image": 10}
    assert engine.engine_kwargs["seed"] == 7
    convs = engine.conversations([Request("t", "Откуда?"), Request("v", "Что на фото?", (_png(), _png(4)))])
    assert convs[0] == [{"role": "user", "content": "Откуда?"}]
    content = convs[1][0]["content"]
    assert [c["type"] for c in content] == ["image_url", "image_url", "text"]
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert content[2]["text"] == "Что на фото?"
    with pytest.raises(ValueError, match="more than 10 images"):
        engine.conversations([Request("w", "x", tuple(_png() for _ in range(11)))])


def _cuda_and_vllm() -> bool:
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.e2e
@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_and_vllm(), reason="needs a CUDA GPU and vllm (pip install culturebench[gpu])")
def test_vllm_engine_generates_deterministically(tiny_model: Path) -> None:
    engine = VLLMBackend(
        str(tiny_model),
        sampling=SamplingParams(max_new_tokens=16),
        max_model_len=512,
        gpu_memory_utilization=0.3,
        enforce_eager=True,
    )
    requests = [
        Request(f"r{i}", f"Из какой страны происходит блюдо {d}?") for i, d in enumerate(["Борщ", "Плов"])
    ]
    first = engine.generate(requests)
    assert len(first) == 2 and all(isinstance(t, str) for t in first)
    assert engine.generate(requests) == first
