"""Draw the BORSCH sample's stand-in images (this folder's ``images/``) and rewrite
``images_manifest.csv`` to describe them.

The upstream images are photos whose licences culturebench cannot grant, and they are not in
this repository. So that a sample build with ``--images`` (and the §5 pipeline after it) runs
offline, every image row of the sample gets a small picture drawn here with PIL, saved at the
row's upstream path under ``images/``; the manifest's ``sha256`` and ``size`` are rewritten to
those files, and its ``license``/``author``/``attribution``/``source_page`` columns say what they are. Rows
that share one upstream image (the same sha256) share one drawing, so the sample keeps
upstream's duplicate images. Run from the repo root (``scripts/make_borsch_sample.py`` runs it
after it copies the rows):

    python datasets/borsch/sample/make_images.py

The drawings are dedicated to the public domain (CC0 1.0), see SAMPLE.md.
"""

from __future__ import annotations

import csv
import hashlib
import random
from pathlib import Path

from culturebench.inputs import csv_dict_reader

HERE = Path(__file__).resolve().parent
UPSTREAM_MANIFEST = HERE.parent / "images_manifest.csv"  # the full upstream list, shipped
COLUMNS = [
    "language",
    "dish_id",
    "file",
    "sha256",
    "size",
    "path",
    "license",
    "author",
    "attribution",
    "source_page",
]
LICENSE = "CC0-1.0"
AUTHOR = "culturebench (drawn stand-in)"
ATTRIBUTION = "synthetic stand-in drawn for the offline sample; not the upstream photo"


def draw(seed: str):
    """A plate seen from above on a coloured table, with a few pieces of food on it: shapes
    and colours from ``seed``, so different images differ in their perceptual hash."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.new("RGB", (96, 72), tuple(rng.randrange(40, 216) for _ in range(3)))
    pen = ImageDraw.Draw(img)
    for k in range(48):  # the tablecloth: an 8 x 6 grid of blocks, which the hash sees most
        x, y = (k % 8) * 12, (k // 8) * 12
        pen.rectangle((x, y, x + 11, y + 11), fill=_colour(rng))
    pen.ellipse((30, 18, 66, 54), fill=(245, 245, 240), outline=(200, 200, 195))
    pen.ellipse((35, 23, 61, 49), fill=_colour(rng))
    for _ in range(rng.randrange(3, 7)):
        x, y = rng.randrange(38, 54), rng.randrange(26, 42)
        pen.ellipse((x, y, x + rng.randrange(3, 7), y + rng.randrange(3, 7)), fill=_colour(rng))
    return img


def _colour(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randrange(256), rng.randrange(256), rng.randrange(256))


def main() -> None:
    upstream = {}
    with open(UPSTREAM_MANIFEST, encoding="utf-8", newline="") as handle:
        for row in csv_dict_reader(handle):
            upstream[row["path"]] = row["sha256"]
    with open(HERE / "images_manifest.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv_dict_reader(handle))
    drawn: dict[str, tuple[str, int]] = {}  # upstream sha256 -> (our sha256, size)
    out: list[dict[str, str]] = []
    for row in rows:
        key = upstream.get(row["path"]) or row["path"]
        target = HERE / "images" / row["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        if key not in drawn:
            draw(key).save(target, format="PNG", optimize=True)
            data = target.read_bytes()
            drawn[key] = (hashlib.sha256(data).hexdigest(), len(data))
        else:  # the same upstream image at another path: the same bytes
            first = next(r for r in out if (upstream.get(r["path"]) or r["path"]) == key)
            target.write_bytes((HERE / "images" / first["path"]).read_bytes())
        sha, size = drawn[key]
        out.append(
            {
                **{c: row[c] for c in COLUMNS[:6]},
                "sha256": sha,
                "size": str(size),
                "license": LICENSE,
                "author": AUTHOR,
                "attribution": ATTRIBUTION,
                "source_page": f"datasets/borsch/sample/images/{row['path']}",  # where the bytes are
            }
        )
    with open(HERE / "images_manifest.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(out)
    total = sum(size for _sha, size in drawn.values())
    print(f"sample images: {len(drawn)} drawn for {len(out)} rows, {total:,} bytes")


if __name__ == "__main__":
    main()
