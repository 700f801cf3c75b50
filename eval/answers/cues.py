"""The cue words of ``eval/data/answer_cues.yaml``, compiled once per role.

Every language's cues are matched in every answer (models often answer in another language
than asked). Matching is case-insensitive on a *folded* copy of the answer (:func:`fold`: ё
read as е, the apostrophes ’ ʼ as ', same length, so offsets carry over)."""

from __future__ import annotations

import re
from functools import cache, lru_cache
from pathlib import Path

from culturebench.yamlio import load_yaml

CUES = Path(__file__).resolve().parents[1] / "data" / "answer_cues.yaml"
_FOLD = str.maketrans({"ё": "е", "Ё": "Е", "’": "'", "ʼ": "'", "‘": "'"})


@lru_cache(maxsize=8)
def fold(text: str) -> str:
    """``text`` with ё as е and every apostrophe as ' (the same length); kept for the last few
    texts, as every step of a reader asks for the same answer's folded copy."""
    return text.translate(_FOLD)


@lru_cache(maxsize=1)
def _entries() -> dict[str, dict[str, list[str]]]:
    return load_yaml(CUES)


def _bounded(entry: str) -> str:
    """An entry that starts (ends) with a letter may not continue a word on that side; an
    entry in Chinese needs no boundary."""
    if re.search(r"[\u4e00-\u9fff]", entry):
        return entry
    head = r"(?<!\w)" if re.match(r"[^\W\d_(]", entry) else ""
    tail = r"(?!\w)" if re.search(r"(?:[^\W\d_]|\\w\*|\))$", entry) else ""
    return f"{head}(?:{entry}){tail}"


#: roles made of other roles
_UNIONS = {"context_any": ("context", "context_also")}


def alternatives(role: str) -> str:
    """One regular expression source matching any cue of ``role`` in any language."""
    roles = _UNIONS.get(role, (role,))
    entries = [e for r in roles for words in _entries()[r].values() for e in words]
    entries.sort(key=len, reverse=True)  # the longest alternative first ("но нет" before "но")
    return "(?:" + "|".join(_bounded(str(e)) for e in entries) + ")"


@cache
def pattern(role: str) -> re.Pattern[str]:
    """The compiled cue pattern of ``role`` (a top-level key of the cue file)."""
    return re.compile(alternatives(role), re.IGNORECASE)


@cache
def opening(role: str) -> re.Pattern[str]:
    """``role``'s cue at the start of a stretch, after list marks and markdown."""
    return re.compile(r"[\s\W_\d]{0,12}?" + alternatives(role), re.IGNORECASE)  # used with .match(text, pos)


@lru_cache(maxsize=1)
def negation_before() -> re.Pattern[str]:
    """A negation, then only filler words, right before the end of a stretch: "не из ",
    "not a "."""
    fillers = alternatives("negation_fillers")
    return re.compile(alternatives("negation_before") + rf"(?:[\s,]+{fillers})*[\s«\"*]*$", re.IGNORECASE)
