"""diffusers text-to-image backend (CPU or GPU): any pipeline ``DiffusionPipeline`` loads
(Stable Diffusion 1.x/2.x, SDXL, Flux, ...) from a local folder or a Hub id at a revision."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from culturebench.eval.backends.base import ModelLoadError, Request, package_versions
from culturebench.eval.backends.image_base import ImageBackend, ImageParams, png_bytes
from culturebench.eval.backends.options import BackendOption

DTYPES = ("float32", "float16", "bfloat16")


OPTIONS = (
    BackendOption("dtype", "str", "float32", "float32, float16 or bfloat16.", identity=True, choices=DTYPES),
    BackendOption("batch_size", "int", 1, "Images per pipeline call.", minimum=1),
    BackendOption("device", "str", None, "cuda, cpu, ... (default: cuda when available)."),
)


class DiffusersBackend(ImageBackend):
    """``DiffusionPipeline.from_pretrained(model, revision, torch_dtype)``; every image gets its
    own ``torch.Generator`` seeded with the run's seed for that image, on the pipeline's
    device, so an image depends on (prompt, seed, settings) and not on the batch it ran in."""

    name = "diffusers"
    SUMMARY = "diffusers text-to-image pipelines on CPU or GPU (Stable Diffusion, FLUX)"
    REQUIRES = ("torch", "diffusers")
    EXTRA = "eval"
    SHARED_FLAGS = ("dtype", "batch_size")
    SELF_DEPLOYED = True

    OPTIONS = OPTIONS

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        sampling: ImageParams | None = None,
        device: str | None = None,
        dtype: str = "float32",
        batch_size: int = 1,
    ) -> None:
        super().__init__(model, revision=revision, sampling=sampling)
        import torch

        if dtype not in DTYPES:
            from culturebench.errors import UsageError

            raise UsageError(f"--dtype {dtype!r}: choose from {', '.join(DTYPES)}")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = dtype
        self.batch_size = batch_size
        self._pipeline: Any = None

    def load(self) -> None:
        if self._pipeline is not None:
            return
        import torch
        from diffusers import DiffusionPipeline
        from diffusers.utils import logging as diffusers_logging

        diffusers_logging.disable_progress_bar()
        diffusers_logging.set_verbosity_error()  # e.g. the per-batch CLIP 77-token truncation notice
        try:
            with warnings.catch_warnings():  # newer diffusers rename torch_dtype to dtype
                warnings.simplefilter("ignore", FutureWarning)
                pipeline = DiffusionPipeline.from_pretrained(
                    self.model, revision=self.revision, torch_dtype=getattr(torch, self.dtype)
                )
        except Exception as exc:  # OSError (not found, offline), ValueError (not a pipeline), ...
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise ModelLoadError(f"cannot load text-to-image pipeline {self.model!r}: {first}") from None
        pipeline.set_progress_bar_config(disable=True)
        self._pipeline = pipeline.to(self.device)

    def pipeline(self) -> Any:
        self.load()
        return self._pipeline

    def generate_images(self, requests: Sequence[Request]) -> list[bytes]:
        import torch

        pipeline = self.pipeline()
        params = self.sampling
        out: list[bytes] = []
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            generators = [torch.Generator(device=self.device).manual_seed(params.seed) for _ in batch]
            options: dict[str, Any] = {"height": params.height, "width": params.width}
            if params.steps is not None:
                options["num_inference_steps"] = params.steps
            if params.guidance is not None:
                options["guidance_scale"] = params.guidance
            with torch.inference_mode():
                images = pipeline(prompt=[r.prompt for r in batch], generator=generators, **options).images
            out.extend(png_bytes(image) for image in images)
        return out

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        pipeline = self.pipeline()
        scheduler = pipeline.scheduler
        info.update(
            {
                "pipeline_class": type(pipeline).__name__,
                "scheduler": type(scheduler).__name__,
                "scheduler_config": {k: _plain(v) for k, v in dict(scheduler.config).items()},
                "dtype": self.dtype,
                "device_type": str(self.device).split(":")[0],
                "defaults": _call_defaults(pipeline),
            }
        )
        return info

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench", "diffusers", "transformers", "torch", "pillow"])


def _plain(value: Any) -> Any:
    """A JSON-friendly copy of a config value (tuples -> lists, other objects -> str)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _call_defaults(pipeline: Any) -> dict[str, Any]:
    """The pipeline's own defaults for steps and guidance (used when a run sets neither)."""
    import inspect

    params = inspect.signature(type(pipeline).__call__).parameters
    return {
        name: _plain(params[name].default)
        for name in ("num_inference_steps", "guidance_scale")
        if name in params and params[name].default is not inspect.Parameter.empty
    }
