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


def release_folder(out_root: str | Path, name: str, version: str) -> Path:
    """Where a release of ``name`` at ``version`` lives under ``out_root``: the one place
    the ``<out>/<name>/<version>`` layout is spelled out."""
    return Path(out_root) / name / str(version)


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
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CultureBenchError(f"{path}: not valid JSON: {exc}") from None
    except UnicodeDecodeError:
        raise CultureBenchError(f"{path}: not UTF-8 text (a culturebench manifest is UTF-8 JSON)") from None
    except OSError as exc:
        raise CultureBenchError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise CultureBenchError(f"{path}: not a manifest (a JSON object is expected)")
    if data.get("format") != MANIFEST_FORMAT:
        raise CultureBenchError(f"{path}: unsupported manifest format {data.get('format')!r}")
    problem = _shape_problem(data)
    if problem:
        raise CultureBenchError(f"{path}: damaged manifest: {problem}")
    return data


def _shape_problem(data: dict[str, Any]) -> str | None:
    """The first field of a manifest whose type is not what culturebench writes, or None."""
    for key in ("dataset", "version"):
        if not isinstance(data.get(key), str):
            return f"{key!r} is not a string"
    files = data.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return "'files' is not an object of file -> sha256"
    configs = data.get("configs", {})
    if not isinstance(configs, dict):
        return "'configs' is not an object"
    for name, config in configs.items():
        splits = config.get("splits") if isinstance(config, dict) else None
        if not isinstance(splits, dict):
            return f"configs.{name}.splits is not an object"
        for split, info in splits.items():
            listed = info.get("files") if isinstance(info, dict) else None
            if not isinstance(listed, list) or not all(
                isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str)
                for f in listed
            ):
                return f"configs.{name}.splits.{split}.files is not a list of {{path, sha256}}"
    return None


def data_files(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """All data files listed in a manifest: relative path -> {sha256, size, config, split}."""
    out = {}
    for config, cfg in manifest.get("configs", {}).items():
        for split, info in cfg.get("splits", {}).items():
            for f in info.get("files", []):
                out[f["path"]] = {**f, "config": config, "split": split}
    return out


def listed_files(manifest: dict[str, Any]) -> set[str]:
    """Every path a release folder may hold: the manifest itself, its ``files`` and its data."""
    return {MANIFEST_NAME, *manifest.get("files", {}), *data_files(manifest)}


def inventory_problems(folder: Path, manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """``(path, problem)`` for everything in ``folder`` a release must not hold: a symlink,
    a special file (FIFO, socket, device), a file the manifest does not list, a listed path
    that leaves the folder, or a manifest without ``files``. Nothing is followed or opened."""
    import os
    import stat

    folder = Path(folder)
    problems: list[tuple[str, str]] = []
    if not isinstance(manifest.get("files"), dict) or not manifest["files"]:
        problems.append((MANIFEST_NAME, "the manifest lists no metadata files ('files')"))
    allowed = listed_files(manifest)
    for rel in sorted(allowed):
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or not parts:
            problems.append((rel, "listed path leaves the release folder"))
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                problems.append((rel, "is a symbolic link (refused in a release)"))
            elif stat.S_ISDIR(mode):
                continue
            elif not stat.S_ISREG(mode):
                problems.append((rel, "is not a regular file (FIFO, socket or device)"))
            elif rel not in allowed:
                problems.append((rel, "is not listed in the manifest (stray file)"))
        dirs[:] = [d for d in dirs if not os.path.islink(Path(root) / d)]
    return problems
