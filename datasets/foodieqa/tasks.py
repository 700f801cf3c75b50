"""FoodieQA tasks: multi-image VQA, single-image VQA and text QA, 4 prompt templates each in
Chinese and English. The answer letter is extracted deterministically; an unparseable answer
is wrong and counted per template, never replaced by a random guess (the upstream scripts fell
back to random). Accuracy is reported per language and template, with the best template per
language as in the paper's Table 3."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from culturebench.eval.multiple_choice import accuracy_block, score_letter, wrong_positions
from culturebench.eval.tasks.base import Task, row_images


class _FoodieTask(Task):
    languages: tuple[str, ...] = ("zh", "en")
    parsers: ClassVar[tuple[str, ...]] = ("letters",)  # eval/multiple_choice.py (VERSION recorded)
    n_images: ClassVar[int] = 0

    def fields(self, row: dict[str, Any], lang: str) -> dict[str, str] | None:
        """Template fields in ``lang`` (None when the row has no text in that language)."""
        question = row["question"] if lang == "zh" else row.get("question_en")
        if not question:
            return None
        out = {"question": question}
        if "choices" in row:
            choices = row["choices"] if lang == "zh" else row.get("choices_en")
            if not choices:
                return None
            out.update(zip("abcd", choices, strict=True))
        return out

    def images(self, row: dict[str, Any], skipped: dict[str, int]) -> tuple[bytes, ...] | None:
        """The images sent with the row's question (None: the row is skipped)."""
        images = row_images(row) if self.n_images else ()
        if len(images) != self.n_images:
            skipped["missing_images"] += 1
            return None
        return images

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        choices = row.get("choices") if lang == "zh" else row.get("choices_en")
        return {
            "gold": int(row["label"]),
            "options": list(choices) if choices else None,  # an answer given as an option's text
            "question_type": row.get("question_type"),
            **{k: row.get(k) for k in ("food_type", "food_location", "cuisine_type") if k in row},
        }

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return score_letter(output, meta["gold"], meta.get("options"))

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        by_prompt: dict[str, dict[int, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for sample in samples:
            by_prompt[sample["lang"]][sample["prompt_index"]].append(sample)
        out: dict[str, Any] = {"per_language": {}}
        for lang, prompts in sorted(by_prompt.items()):
            blocks = {f"prompt{i}": accuracy_block(s) for i, s in sorted(prompts.items())}
            best = max(blocks, key=lambda k: blocks[k]["accuracy"] or 0.0)
            every = [s for group in prompts.values() for s in group]
            out["per_language"][lang] = {
                "per_prompt": blocks,
                "best_prompt": best,
                "best_accuracy": blocks[best]["accuracy"],
                "mean_accuracy": accuracy_block(every)["accuracy"],
                "unparseable": sum(b["unparseable"] for b in blocks.values()),
                "position_bias": wrong_positions(every),
            }
        overall = accuracy_block(samples)
        out["accuracy"] = overall["accuracy"]
        out["unparseable"] = overall["unparseable"]
        out["n"] = overall["n"]
        return out


class MultiImage(_FoodieTask):
    name = "multi-image"
    aliases = ("multi_image",)
    config = "multi_image"
    needs_images = True
    n_images = 4


class SingleImage(_FoodieTask):
    """Single-image VQA. Options for the paper's §6 variants: ``dish_name=true`` reveals the dish
    name in the question (Tables 5-6), ``image=false`` sends no image (Table 5, "dish name
    only"), ``web=FOLDER`` swaps each photo for the web image the upstream ``food_meta.web_file``
    names in FOLDER, the upstream download (Table 4; questions without one are skipped)."""

    name = "single-image"
    aliases = ("single_image",)
    config = "single_image"
    needs_images = True
    n_images = 1
    # How the name is revealed is not printed in the paper; this sentence is ours.
    NAME_PREFIX: ClassVar[dict[str, str]] = {"zh": "这道菜是{name}。", "en": "The dish is {name}. "}

    def __init__(
        self, dish_name: bool = False, image: bool = True, web: str | None = None, **options: Any
    ) -> None:
        from culturebench.errors import UsageError

        if not image and web:
            raise UsageError("single-image: web=FOLDER swaps the image; it needs image=true")
        given: dict[str, Any] = {"dish_name": True} if dish_name else {}
        given |= {"image": False} if not image else {}
        given |= {"web": str(web)} if web else {}
        super().__init__(**given, **options)
        self.reveal_name, self.send_image = bool(dish_name), bool(image)
        self.web_files = _web_files(Path(web)) if web else None
        self.web_root = Path(web) if web else None

    def images(self, row: dict[str, Any], skipped: dict[str, int]) -> tuple[bytes, ...] | None:
        if self.web_files is not None and self.web_root is not None:  # both set by web=FOLDER
            rel = self.web_files.get(row["id"])
            if not rel:
                skipped["no_web_image"] += 1
                return None
            return (_read_image(self.web_root, rel),)
        images = super().images(row, skipped)
        return images if images is None or self.send_image else ()

    def fields(self, row: dict[str, Any], lang: str) -> dict[str, str] | None:
        out = super().fields(row, lang)
        if out is not None and self.reveal_name:
            if not row.get("food_name"):
                return None
            out["question"] = self.NAME_PREFIX[lang].format(name=row["food_name"]) + out["question"]
        return out


def _web_files(folder: Path) -> dict[str, str]:
    """Release id (``sivqa-<question_id>``) -> the upstream ``food_meta.web_file``."""
    import json

    from culturebench.errors import UsageError

    path = folder / "sivqa_tidy.json"
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"web={folder}: cannot read {path.name} ({type(exc).__name__}: {exc})") from None
    out = {}
    for index, rec in enumerate(records if isinstance(records, list) else []):
        meta = rec.get("food_meta") if isinstance(rec, dict) else None
        web = meta.get("web_file") if isinstance(meta, dict) else None
        if isinstance(web, str) and web.strip():
            qid = rec.get("question_id")
            out[f"sivqa-{qid if qid not in (None, '') else index}"] = web.strip()
    return out


def _read_image(root: Path, rel: str) -> bytes:
    from culturebench.errors import UsageError

    for path in (root / rel, root / "images" / Path(rel).name):
        if path.is_file():
            return path.read_bytes()
    raise UsageError(f"web image {rel!r} not found under {root}")


class Text(_FoodieTask):
    name = "text"
    config = "text"


TASKS: dict[str, type[Task]] = {task.name: task for task in (MultiImage, SingleImage, Text)}
