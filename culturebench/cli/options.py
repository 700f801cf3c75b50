"""Option groups a command declares once: where the dataset comes from (``--revision``,
``--repo``, ``--local``), which engine generates (``--backend``, ``--model`` and the
sampling options), and the image stage of a build (``--images`` and its flags). A command
takes one parameter (``source: DatasetSource``, ``engine: EngineChoice``, ``image_stage``)
and the group's decorator adds the options to its signature, so every command spells them,
and their help, the same way."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import typer

from culturebench.cli.errors import or_exit
from culturebench.cli.shared_flags import (
    AllowOption,
    BaseUrlOption,
    BatchSizeOption,
    CommonsApiOption,
    ConcurrencyOption,
    GuidanceOption,
    ImageMirrorOption,
    ImagesOption,
    ImageTimeoutOption,
    MaxNewTokensOption,
    MinImagesFetchedOption,
    ModelRevisionOption,
    OfflineImagesOption,
    TemperatureOption,
    image_options,
)
from culturebench.errors import UsageError
from culturebench.eval.backends import DEFAULT_BACKEND


def option_group(name: str, build: Callable[..., Any], options: dict[str, tuple[Any, Any]]) -> Callable:
    """A decorator: the command's parameter ``name`` is replaced by ``options`` (parameter
    name -> (``Annotated`` type, default)) and receives ``build(**their values)``."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command)
        if name not in signature.parameters:
            raise TypeError(f"{command.__name__} has no parameter {name!r} for its option group")
        hints = inspect.get_annotations(command, eval_str=True)  # typer reads the signature's
        kept = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
        kept = [p for p in kept if p.name != name]
        added = [
            inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
            for key, (kind, default) in options.items()
        ]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {key: kwargs.pop(key) for key in options if key in kwargs}
            return command(*args, **kwargs, **{name: or_exit(lambda: build(**values))})

        wrapper.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
        wrapper.__annotations__ = {
            **{k: v for k, v in hints.items() if k != name},
            **{key: kind for key, (kind, _) in options.items()},
        }
        return wrapper

    return decorate


# ------------------------------------------------------------------------ dataset source
class SourceKwargs(TypedDict):
    """Where a dataset revision is read from, as the library's functions take it."""

    revision: str | None
    local: str | None
    repo: str | None


@dataclass(frozen=True)
class DatasetSource:
    """Where a command reads a dataset: a Hub revision (pinned to its commit sha before use)
    of ``repo`` (default ``culturebench/<dataset>``), or a local release folder."""

    revision: str | None = None
    repo: str | None = None
    local: Path | None = None
    trust_local: bool = False

    def __post_init__(self) -> None:
        """``--trust-local`` names the ``--local`` folder whose data files are read without
        re-hashing them against its manifest."""
        if self.local is not None and (self.revision or self.repo):
            given = "--revision" if self.revision else "--repo"
            raise UsageError(f"--local reads a release folder and {given} a Hub repository: give one of them")
        if self.trust_local:
            if self.local is None:
                raise UsageError("--trust-local applies to a --local release folder; give --local too")
            from culturebench.eval.dataset_ref import trust_local

            trust_local(self.local)

    def as_kwargs(self) -> SourceKwargs:
        """``revision``/``local``/``repo`` as :func:`~culturebench.eval.dataset_ref.resolve_dataset`
        and ``run_eval`` take them."""
        return {
            "revision": self.revision,
            "local": str(self.local) if self.local else None,
            "repo": self.repo,
        }


DEFAULT_SOURCE = DatasetSource()  # the parameter's placeholder; the decorator passes the real one

RevisionOption = Annotated[
    str | None, typer.Option("--revision", help="Dataset revision on the Hub (tag, branch, sha).")
]
RepoOption = Annotated[
    str | None, typer.Option("--repo", help="Dataset repo id (default culturebench/<dataset>).")
]
LocalOption = Annotated[
    Path | None, typer.Option("--local", help="A local release folder instead of the Hub.")
]

TrustLocalOption = Annotated[
    bool,
    typer.Option(
        "--trust-local",
        help="Read the --local release as it is, without re-hashing its data files against its "
        "manifest (for a release being edited on purpose).",
    ),
]

with_dataset_source = option_group(
    "source",
    DatasetSource,
    {
        "revision": (RevisionOption, None),
        "repo": (RepoOption, None),
        "local": (LocalOption, None),
        "trust_local": (TrustLocalOption, False),
    },
)


# ---------------------------------------------------------------------------- engine
@dataclass(frozen=True)
class EngineChoice:
    """The engine named on the command line and every option a backend may take; :meth:`make`
    hands the ones the chosen backend takes to the backend registry (the one place a backend
    is made from a name and options)."""

    backend: str = DEFAULT_BACKEND["text"]
    model: str | None = None
    model_revision: str | None = None
    batch_size: int = 8
    max_new_tokens: int = 200
    seed: int = 0
    temperature: float = 0.0
    base_url: str | None = None
    concurrency: int = 4
    size: str = "512x512"
    steps: int | None = None
    guidance: float | None = None
    dtype: str = "float32"
    quality: str | None = None
    model_arg: tuple[str, ...] = ()
    model_args: tuple[str, ...] = ()

    def checked_model_args(self) -> dict[str, Any]:
        """``--model-arg``/``--model-args`` typed and checked against the chosen backend, before
        anything loads; a one-line error (exit 2) lists the backend's options otherwise."""
        from culturebench.eval.backends import check_model_args
        from culturebench.eval.backends.options import split_model_args

        return or_exit(
            lambda: check_model_args(self.backend, split_model_args(self.model_arg, self.model_args))
        )

    @property
    def makes_images(self) -> bool:
        from culturebench.eval.backends import backend_kind

        return or_exit(lambda: backend_kind(self.backend)) == "image"

    def make(self, model: str | None = None) -> Any:
        """The backend (``model`` overrides ``--model``); a bad choice exits with one line."""
        from culturebench.eval.backends import ImageParams, SamplingParams, make_backend, shared_flags
        from culturebench.eval.backends.image_base import parse_size

        def build() -> Any:
            options: dict[str, Any] = {"revision": self.model_revision}
            if self.makes_images:
                width, height = parse_size(self.size)
                options["sampling"] = ImageParams(
                    width=width, height=height, steps=self.steps, guidance=self.guidance, seed=self.seed
                )
            else:
                options["sampling"] = SamplingParams(
                    max_new_tokens=self.max_new_tokens, seed=self.seed, temperature=self.temperature
                )
            for flag in shared_flags(self.backend):  # what the backend declares it takes
                options[flag] = getattr(self, flag)
            self._refuse_unused_flags(options)
            for key in list(options):  # a flag left at its default yields to a --model-arg
                if key in model_args and options[key] == getattr(DEFAULT_ENGINE, key, object()):
                    del options[key]
            return make_backend(self.backend, str(model or self.model), model_args=model_args, **options)

        model_args = self.checked_model_args()
        return or_exit(build)

    def _refuse_unused_flags(self, options: dict[str, Any]) -> None:
        """A flag given (not left at its default) that the chosen backend does not take is an
        error naming the way it does take the setting, never silently ignored."""
        from culturebench.eval.backends import ENGINE_FLAGS, backend_options

        declared = {o.name for o in backend_options(self.backend)}
        image_only = ("size", "steps", "guidance")
        for name in (*(f for f in ENGINE_FLAGS if f != "batch_size"), *image_only):
            if getattr(self, name) == getattr(DEFAULT_ENGINE, name) or name in options:
                continue
            if name in image_only and self.makes_images:
                continue
            flag = "--" + name.replace("_", "-")
            hint = f"; give it as --model-arg {name}=..." if name in declared else ""
            raise UsageError(f"{flag} does not apply to --backend {self.backend}{hint}")


DEFAULT_ENGINE = EngineChoice()  # the parameter's placeholder; the decorator passes the real one


def _help() -> dict[str, str]:
    """Help texts that name backends, read from their declarations (the built-in ones)."""
    from culturebench.eval.backends import choices_text, taking

    return {
        "backend": f"{choices_text('text', plugins=False)}; text-to-image tasks: "
        f"{choices_text('image', plugins=False)} (`eval backends`: all, with installed plugins).",
        "model": "Model id on the Hub or a local folder (analysis tasks: the model they use, if any).",
        "seed": "Seed recorded and passed to the backend.",
        "size": "Text-to-image: WIDTHxHEIGHT (paper: 512x512 SD 2.1 / DALL-E 2).",
        "steps": "Text-to-image: denoising steps (default: the pipeline's).",
        "dtype": f"{taking('dtype')}: float32, float16 or bfloat16.",
        "quality": f"{taking('quality')}: quality (e.g. standard, hd).",
    }


_HELP = _help()


def _engine_options(image: bool) -> dict[str, tuple[Any, Any]]:
    default = EngineChoice()
    text = {
        "model": (Annotated[str | None, typer.Option(help=_HELP["model"])], None),
        "backend": (Annotated[str, typer.Option(help=_HELP["backend"])], default.backend),
        "model_revision": (ModelRevisionOption, None),
        "batch_size": (BatchSizeOption, default.batch_size),
        "max_new_tokens": (MaxNewTokensOption, default.max_new_tokens),
        "seed": (Annotated[int, typer.Option(min=0, max=2**32 - 1, help=_HELP["seed"])], default.seed),
        "base_url": (BaseUrlOption, None),
        "concurrency": (ConcurrencyOption, default.concurrency),
        "temperature": (TemperatureOption, default.temperature),
    }
    text["model_arg"] = (
        Annotated[
            list[str] | None,
            typer.Option(
                "--model-arg",
                help="Backend option KEY=VALUE (repeatable), e.g. tensor_parallel_size=4, "
                "trust_remote_code=true; `culturebench eval backends` lists each backend's.",
            ),
        ],
        None,
    )
    text["model_args"] = (
        Annotated[
            list[str] | None,
            typer.Option("--model-args", help="Backend options as k=v,k=v (lm-evaluation-harness style)."),
        ],
        None,
    )
    if not image:
        return text
    return {
        **text,
        "size": (Annotated[str, typer.Option(help=_HELP["size"])], default.size),
        "steps": (Annotated[int | None, typer.Option(min=1, help=_HELP["steps"])], None),
        "guidance": (GuidanceOption, None),
        "dtype": (Annotated[str, typer.Option(help=_HELP["dtype"])], default.dtype),
        "quality": (Annotated[str | None, typer.Option(help=_HELP["quality"])], None),
    }


def model_name(value: str | None, flag: str = "--model") -> str | None:
    """A model given on the command line, or None when it was not given; an empty or blank
    name is a usage error (one line, exit 2), never a run recorded under no name."""
    if value is not None and not value.strip():
        raise UsageError(f"{flag} {value!r}: an empty model name; give a Hub id or a local folder")
    return value


def _engine(**values: Any) -> EngineChoice:
    values["model"] = model_name(values.get("model"))
    for key in ("model_arg", "model_args"):
        values[key] = tuple(values.get(key) or ())
    return EngineChoice(**values)


def with_engine(*, image: bool = False) -> Callable:
    """The engine option group (``engine: EngineChoice``); ``image`` adds the text-to-image
    options (size, steps, guidance, dtype, quality)."""
    return option_group("engine", _engine, _engine_options(image))


# ----------------------------------------------------------------------- image stage
def _image_stage(
    images: bool = False,
    image_mirror: str | None = None,
    offline_images: bool = False,
    commons_api: str | None = None,
    allow: list[str] | None = None,
    min_images_fetched: float | None = None,
    image_timeout: float | None = None,
) -> Any:
    return or_exit(
        lambda: image_options(
            images, image_mirror, offline_images, commons_api, allow, min_images_fetched, image_timeout
        )
    )


with_image_stage = option_group(
    "image_stage",
    _image_stage,
    {
        "images": (ImagesOption, False),
        "image_mirror": (ImageMirrorOption, None),
        "offline_images": (OfflineImagesOption, False),
        "commons_api": (CommonsApiOption, None),
        "allow": (AllowOption, None),
        "min_images_fetched": (MinImagesFetchedOption, None),
        "image_timeout": (ImageTimeoutOption, None),
    },
)
"""The image stage's options of ``build`` and ``release`` (``image_stage``: the
:class:`~culturebench.images.stage.ImageOptions`, or None without ``--images``)."""


__all__ = [
    "DEFAULT_ENGINE",
    "DEFAULT_SOURCE",
    "DatasetSource",
    "EngineChoice",
    "LocalOption",
    "RepoOption",
    "RevisionOption",
    "model_name",
    "option_group",
    "with_dataset_source",
    "with_engine",
    "with_image_stage",
]
