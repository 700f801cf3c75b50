"""Score with an LLM matcher instead of the deterministic one (``--matcher llm``).

A task that supports it declares, per sample, the judge prompts it needs
(``Task.judge_prompts``) and how to turn the judge's answers into scores
(``Task.apply_judgments``). This module runs the prompts through any backend, in batches,
with every answer cached by the prompt's sha256 in ``judgments.jsonl`` next to the samples:
a rerun, or the same (dish, seed) answer scored twice, costs no second call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from culturebench.eval.backends.base import Backend, Request
from culturebench.eval.tasks.base import Task
from culturebench.hashing import sha256_text

JUDGMENTS = "judgments.jsonl"


def _load_cache(path: Path) -> dict[str, str]:
    cache: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").split("\n"):  # not splitlines(): U+2028
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a killed run
            cache[entry["key"]] = entry["output"]
    return cache


def run_judge(
    task: Task,
    samples: Sequence[dict[str, Any]],
    backend: Backend,
    out_dir: Path,
    *,
    batch_size: int = 8,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Samples re-scored with the judge's answers, and a summary for the provenance. A sample
    whose judge answer does not parse (``judge_parsed`` false) is unscored and counted
    (``judge_unparsed``); a judge that parses on no sample is an error, not a NaN mean."""
    from culturebench.errors import UsageError

    if not task.supports_judge():
        raise UsageError(f"task {task.name!r} has no LLM matcher (--matcher llm)")
    jobs = [
        (i, name, prompt) for i, sample in enumerate(samples) for name, prompt in task.judge_prompts(sample)
    ]
    path = Path(out_dir) / JUDGMENTS
    cache = _load_cache(path)
    missing = list(dict.fromkeys(p for _, _, p in jobs if sha256_text(p) not in cache))
    backend.load()
    with open(path, "a", encoding="utf-8") as handle:
        for start in range(0, len(missing), batch_size):
            batch = missing[start : start + batch_size]
            outputs = backend.generate([Request(sha256_text(p), p) for p in batch])
            for prompt, output in zip(batch, outputs, strict=True):
                cache[sha256_text(prompt)] = output
                handle.write(
                    json.dumps({"key": sha256_text(prompt), "output": output}, ensure_ascii=False) + "\n"
                )
            handle.flush()
            os.fsync(handle.fileno())
            if progress:
                progress(start + len(batch), len(missing))
    answers: dict[int, dict[str, str]] = {}
    for i, name, prompt in jobs:
        answers.setdefault(i, {})[name] = cache[sha256_text(prompt)]
    rescored = [task.apply_judgments(sample, answers.get(i, {})) for i, sample in enumerate(samples)]
    unparsed = sum(s.get("judge_parsed") is False for s in rescored)
    if rescored and unparsed == len(rescored):
        from culturebench.errors import CultureBenchError

        example = next(iter(answers.get(0, {}).values()), "")
        raise CultureBenchError(
            f"the judge {backend.describe().get('model')} answered none of {len(rescored)} samples in the "
            f"asked form (first answer: {example[:80]!r}); nothing scored (answers cached in {path})"
        )
    summary = {
        "matcher": "llm",
        "judge": backend.describe(),
        "judge_prompts": len(jobs),
        "judge_calls": len(missing),
        "judge_unparsed": unparsed,  # samples whose judge answer was not in the asked form
        "judge_cache": str(path),
    }
    return rescored, summary
