"""The toy dataset's one task: name the capital; correct when the answer contains it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from culturebench.eval.backends.base import Request
from culturebench.eval.metrics import bootstrap_ci
from culturebench.eval.tasks.base import Task, TaskRequest


class Capital(Task):
    dataset = "toy"
    name = "capital"
    config = "default"
    languages: ClassVar[tuple[str, ...]] = ("en",)

    def build(self, rows: Sequence[dict[str, Any]], langs: Sequence[str]):
        requests = []
        for row in rows:
            for lang in langs:
                for index, template in enumerate(self.templates(lang)):
                    meta = {"row_id": row["id"], "lang": lang, "gold": row["capital"]}
                    prompt = template.format(country=row["country"])
                    requests.append(TaskRequest(Request(f"{row['id']}:{lang}:{index}", prompt), meta))
        return requests, {}

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return {"correct": float(meta["gold"].lower() in output.lower())}

    def aggregate(self, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
        values = [s["correct"] for s in samples]
        mean, lo, hi = bootstrap_ci(values, units=[s["row_id"] for s in samples])
        return {
            "n": len(values),
            "n_countries": len({s["row_id"] for s in samples}),
            "accuracy": {"mean": mean, "ci95": [lo, hi]},
        }


TASKS = {"capital": Capital}
