"""Small JPEG thumbnails of images: what a run folder keeps of its prompts' images (so a viewer
draws a sample without the dataset) and what the results site shows of a release's."""

from __future__ import annotations

THUMB = 160  # px, the longer side


def thumbnail_jpeg(data: bytes, size: int = THUMB) -> bytes | None:
    """``data`` (any image format Pillow reads) as an RGB JPEG whose longer side is at most
    ``size`` px; None for bytes that do not decode as an image. The same bytes give the same
    thumbnail (no timestamps or other metadata are written)."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as opened:
            image = opened.convert("RGB")
            image.thumbnail((size, size))
            out = io.BytesIO()
            image.save(out, "JPEG", quality=80, optimize=True)
    except (UnidentifiedImageError, OSError, ValueError):
        return None
    return out.getvalue()
