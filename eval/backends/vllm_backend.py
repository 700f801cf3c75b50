"""vLLM offline engine backend (``pip install culturebench[gpu]``, CUDA only).

Requests go through ``LLM.chat`` with OpenAI-style messages, so each model's own chat
template is applied and images travel as data URLs through vLLM's multimodal inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from culturebench.eval.backends.base import Backend, ModelLoadError, Request, SamplingParams, package_versions

MAX_IMAGES_PER_PROMPT = 10  # BORSCH attaches all (up to 10) images of a dish


class VLLMBackend(Backend):
    """Batched greedy generation with the vLLM engine."""

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        sampling: SamplingParams | None = None,
        max_model_len: int = 8192,
        gpu_memory_utilization: float = 0.85,
        **engine_kwargs: Any,
    ) -> None:
        super().__init__(model, revision=revision, sampling=sampling)
        self.engine_kwargs = {
            "model": model,
            "revision": revision,
            "seed": self.sampling.seed,
            "max_model_len": max_model_len,
            "gpu_memory_utilization": gpu_memory_utilization,
            "limit_mm_per_prompt": {"image": MAX_IMAGES_PER_PROMPT},
            **engine_kwargs,
        }
        self._llm = None

    def sampling_kwargs(self) -> dict[str, Any]:
        """Arguments of ``vllm.SamplingParams`` (greedy: temperature 0)."""
        return {
            "max_tokens": self.sampling.max_new_tokens,
            "temperature": self.sampling.temperature,
            "seed": self.sampling.seed,
        }

    @staticmethod
    def conversations(requests: Sequence[Request]) -> list[list[dict[str, Any]]]:
        """One chat conversation per request (images first, as data URLs)."""
        too_many = [r.id for r in requests if len(r.images) > MAX_IMAGES_PER_PROMPT]
        if too_many:
            raise ValueError(f"more than {MAX_IMAGES_PER_PROMPT} images in {too_many[:3]}")
        return [r.messages() for r in requests]

    def load(self) -> None:
        """Start the vLLM engine (loads the weights); failures become one-line errors."""
        if self._llm is not None:
            return
        try:
            from vllm import LLM

            self._llm = LLM(**self.engine_kwargs)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise ModelLoadError(f"cannot start vLLM with model {self.model!r}: {first}") from None

    def generate(self, requests: Sequence[Request]) -> list[str]:
        from vllm import SamplingParams as VSamplingParams

        self.load()
        outputs = self._llm.chat(
            self.conversations(requests), VSamplingParams(**self.sampling_kwargs()), use_tqdm=False
        )
        return [o.outputs[0].text.strip() for o in outputs]

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench", "vllm", "torch", "transformers"])
