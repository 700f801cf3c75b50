"""The image stage every builder with images runs: fetch (content-addressed cache, checksum
verified) -> safe decode -> pHash/dHash -> licence (recorded, or Wikimedia Commons by URL or
by content SHA-1) -> embed as ``datasets.Image`` bytes when the policy allows the licence,
else keep a URL-only record with its licence and status."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from culturebench.buildlog import BuildLog
from culturebench.errors import BuildError
from culturebench.images.decode import ImageError
from culturebench.images.fetch import TIMEOUT_S, FetchRequest, ImageCache, default_cache, fetch_images
from culturebench.images.licenses import UNKNOWN, CommonsClient, LicenseInfo, allowed, commons_title
from culturebench.images.phash import hash_image_bytes
from culturebench.images.policy import ImagePolicy


@dataclass(frozen=True)
class ImageOptions:
    """How a build fetches images (CLI: ``--images --image-mirror --commons-api --allow
    --image-timeout``)."""

    mirror: str | None = None  # base URL serving the upstream paths (else each record's URL)
    commons_api: str | None = None  # Commons API URL (None: no licence lookups)
    allow: tuple[str, ...] = ()
    offline: bool = False
    concurrency: int = 8
    cache: ImageCache | None = None
    # the share of distinct images that must be fetched and decoded (``--min-images-fetched``);
    # a stage that fetched none of its images fails whatever this is
    min_fetched: float = 0.0
    # each download's deadline in seconds (``--image-timeout``); a host that never answers
    # costs at most GIVE_UP_AFTER_TIMEOUTS times this (culturebench.images.fetch)
    timeout_s: float = TIMEOUT_S


def with_sample_images(options: ImageOptions, sample_folder: Path) -> ImageOptions:
    """A build from a shipped sample that has an ``images/`` folder (drawn stand-ins at the
    upstream paths, see the sample's SAMPLE.md) reads its images from there unless
    ``--image-mirror`` says otherwise, so the sample's image stage needs no network."""
    local = sample_folder / "images"
    if options.mirror is not None or not local.is_dir():
        return options
    return replace(options, mirror=str(local))


class ImageStageFailed(BuildError):
    """Too few images were fetched: the build stops before anything is written."""


def image_records(
    rows: dict[str, dict[str, list[dict[str, Any]]]], link_kinds: frozenset[str] = frozenset()
) -> Iterator[dict[str, Any]]:
    """Every image record in the rows: ``images`` entries, and ``links`` entries whose kind
    is one of the dataset's image ``link_kinds`` with an http(s) URL. Records shared between
    configs come once."""
    seen: set[int] = set()
    for splits in rows.values():
        for split_rows in splits.values():
            for row in split_rows:
                candidates = list(row.get("images") or [])
                candidates += [
                    link
                    for link in row.get("links") or []
                    if link.get("kind") in link_kinds and str(link.get("url") or "").startswith("http")
                ]
                for record in candidates:
                    if id(record) not in seen:
                        seen.add(id(record))
                        yield record


def is_web_url(location: str) -> bool:
    """Whether ``location`` is an http(s) URL (else a local folder or ``file://`` URL)."""
    return urlsplit(location).scheme in {"http", "https"}


def download_url(url: str) -> str:
    """Where to download an image page's bytes (Google Drive file pages -> direct download)."""
    match = re.search(r"drive\.google\.com/(?:file/d/([\w-]+)|open\?id=([\w-]+))", url)
    if match:
        return f"https://drive.google.com/uc?export=download&id={match.group(1) or match.group(2)}"
    return url


def fetch_location(record: dict[str, Any], mirror: str | None) -> str:
    """Fetch from a mirror when given: by upstream path when the record has one, else by
    ``<host>/<path>`` of its URL; otherwise from the URL itself. A mirror that is not an
    http(s) URL is a local folder laid out the same way (a ``file://`` location)."""
    if not mirror:
        return download_url(record["url"])
    if not is_web_url(mirror):
        mirror = Path(mirror).resolve().as_uri()
    base = mirror.rstrip("/") + "/"
    if record.get("upstream_path"):
        return base + record["upstream_path"]
    parts = urlsplit(record["url"])
    return base + parts.netloc + parts.path + (f"?{parts.query}" if parts.query else "")


def run_image_stage(
    rows: dict[str, dict[str, list[dict[str, Any]]]],
    policy: ImagePolicy,
    options: ImageOptions,
    log: BuildLog,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Fill every image record in place; return statistics and the attribution list."""
    records = list(image_records(rows, policy.link_kinds))
    by_key: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_key.setdefault(record["url"], []).append(record)
    requests = [
        FetchRequest(key=url, url=fetch_location(group[0], options.mirror), sha256=group[0].get("sha256"))
        for url, group in by_key.items()
    ]
    sources = {request.key: request.url for request in requests}
    fetched = fetch_images(
        requests,
        cache=options.cache or default_cache(),
        concurrency=options.concurrency,
        timeout_s=options.timeout_s,
        max_bytes=policy.max_bytes,
        allow=options.allow,
        offline=options.offline,
        progress=progress,
    )
    decoded: dict[str, tuple[bytes, dict[str, Any]]] = {}
    reasons: Counter[str] = Counter()
    first: dict[str, str] = {}  # per failure reason, the first URL it was downloaded from
    for url, result in fetched.items():
        group = by_key[url]
        data = result.data
        if result.error or data is None:
            reason = result.error or "unavailable"
            _fail(group, reason, log)
            reasons[reason] += 1
            first.setdefault(reason, sources[url])
            continue
        try:
            facts = hash_image_bytes(data, max_bytes=policy.max_bytes, max_pixels=policy.max_pixels)
        except ImageError as exc:
            _fail(group, exc.reason, log)
            reasons[exc.reason] += 1
            continue
        except Exception:
            _fail(group, "undecodable", log)
            reasons["undecodable"] += 1
            continue
        decoded[url] = (data, {**facts, "sha256": result.sha256, "size_bytes": len(data)})
    check_fetched(len(decoded), len(by_key), reasons, options, first)
    licences = _licences(by_key, decoded, options, log)
    for url, (data, facts) in decoded.items():
        info = licences.get(url)
        for record in by_key[url]:
            record.update(facts)
            if info is not None:
                record.update(info.to_dict())
            if allowed(record["license"], policy.embed_licenses):
                record["image"] = {"bytes": data, "path": record.get("file")}
                record["status"] = "embedded"
            else:
                record["image"] = None
                record["status"] = "url_only"
    return _statistics(records)


def check_fetched(
    fetched: int,
    total: int,
    reasons: Counter[str],
    options: ImageOptions,
    first: dict[str, str] | None = None,
) -> None:
    """Raise :class:`ImageStageFailed` when none of ``total`` distinct images was fetched and
    decoded, or fewer than ``options.min_fetched`` of them (a share, 0 to 1): a stage whose
    images were all unreachable must not replace a release with failed rows. ``first``: per
    failure reason, the first URL that failed so (the message names the commonest one's)."""
    if not total or (fetched and fetched >= options.min_fetched * total):
        return
    share = fetched / total
    why = ", ".join(f"{reason} {count:,}" for reason, count in reasons.most_common(3))
    top = reasons.most_common(1)[0][0] if reasons else None
    if top is not None and first and top in first:
        detail = (
            f" (no complete answer within {options.timeout_s:g} s, --image-timeout)"
            if top == "timeout"
            else ""
        )
        why += f"; first {top}: {first[top]}{detail}"
    need = (
        f" (--min-images-fetched {options.min_fetched:g} needs {options.min_fetched:.0%})" if fetched else ""
    )
    hint = (
        "--offline-images uses only the image cache"
        if options.offline
        else "check the network, --image-mirror and --allow"
    )
    raise ImageStageFailed(
        f"image stage: {fetched:,} of {total:,} images fetched ({share:.0%}){need}; failures: {why}; "
        f"{hint}; nothing was written (an earlier release stays as it was)"
    )


def _fail(group: list[dict[str, Any]], reason: str, log: BuildLog) -> None:
    for record in group:
        record["image"] = None
        record["status"] = f"failed:{reason}"
    log.quirk(
        f"image_{reason}", f"{group[0]['url']}: {reason}", action="kept as a URL-only record", field="images"
    )


def _licences(by_key, decoded, options: ImageOptions, log: BuildLog) -> dict[str, LicenseInfo]:
    """Licence info for images whose records say ``unknown``, from Wikimedia Commons."""
    if not options.commons_api:
        return {}
    client = CommonsClient(options.commons_api)
    titles: dict[str, str] = {}
    for url, (data, _facts) in decoded.items():
        if by_key[url][0].get("license", UNKNOWN) != UNKNOWN:
            continue
        title = commons_title(url)
        if title is None:
            try:
                title = client.title_for_bytes(data)
            except Exception as exc:  # a lookup failure must not fail the build
                log.quirk(
                    "licence_lookup_failed", f"{url}: {exc}", action="licence stays unknown", field="images"
                )
                continue
        if title:
            titles[url] = title
    try:
        infos = client.licenses(sorted(set(titles.values()))) if titles else {}
    except Exception as exc:
        log.quirk("licence_lookup_failed", str(exc), action="licences stay unknown", field="images")
        return {}
    return {url: infos[title] for url, title in titles.items() if title in infos}


def _statistics(records: list[dict[str, Any]]) -> dict[str, Any]:
    embedded = [r for r in records if r.get("status") == "embedded"]
    attributions = sorted(
        {
            (r.get("author") or "unknown author", r["license"], r.get("source_page") or r["url"])
            for r in embedded
        }
    )
    return {
        "images": {
            "records": len(records),
            "per_status": dict(Counter(r.get("status") for r in records).most_common()),
            "per_license": dict(Counter(r.get("license") for r in records).most_common()),
            "embedded_per_license": dict(Counter(r.get("license") for r in embedded).most_common()),
        },
        "attributions": [{"author": a, "license": lic, "source": src} for a, lic, src in attributions],
    }
