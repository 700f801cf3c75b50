"""Write ``README.md``, ``croissant.json`` and the Hub benchmark file ``eval.yaml`` into a release
folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from culturebench.atomic import write_text_atomic
from culturebench.cards.card import render_card
from culturebench.cards.croissant import build_croissant
from culturebench.cards.eval_yaml import render_eval_yaml
from culturebench.hashing import sha256_file
from culturebench.manifest import dumps, write_manifest
from culturebench.spec import DatasetSpec

CARD_FILES = ("README.md", "croissant.json", "eval.yaml")
HASHED_FILES = ("README.md", "croissant.json", "eval.yaml", "CHANGELOG.md", "build_report.json")


def render_card_files(folder: Path, spec: DatasetSpec, manifest: dict[str, Any]) -> dict[str, str]:
    """The text of the card, Croissant and ``eval.yaml`` files for a release folder (nothing
    written).

    Configs and splits are taken in the order ``dataset.yaml`` declares them, so a card
    rendered during a build (manifest in memory) and one rendered later from the saved
    manifest (keys sorted) are identical.
    """
    manifest = _declared_order(spec, manifest)
    report_path = folder / "build_report.json"
    report: Any = {}
    if report_path.exists():
        from culturebench.inputs import read_json

        report = read_json(report_path, what="a build report", name=str(report_path))
        if not isinstance(report, dict):
            from culturebench.errors import CultureBenchError

            raise CultureBenchError(f"{report_path}: not a build report (a JSON object is expected)")
    return {
        "README.md": render_card(spec, manifest, report),
        "croissant.json": dumps(build_croissant(spec, manifest)),
        "eval.yaml": render_eval_yaml(spec, str(manifest.get("version") or spec.version)),
    }


def stale_card_files(folder: Path, spec: DatasetSpec, manifest: dict[str, Any]) -> list[str]:
    """The card files whose text differs from what this package renders now (missing ones
    included): the check behind ``culturebench card --check`` and validation."""
    out = []
    for name, text in render_card_files(folder, spec, manifest).items():
        path = folder / name
        if (
            not path.is_file()
            or path.is_symlink()
            or path.read_text(encoding="utf-8", errors="replace") != text
        ):
            out.append(name)
    return out


def card_inputs(folder: Path) -> tuple[DatasetSpec, dict[str, Any]]:
    """The spec and manifest to (re)render a release folder's card with; refuses a release
    of another version than this checkout declares (its card cannot be reproduced here)."""
    from culturebench.errors import CultureBenchError
    from culturebench.manifest import read_manifest
    from culturebench.spec import load_spec

    manifest = read_manifest(folder)
    spec = load_spec(manifest["dataset"])
    if spec.version != manifest["version"]:
        raise CultureBenchError(
            f"{folder} is version {manifest['version']}, this checkout declares {spec.version}; "
            "check out the matching version to regenerate"
        )
    return spec, manifest


def write_card_files(folder: Path, spec: DatasetSpec, manifest: dict[str, Any]) -> None:
    """(Re)write the card, Croissant and ``eval.yaml``, then record every metadata file's sha256 in the
    manifest (``manifest["files"]``) and save it."""
    for name, text in render_card_files(folder, spec, manifest).items():
        write_text_atomic(folder / name, text)
    manifest["files"] = {
        name: sha256_file(folder / name) for name in HASHED_FILES if (folder / name).exists()
    }
    write_manifest(folder, manifest)


def _ordered(mapping: dict[str, Any], declared: list[str]) -> dict[str, Any]:
    keys = [k for k in declared if k in mapping] + sorted(k for k in mapping if k not in declared)
    return {k: mapping[k] for k in keys}


def _declared_order(spec: DatasetSpec, manifest: dict[str, Any]) -> dict[str, Any]:
    configs = _ordered(manifest.get("configs", {}), list(spec.configs))
    out = {}
    for name, cfg in configs.items():
        declared = list(spec.configs[name].splits) if name in spec.configs else []
        out[name] = {**cfg, "splits": _ordered(cfg.get("splits", {}), declared)}
    return {**manifest, "configs": out}
