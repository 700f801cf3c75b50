"""Write ``README.md`` and ``croissant.json`` into a release folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from culturebench.atomic import write_text_atomic
from culturebench.cards.card import render_card
from culturebench.cards.croissant import build_croissant
from culturebench.hashing import sha256_file
from culturebench.manifest import dumps, write_manifest
from culturebench.spec import DatasetSpec

CARD_FILES = ("README.md", "croissant.json")
HASHED_FILES = ("README.md", "croissant.json", "CHANGELOG.md", "build_report.json")


def render_card_files(folder: Path, spec: DatasetSpec, manifest: dict[str, Any]) -> dict[str, str]:
    """The text of the card and Croissant files for a release folder (nothing written)."""
    report_path = folder / "build_report.json"
    report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else {}
    return {
        "README.md": render_card(spec, manifest, report),
        "croissant.json": dumps(build_croissant(spec, manifest)),
    }


def write_card_files(folder: Path, spec: DatasetSpec, manifest: dict[str, Any]) -> None:
    """(Re)write the card and Croissant, then record every metadata file's sha256 in the
    manifest (``manifest["files"]``) and save it."""
    for name, text in render_card_files(folder, spec, manifest).items():
        write_text_atomic(folder / name, text)
    manifest["files"] = {
        name: sha256_file(folder / name) for name in HASHED_FILES if (folder / name).exists()
    }
    write_manifest(folder, manifest)
