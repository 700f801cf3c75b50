"""The maintainer's review of a release folder: its rows with their images and each image's
licence and attribution, the near-duplicate clusters of its images (pHash, at the dataset's
policy threshold) side by side with their distances, the validation findings (the release is
validated again here, the checks of ``culturebench validate``), and the broken links of the
last URL check of the dataset when its report folder is given too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.site.safety import inside, read_json
from culturebench.site.samples import Thumbnails

MAX_ROWS = 300  # rows shown with their images (the review's first page; the count says so)
NAME_HINTS = ("name", "english_name", "name_en", "local_name", "question", "instruction")


@dataclass
class ReviewImage:
    thumb: str | None
    url: str
    license: str
    author: str
    attribution: str
    status: str


@dataclass
class ReviewRow:
    row_id: str
    name: str
    images: list[ReviewImage]


@dataclass
class ClusterMember:
    row_id: str
    file: str
    thumb: str | None
    distance: int  # to the cluster's first image


@dataclass
class ReleaseView:
    folder: Path
    dataset: str
    version: str
    slug: str
    configs: list[tuple[str, int]]  # config -> rows
    shown_config: str
    rows: list[ReviewRow] = field(default_factory=list)
    total_rows: int = 0
    clusters: list[list[ClusterMember]] = field(default_factory=list)
    threshold: int | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    validation: str = ""
    broken: list[dict[str, Any]] = field(default_factory=list)
    url_check: str = ""

    @property
    def title(self) -> str:
        return f"{self.dataset} {self.version}"


def read_release(folder: Path, thumbs: Thumbnails) -> ReleaseView:
    """The review of one release folder (its images as thumbnails into the site)."""
    import pyarrow.parquet as pq

    from culturebench.site.views import slugify

    manifest = read_json(folder / "manifest.json")
    dataset, version = str(manifest.get("dataset")), str(manifest.get("version"))
    configs: list[tuple[str, int]] = []
    files: dict[str, list[Path]] = {}
    for config, info in sorted((manifest.get("configs") or {}).items()):
        count = 0
        for split in (info.get("splits") or {}).values():
            count += int(split.get("num_rows") or 0)
            for entry in split.get("files") or []:
                path = folder / str(entry["path"])
                if not inside(folder, path):  # `../x` or an absolute path: never read
                    raise CultureBenchError(
                        f"{folder / 'manifest.json'}: config {config!r}: file {entry['path']!r} "
                        "is outside the release folder (not read)"
                    )
                files.setdefault(config, []).append(path)
        configs.append((config, count))
    with_images = [c for c, paths in files.items() if paths and "images" in pq.read_schema(paths[0]).names]
    shown = with_images[0] if with_images else (configs[0][0] if configs else "")
    view = ReleaseView(folder, dataset, version, f"{slugify(dataset)}-{slugify(version)}", configs, shown)
    tables = {c: [pq.read_table(p) for p in paths] for c, paths in files.items()}
    if shown:
        rows = [row for table in tables[shown] for row in table.to_pylist()]
        view.total_rows = len(rows)
        name = _name_column(rows[0]) if rows else None
        for row in rows[:MAX_ROWS]:
            view.rows.append(
                ReviewRow(
                    str(row.get("id")),
                    str(row.get(name) or "") if name else "",
                    [_image(item, thumbs) for item in row.get("images") or []],
                )
            )
    view.clusters, view.threshold = _clusters(dataset, tables, thumbs)
    view.findings, view.validation = _validate(folder)
    return view


def _name_column(row: Mapping[str, Any]) -> str | None:
    for hint in NAME_HINTS:
        if isinstance(row.get(hint), str):
            return hint
    return next((k for k, v in row.items() if k != "id" and isinstance(v, str)), None)


def _image(item: Mapping[str, Any], thumbs: Thumbnails) -> ReviewImage:
    data = (item.get("image") or {}).get("bytes") if isinstance(item.get("image"), Mapping) else None
    return ReviewImage(
        thumbs.add(data) if data else None,
        str(item.get("url") or ""),
        str(item.get("license") or ""),
        str(item.get("author") or ""),
        str(item.get("attribution") or ""),
        str(item.get("status") or ""),
    )


def _clusters(
    dataset: str, tables: Mapping[str, Sequence[Any]], thumbs: Thumbnails
) -> tuple[list[list[ClusterMember]], int | None]:
    """Connected groups of images within the dataset policy's pHash distance (each image once,
    by sha256), largest first."""
    from culturebench.images.index import HashIndex
    from culturebench.images.phash import hamming, to_array
    from culturebench.images.policy import load_policy
    from culturebench.spec import load_spec

    try:
        threshold = load_policy(load_spec(dataset)).near_duplicate_threshold
    except Exception:  # a dataset without an image policy here
        return [], None
    images: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for config in sorted(tables):
        for table in tables[config]:
            if "images" not in table.column_names:
                continue
            for row in table.select(["id", "images"]).to_pylist():
                for item in row["images"] or []:
                    key = item.get("sha256") or item.get("file")
                    if item.get("phash") and key and key not in images:
                        images[key] = (str(row["id"]), item)
    keys = sorted(images)
    if len(keys) < 2:
        return [], threshold
    index = HashIndex(to_array([images[k][1]["phash"] for k in keys]), threshold)
    first, second = index.pairs_within()
    parent = list(range(len(keys)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in zip(first.tolist(), second.tolist(), strict=True):
        parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for i in range(len(keys)):
        groups.setdefault(root(i), []).append(i)
    clusters = []
    for members in groups.values():
        if len(members) < 2:
            continue
        head = images[keys[members[0]]][1]["phash"]
        cluster = []
        for i in members:
            row_id, item = images[keys[i]]
            data = (item.get("image") or {}).get("bytes")
            cluster.append(
                ClusterMember(
                    row_id,
                    str(item.get("file") or ""),
                    thumbs.add(data) if data else None,
                    hamming(head, item["phash"]),
                )
            )
        clusters.append(cluster)
    clusters.sort(key=lambda c: (-len(c), c[0].row_id))
    return clusters, threshold


def _validate(folder: Path) -> tuple[list[dict[str, Any]], str]:
    """The findings of validating the release again (Croissant records left out: the review
    shows rows, not their JSON-LD), and a one-line verdict."""
    from culturebench.validation import validate_release

    try:
        report = validate_release(folder, croissant_records=False)
    except Exception as exc:  # the review still shows the rows
        return [], f"validation did not run: {' '.join(str(exc).split())[:200]}"
    findings = [
        {
            "check": f.check,
            "severity": f.severity,
            "where": f.where(),
            "row_id": f.row_id,
            "message": f.message,
        }
        for f in report.findings
    ]
    errors = sum(f["severity"] == "error" for f in findings)
    warnings = len(findings) - errors
    return findings, f"{'passed' if not errors else 'failed'}: {errors} error(s), {warnings} warning(s)"


def attach_url_check(views: Sequence[ReleaseView], folders: Sequence[Path]) -> list[Path]:
    """Give each release the broken links of the URL-check report of its dataset (the latest
    given); returns the report folders no release of the site matched."""
    unmatched = []
    for folder in folders:
        report = read_json(folder / "report.json") if (folder / "report.json").is_file() else None
        if not isinstance(report, dict):
            unmatched.append(folder)
            continue
        results = [r for r in report.get("results") or [] if isinstance(r, dict)]
        datasets = {str(r.get("dataset")) for r in results if r.get("dataset")}
        target = str(report.get("target") or "")
        matched = [v for v in views if v.dataset in datasets or target.rstrip("/").endswith(v.dataset)]
        if not matched:
            unmatched.append(folder)
        for view in matched:
            view.broken = [r for r in results if r.get("status") == "broken"]
            view.url_check = f"{folder.name}: checked {len(results)} URLs at {report.get('checked_at')}"
    return unmatched
