"""Model backends behind one interface: transformers (CPU/GPU), vLLM (GPU), and any
OpenAI-compatible HTTP endpoint (e.g. ``vllm serve``)."""

from __future__ import annotations

from culturebench.eval.backends.base import Backend, Request, SamplingParams

BACKENDS = ("transformers", "vllm", "openai")


def make_backend(name: str, model: str, **options) -> Backend:
    """Instantiate a backend by name (imports its heavy dependencies only then)."""
    if name not in BACKENDS:
        from culturebench.errors import UsageError

        raise UsageError(f"unknown backend {name!r} (choose from {', '.join(BACKENDS)})")
    if name == "transformers":
        from culturebench.eval.backends.transformers_backend import TransformersBackend

        return TransformersBackend(model, **options)
    if name == "vllm":
        from culturebench.eval.backends.vllm_backend import VLLMBackend

        return VLLMBackend(model, **options)
    if name == "openai":
        from culturebench.eval.backends.openai_backend import OpenAIBackend

        return OpenAIBackend(model, **options)
    from culturebench.errors import UsageError

    raise UsageError(f"unknown backend {name!r} (choose from {', '.join(BACKENDS)})")


__all__ = ["BACKENDS", "Backend", "Request", "SamplingParams", "make_backend"]
