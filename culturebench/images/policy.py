"""A dataset's image policy (``datasets/<name>/image_policy.yaml``) and reviewed waivers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.spec import DatasetSpec
from culturebench.yamlio import load_yaml


@dataclass(frozen=True)
class ImagePolicy:
    embed_licenses: list[str] = field(default_factory=list)
    max_bytes: int = 20_000_000
    max_pixels: int = 40_000_000
    near_duplicate_threshold: int = 10
    contamination_threshold: int = 10
    reference_lists: list[Path] = field(default_factory=list)
    waivers: list[dict[str, Any]] = field(default_factory=list)
    #: ``kind`` values of ``links`` records that point at an image (declared per dataset)
    link_kinds: frozenset[str] = frozenset()

    def waived(self, check: str, *keys: str | None) -> dict[str, Any] | None:
        """The waiver covering ``check`` for any of the image keys (sha256 or phash), if any."""
        for waiver in self.waivers:
            if waiver.get("check") in (check, "*") and waiver.get("image") in keys:
                return waiver
        return None


def load_policy(spec: DatasetSpec) -> ImagePolicy:
    path = spec.folder / "image_policy.yaml"
    if not path.exists():
        return ImagePolicy()
    raw = load_yaml(path) or {}
    waivers: list[dict[str, Any]] = []
    if raw.get("waivers"):
        wpath = spec.folder / raw["waivers"]
        if wpath.exists():
            waivers = (load_yaml(wpath) or {}).get("waivers") or []
    refs = [Path(p) if Path(p).is_absolute() else spec.folder / p for p in raw.get("reference_lists") or []]
    return ImagePolicy(
        embed_licenses=list(raw.get("embed_licenses") or []),
        max_bytes=int(raw.get("max_bytes", 20_000_000)),
        max_pixels=int(raw.get("max_pixels", 40_000_000)),
        near_duplicate_threshold=int(raw.get("near_duplicate_threshold", 10)),
        contamination_threshold=int(raw.get("contamination_threshold", 10)),
        reference_lists=refs,
        waivers=waivers,
        link_kinds=frozenset(raw.get("image_link_kinds") or ()),
    )
