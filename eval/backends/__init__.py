"""Model backends behind one interface: transformers (CPU/GPU), vLLM (GPU), and any
OpenAI-compatible HTTP endpoint (e.g. ``vllm serve``); and text-to-image backends behind
another: diffusers pipelines (CPU/GPU) and OpenAI-compatible ``images/generations``."""

from __future__ import annotations

from typing import Any

from culturebench.eval.backends.base import Backend, Request, SamplingParams
from culturebench.eval.backends.image_base import ImageBackend, ImageParams
from culturebench.eval.backends.options import BackendOption

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
        hint = " (on a CPU machine: scripts/vllm_env.sh, docs/evaluating.md)" if name == "vllm" else ""
        raise UsageError(
            f"--backend {name} needs {', '.join(missing)}, which is not installed: "
            f"pip install 'culturebench[{extra}]'{hint}"
        )


ENTRY_POINT_GROUP = "culturebench.backends"


def _plugins() -> dict[str, Any]:
    """Backends other packages register: entry points ``name = "package.module:Class"``."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _CLASSES}


def backend_names() -> list[str]:
    """Every backend: the built-in ones, then those of installed packages."""
    return [*_CLASSES, *sorted(_plugins())]


def backend_class(name: str) -> type:
    """The class of backend ``name`` (imports its heavy dependencies only then); a
    :class:`UsageError` naming the choices, or the extra to install."""
    import importlib

    plugins = _plugins()
    if name in plugins:
        return plugins[name].load()
    if name not in _CLASSES:
        from culturebench.errors import UsageError

        raise UsageError(f"unknown backend {name!r} (choose from {', '.join(backend_names())})")
    require_backend(name)
    module, cls, _ = _CLASSES[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def _declared_class(name: str) -> type:
    """The class of backend ``name`` for its declarations (``OPTIONS``, ``REFUSED``): a
    built-in one's module is imported without its engine (no torch, no vLLM)."""
    import importlib

    if name in _CLASSES:
        module, cls, _ = _CLASSES[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    return backend_class(name)


def backend_options(name: str) -> tuple[BackendOption, ...]:
    """The options backend ``name`` declares (read without importing its engine)."""
    return tuple(_declared_class(name).OPTIONS)


def check_model_args(name: str, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``--model-arg`` pairs typed and checked against backend ``name``'s options (before any
    model loads); a one-line :class:`UsageError` lists the valid keys otherwise."""
    from culturebench.eval.backends.options import parse_model_args

    cls = _declared_class(name)
    return parse_model_args(
        name,
        cls.OPTIONS,
        pairs,
        refused=cls.REFUSED,
        others=lambda: {other: backend_options(other) for other in _CLASSES if other != name},
    )


def make_backend(name: str, model: str, *, model_args: dict[str, Any] | None = None, **options) -> Any:
    """Backend ``name`` for ``model``: ``options`` (the command's own flags) and ``model_args``
    (checked ``--model-arg`` values, which win and are recorded in the run's provenance)."""
    _refuse_conflicts(name, options, model_args or {})
    backend = backend_class(name)(model, **{**options, **(model_args or {})})
    backend.model_args = dict(model_args or {})
    return backend


def _refuse_conflicts(name: str, options: dict[str, Any], model_args: dict[str, Any]) -> None:
    """A value given both as the command's flag (not left at its default) and as a
    ``--model-arg`` with another value is an error, never one silently winning."""
    from culturebench.errors import UsageError

    defaults = {o.name: o.default for o in backend_options(name)}
    for key, value in model_args.items():
        given = options.get(key)
        if given is not None and given != defaults.get(key, object()) and given != value:
            flag = "--" + key.replace("_", "-")
            raise UsageError(f"--model-arg {key} and {flag} give two different values: give one of them")


def make_image_backend(name: str, model: str, **options) -> ImageBackend:
    """Instantiate a text-to-image backend by name (imports diffusers only for that one)."""
    if _CLASSES.get(name, ("", "", ""))[2] != "image":
        from culturebench.errors import UsageError

        raise UsageError(f"unknown text-to-image backend {name!r} (choose from {', '.join(IMAGE_BACKENDS)})")
    return make_backend(name, model, **options)


__all__ = [
    "BACKENDS",
    "ENTRY_POINT_GROUP",
    "IMAGE_BACKENDS",
    "Backend",
    "BackendOption",
    "ImageBackend",
    "ImageParams",
    "Request",
    "SamplingParams",
    "backend_class",
    "backend_names",
    "backend_options",
    "check_model_args",
    "make_backend",
    "make_image_backend",
]
