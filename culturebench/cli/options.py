"""Every option more than one command takes, declared once (and the command line's names
for them, docs/commands.md): annotated option types (``--shard``, ``--cache/--no-cache``,
``--first``, ``--overwrite``, the engine and image flags), option groups a command declares
as one parameter (where the dataset comes from: ``--revision``, ``--repo``, ``--local``;
which engine generates: ``--backend``, ``--model`` and the sampling options; the image stage
of a build: ``--images`` and its flags), and the deprecated spellings still accepted
(:func:`deprecated_alias`). A command takes one parameter per group (``source:
DatasetSource``, ``engine: EngineChoice``, ``image_stage``) and the group's decorator adds the
options to its signature, so every command spells them, and their help, the same way."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict, TypeVar

import typer
from rich.markup import escape

from culturebench.cli.output import err_console
from culturebench.errors import UsageError
from culturebench.eval.backends import DEFAULT_BACKEND, taking

F = TypeVar("F", bound=Callable[..., Any])

#: the release that drops the deprecated spellings (:data:`DEPRECATED`)
REMOVED_IN = "0.3"


# ------------------------------------------------------------------ deprecated spellings
def deprecation_line(old: str, new: str) -> str:
    """The one line a deprecated spelling prints on stderr."""
    return f"{old} is deprecated; use {new} (removed in {REMOVED_IN})"


def _warn_deprecated(old: str, new: str) -> Callable[[Any], Any]:
    """A typer callback: the deprecation line when ``old`` was given (once per command line:
    click calls it once per parameter, a repeated option's values together)."""

    def callback(value: Any) -> Any:
        if value not in (None, False, [], ()):
            err_console.print(f"[yellow]warning:[/] {escape(deprecation_line(old, new))}", soft_wrap=True)
        return value

    return callback


def deprecated_option(old: str, new: str, kind: Any, help: str = "") -> Any:
    """``Annotated[kind, ...]``: ``old``, a hidden option that prints the deprecation line
    (``old is deprecated; use new``) when given."""
    return Annotated[kind, typer.Option(old, hidden=True, help=help, callback=_warn_deprecated(old, new))]


def deprecated_alias(old: str, param: str) -> Callable[[F], F]:
    """A decorator: ``old`` is accepted, for one more release, as a hidden spelling of the
    command's option ``param`` (it prints the deprecation line and sets ``param`` when ``param``
    itself was left at its default)."""

    def decorate(command: F) -> F:
        signature = inspect.signature(command)
        hints = inspect.get_annotations(command, eval_str=True)
        target = signature.parameters[param]
        kind, info = typing.get_args(hints[param])[:2]
        # in ``Annotated``, typer reads a first positional "--name" as the option's name
        decls = [info.default, *(info.param_decls or ())]
        names = [d for d in decls if isinstance(d, str) and d.startswith("--")]
        new = names[0] if names else "--" + param.replace("_", "-")
        hidden = "_deprecated_" + old.lstrip("-").replace("-", "_")
        default = False if kind is bool else None
        alias = deprecated_option(old, new.split("/")[0], kind if kind is bool else kind | None)
        params = [
            p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()
        ]
        params.append(
            inspect.Parameter(hidden, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=alias)
        )

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            given = kwargs.pop(hidden, default)
            if given not in (None, False) and kwargs.get(param, target.default) == target.default:
                kwargs[param] = given
            return command(*args, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {**hints, hidden: alias}
        return typing.cast(F, wrapper)

    return decorate


# ----------------------------------------------------------------- options of many commands
FileOverwriteOption = Annotated[
    bool, typer.Option("--overwrite", help="Replace an existing --out file (never a folder or an input).")
]

ShardOption = Annotated[
    str | None,
    typer.Option(
        "--shard",
        help="Run only part K of N, e.g. 2/4 (cut by dish or question; one per GPU or array task); "
        "`culturebench eval merge` joins the N folders.",
    ),
]

CacheOption = Annotated[
    bool,
    typer.Option(
        "--cache/--no-cache",
        help="Answer from the response cache shared across runs where it holds the request, and keep "
        "new answers there (`culturebench cache info`; $CULTUREBENCH_RESPONSE_CACHE: its folder, or off).",
    ),
]

FirstOption = Annotated[
    bool,
    typer.Option(
        "--first",
        help="With --limit N: the first N rows in release order (instead of N spread over the groups).",
    ),
]

# Backend options shared by every command that runs a model.
ModelRevisionOption = Annotated[str | None, typer.Option(help="Model revision (Hub models).")]


def finite_number(value: float | None) -> float | None:
    """Typer callback: a float option must be a finite number (``nan`` and ``inf`` pass
    ``min=``/``max=`` checks, so they are refused here)."""
    import math

    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value!r} is not a finite number")
    return value


BatchSizeOption = Annotated[int, typer.Option(min=1, max=100_000, help="Prompts per backend call.")]


BaseUrlOption = Annotated[str | None, typer.Option(help=f"{taking('base_url')}: endpoint base URL (…/v1).")]


ConcurrencyOption = Annotated[
    int, typer.Option(min=1, max=1024, help=f"{taking('concurrency')}: requests in flight.")
]


MaxNewTokensOption = Annotated[
    int, typer.Option(min=1, max=1_000_000, help="Generation length (paper: 200).")
]


TemperatureOption = Annotated[
    float,
    typer.Option(
        min=0.0, callback=finite_number, help="Sampling temperature (0 = greedy; repeated ratings need > 0)."
    ),
]


GuidanceOption = Annotated[
    float | None,
    typer.Option(
        min=0.0, callback=finite_number, help="Text-to-image: guidance scale (default: the pipeline's)."
    ),
]


# Image-stage options shared by `build` and `release`.
ImagesOption = Annotated[
    bool, typer.Option("--images", help="Run the image stage: fetch, verify, hash, licence, embed.")
]


ImageMirrorOption = Annotated[
    str | None,
    typer.Option("--image-mirror", help="Base URL or local folder serving the upstream image paths."),
]


OfflineImagesOption = Annotated[
    bool, typer.Option("--offline-images", help="Use only images already in the cache (no network).")
]


CommonsApiOption = Annotated[
    str | None,
    typer.Option("--commons-api", help="Wikimedia Commons API for licences ('none' to skip lookups)."),
]


AllowOption = Annotated[
    list[str] | None,
    typer.Option("--allow", help="Private address/network the image fetcher may contact (e.g. 127.0.0.1)."),
]


MinImagesFetchedOption = Annotated[
    float | None,
    typer.Option(
        "--min-images-fetched",
        min=0.0,
        max=1.0,
        callback=finite_number,
        help="Fail the image stage when fewer than this share of its images (0 to 1) were fetched "
        "(default: only when none were); the earlier release is kept.",
    ),
]


ImageTimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--image-timeout",
        min=0.1,
        max=3600.0,
        callback=finite_number,
        help="Seconds each image download may take, redirects included (default 30); a host that "
        "answers none of 3 downloads in a row is not asked for the rest.",
    ),
]


def image_options(
    images: bool,
    mirror: str | None,
    offline: bool,
    commons_api: str | None,
    allow: list[str] | None,
    min_fetched: float | None = None,
    timeout_s: float | None = None,
) -> Any:
    """The image stage's options from the command line (None when ``--images`` is absent);
    a flag that needs ``--images`` without it is a usage error."""
    from culturebench.images.fetch import TIMEOUT_S
    from culturebench.images.licenses import COMMONS_API
    from culturebench.images.stage import ImageOptions, is_web_url
    from culturebench.safe_http import parse_allow

    if not images:
        if mirror or offline or commons_api or min_fetched is not None or timeout_s is not None:
            raise UsageError(
                "--image-mirror, --offline-images, --commons-api, --min-images-fetched and "
                "--image-timeout need --images"
            )
        return None
    parse_allow(allow or ())
    if mirror and not is_web_url(mirror) and not Path(mirror.removeprefix("file://")).is_dir():
        raise UsageError(f"--image-mirror {mirror}: neither an http(s) URL nor a folder")
    api = None if (commons_api or "").lower() == "none" or offline else (commons_api or COMMONS_API)
    return ImageOptions(
        mirror=mirror,
        commons_api=api,
        allow=tuple(allow or ()),
        offline=offline,
        min_fetched=min_fetched or 0.0,
        timeout_s=TIMEOUT_S if timeout_s is None else timeout_s,
    )


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
            return command(*args, **kwargs, **{name: build(**values)})

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
        """``--model-arg`` (and the deprecated ``--model-args``) typed and checked against the
        chosen backend, before anything loads; a one-line error (exit 2) lists the backend's
        options otherwise."""
        from culturebench.eval.backends import check_model_args
        from culturebench.eval.backends.options import split_model_args

        return check_model_args(self.backend, split_model_args(self.model_arg, self.model_args))

    @property
    def makes_images(self) -> bool:
        from culturebench.eval.backends import backend_kind

        return backend_kind(self.backend) == "image"

    def make(self, model: str | None = None) -> Any:
        """The backend (``model`` overrides ``--model``); a bad choice raises
        :class:`~culturebench.errors.UsageError` (one line, exit 2)."""
        from culturebench.eval.backends import ImageParams, SamplingParams, make_backend, shared_flags
        from culturebench.eval.backends.image_base import parse_size

        model_args = self.checked_model_args()
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

# Text-to-image options shared by the engine group and commands with a text-to-image stage.
SizeOption = Annotated[str, typer.Option("--size", help=_HELP["size"])]
StepsOption = Annotated[int | None, typer.Option("--steps", min=1, help=_HELP["steps"])]
DtypeOption = Annotated[str, typer.Option("--dtype", help=_HELP["dtype"])]


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
    text["model_args"] = (  # k=v,k=v (lm-evaluation-harness style): --model-arg, repeated
        deprecated_option("--model-args", "--model-arg", list[str] | None),
        None,
    )
    if not image:
        return text
    return {
        **text,
        "size": (SizeOption, default.size),
        "steps": (StepsOption, None),
        "guidance": (GuidanceOption, None),
        "dtype": (DtypeOption, default.dtype),
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
    return image_options(
        images, image_mirror, offline_images, commons_api, allow, min_images_fetched, image_timeout
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
    "REMOVED_IN",
    "AllowOption",
    "BaseUrlOption",
    "BatchSizeOption",
    "CacheOption",
    "ConcurrencyOption",
    "DatasetSource",
    "DtypeOption",
    "EngineChoice",
    "FileOverwriteOption",
    "FirstOption",
    "GuidanceOption",
    "LocalOption",
    "MaxNewTokensOption",
    "RepoOption",
    "RevisionOption",
    "ShardOption",
    "SizeOption",
    "StepsOption",
    "TemperatureOption",
    "deprecated_alias",
    "deprecated_option",
    "deprecation_line",
    "finite_number",
    "image_options",
    "model_name",
    "option_group",
    "with_dataset_source",
    "with_engine",
    "with_image_stage",
]
