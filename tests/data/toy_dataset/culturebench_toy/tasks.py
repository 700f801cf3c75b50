"""The toy dataset's one task: name the capital; correct when the answer contains it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from culturebench.eval.metrics import bootstrap_ci
from culturebench.eval.tasks.base import Task


class Capital(Task):
    name = "capital"
    config = "default"
    languages: ClassVar[tuple[str, ...]] = ("en",)

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {"gold": row["capital"]}

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
