"""Safe image decoding: byte and pixel limits checked before pixels are decoded, truncated
files detected (never silently padded), EXIF orientation applied."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from culturebench.errors import CultureBenchError

if TYPE_CHECKING:
    from PIL import Image

MAX_BYTES = 30 * 1024 * 1024
MAX_PIXELS = 40_000_000


class ImageError(CultureBenchError):
    """The bytes are not a safe, complete, decodable image (``reason`` is a short code)."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True)
class Decoded:
    image: Image.Image  # EXIF-transposed, in the requested mode (RGB by default)
    width: int
    height: int
    format: str


def safe_decode(
    data: bytes,
    *,
    max_bytes: int = MAX_BYTES,
    max_pixels: int = MAX_PIXELS,
    draft: tuple[int, int] | None = None,
    mode: str = "RGB",
) -> Decoded:
    """Decode ``data`` or raise :class:`ImageError` (too_large, too_many_pixels,
    not_an_image, truncated, undecodable).

    ``width``/``height`` are always the full image's. With ``draft``, JPEGs are decoded at a
    reduced scale no smaller than ``draft`` (the whole file is still read, so truncation is
    still detected); enough for perceptual hashes, much cheaper than a full decode. ``mode``
    is the returned image's mode ("L" lets the JPEG decoder skip colour conversion).
    """
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
    except Exception as exc:  # header parsing: oversized iCCP/zTXt chunks, a JPEG cut in its header, ...
        raise ImageError(_reason(exc), str(exc)) from exc
    width, height = img.size
    if width * height > max_pixels:
        raise ImageError("too_many_pixels", f"{width}x{height} > {max_pixels} pixels")
    if draft is not None and img.format == "JPEG":
        img.draft(mode, draft)
    try:
        img.load()
        fmt = img.format or "unknown"
        rotated = ImageOps.exif_transpose(img)
        if rotated.size != img.size:  # a 90/270 degree EXIF rotation swaps the full dimensions too
            width, height = height, width
        if rotated.mode != mode:
            rotated = rotated.convert(mode)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError("too_many_pixels", str(exc)) from exc
    except Exception as exc:  # any decoder failure is this image's failure, never the stage's
        raise ImageError(_reason(exc), str(exc)) from exc
    return Decoded(rotated, width, height, fmt)


def _reason(exc: BaseException) -> str:
    text = str(exc).lower()
    if "truncat" in text:
        return "truncated"
    if "too large" in text or "max_text_chunk" in text:
        return "oversized_chunk"
    return "undecodable"
