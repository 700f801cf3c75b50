"""The options many commands share, declared once as annotated types: a model's revision and
sampling, the shared engine flags, and the image stage of a build (``--images`` and its flags)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from culturebench.eval.backends import taking

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
    from culturebench.errors import UsageError
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
