"""The data of a run's samples page: one compact row per sample (its line in
``samples.jsonl``, id, language, group, status, score, what was read from the answer, prompt,
output, image thumbnails and the task's other fields), written as a script the page loads
(a page opened over ``file://`` may load a script, not fetch a JSON file).

Status, from the sample alone: ``unparsed`` when the answer could not be read (the task's
parser or judge says so, the output was not text, or the reading is empty), else by the
per-sample score the task's Hub declaration names (or the first of :data:`SCORE_FIELDS`):
``correct`` (1), ``partial`` (between), ``wrong`` (0), or ``unscored``."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from culturebench.jsonsafe import json_text
from culturebench.site.safety import portable
from culturebench.site.views import SAMPLE_GROUP_FIELDS, RunView

SCORE_FIELDS = ("correct", "score", "accuracy", "jaccard")
# what a task read from the answer (first present wins): countries, an option letter, a rating
READ_FIELDS = ("predicted", "pred", "parsed_answer", "letter", "rating", "judge_answer")
STANDARD = {"id", "run", "prompt", "output", "n_images", "prompt_index", "lang", "row_id", "seed"}
COLUMNS = ["line", "id", "lang", "group", "status", "score", "read", "prompt", "output", "images", "fields"]
THUMB = 160  # px, the longer side of an image thumbnail


def status(sample: Mapping[str, Any], score: float | None, read_key: str | None) -> str:
    """``unparsed``, ``correct``, ``partial``, ``wrong`` or ``unscored`` (module docstring)."""
    if sample.get("parsed") is False or sample.get("judge_parsed") is False or "invalid_output" in sample:
        return "unparsed"
    if read_key is not None and sample.get(read_key) in ([], "", None):
        return "unparsed"
    if score is None:
        return "unscored"
    if score >= 1 - 1e-9:
        return "correct"
    return "wrong" if score <= 1e-9 else "partial"


def score_of(sample: Mapping[str, Any], fields: tuple[str, ...] = ()) -> float | None:
    """The per-sample score: the first of ``fields`` (the task's Hub declaration), else of
    :data:`SCORE_FIELDS`, that the sample holds as a number."""
    for key in (*fields, *SCORE_FIELDS):
        value = sample.get(key)
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, int | float) and math.isfinite(value):
            return float(value)
    return None


def read_field(sample: Mapping[str, Any], declared: str | None = None) -> str | None:
    """The field holding what the task read from the answer: the Hub declaration's
    ``prediction``, else the first of :data:`READ_FIELDS` the sample has."""
    if declared and declared in sample:
        return declared
    return next((k for k in READ_FIELDS if k in sample), None)


def group_of(sample: Mapping[str, Any]) -> str:
    for key in SAMPLE_GROUP_FIELDS:
        value = sample.get(key)
        if isinstance(value, list):
            return ", ".join(map(str, value)) if value else ""
        if value not in (None, ""):
            return str(value)
    return ""


def sample_rows(
    view: RunView, images: Callable[[str], list[str]] | None = None
) -> tuple[list[list[Any]], dict[str, int]]:
    """The page rows of ``view``'s samples (in file order) and the count per status (lines
    that are not a JSON object are counted as ``unreadable line``, and the page says so).
    ``images(row_id)``: the site paths of the thumbnails of a row's images."""
    rows: list[list[Any]] = []
    counts: dict[str, int] = {}
    if not view.samples_file.is_file():
        return rows, counts
    with open(view.samples_file, encoding="utf-8", errors="replace", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except (ValueError, RecursionError):
                sample = None
            if not isinstance(sample, dict):  # a torn or corrupt line: counted, never hidden
                counts["unreadable line"] = counts.get("unreadable line", 0) + 1
                continue
            read_key = read_field(sample, view.read_field)
            score = score_of(sample, view.score_fields)
            state = status(sample, score, read_key)
            counts[state] = counts.get(state, 0) + 1
            extra = {k: v for k, v in sorted(sample.items()) if k not in STANDARD and k != read_key}
            extra = portable(extra, view.folder, in_text=False)  # a path-valued field: relative
            thumbs = images(str(sample.get("row_id"))) if images and sample.get("n_images") else []
            output = sample.get("output")
            rows.append(
                [
                    number,
                    str(sample.get("id", "")),
                    str(sample.get("lang", "")),
                    group_of(sample),
                    state,
                    score,
                    _short(sample.get(read_key)) if read_key else "",
                    str(sample.get("prompt", "")),
                    output if isinstance(output, str) else json.dumps(output, ensure_ascii=False),
                    thumbs,
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
    """Thumbnails of a run's row images, written once per image content into ``img/``."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.written: dict[str, str] = {}

    def add(self, data: bytes) -> str | None:
        """The site path of ``data``'s thumbnail (JPEG, longer side :data:`THUMB` px); None
        for bytes that do not decode as an image."""
        import hashlib
        import io

        from PIL import Image, UnidentifiedImageError

        key = hashlib.sha256(data).hexdigest()[:20]
        if key in self.written:
            return self.written[key]
        try:
            with Image.open(io.BytesIO(data)) as opened:
                image = opened.convert("RGB")
                image.thumbnail((THUMB, THUMB))
                out = io.BytesIO()
                image.save(out, "JPEG", quality=80, optimize=True)
        except (UnidentifiedImageError, OSError, ValueError):
            return None
        rel = f"img/{key}.jpg"
        (self.site / "img").mkdir(exist_ok=True)
        (self.site / rel).write_bytes(out.getvalue())
        self.written[key] = rel
        return rel


def row_images(view: RunView, thumbs: Thumbnails) -> tuple[Callable[[str], list[str]] | None, str]:
    """``row_id -> thumbnail paths`` for a run whose prompts carried images, read from the
    dataset revision it ran on when that is on this machine (a local release, or a cached Hub
    revision), and a note saying why images are missing otherwise."""
    from culturebench.eval.dataset_ref import DatasetRef, load_run_rows
    from culturebench.eval.tasks import get_task

    prov = view.results.get("provenance") or {}
    pin = prov.get("dataset") or {}
    try:
        task = get_task(view.dataset, view.task, **(prov.get("task_options") or {}))
    except Exception:
        return None, "the task is not known to this install: no images"
    if not task.needs_images:
        return None, ""
    try:
        ref = DatasetRef(
            dataset=str(pin.get("dataset")),
            source=str(pin.get("source")),
            location=str(pin.get("location")),
            requested_revision=pin.get("requested_revision"),
            commit_sha=pin.get("commit_sha"),
            manifest_sha256=pin.get("manifest_sha256"),
            version=pin.get("version"),
        )
        rows, _choice = load_run_rows(ref, task.config, task.split, None)
    except Exception as exc:  # not on this machine (a Hub revision offline), or moved
        return None, f"images not shown: the dataset revision is not available here ({type(exc).__name__})"
    asked = _row_ids(view.samples_file)
    found: dict[str, list[str]] = {}
    skipped: defaultdict[str, int] = defaultdict(int)
    for row in rows:
        if str(row["id"]) in asked:
            images = task.images(row, skipped) or ()
            found[str(row["id"])] = [p for p in (thumbs.add(data) for data in images) if p]
    return (lambda row_id: found.get(row_id, [])), ""


def _row_ids(path: Path) -> set[str]:
    """The rows a run's samples asked about (only their images are drawn)."""
    out: set[str] = set()
    if path.is_file():
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    sample = json.loads(line)
                except ValueError:
                    continue
                if isinstance(sample, dict) and sample.get("n_images"):
                    out.add(str(sample.get("row_id")))
    return out
