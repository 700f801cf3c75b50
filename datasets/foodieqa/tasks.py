"""FoodieQA tasks: multi-image VQA, single-image VQA and text QA, 4 prompt templates each in
Chinese and English. The answer letter is extracted deterministically; an unparseable answer
is wrong and counted per template, never replaced by a random guess (the upstream scripts fell
back to random). Accuracy is reported per language and template, with the best template per
language as in the paper's Table 3."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, ClassVar

from culturebench.eval.backends.base import Request
from culturebench.eval.mcqa import accuracy_block, score_letter, wrong_positions
from culturebench.eval.tasks.base import Task, TaskRequest, row_images


class _FoodieTask(Task):
    dataset = "foodieqa"
    languages: ClassVar[tuple[str, ...]] = ("zh", "en")
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

    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        requests: list[TaskRequest] = []
        skipped: dict[str, int] = defaultdict(int)
        for row in rows:
            images = row_images(row) if self.n_images else ()
            if len(images) != self.n_images:
                skipped["missing_images"] += 1
                continue
            for lang in langs:
                fields = self.fields(row, lang)
                if fields is None:
                    skipped[f"no_{lang}_text"] += 1
                    continue
                for index, template in enumerate(self.templates(lang)):
                    meta = {
                        "row_id": row["id"],
                        "lang": lang,
                        "prompt_index": index,
                        "gold": int(row["label"]),
                        "question_type": row.get("question_type"),
                    }
                    request = Request(f"{row['id']}:{lang}:{index}", template.format(**fields), images)
                    requests.append(TaskRequest(request, meta))
        return requests, dict(skipped)

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return score_letter(output, meta["gold"])

    def aggregate(self, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
        by_prompt: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
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
    name = "multi_image"
    config = "multi_image"
    needs_images = True
    n_images = 4


class SingleImage(_FoodieTask):
    name = "single_image"
    config = "single_image"
    needs_images = True
    n_images = 1


class Text(_FoodieTask):
    name = "text"
    config = "text"


TASKS: dict[str, type[Task]] = {"multi_image": MultiImage, "single_image": SingleImage, "text": Text}
