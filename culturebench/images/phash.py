"""Perceptual hashes (64-bit pHash and dHash, imagehash) as 16-hex-digit strings, and the
Hamming distance between them."""

from __future__ import annotations

import numpy as np

HASH_BASE = 128  # hashes are computed from a grayscale thumbnail no larger than this
DRAFT = (HASH_BASE * 2, HASH_BASE * 2)


def perceptual_hashes(image) -> dict[str, str]:
    """pHash and dHash (64-bit, hex) of a decoded PIL image, both from one grayscale
    thumbnail (pHash reduces to 32x32 and dHash to 9x8 anyway)."""
    import imagehash

    small = image if image.mode == "L" else image.convert("L")
    factor = -(-max(small.size) // HASH_BASE)
    if factor > 1:  # box reduction by an integer factor: anti-aliased and ~15x cheaper than LANCZOS
        small = small.reduce(factor)
    return {"phash": str(imagehash.phash(small)), "dhash": str(imagehash.dhash(small))}


def hash_image_bytes(data: bytes, *, max_bytes: int, max_pixels: int) -> dict:
    """Safe-decode ``data`` (JPEG at draft scale, straight to grayscale) and return width,
    height, phash, dhash. Raises :class:`~culturebench.images.decode.ImageError` for bad bytes."""
    from culturebench.images.decode import safe_decode

    decoded = safe_decode(data, max_bytes=max_bytes, max_pixels=max_pixels, draft=DRAFT, mode="L")
    return {"width": decoded.width, "height": decoded.height, **perceptual_hashes(decoded.image)}


def hex_to_int(value: str) -> int:
    return int(value, 16)


def hamming(a: str, b: str) -> int:
    """Bits that differ between two hex hashes."""
    return (hex_to_int(a) ^ hex_to_int(b)).bit_count()


def to_array(hashes: list[str]) -> np.ndarray:
    """Hex hashes as a uint64 array: 16-digit hashes in one vectorised pass, any other
    spelling one by one with :func:`hex_to_int` (same values either way)."""
    try:
        if all(len(h) == 16 for h in hashes):
            raw = bytes.fromhex("".join(hashes))
            if len(raw) == 8 * len(hashes):  # fromhex skips whitespace: then one by one
                return np.frombuffer(raw, dtype=">u8").astype(np.uint64)
    except (TypeError, ValueError):
        pass
    return np.array([hex_to_int(h) for h in hashes], dtype=np.uint64)
