"""The data of a run's samples page: one compact row per sample (its line in
``samples.jsonl``, id, language, group, status, score, what was read from the answer, prompt,
output, image thumbnails and the task's other fields), written as a script the page loads
(a page opened over ``file://`` may load a script, not fetch a JSON file).

Everything comes from the sample's normalised fields (:mod:`culturebench.eval.records`:
``score``, ``answer``, ``status``, ``group``, ``images``; an older folder's samples are read
through :func:`~culturebench.eval.records.upgrade`). The page's status is the record's, with a
scored sample told apart by its score: ``correct`` (1), ``partial`` (between), ``wrong`` (0);
``unparsed``, ``failed`` (the output was not text) and ``unscored`` as recorded."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from culturebench.eval.records import RECORD_KEYS, SCORED
from culturebench.jsonsafe import json_text
from culturebench.site.safety import inside, portable
from culturebench.site.views import RunView

STANDARD = {
    "id",
    "run",
    "prompt",
    "output",
    "n_images",
    "prompt_index",
    "lang",
    "row_id",
    "seed",
    *RECORD_KEYS,
}
COLUMNS = ["line", "id", "lang", "group", "status", "score", "read", "prompt", "output", "images", "fields"]
THUMB = 160  # px, the longer side of an image thumbnail
STATUSES = ("correct", "partial", "wrong", "unparsed", "failed", "unscored")


def status(sample: Mapping[str, Any]) -> str:
    """The page's status of a sample (one of :data:`STATUSES`, module docstring)."""
    recorded = sample.get("status")
    score = sample.get("score")
    if recorded not in (SCORED, "cut") or not isinstance(score, int | float):
        return str(recorded) if recorded in STATUSES else "unscored"
    if score >= 1 - 1e-9:
        return "correct"
    return "wrong" if score <= 1e-9 else "partial"


def score_of(sample: Mapping[str, Any]) -> float | None:
    """The sample's normalised score (None when it has none)."""
    score = sample.get("score")
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None


def sample_rows(
    view: RunView, images: Callable[[Mapping[str, Any]], list[str]] | None = None
) -> tuple[list[list[Any]], dict[str, int]]:
    """The page rows of ``view``'s samples (in file order) and the count per status (lines
    that are not a JSON object are counted as ``unreadable line``, and the page says so).
    ``images(sample)``: the site paths of the thumbnails of a sample's images."""
    rows: list[list[Any]] = []
    counts: dict[str, int] = {}
    for number, sample in view.lines:
        if sample is None:  # a torn or corrupt line: counted, never hidden
            counts["unreadable line"] = counts.get("unreadable line", 0) + 1
            continue
        state = status(sample)
        counts[state] = counts.get(state, 0) + 1
        extra = {k: v for k, v in sorted(sample.items()) if k not in STANDARD}
        extra = portable(extra, view.folder, in_text=False)  # a path-valued field: relative
        output = sample.get("output")
        answer = sample.get("answer")
        rows.append(
            [
                number,
                str(sample.get("id", "")),
                str(sample.get("lang", "")),
                str(sample.get("group") or ""),
                state,
                score_of(sample),
                "" if answer is None else _short(answer),
                str(sample.get("prompt", "")),
                output if isinstance(output, str) else json.dumps(output, ensure_ascii=False),
                images(sample) if images and sample.get("images") else [],
                _short(extra, 600),
            ]
        )
    return rows, counts


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_data(path: Path, slug: str, rows: list[list[Any]]) -> None:
    """``window.CB_SAMPLES = {...}``: the rows as a script (``</`` escaped, so no sample
    text can end the script early)."""
    payload = json_text({"run": slug, "columns": COLUMNS, "rows": rows}, sort_keys=True).strip()
    payload = payload.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"window.CB_SAMPLES = {payload};\n", encoding="utf-8")


class Thumbnails:
    """Thumbnails of images (a release's, a run's), written once per image content into ``img/``."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.written: dict[str, str] = {}

    def add(self, data: bytes) -> str | None:
        """The site path of ``data``'s thumbnail (JPEG, longer side :data:`THUMB` px); None
        for bytes that do not decode as an image."""
        from culturebench.images.thumbnail import thumbnail_jpeg

        return self._write(data, lambda: thumbnail_jpeg(data, THUMB))

    def add_thumbnail(self, data: bytes) -> str | None:
        """The site path of a thumbnail a run folder kept (copied as it is)."""
        return self._write(data, lambda: data)

    def _write(self, data: bytes, make: Callable[[], bytes | None]) -> str | None:
        import hashlib

        key = hashlib.sha256(data).hexdigest()[:20]
        if key in self.written:
            return self.written[key]
        jpeg = make()
        if jpeg is None:
            return None
        rel = f"img/{key}.jpg"
        (self.site / "img").mkdir(exist_ok=True)
        (self.site / rel).write_bytes(jpeg)
        self.written[key] = rel
        return rel


def run_images(
    view: RunView, thumbs: Thumbnails
) -> tuple[Callable[[Mapping[str, Any]], list[str]] | None, str]:
    """``sample -> thumbnail paths`` of the images a run folder kept for its samples
    (``images``: ``thumbs/...`` in the folder; never the dataset), and a note saying why images
    are missing where a sample's prompt had some but the folder kept none."""
    asked = any((s or {}).get("n_images") for _, s in view.lines)
    kept = any((s or {}).get("images") for _, s in view.lines)
    if not kept:
        if not asked:
            return None, ""
        why = "written before schema version 2" if view.schema_version < 2 else "none were kept"
        return None, f"images not shown: the run folder holds no thumbnails of them ({why})"
    found: dict[str, str | None] = {}

    def paths(sample: Mapping[str, Any]) -> list[str]:
        out = []
        for rel in sample.get("images") or []:
            if rel not in found:
                path = view.folder / str(rel)
                ok = isinstance(rel, str) and inside(view.folder, path) and path.is_file()
                found[rel] = thumbs.add_thumbnail(path.read_bytes()) if ok else None
            if found[rel]:
                out.append(str(found[rel]))
        return out

    return paths, ""
