"""Image benchmarks and the threshold study behind docs/images.md.

1. Hashing throughput: safe decode + pHash + dHash vs plain Pillow decode of the same
   images, both on all cores (ratio target <= 1.3x).
2. Near-duplicate search: multi-index hash index vs a vectorised brute-force scan, at 10^5
   and 10^6 reference hashes (batched queries; recall checked equal to brute force).
3. Threshold study: pHash Hamming distances between real photos (scikit-image samples) and
   transformed copies (resize, JPEG re-encode, small crop, brightness), precision and
   recall per threshold.

    python benchmarks/bench_images.py [--skip-index]
"""

from __future__ import annotations

import argparse
import io
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from PIL import Image, ImageEnhance

# skimage's `cat` is the same photo as `chelsea`, so it is left out.
SAMPLES = [
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "camera",
    "immunohistochemistry",
    "hubble_deep_field",
    "coins",
    "page",
    "moon",
    "text",
    "retina",
    "colorwheel",
    "logo",
    "brick",
    "grass",
    "gravel",
    "horse",
]


def photos() -> dict[str, Image.Image]:
    from skimage import data

    out = {}
    for name in SAMPLES:
        array = getattr(data, name)()
        if array.dtype == bool:
            array = (array * 255).astype(np.uint8)
        out[name] = Image.fromarray(array).convert("RGB")
    return out


def encode(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def transforms(img: Image.Image) -> dict[str, Image.Image]:
    w, h = img.size
    dx, dy = int(w * 0.05), int(h * 0.05)
    return {
        "resize_50": img.resize((w // 2, h // 2)),
        "jpeg_q50": Image.open(io.BytesIO(encode(img, "JPEG", quality=50))).convert("RGB"),
        "crop_5pct": img.crop((dx, dy, w - dx, h - dy)),
        "brightness_+20": ImageEnhance.Brightness(img).enhance(1.2),
        "resize+jpeg": Image.open(
            io.BytesIO(encode(img.resize((w // 2, h // 2)), "JPEG", quality=60))
        ).convert("RGB"),
    }


def _decode(data: bytes) -> int:
    img = Image.open(io.BytesIO(data))
    img.load()
    return img.width


def _decode_and_hash(data: bytes) -> str:
    from culturebench.images.phash import hash_image_bytes

    return hash_image_bytes(data, max_bytes=30_000_000, max_pixels=40_000_000)["phash"]


def throughput(blobs: list[bytes], label: str) -> None:
    workers = os.cpu_count() or 1
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_decode, blobs[:workers]))  # warm-up the workers
        list(pool.map(_decode_and_hash, blobs[:workers]))
        t0 = time.perf_counter()
        list(pool.map(_decode, blobs, chunksize=8))
        decode = time.perf_counter() - t0
        t0 = time.perf_counter()
        list(pool.map(_decode_and_hash, blobs, chunksize=8))
        hashed = time.perf_counter() - t0
    print(f"\n1) hashing throughput, {label} ({len(blobs)} JPEGs, {workers} processes)")
    print(f"   plain Pillow decode:             {len(blobs) / decode:8.1f} images/s")
    rate = len(blobs) / hashed
    print(f"   safe decode + pHash + dHash:     {rate:8.1f} images/s   ratio {hashed / decode:.2f}x")


def index_bench() -> None:
    rng = np.random.default_rng(0)
    for threshold in (6, 10):
        _index_bench(rng, threshold)


def _index_bench(rng: np.random.Generator, threshold: int) -> None:
    from culturebench.images.index import HashIndex, brute_force

    print(
        f"\n2) near-duplicate search, threshold {threshold} bits, 2,000 batched queries "
        "(half near a stored hash)"
    )
    for n in (100_000, 1_000_000):
        hashes = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
        from culturebench.images import index as index_module

        limit, index_module.KERNEL_MIN_WORK = index_module.KERNEL_MIN_WORK, 0
        HashIndex(hashes[:10], threshold).query_many(hashes[:1])  # compile the numba kernel first
        index_module.KERNEL_MIN_WORK = limit
        t0 = time.perf_counter()
        index = HashIndex(hashes, threshold)
        index.query_many(hashes[:1])  # the kernel's tables are part of the build
        build = time.perf_counter() - t0
        queries = np.concatenate(
            [
                hashes[:1000] ^ np.uint64(0b1001 << 20),
                rng.integers(0, 2**64 - 1, size=1000, dtype=np.uint64, endpoint=True),
            ]
        )
        t0 = time.perf_counter()
        qi, ii = index.query_many(queries)
        indexed = (time.perf_counter() - t0) / len(queries)
        sample = queries[::20]
        t0 = time.perf_counter()
        reference = [brute_force(hashes, int(q), threshold) for q in sample]
        brute = (time.perf_counter() - t0) / len(sample)
        same = all(np.array_equal(np.sort(ii[qi == k * 20]), ref) for k, ref in enumerate(reference))
        print(
            f"   n={n:>9,}: index {indexed * 1e6:7.1f} us/query (build {build:.2f} s), brute force "
            f"{brute * 1e6:7.1f} us/query -> {brute / indexed:5.1f}x; same results: {same}"
        )


def threshold_study(images: dict[str, Image.Image]) -> None:
    from culturebench.images.phash import hamming, perceptual_hashes

    base = {name: perceptual_hashes(img)["phash"] for name, img in images.items()}
    copies = {
        (name, t): perceptual_hashes(c)["phash"]
        for name, img in images.items()
        for t, c in transforms(img).items()
    }
    positives = [hamming(base[name], h) for (name, _t), h in copies.items()]
    negatives = [hamming(base[a], h) for a in base for (b, _t), h in copies.items() if a != b]
    negatives += [hamming(base[a], base[b]) for a in base for b in base if a < b]
    per_transform: dict[str, list[int]] = {}
    for (name, t), h in copies.items():
        per_transform.setdefault(t, []).append(hamming(base[name], h))
    print(
        f"\n3) pHash threshold study: {len(images)} photos x {len(per_transform)} transforms "
        f"({len(positives)} true pairs, {len(negatives)} different-photo pairs)"
    )
    for t, d in per_transform.items():
        print(f"   {t:15s} distance: median {int(np.median(d))}, max {max(d)}")
    print(f"   closest different-photo pair: {min(negatives)} bits")
    print("   threshold  recall  precision")
    for threshold in (2, 4, 6, 8, 10, 12, 14, 16):
        tp = sum(d <= threshold for d in positives)
        fp = sum(d <= threshold for d in negatives)
        precision = tp / (tp + fp) if tp + fp else 1.0
        print(f"   {threshold:9d}  {tp / len(positives):6.3f}  {precision:9.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-index", action="store_true")
    args = parser.parse_args()
    images = photos()
    blobs = [encode(img, "JPEG", quality=90) for img in images.values()] * 12
    throughput(blobs, "scikit-image photos at their own size (about 512 px)")
    large = [
        encode(img.resize((1600, round(1600 * img.height / img.width))), "JPEG", quality=90)
        for img in images.values()
    ] * 4
    throughput(large, "the same photos at 1600 px wide, a typical web photo")
    if not args.skip_index:
        index_bench()
    threshold_study(images)


if __name__ == "__main__":
    main()
