"""Score with an LLM matcher instead of the deterministic one (``--matcher llm``), or replay
a matcher's recorded answers (``--matcher recorded``).

A task that supports it declares, per sample, the judge prompts it needs
(``Task.judge_prompts``, answers named ``Task.judge_names``) and how to turn the judge's
answers into scores (``Task.apply_judgments``). :func:`run_judge` runs the prompts through
any backend, in batches, with every answer cached by the prompt's sha256 in
``judgments.jsonl`` next to the samples: a rerun, or the same (dish, seed) answer scored
twice, costs no second call. :func:`replay_judgments` takes the answers from where they were
recorded (the WWD authors' GPT-3.5 judgments, one row per dish and seed) instead of a model:
the same prompts are built and the same ``apply_judgments`` scores them, and each judged
sample names the file and row its answers came from (``judge_source``); the prompt and the
answer of every judgment are kept in ``judgments_recorded.jsonl``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.eval.backends.base import Backend, Request
from culturebench.eval.tasks.base import Task
from culturebench.hashing import sha256_text

JUDGMENTS = "judgments.jsonl"
RECORDED_JUDGMENTS = "judgments_recorded.jsonl"
#: ``judge=`` value of :func:`culturebench.eval.score.score_tasks` that replays recorded answers
RECORDED = "recorded"


@dataclass(frozen=True)
class RecordedJudgment:
    """The judge's answers for one sample as recorded (by judgment name), and where."""

    answers: dict[str, str]
    source: str  # "<file> row <n>"


def _load_cache(path: Path) -> dict[str, str]:
    cache: dict[str, str] = {}
    if path.is_file():
        text = path.read_bytes().decode("utf-8", errors="replace")
        for line in text.split("\n"):  # not splitlines(): U+2028
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a torn last line of a killed run (or a damaged one): asked again
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("key"), str)
                and isinstance(entry.get("output"), str)
            ):
                cache[entry["key"]] = entry["output"]
    return cache


def answer_cached(
    backend: Backend,
    prompts: Sequence[str],
    path: Path,
    *,
    batch_size: int = 8,
    progress: Callable[[int, int], None] | None = None,
    json_schema: str | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Every prompt's answer by ``backend``, each asked once: answers are kept by the prompt's
    sha256 in ``path`` (JSON Lines, fsynced per batch), so a rerun, or the same prompt twice,
    costs no second call. Returns the cache and the prompts that were asked now."""
    cache = _load_cache(path)
    missing = list(dict.fromkeys(p for p in prompts if sha256_text(p) not in cache))
    backend.load()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        for start in range(0, len(missing), batch_size):
            batch = missing[start : start + batch_size]
            outputs = backend.generate([Request(sha256_text(p), p, json_schema=json_schema) for p in batch])
            for prompt, output in zip(batch, outputs, strict=True):
                cache[sha256_text(prompt)] = output
                handle.write(
                    json.dumps({"key": sha256_text(prompt), "output": output}, ensure_ascii=False) + "\n"
                )
            handle.flush()
            os.fsync(handle.fileno())
            if progress:
                progress(start + len(batch), len(missing))
    return cache, missing


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
    cache, missing = answer_cached(
        backend, [p for _, _, p in jobs], path, batch_size=batch_size, progress=progress
    )
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
            f"asked form (first answer: {example[:80]!r}); nothing scored, nothing written"
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


def replay_judgments(
    task: Task,
    samples: Sequence[dict[str, Any]],
    recorded: Sequence[RecordedJudgment | None],
    out_dir: Path,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Samples re-scored with recorded judge answers (``recorded[i]`` for ``samples[i]``) and a
    summary for the provenance. A sample whose judgment is missing (no record, or an empty
    cell) is unscored and counted (``judge_missing``); an answer not in the asked form is
    unscored and counted as with a live judge (``judge_unparsed``). A recorded judgment of an
    answer the task's parser cannot read (no list where one was asked) is still the sample's
    score, as it was in the recording's own table, and is counted (``judge_on_unparsed``)."""
    from culturebench.atomic import write_text_atomic
    from culturebench.errors import CultureBenchError, UsageError
    from culturebench.jsonsafe import json_text

    if not task.supports_judge() or task.metric is None:
        raise UsageError(f"task {task.name!r} has no LLM matcher to replay (--matcher recorded)")
    metric = task.metric
    rescored: list[dict[str, Any]] = []
    lines: list[str] = []
    missing = prompts_total = judged = 0
    on_unparsed = 0
    first_missing = ""
    for sample, record in zip(samples, recorded, strict=True):
        prompts: list[tuple[str, str | None]] = list(task.judge_prompts(sample))
        names = [name for name, _ in prompts] or list(task.judge_names)
        answers = (
            {}
            if record is None
            else {name: record.answers[name] for name in names if str(record.answers.get(name) or "").strip()}
        )
        if not prompts:
            # Nothing our parser can give the judge (an answer that is no list): the recorded
            # judgment still is the row's score, as it was in the authors' table; counted.
            if record is None or len(answers) < len(names):
                rescored.append({**task.apply_judgments(sample, {}), "matcher": RECORDED})
                continue
            on_unparsed += 1
            prompts = [(name, None) for name in names]
        prompts_total += len(prompts)
        judged += 1
        if record is None or len(answers) < len(prompts):
            missing += 1
            first_missing = first_missing or (record.source if record else f"sample {sample['id']}")
            rescored.append({**sample, metric: None, "matcher": RECORDED, "judge_missing": True})
            continue
        for name, prompt in prompts:
            lines.append(
                json_text(
                    {"sample": sample["id"], "name": name, "key": sha256_text(prompt) if prompt else None,
                     "prompt": prompt, "output": answers[name], "source": record.source},
                    sort_keys=True,
                )
            )  # fmt: skip
        scored = task.apply_judgments({**sample, "matcher": RECORDED}, answers)
        extra = {"judge_on_unparsed": True} if prompts[0][1] is None else {}
        rescored.append({**scored, "matcher": RECORDED, "judge_source": record.source, **extra})
    if missing:  # judgments recorded for some rows only: the recording is not the one scored
        raise CultureBenchError(
            f"{first_missing}: no recorded judgment ({', '.join(task.judge_names)}) of task {task.name!r}; "
            f"{missing} of {judged} judged samples lack one, and --matcher recorded scores a "
            "recording only whole (nothing written)"
        )
    unparsed = sum(s.get("judge_parsed") is False for s in rescored)
    if judged and missing + unparsed == judged:
        raise CultureBenchError(
            f"no recorded judgment of task {task.name!r} could be used ({missing} missing, {unparsed} "
            "not in the asked form): nothing scored"
        )
    path = Path(out_dir) / RECORDED_JUDGMENTS
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(lines))
    sources = sorted({r.source.rsplit(" row ", 1)[0] for r in recorded if r is not None})
    summary = {
        "matcher": RECORDED,
        "judge": {"backend": RECORDED, "model": ", ".join(sources)},
        "judge_prompts": prompts_total,
        "judge_calls": 0,
        "judge_missing": missing,  # samples left unscored: no recorded judgment
        "judge_unparsed": unparsed,
        # judged by the recorded matcher although our parser reads no answer (e.g. a refusal
        # where a list was asked): scored by the recorded judgment, as the authors' table was
        "judge_on_unparsed": on_unparsed,
        "judge_cache": str(path),
    }
    return rescored, summary
