"""The release manifest (``manifest.json``): what a release folder contains and how it was made.

It records row counts, the sha256 of every file, the source checksums, builder and schema
versions, library versions and the validation summary. Publishing and validation both
trust the manifest only after re-hashing the files it lists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from culturebench.atomic import write_text_atomic
from culturebench.errors import CultureBenchError

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1


def dumps(data: Any) -> str:
    """Stable JSON text (sorted keys, UTF-8, trailing newline) so rebuilds are identical."""
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    path = folder / MANIFEST_NAME
    write_text_atomic(path, dumps(manifest))
    return path


def read_manifest(folder: Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST_NAME
    if not path.exists():
        raise CultureBenchError(f"{folder}: no {MANIFEST_NAME} (is this a release folder?)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CultureBenchError(f"{path}: not valid JSON: {exc}") from exc
    if data.get("format") != MANIFEST_FORMAT:
        raise CultureBenchError(f"{path}: unsupported manifest format {data.get('format')!r}")
    return data


def data_files(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """All data files listed in a manifest: relative path -> {sha256, size, config, split}."""
    out = {}
    for config, cfg in manifest.get("configs", {}).items():
        for split, info in cfg.get("splits", {}).items():
            for f in info.get("files", []):
                out[f["path"]] = {**f, "config": config, "split": split}
    return out
