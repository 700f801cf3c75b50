"""Image licences: Wikimedia Commons files resolved through the Commons API (``extmetadata``)
and mapped to SPDX ids; everything else records what is known, or ``unknown``."""

from __future__ import annotations

import fnmatch
import hashlib
import html
import re
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

COMMONS_API = "https://commons.wikimedia.org/w/api.php"
UNKNOWN = "unknown"
_TAGS = re.compile(r"<[^>]+>")
_CC = re.compile(r"^cc[ -]?(by|zero|0)?((?:[ -](?:sa|nc|nd))*)[ -]?(\d\.\d)?", re.IGNORECASE)


@dataclass(frozen=True)
class LicenseInfo:
    license: str = UNKNOWN  # SPDX id, LicenseRef-*, or "unknown"
    license_url: str | None = None
    author: str | None = None
    attribution: str | None = None
    source_page: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def to_spdx(short_name: str | None) -> str:
    """Commons ``LicenseShortName`` -> SPDX: "CC BY-SA 4.0" -> CC-BY-SA-4.0, "CC0" -> CC0-1.0,
    "Public domain" -> LicenseRef-PublicDomain; anything else -> LicenseRef-<name>."""
    if not short_name:
        return UNKNOWN
    name = short_name.strip()
    low = name.lower()
    if low in {"public domain", "pd"} or low.startswith("pd-"):
        return "LicenseRef-PublicDomain"
    if low in {"cc0", "cc zero", "cc0 1.0"}:
        return "CC0-1.0"
    match = _CC.match(name)
    if match and match.group(1) and match.group(1).lower() == "by" and match.group(3):
        parts = [p.upper() for p in re.split(r"[ -]", match.group(2).strip(" -")) if p]
        return "-".join(["CC", "BY", *parts, match.group(3)])
    if low.startswith("gfdl"):
        return "GFDL-1.2-or-later"
    return "LicenseRef-" + re.sub(r"[^A-Za-z0-9.]+", "-", name).strip("-")


def allowed(license_id: str, patterns: list[str]) -> bool:
    """Whether ``license_id`` matches one of the policy's glob patterns (e.g. ``CC-BY-*``)."""
    return any(fnmatch.fnmatchcase(license_id, p) for p in patterns)


def commons_title(url: str) -> str | None:
    """``File:...`` title of a Wikimedia Commons URL (file page, original or thumbnail)."""
    parts = urlsplit(url)
    path = unquote(parts.path)
    name = None
    if parts.hostname == "commons.wikimedia.org" and "/wiki/File:" in path:
        name = path.split("/wiki/File:", 1)[1]
    elif parts.hostname == "upload.wikimedia.org" and "/commons/" in path:
        segments = path.split("/")
        if "thumb" in segments:
            i = segments.index("thumb")
            name = segments[i + 3] if len(segments) > i + 3 else None
        else:
            name = segments[-1]
    return "File:" + name.replace("_", " ") if name else None


def _clean(value: Any) -> str | None:
    if value is None:
        return None
    text = html.unescape(_TAGS.sub("", str(value))).strip()
    return text or None


class CommonsClient:
    """Looks licences up on Wikimedia Commons (``api_url`` can point at a mirror or replay)."""

    def __init__(self, api_url: str = COMMONS_API, *, timeout_s: float = 30.0) -> None:
        import requests

        self.api_url = api_url
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.headers["User-Agent"] = "culturebench (dataset licence lookup)"

    def _get(self, params: dict[str, str]) -> dict[str, Any]:
        resp = self.session.get(
            self.api_url, params={"format": "json", "formatversion": "2", **params}, timeout=self.timeout_s
        )
        resp.raise_for_status()
        return resp.json()

    def title_for_bytes(self, data: bytes) -> str | None:
        """The Commons file whose content has this SHA-1, if any (``list=allimages&aisha1``)."""
        sha1 = hashlib.sha1(data).hexdigest()
        found = self._get({"action": "query", "list": "allimages", "aisha1": sha1, "ailimit": "1"})
        images = found.get("query", {}).get("allimages", [])
        return images[0].get("title") if images else None

    def licenses(self, titles: list[str]) -> dict[str, LicenseInfo]:
        """Licence info per ``File:`` title (50 titles per request; missing files omitted)."""
        out: dict[str, LicenseInfo] = {}
        for start in range(0, len(titles), 50):
            batch = titles[start : start + 50]
            data = self._get(
                {
                    "action": "query",
                    "prop": "imageinfo",
                    "iiprop": "extmetadata|url",
                    "titles": "|".join(batch),
                }
            )
            for page in data.get("query", {}).get("pages", []):
                infos = page.get("imageinfo") or []
                if page.get("missing") or not infos:
                    continue
                meta = infos[0].get("extmetadata", {})

                def field(name: str, meta: dict = meta) -> str | None:
                    return _clean((meta.get(name) or {}).get("value"))

                out[page["title"]] = LicenseInfo(
                    license=to_spdx(field("LicenseShortName")),
                    license_url=field("LicenseUrl"),
                    author=field("Artist"),
                    attribution=field("Attribution") or field("Credit"),
                    source_page=infos[0].get("descriptionurl"),
                )
        return out
