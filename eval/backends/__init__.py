"""The backend registry: text and vision-language backends behind one interface
(:class:`Backend`), text-to-image backends behind another (:class:`ImageBackend`). Each
backend declares itself on its class (what it makes, the packages and extra it needs, the
engine flags it takes, its ``--model-arg`` options); the built-in ones are listed by module
here, others come from the ``culturebench.backends`` entry points. Nothing outside this
package names a backend."""

from __future__ import annotations

from typing import Any

from culturebench.eval.backends.base import Backend, ModelIdentity, Request, SamplingParams
from culturebench.eval.backends.image_base import ImageBackend, ImageParams
from culturebench.eval.backends.options import BackendOption

# The built-in backends: name -> "module:Class" under this package. Everything else about a
# backend (what it makes, what it needs, which shared flags it takes, its options) is declared
# on its class (:class:`~culturebench.eval.backends.base.ModelIdentity`) and read from there.
# A new engine is its module plus one line here; another package adds one with an entry point.
_BUILTIN = {
    "transformers": "transformers_backend:TransformersBackend",
    "vllm": "vllm_backend:VLLMBackend",
    "openai": "openai_backend:OpenAIBackend",
    "diffusers": "diffusers_backend:DiffusersBackend",
    "openai-images": "openai_images_backend:OpenAIImagesBackend",
}
ENTRY_POINT_GROUP = "culturebench.backends"
# what a command runs when --backend is not given, per kind
DEFAULT_BACKEND = {"text": "transformers", "image": "diffusers"}
# the engine flags of the commands that run a model, each handed to the backends that declare
# it in SHARED_FLAGS (the sampling and the model revision go to every backend)
ENGINE_FLAGS = ("base_url", "concurrency", "batch_size", "dtype", "quality")
KINDS = {"text": "text or vision-language", "image": "text-to-image"}


def _plugins() -> dict[str, Any]:
    """Backends other packages register: entry points ``name = "package.module:Class"``."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _BUILTIN}


def _declared_class(name: str) -> type[ModelIdentity]:
    """The class of backend ``name`` for its declarations: a built-in one's module is imported
    without its engine (no torch, no vLLM); a plugin's entry point is loaded."""
    import importlib

    if name in _BUILTIN:
        module, cls = _BUILTIN[name].split(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    plugins = _plugins()
    if name in plugins:
        return plugins[name].load()
    from culturebench.errors import UsageError

    raise UsageError(f"unknown backend {name!r} (choose from {', '.join(backend_names())})")


def backend_names(kind: str | None = None, *, plugins: bool = True) -> list[str]:
    """Every backend (the built-in ones, then those of installed packages unless ``plugins``
    is false), or those that make ``kind`` ("text" or "image")."""
    names = [*_BUILTIN, *(sorted(_plugins()) if plugins else [])]
    if kind is None:
        return names
    return [name for name in names if _declared_class(name).output_kind == kind]


def backend_kind(name: str) -> str:
    """What backend ``name`` makes: "text" or "image"."""
    return _declared_class(name).output_kind


def shared_flags(name: str) -> tuple[str, ...]:
    """The engine flags (:data:`ENGINE_FLAGS`) backend ``name`` takes."""
    return tuple(_declared_class(name).SHARED_FLAGS)


def is_self_deployed(name: str) -> bool:
    """Whether backend ``name`` loads the weights itself (False for an unknown one)."""
    try:
        return bool(_declared_class(name).SELF_DEPLOYED)
    except Exception:  # a backend no longer installed, or a broken plugin: not known to be
        return False


def choices_text(kind: str, *, plugins: bool = True) -> str:
    """``"transformers, vllm or openai"``: the backends that make ``kind``, for help and errors."""
    return _or(backend_names(kind, plugins=plugins))


def taking(flag: str) -> str:
    """``"openai or openai-images"``: the built-in backends that take engine flag ``flag`` (for
    help texts, which are written before any plugin is loaded)."""
    return _or([name for name in backend_names(plugins=False) if flag in shared_flags(name)])


def _or(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def describe(name: str) -> dict[str, Any]:
    """What backend ``name`` declares, for ``eval backends``."""
    cls = _declared_class(name)
    return {
        "name": name,
        "kind": cls.output_kind,
        "summary": cls.SUMMARY,
        "requires": tuple(cls.REQUIRES),
        "extra": cls.EXTRA,
        "flags": tuple(cls.SHARED_FLAGS),
        "plugin": name not in _BUILTIN,
    }


def require_backend(name: str) -> None:
    """A one-line :class:`~culturebench.errors.UsageError` naming the extra to install when a
    backend's packages are missing (checked before any work, without importing them)."""
    import importlib.util

    from culturebench.errors import UsageError

    cls = _declared_class(name)
    missing = [p for p in cls.REQUIRES if importlib.util.find_spec(p) is None]
    if missing:
        install = f"pip install 'culturebench[{cls.EXTRA}]'" if cls.EXTRA else "install them"
        raise UsageError(
            f"--backend {name} needs {', '.join(missing)}, which is not installed: "
            f"{install}{cls.INSTALL_HINT}"
        )


def backend_class(name: str) -> type[ModelIdentity]:
    """The class of backend ``name``, its packages checked first; a :class:`UsageError` naming
    the choices, or the extra to install."""
    require_backend(name)
    return _declared_class(name)


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
        others=lambda: {other: backend_options(other) for other in _BUILTIN if other != name},
    )


def make_backend(name: str, model: str, *, model_args: dict[str, Any] | None = None, **options: Any) -> Any:
    """Backend ``name`` for ``model``: ``options`` (the command's own flags) and ``model_args``
    (checked ``--model-arg`` values, which win and are recorded in the run's provenance)."""
    _refuse_conflicts(name, options, model_args or {})
    cls: Any = backend_class(name)  # a Backend or ImageBackend subclass: each has its own arguments
    backend = cls(model, **{**options, **(model_args or {})})
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


def make_image_backend(name: str, model: str, **options: Any) -> ImageBackend:
    """Instantiate a text-to-image backend by name (imports its engine only then)."""
    if name not in backend_names() or backend_kind(name) != "image":
        from culturebench.errors import UsageError

        raise UsageError(f"unknown text-to-image backend {name!r} (choose from {choices_text('image')})")
    return make_backend(name, model, **options)


__all__ = [
    "DEFAULT_BACKEND",
    "ENGINE_FLAGS",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendOption",
    "ImageBackend",
    "ImageParams",
    "Request",
    "SamplingParams",
    "backend_class",
    "backend_kind",
    "backend_names",
    "backend_options",
    "check_model_args",
    "choices_text",
    "describe",
    "is_self_deployed",
    "make_backend",
    "make_image_backend",
    "require_backend",
    "shared_flags",
    "taking",
]
