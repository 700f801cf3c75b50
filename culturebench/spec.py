"""Load the declarative description of a dataset (``datasets/<name>/dataset.yaml``).

A :class:`DatasetSpec` is everything a builder, the card generator and the validator need
to know about a dataset that is not code: version, licence, configs and their features,
pinned sources, datasheet answers and the changelog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from culturebench.changelog import changelog_section
from culturebench.errors import CultureBenchError
from culturebench.yamlio import load_yaml

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


@dataclass(frozen=True)
class SourceFile:
    """One upstream file: pinned by sha256, or supplied by the user (``sha256: null``, for
    datasets with no public files, e.g. a gated download; its sha256 is recorded, not checked)."""

    key: str
    file: str
    sha256: str | None
    upstream_path: str | None = None
    shipped: str | None = None

    @property
    def user_supplied(self) -> bool:
        return self.sha256 is None


@dataclass(frozen=True)
class ConfigSpec:
    """One dataset config: its description, expected row count and HF features (YAML list)."""

    name: str
    description: str
    features_yaml: list[dict[str, Any]]
    expected_rows: int | None = None
    splits: tuple[str, ...] = ("test",)

    @cached_property
    def features(self):  # -> datasets.Features (imported lazily: heavy)
        from datasets import Features

        return Features._from_yaml_list(self.features_yaml)


@dataclass(frozen=True)
class DatasetSpec:
    """Parsed ``dataset.yaml`` plus the paths of its sibling declarative files."""

    name: str
    folder: Path
    raw: dict[str, Any] = field(repr=False)

    @property
    def version(self) -> str:
        return str(self.raw["version"])

    @property
    def schema_version(self) -> int:
        return int(self.raw["schema_version"])

    @property
    def pretty_name(self) -> str:
        return str(self.raw["pretty_name"])

    @property
    def splits(self) -> list[str]:
        return list(self.raw.get("splits", ["test"]))

    @property
    def languages(self) -> list[str]:
        return list(self.raw.get("languages", []))

    @property
    def configs(self) -> dict[str, ConfigSpec]:
        out = {}
        for name, cfg in self.raw["configs"].items():
            out[name] = ConfigSpec(
                name=name,
                description=str(cfg.get("description", "")).strip(),
                features_yaml=cfg["features"],
                expected_rows=cfg.get("expected_rows"),
                splits=tuple(cfg.get("splits") or self.splits),
            )
        return out

    @property
    def sources(self) -> dict[str, SourceFile]:
        return {
            key: SourceFile(
                key=key,
                file=src["file"],
                sha256=src.get("sha256"),
                upstream_path=src.get("upstream_path"),
                shipped=src.get("shipped"),
            )
            for key, src in self.raw.get("sources", {}).items()
        }

    @property
    def source_help(self) -> str:
        """How a user obtains the sources (shown when none are found)."""
        return str(self.raw.get("source_help", "")).strip()

    @property
    def release_defaults(self) -> dict[str, Any]:
        """Default repo flags of a Hub release (``release: {private: .., gated: ..}``)."""
        return dict(self.raw.get("release", {}))

    @property
    def upstream(self) -> dict[str, Any]:
        return dict(self.raw.get("upstream", {}))

    @property
    def field_docs(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.raw.get("fields", {}).items()}

    @property
    def datasheet(self) -> dict[str, list[dict[str, str]]]:
        path = self.folder / "datasheet.yaml"
        if not path.exists():
            return {}
        return load_yaml(path) or {}

    @property
    def changelog_path(self) -> Path:
        return self.folder / "CHANGELOG.md"

    @property
    def sample_dir(self) -> Path:
        return self.folder / "sample"

    def release_date(self, version: str) -> str | None:
        """The ISO date on the CHANGELOG heading of ``version`` (``## 1.0.0 - 2026-11-21``)."""
        if not self.changelog_path.exists():
            return None
        text = self.changelog_path.read_text(encoding="utf-8")
        match = re.search(
            rf"^## \[?{re.escape(version)}\]?\s*-\s*(\d{{4}}-\d{{2}}-\d{{2}})", text, re.MULTILINE
        )
        return match.group(1) if match else None

    def changelog_entry(self, version: str) -> str | None:
        """The CHANGELOG section for ``version`` (without its heading), or None."""
        if not self.changelog_path.exists():
            return None
        return changelog_section(self.changelog_path.read_text(encoding="utf-8"), version)


def load_spec(name: str) -> DatasetSpec:
    """Load the registered dataset's ``dataset.yaml``; :class:`UnknownDatasetError` if absent."""
    from culturebench import registry

    folder = registry.get(name).folder
    path = folder / "dataset.yaml"
    raw = load_yaml(path)
    if not SEMVER.match(str(raw.get("version", ""))):
        raise CultureBenchError(f"{path}: version {raw.get('version')!r} is not semver X.Y.Z")
    return DatasetSpec(name=name, folder=folder, raw=raw)
