"""FoodieQA converter: a user's local copy of the gated upstream (``images/``,
``mivqa_tidy.json``, ``sivqa_tidy.json``, ``textqa_tidy.json``) -> configs ``multi_image``,
``single_image`` and ``text`` with the images embedded.

The answer (an int or a string "0"-"3" upstream) becomes a class index. Bad records stop the
build with file, record index (0-based position in the JSON array) and field: an answer out of
range, a missing image file, an image that does not decode, a question or choice list of the
wrong shape, an image question without its English translation. Text QA questions may lack
English (the paper ran text QA in Chinese only): their English fields stay null.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from culturebench.builders.base import DatasetBuilder, Rows
from culturebench.builders.sources import SourceSet
from culturebench.buildlog import BuildLog
from culturebench.errors import Location, SourceError
from culturebench.hashing import sha256_bytes

N_OPTIONS = 4
MAX_IMAGE_BYTES = 30_000_000
MAX_PIXELS = 40_000_000
IMAGE_LICENSE = "CC-BY-NC-ND-4.0"  # volunteer photos released with the dataset (paper, Section 3.2)
SAMPLE_IMAGE_LICENSE = "CC0-1.0"  # the synthetic sample shipped in sample/ (drawn by culturebench)


def read_records(path: Path, name: str) -> list[dict[str, Any]]:
    """The JSON array of one task file (each element an object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(Location(name), f"not valid UTF-8 JSON: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise SourceError(Location(name), "expected a JSON array of objects")
    return data


def normalise_answer(value: Any, where: Location) -> int:
    """``2``, ``"2"`` or ``" 2 "`` -> 2; anything outside 0-3 is an error."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or not 0 <= value < N_OPTIONS:
        raise SourceError(where, f"answer {value!r} is not an option index 0-3")
    return value


class _Record:
    """One source record with its location, for error messages."""

    def __init__(self, file: str, index: int, values: dict[str, Any]) -> None:
        self.file, self.index, self.values = file, index, values

    def loc(self, field: str | None = None) -> Location:
        qid = self.values.get("question_id")
        return Location(
            f"{self.file} [record {self.index}{f', question_id {qid}' if qid is not None else ''}]",
            None,
            field,
        )

    def text(self, field: str, *, required: bool = True) -> str | None:
        value = self.values.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if required:
            what = "English translation" if field.endswith("_en") else field
            raise SourceError(self.loc(field), f"{what} is missing or empty")
        return None

    def choices(self, field: str, *, required: bool = True) -> list[str] | None:
        value = self.values.get(field)
        if value is None and not required:
            return None
        if (
            not isinstance(value, list)
            or len(value) != N_OPTIONS
            or not all(isinstance(v, str) and v.strip() for v in value)
        ):
            raise SourceError(self.loc(field), f"expected {N_OPTIONS} non-empty strings, got {value!r}")
        return [v.strip() for v in value]


class FoodieQABuilder(DatasetBuilder):
    """Converts the gated FoodieQA download into the three release configs."""

    CODE_VERSION = "1.0"

    def generate(self, sources: SourceSet, log: BuildLog) -> Rows:
        root = sources["mivqa"].path.parent
        self._images: dict[str, dict[str, Any]] = {}
        self._license = SAMPLE_IMAGE_LICENSE if sources.is_sample else IMAGE_LICENSE
        multi = [self._multi(r, root) for r in self._records(sources, "mivqa")]
        single = [self._single(r, root) for r in self._records(sources, "sivqa")]
        text = [self._text(r, log) for r in self._records(sources, "textqa")]
        for rows, task in ((multi, "mivqa"), (single, "sivqa"), (text, "textqa")):
            seen: set[str] = set()
            for row in rows:
                if row["id"] in seen:
                    raise SourceError(
                        Location(sources[task].name, None, "question_id"), f"duplicate id {row['id']}"
                    )
                seen.add(row["id"])
        log.stats["rows"] = {"multi_image": len(multi), "single_image": len(single), "text": len(text)}
        log.stats["unique_images"] = len(self._images)
        log.stats["text_without_english"] = sum(r["question_en"] is None for r in text)
        return {"multi_image": {"test": multi}, "single_image": {"test": single}, "text": {"test": text}}

    @staticmethod
    def _records(sources: SourceSet, key: str) -> list[_Record]:
        src = sources[key]
        return [_Record(src.name, i, v) for i, v in enumerate(read_records(src.path, src.name))]

    @staticmethod
    def _id(task: str, rec: _Record) -> str:
        qid = rec.values.get("question_id")
        return f"{task}-{qid if qid not in (None, '') else rec.index}"

    def _image(self, rec: _Record, root: Path, rel: Any, field: str) -> dict[str, Any]:
        from culturebench.images.decode import ImageError
        from culturebench.images.phash import hash_image_bytes

        if not isinstance(rel, str) or not rel.strip():
            raise SourceError(rec.loc(field), f"image path {rel!r} is not a file name")
        rel = rel.strip()
        path = root / rel if (root / rel).is_file() else root / "images" / Path(rel).name
        if not path.is_file():
            raise SourceError(rec.loc(field), f"image file {rel!r} not found under {root}")
        if rel not in self._images:
            data = path.read_bytes()
            try:
                info = hash_image_bytes(data, max_bytes=MAX_IMAGE_BYTES, max_pixels=MAX_PIXELS)
            except ImageError as exc:
                raise SourceError(rec.loc(field), f"image {rel!r}: {exc}") from exc
            self._images[rel] = {
                "image": {"bytes": data, "path": Path(rel).name},
                "file": rel,
                "sha256": sha256_bytes(data),
                "width": info["width"],
                "height": info["height"],
                "phash": info["phash"],
                "license": self._license,
            }
        return self._images[rel]

    def _multi(self, rec: _Record, root: Path) -> dict[str, Any]:
        images = rec.values.get("images")
        if not isinstance(images, list) or len(images) != N_OPTIONS:
            raise SourceError(rec.loc("images"), f"expected {N_OPTIONS} image paths, got {images!r}")
        return {
            "id": self._id("mivqa", rec),
            "question": rec.text("question"),
            "question_en": rec.text("question_en"),
            "question_type": rec.text("question_type", required=False),
            "label": normalise_answer(rec.values.get("answer"), rec.loc("answer")),
            "images": [self._image(rec, root, rel, f"images[{i}]") for i, rel in enumerate(images)],
        }

    def _single(self, rec: _Record, root: Path) -> dict[str, Any]:
        meta = rec.values.get("food_meta")
        if not isinstance(meta, dict):
            raise SourceError(rec.loc("food_meta"), "food_meta must be an object with food_file")
        return {
            "id": self._id("sivqa", rec),
            "question": rec.text("question"),
            "choices": rec.choices("choices"),
            "question_en": rec.text("question_en"),
            "choices_en": rec.choices("choices_en"),
            "question_type": rec.text("question_type", required=False),
            "food_name": rec.text("food_name", required=False),
            "food_type": _opt(meta.get("food_type")),
            "food_location": _opt(meta.get("food_location")),
            "label": normalise_answer(rec.values.get("answer"), rec.loc("answer")),
            "images": [self._image(rec, root, meta.get("food_file"), "food_meta.food_file")],
        }

    def _text(self, rec: _Record, log: BuildLog) -> dict[str, Any]:
        question_en = rec.text("question_en", required=False)
        choices_en = rec.choices("choices_en", required=False)
        if (question_en is None) != (choices_en is None):
            raise SourceError(
                rec.loc("question_en" if question_en is None else "choices_en"),
                "English translation is partial: give both question_en and choices_en, or neither",
            )
        return {
            "id": self._id("textqa", rec),
            "question": rec.text("question"),
            "choices": rec.choices("choices"),
            "question_en": question_en,
            "choices_en": choices_en,
            "question_type": rec.text("question_type", required=False),
            "food_name": rec.text("food_name", required=False),
            "cuisine_type": rec.text("cuisine_type", required=False),
            "label": normalise_answer(rec.values.get("answer"), rec.loc("answer")),
        }


def _opt(value: Any) -> str | None:
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    return str(value).strip() or None if value is not None else None
