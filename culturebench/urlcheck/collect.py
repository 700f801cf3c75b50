"""Collect the external URLs of a release folder, with what each should point at."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.manifest import read_manifest


@dataclass(frozen=True)
class UrlItem:
    """One URL to check and where it comes from."""

    url: str
    kind: str  # "image" or "page"
    dataset: str
    config: str
    row_id: str
    field: str
    expected_phash: str | None = None
    expected_sha256: str | None = None


def _walk(value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(value, dict):
        if isinstance(value.get("url"), str):
            yield path, value
        for key, sub in value.items():
            if isinstance(sub, (dict, list)):
                yield from _walk(sub, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, path)


def image_link_kinds(dataset: str) -> frozenset[str]:
    """The ``links`` kinds that point at an image, from the dataset's image policy (none
    when the dataset is not registered here, e.g. a Hub release of another dataset)."""
    from culturebench import registry
    from culturebench.images.policy import load_policy
    from culturebench.spec import load_spec

    if dataset not in registry.datasets():
        return frozenset()
    return load_policy(load_spec(dataset)).link_kinds


def _kind(field: str, record: dict[str, Any], link_kinds: frozenset[str]) -> str:
    if record.get("kind") in link_kinds or field.split(".")[0] == "images":
        return "image"
    return "page"


def collect_urls(folder: str | Path, *, sample: int | None = None, seed: int = 0) -> list[UrlItem]:
    """Every http(s) URL in the release's records (deduplicated per URL, first use kept).

    ``sample`` draws that many URLs at random for spot checks; the same ``seed`` draws the
    same URLs (``check-urls`` defaults it to the ISO week, so monthly samples differ).
    """
    import pyarrow.parquet as pq

    folder = Path(folder)
    manifest = read_manifest(folder)
    link_kinds = image_link_kinds(manifest["dataset"])
    seen: dict[str, UrlItem] = {}
    for config, cfg in manifest["configs"].items():
        for split in cfg["splits"].values():
            for f in split["files"]:
                table = pq.read_table(folder / f["path"])
                for row in table.to_pylist():
                    for field, record in _walk({k: v for k, v in row.items() if k != "id"}, ""):
                        url = record["url"].strip()
                        if not url.startswith(("http://", "https://")) or url in seen:
                            continue
                        seen[url] = UrlItem(
                            url=url,
                            kind=_kind(field, record, link_kinds),
                            dataset=manifest["dataset"],
                            config=config,
                            row_id=str(row.get("id")),
                            field=field,
                            expected_phash=record.get("phash"),
                            expected_sha256=record.get("sha256"),
                        )
    items = list(seen.values())
    if sample is not None and sample < len(items):
        items = random.Random(seed).sample(items, sample)
    return items
