"""Resolve a dataset's upstream sources to local files with verified checksums.

Three ways in, one result (:class:`SourceSet`):

* a local folder (``--source PATH``): the snapshot layout (``RU_DATA.xlsx`` at the top) or
  the upstream repository layout (``data/RU/RU_DATA.xlsx``);
* a base URL (``--source URL``): each file is downloaded from ``URL + upstream_path`` into a
  content-addressed cache and must match its pinned sha256;
* nothing: the shared upstream snapshot if one is found (``$CULTUREBENCH_UPSTREAM``, then
  ``../shared/upstream`` beside the working directory or the source checkout), else the
  files shipped in ``datasets/<name>/`` when every source is shipped (a dataset defined by
  its paper, like CulinaryASH), else the small sample shipped in ``datasets/<name>/sample/``.

A source declared with ``sha256: null`` is *user-supplied* (no public file to pin: RuBIN,
the gated FoodieQA download): its actual sha256 is recorded in the manifest and the card.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlparse

from culturebench.cache_dirs import cache_root
from culturebench.errors import ChecksumError, Location, SourceError
from culturebench.hashing import sha256_file
from culturebench.safe_http import redact
from culturebench.spec import DatasetSpec, SourceFile

logger = logging.getLogger("culturebench.sources")

DOWNLOAD_TIMEOUT_S = 60
SAMPLE_MARKER = "SAMPLE.md"


@dataclass(frozen=True)
class ResolvedFile:
    """One source file on local disk with its actual and pinned checksums."""

    key: str
    name: str
    path: Path
    sha256: str
    size: int
    pinned_sha256: str | None
    origin: str  # where it was read (logged; never in a release)
    user_supplied: bool = False
    shipped: bool = False  # dataset.yaml ships a copy with culturebench (wherever it was read)

    @property
    def matches_pin(self) -> bool:
        return self.pinned_sha256 is not None and self.sha256 == self.pinned_sha256

    @property
    def acceptable(self) -> bool:
        """Pinned and matching, or user-supplied (nothing to pin against)."""
        return self.user_supplied or self.matches_pin


@dataclass
class SourceSet:
    """All source files of one build, and where they came from."""

    origin: str
    kind: str  # "path", "url", "shared", "shipped", "sample"
    files: dict[str, ResolvedFile] = field(default_factory=dict)

    @property
    def is_sample(self) -> bool:
        return self.kind == "sample"

    def __getitem__(self, key: str) -> ResolvedFile:
        return self.files[key]

    @property
    def content_kind(self) -> str:
        """What the sources are, from their content and the spec, not where they were read:
        ``sample`` (the shipped sample rows), ``shipped`` (every file ships with culturebench)
        or ``upstream`` (the upstream files, from the shared snapshot, a folder or a URL)."""
        if self.is_sample:
            return "sample"
        if self.files and all(f.shipped for f in self.files.values()):
            return "shipped"
        return "upstream"

    def to_manifest(self) -> dict:
        """The manifest's ``source``: kind, and per file its name, sha256, size and pin. No
        path or URL: the same bytes read from another folder (or downloaded) are the same
        release; where they were read is logged (``-v``), never published."""
        for key, f in sorted(self.files.items()):
            logger.info("source %s: %s (sha256 %s)", key, f.origin, f.sha256)
        return {
            "kind": self.content_kind,
            "files": {
                key: {
                    "file": f.name,
                    "sha256": f.sha256,
                    "size": f.size,
                    "pinned_sha256": f.pinned_sha256,
                    "matches_pin": f.matches_pin,
                    "user_supplied": f.user_supplied,
                }
                for key, f in sorted(self.files.items())
            },
        }


def _shared_candidates(name: str) -> list[Path]:
    out = []
    env = os.environ.get("CULTUREBENCH_UPSTREAM")
    if env:
        out.append(Path(env) / name)
    out.append(Path.cwd().parent / "shared" / "upstream" / name)
    out.append(Path.cwd() / "shared" / "upstream" / name)
    # Source checkout: <repo>/culturebench/sources.py -> <repo>/../shared/upstream
    repo = Path(__file__).resolve().parent.parent
    out.append(repo.parent / "shared" / "upstream" / name)
    return out


def default_source(spec: DatasetSpec) -> tuple[Path, str]:
    """The folder a build uses when no ``--source`` is given, and its kind."""
    env = os.environ.get("CULTUREBENCH_UPSTREAM")
    for cand in _shared_candidates(spec.name):
        if (cand / spec.sources[next(iter(spec.sources))].file).exists():
            return cand, "shared"
    if env:
        logger.warning("CULTUREBENCH_UPSTREAM=%s has no %s snapshot", env, spec.name)
    if spec.sources and all(src.shipped for src in spec.sources.values()):
        return spec.folder, "shipped"
    if spec.sample_dir.is_dir():
        return spec.sample_dir, "sample"
    hint = f" {spec.source_help}" if spec.source_help else ""
    raise SourceError(
        Location(str(spec.folder)), f"no upstream snapshot found and no sample shipped; pass --source.{hint}"
    )


def is_url(source: str) -> bool:
    return urlparse(source).scheme in {"http", "https"}


def resolve_sources(spec: DatasetSpec, source: str | None = None) -> SourceSet:
    """Resolve every declared source of ``spec`` to a local, checksummed file."""
    if source is None:
        folder, kind = default_source(spec)
        return _from_folder(spec, folder, kind)
    if is_url(source):
        return _from_url(spec, source)
    if source == "sample" and not Path(source).is_dir():  # the sample shipped with culturebench
        if not spec.sample_dir.is_dir():
            raise SourceError(Location(str(spec.folder)), f"{spec.name} ships no sample")
        return _from_folder(spec, spec.sample_dir, "sample")
    folder = Path(source)
    if not folder.is_dir():
        raise SourceError(Location(redact(source)), "source is neither a folder nor an http(s) URL")
    # A sample folder (shipped, or a copy of it) is marked by a SAMPLE.md file.
    kind = "sample" if (folder / SAMPLE_MARKER).is_file() else "path"
    return _from_folder(spec, folder, kind)


def _resolved(spec_file: SourceFile, path: Path, origin: str, pin: bool) -> ResolvedFile:
    size = path.stat().st_size
    return ResolvedFile(
        key=spec_file.key,
        name=spec_file.file,
        path=path,
        sha256=sha256_file(path),
        size=size,
        pinned_sha256=spec_file.sha256 if pin else None,
        origin=origin,
        user_supplied=spec_file.user_supplied,
        shipped=bool(spec_file.shipped),
    )


def _shipped(spec: DatasetSpec, src: SourceFile) -> Path | None:
    if src.shipped and (spec.folder / src.shipped).exists():
        return spec.folder / src.shipped
    return None


def _from_folder(spec: DatasetSpec, folder: Path, kind: str) -> SourceSet:
    out = SourceSet(origin=str(folder), kind=kind)
    pin = kind != "sample"
    for key, src in spec.sources.items():
        candidates = [folder / src.file]
        if src.upstream_path:
            candidates.append(folder / src.upstream_path)
        path = next((c for c in candidates if c.is_file()), None)
        if path is None:
            path = _shipped(spec, src)
            if path is None:
                raise SourceError(
                    Location(str(folder / src.file)),
                    f"source file for {key!r} not found (looked for "
                    + ", ".join(str(c) for c in candidates)
                    + ")",
                )
            logger.info("%s: using the copy shipped with culturebench (%s)", src.file, path)
        out.files[key] = _resolved(src, path, str(path), pin)
        if pin and not out.files[key].acceptable:
            logger.warning(
                "%s: sha256 %s differs from the pinned %s (recorded in the manifest)",
                path,
                out.files[key].sha256,
                src.sha256,
            )
    return out


def _download(url: str, dest: Path, expected_sha256: str) -> None:
    import requests

    tmp_fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with os.fdopen(tmp_fd, "wb") as handle:
            try:
                resp = requests.get(url, stream=True, timeout=DOWNLOAD_TIMEOUT_S)
                resp.raise_for_status()
                for chunk in resp.iter_content(1 << 16):
                    handle.write(chunk)
            except requests.RequestException as exc:
                raise SourceError(Location(redact(url)), f"download failed: {redact(exc)}") from None
        got = sha256_file(tmp_name)
        if got != expected_sha256:
            raise ChecksumError(
                f"{redact(url)}: sha256 {got} does not match the pinned {expected_sha256}; "
                "refusing to build from an unpinned download"
            )
        os.replace(tmp_name, dest)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def _from_url(spec: DatasetSpec, base_url: str) -> SourceSet:
    base = base_url if base_url.endswith("/") else base_url + "/"
    out = SourceSet(origin=redact(base), kind="url")  # never record credentials
    cache = cache_root() / "sources" / spec.name
    cache.mkdir(parents=True, exist_ok=True)
    for key, src in spec.sources.items():
        if src.sha256 is None:  # user-supplied
            raise SourceError(
                Location(redact(base_url)), f"{src.file} has no public copy to download; pass --source PATH"
            )
        if not src.upstream_path:
            shipped = _shipped(spec, src)
            if shipped is None:
                raise SourceError(Location(src.file), "no upstream path and no shipped copy")
            out.files[key] = _resolved(src, shipped, str(shipped), True)
            continue
        url = urljoin(base, src.upstream_path)
        dest = cache / f"{src.sha256}-{src.file}"
        if not (dest.exists() and sha256_file(dest) == src.sha256):
            logger.info("downloading %s", redact(url))
            _download(url, dest, src.sha256)
        out.files[key] = _resolved(src, dest, redact(url), True)
    return out
