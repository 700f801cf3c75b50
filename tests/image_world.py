"""A BORSCH source (the shipped sample) whose image manifest points at real PNG bytes on a
local server, every image licensed on a Commons API replay: the input of image-stage builds
in tests. The bytes are chosen per manifest row by a callback."""

from __future__ import annotations

import csv
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def write_image_source(
    tmp_path: Path,
    image_bytes: Callable[[int, dict[str, str]], tuple[bytes, bytes]],
    licensed: Callable[[int], bool],
) -> tuple[Path, Path, dict[str, dict], list[dict[str, str]]]:
    """Copy the BORSCH sample's rows to ``tmp_path/source`` with an upstream-shaped image
    manifest (no licence columns, no drawn images beside it) and serve images from
    ``tmp_path/served``.
    ``image_bytes(k, row)`` gives (the bytes the manifest pins, the bytes the server sends);
    ``licensed(k)`` puts row k on the Commons replay (CC BY-SA 4.0). Returns (source, served,
    Commons titles, manifest rows)."""
    source = tmp_path / "source"
    shutil.copytree(
        REPO / "datasets" / "borsch" / "sample", source, ignore=shutil.ignore_patterns("images", "*.py")
    )
    for path in source.iterdir():
        path.chmod(0o644)
    served = tmp_path / "served"
    with open(source / "images_manifest.csv", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        fields = ["language", "dish_id", "file", "sha256", "size", "path"]  # upstream's columns
        rows = [{f: row[f] for f in fields} for row in reader]
    titles: dict[str, dict] = {}
    for k, row in enumerate(rows):
        pinned, sent = image_bytes(k, row)
        target = served / row["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(sent)
        row["sha256"], row["size"] = hashlib.sha256(pinned).hexdigest(), str(len(pinned))
        if licensed(k):
            titles[f"File:Borsch test {k}.png"] = {
                "sha1": hashlib.sha1(pinned).hexdigest(),
                "license": "CC BY-SA 4.0",
                "license_url": "https://creativecommons.org/licenses/by-sa/4.0",
                "artist": f"Author {k}",
            }
    with open(source / "images_manifest.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return source, served, titles, rows
