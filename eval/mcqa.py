"""Deterministic answer-letter extraction for multiple-choice tasks and the shared scoring.

Rules, first match wins (never a random fallback: no letter means *unparseable*, scored wrong
and counted):

1. an ``<answer>X</answer>`` tag;
2. the output starts with the letter (after spaces, brackets, ``图``/``Option (``/``选项``),
   as the FoodieQA prompts end with "答案为：图" / "Option (" for the model to complete;
3. an explicit statement: ``answer is X``, ``答案(是|为)X``, ``ответ: X``, ``Option (X)``,
   ``图X``, ``вариант X``;
4. exactly one standalone letter A-D anywhere in the output.

Cyrillic А, В, С (look-alikes of A, B, C) are read as the Latin letters.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from culturebench.mcq import LETTERS

_HOMOGLYPHS = str.maketrans({"А": "A", "В": "B", "С": "C", "а": "a", "в": "b", "с": "c"})
_TAG = re.compile(r"<answer>\s*\(?([A-D])\)?\s*</answer>", re.IGNORECASE)
_LEADING = re.compile(r"^\s*(?:图|选项|option\s*|вариант\s*)?[\(\[（【]?\s*([A-D])(?![A-Za-z])")
_STATED = re.compile(
    r"(?:answer\s*(?:is|:)\s*|答案\s*(?:是|为|：|:)\s*图?|ответ\s*(?:—|-|:)?\s*|option\s*\(|图|вариант\s*)"
    r"\(?\s*([A-D])(?![A-Za-z])",
    re.IGNORECASE,
)
_STANDALONE = re.compile(r"(?<![A-Za-z])([A-D])(?![A-Za-z])")


def extract_letter(output: str) -> str | None:
    """The answer letter of a model output, or None when none can be extracted."""
    text = (output or "").translate(_HOMOGLYPHS)
    for pattern in (_TAG, _LEADING, _STATED):
        match = pattern.search(text)
        if match:
            return match.group(1).upper()
    found = set(_STANDALONE.findall(text))
    return found.pop() if len(found) == 1 else None


def score_letter(output: str, gold: int) -> dict[str, Any]:
    """``pred`` (letter or None), ``parsed`` and ``correct`` (unparseable = wrong)."""
    pred = extract_letter(output)
    return {"pred": pred, "parsed": pred is not None, "correct": pred == LETTERS[gold]}


def accuracy_block(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """n, accuracy, unparseable count and rate of a group of scored samples."""
    n = len(samples)
    correct = sum(bool(s["correct"]) for s in samples)
    unparsed = sum(not s["parsed"] for s in samples)
    return {
        "n": n,
        "accuracy": correct / n if n else None,
        "unparseable": unparsed,
        "unparseable_rate": unparsed / n if n else None,
    }


def wrong_positions(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Which slot the model picked when it was wrong (parsed answers only), as counts and
    shares, next to the gold positions: the paper's position-bias table (RuBIN Table 5)."""
    wrong = Counter(s["pred"] for s in samples if s["parsed"] and not s["correct"])
    gold = Counter(LETTERS[s["gold"]] for s in samples)
    total = sum(wrong.values())
    return {
        "wrong_picks": {k: wrong.get(k, 0) for k in LETTERS},
        "wrong_share": {k: (wrong.get(k, 0) / total if total else None) for k in LETTERS},
        "gold_positions": {k: gold.get(k, 0) for k in LETTERS},
    }
