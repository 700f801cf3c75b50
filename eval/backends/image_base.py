"""The text-to-image backend interface: one PNG per request, in request order.

A run generates every prompt once per seed (``eval run --seeds 0,1,2,3,4``: five images per
dish, as the World Wide Dishes paper does); the runner sets ``sampling.seed`` before each
seed's batches, and a backend that can seed (diffusers) makes each image from its own
``torch.Generator`` seeded with it, so an image depends on (prompt, seed) alone.
"""

from __future__ import annotations

import io
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from culturebench.eval.backends.base import ModelIdentity, Request, package_versions


@dataclass(frozen=True)
class ImageParams:
    """Generation settings recorded in a run's provenance. ``steps``/``guidance`` None = the
    pipeline's own default (recorded as resolved by the backend's ``describe``)."""

    width: int = 512
    height: int = 512
    steps: int | None = None
    guidance: float | None = None
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_size(text: str) -> tuple[int, int]:
    """``512x512`` -> (512, 512); UsageError otherwise."""
    from culturebench.errors import UsageError

    width, sep, height = text.lower().partition("x")
    try:
        if not sep:
            raise ValueError
        size = (int(width), int(height))
    except ValueError:
        raise UsageError(f"--size {text!r}: expected WIDTHxHEIGHT, e.g. 512x512") from None
    if min(size) < 8 or max(size) > MAX_SIDE or size[0] * size[1] > MAX_PIXELS:
        raise UsageError(
            f"--size {text!r}: width and height must be 8 to {MAX_SIDE} pixels, at most "
            f"{MAX_PIXELS:,} pixels in all"
        )
    if size[0] % 8 or size[1] % 8:
        raise UsageError(
            f"--size {text!r}: width and height must be multiples of 8 (the pipelines' latent grid)"
        )
    return size


MAX_SIDE = 4096  # no text-to-image model of the papers goes beyond 1024; 4096 leaves room
MAX_PIXELS = 4096 * 4096


def png_bytes(image: Any) -> bytes:
    """A PIL image as PNG bytes, written deterministically (no timestamps, fixed settings)."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG", optimize=False, compress_level=6)
    return buffer.getvalue()


class ImageBackend(ModelIdentity, ABC):
    """Generates one image (PNG bytes) per request, in request order."""

    name: str = "image-base"
    output_kind = "image"

    def __init__(
        self, model: str, *, revision: str | None = None, sampling: ImageParams | None = None
    ) -> None:
        self.model = model
        self.revision = revision
        self.sampling = sampling or ImageParams()

    @abstractmethod
    def generate_images(self, requests: Sequence[Request]) -> list[bytes]:
        """PNG bytes for ``requests`` (same order), seeded with ``self.sampling.seed``."""

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench", "pillow"])
