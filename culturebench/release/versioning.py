"""Semantic versions and the change-kind policy (see docs/versioning.md).

* **major**: schema change: a config added/removed, features changed, schema_version bumped;
* **minor**: data change: rows added, removed or changed (any Parquet byte differs);
* **patch**: metadata only: card, Croissant, changelog; the Parquet files are identical.

The kind is computed by comparing the new release's manifest with the latest published
one, must be declared in the CHANGELOG entry (``Kind: minor``), and the version bump must be
at least that big.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Any, Literal

from culturebench.errors import CultureBenchError

Kind = Literal["major", "minor", "patch", "none"]
KIND_ORDER = {"none": 0, "patch": 1, "minor": 2, "major": 3}
_SEMVER = re.compile(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


class VersionError(CultureBenchError):
    """A version string is malformed or breaks the versioning policy."""


@total_ordering
@dataclass(frozen=True)
class Version:
    """A strict ``MAJOR.MINOR.PATCH`` version (a leading ``v`` is accepted when parsing)."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _SEMVER.match(text.strip())
        if not match:
            raise VersionError(f"malformed version {text!r}: expected MAJOR.MINOR.PATCH, e.g. 1.2.0")
        return cls(*(int(g) for g in match.groups()))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def tag(self) -> str:
        """The git tag / Hub revision of this version: ``v1.2.0``."""
        return f"v{self}"

    def __lt__(self, other: Version) -> bool:
        return (self.major, self.minor, self.patch) < (other.major, other.minor, other.patch)

    def bump_kind(self, newer: Version) -> Kind:
        """How big the step from ``self`` to ``newer`` is."""
        if newer.major != self.major:
            return "major"
        if newer.minor != self.minor:
            return "minor"
        return "patch" if newer.patch != self.patch else "none"


def latest(tags: list[str]) -> Version | None:
    """The highest ``vX.Y.Z`` among ``tags`` (other tags are ignored)."""
    versions = []
    for tag in tags:
        try:
            versions.append(Version.parse(tag))
        except VersionError:
            continue
    return max(versions) if versions else None


def _data_files(manifest: dict[str, Any]) -> dict[str, str]:
    return {
        f["path"]: f["sha256"]
        for cfg in manifest.get("configs", {}).values()
        for split in cfg.get("splits", {}).values()
        for f in split.get("files", [])
    }


def classify_change(old: dict[str, Any] | None, new: dict[str, Any]) -> tuple[Kind, str]:
    """The kind of change from manifest ``old`` (None: first release) to ``new``, and why."""
    if old is None:
        return "major", "first release"
    if old.get("schema_version") != new.get("schema_version"):
        return "major", f"schema_version {old.get('schema_version')} -> {new.get('schema_version')}"
    old_cfg, new_cfg = set(old.get("configs", {})), set(new.get("configs", {}))
    if old_cfg != new_cfg:
        return "major", f"configs changed: {sorted(old_cfg)} -> {sorted(new_cfg)}"
    for name in sorted(new_cfg):
        if old["configs"][name].get("features_sha256") != new["configs"][name].get("features_sha256"):
            return "major", f"features of config {name!r} changed"
    old_rows = {c: sum(s["num_rows"] for s in v["splits"].values()) for c, v in old["configs"].items()}
    new_rows = {c: sum(s["num_rows"] for s in v["splits"].values()) for c, v in new["configs"].items()}
    if old_rows != new_rows:
        diff = ", ".join(
            f"{c} {old_rows[c]} -> {new_rows[c]}" for c in sorted(new_rows) if old_rows[c] != new_rows[c]
        )
        return "minor", f"rows added or removed ({diff})"
    if _data_files(old) != _data_files(new):
        return "minor", "row contents changed (Parquet files differ)"
    if old.get("files") != new.get("files"):
        return "patch", "metadata only (card, Croissant or changelog changed; data identical)"
    return "none", "identical content"


def check_bump(previous: Version | None, new: Version, kind: Kind) -> None:
    """Raise :class:`VersionError` unless ``new`` is greater than ``previous`` by at least
    the step ``kind`` needs."""
    if previous is None:
        return
    if not new > previous:
        raise VersionError(f"version {new} is not greater than the latest published {previous}")
    made = previous.bump_kind(new)
    if KIND_ORDER[made] < KIND_ORDER[kind]:
        raise VersionError(
            f"{previous} -> {new} is a {made} bump, but the change is {kind}: "
            f"release it as {_suggest(previous, kind)} or later"
        )


def _suggest(previous: Version, kind: Kind) -> Version:
    if kind == "major":
        return Version(previous.major + 1, 0, 0)
    if kind == "minor":
        return Version(previous.major, previous.minor + 1, 0)
    return Version(previous.major, previous.minor, previous.patch + 1)
