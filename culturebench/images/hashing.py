"""Perceptual hashes (64-bit pHash and dHash, imagehash) as 16-hex-digit strings, and the
Hamming distance between them."""

from __future__ import annotations

import numpy as np


def perceptual_hashes(image) -> dict[str, str]:
    """pHash and dHash of a decoded PIL image."""
    import imagehash

    return {"phash": str(imagehash.phash(image)), "dhash": str(imagehash.dhash(image))}


def hex_to_int(value: str) -> int:
    return int(value, 16)


def hamming(a: str, b: str) -> int:
    """Bits that differ between two hex hashes."""
    return (hex_to_int(a) ^ hex_to_int(b)).bit_count()


def to_array(hashes: list[str]) -> np.ndarray:
    """Hex hashes as a uint64 array."""
    return np.array([hex_to_int(h) for h in hashes], dtype=np.uint64)
