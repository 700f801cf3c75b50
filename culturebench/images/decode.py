"""Safe image decoding: byte and pixel limits checked before pixels are decoded, truncated
files detected (never silently padded), EXIF orientation applied."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from culturebench.errors import CultureBenchError

MAX_BYTES = 30 * 1024 * 1024
MAX_PIXELS = 40_000_000


class ImageError(CultureBenchError):
    """The bytes are not a safe, complete, decodable image (``reason`` is a short code)."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True)
class Decoded:
    image: object  # PIL.Image.Image, EXIF-transposed, RGB
    width: int
    height: int
    format: str


def safe_decode(data: bytes, *, max_bytes: int = MAX_BYTES, max_pixels: int = MAX_PIXELS) -> Decoded:
    """Decode ``data`` or raise :class:`ImageError` (too_large, too_many_pixels,
    not_an_image, truncated, undecodable)."""
    from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

    if len(data) > max_bytes:
        raise ImageError("too_large", f"{len(data)} bytes > {max_bytes}")
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
    except UnidentifiedImageError as exc:
        raise ImageError("not_an_image", str(exc)) from exc
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError("too_many_pixels", str(exc)) from exc
    width, height = img.size
    if width * height > max_pixels:
        raise ImageError("too_many_pixels", f"{width}x{height} > {max_pixels} pixels")
    try:
        img.load()
    except (OSError, SyntaxError, ValueError) as exc:
        reason = "truncated" if "truncat" in str(exc).lower() else "undecodable"
        raise ImageError(reason, str(exc)) from exc
    fmt = img.format or "unknown"
    img = ImageOps.exif_transpose(img).convert("RGB")
    return Decoded(img, img.width, img.height, fmt)
