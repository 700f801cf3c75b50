"""Read integer rubric ratings (1-5) for named criteria from an LLM judge's free text.

Rules (measured on ``tests/data/answers/ratings.yaml``; docs/evaluating.md, "How answers are
read"):

* The rubric's scale echoed back is never a rating: "(1-5)", "[1–5]", "(scale 1-5)", "on a
  scale of 1 to 5", "(where 5 is the best)" are removed first.
* A criterion's rating is looked for after a mention of its name, up to the next mention of
  another criterion: headed mentions (the name opening a line, as the requested format
  does) first, then mentions in running text.
* In that stretch the rating is, first, the value right after the name ("AUTHENTICITY: 4",
  "**Authenticity:** 4/5", "1. AUTHENTICITY - Rating: 4", "| Authenticity | 4 |",
  ``"authenticity": 4``, "Authenticity = four"); else the value of an explicit rating phrase
  ("Score: 4", "Rating: 4", "I would rate the authenticity as 4", "I'd give it a 3",
  "4 out of 5", "4/5"). Numbers in the reasons ("2 cups", "step 3") are not ratings.
* The first rating found is the criterion's ("3 (maybe 4)" is 3). A value that is not an
  integer from 1 to 5 ("3.5", "6", "0", "3-4") makes the criterion *missing*: it is counted,
  never imputed or rounded. The words one to five count as their integers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Bumped whenever a change can alter a rating read from some text (results.json ``parsers``).
VERSION = "2"

_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_NUM = r"(\d+(?:[.,]\d+)?(?:\s*[-–]\s*\d+(?![/\d]))?|one|two|three|four|five)\b"
_SCALES = [
    re.compile(
        r"[\(\[]\s*(?:rated\s+|on\s+)?(?:a\s+)?(?:scale\s*(?:of|from)?\s*:?\s*)?1\s*(?:-|–|—|to)\s*5"
        r"(?:\s*(?:scale|points?))?\s*[\)\]]",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?:on\s+)?(?:a|the)\s+(?:1\s*(?:-|–|to)\s*5\s+)?scale(?:\s+(?:of|from)\s+1\s*(?:-|–|—|to)\s*5)?",
        re.IGNORECASE,
    ),
    re.compile(r"\([^()\n]*\b(?:where|scale)\b[^()\n]*\)", re.IGNORECASE),
]
_RIGHT_AFTER = re.compile(
    r"^[\s*_#:=|\-—–\]\)\"'>.]*(?:(?:is|as|at|gets?|of)\s+(?:an?\s+)?)?"
    r"(?:(?:rating|score|grade)\s*(?:of\s*)?[\s*_:=|\-—–\"']*)?[\[\(]?\s*\**\s*" + _NUM,
    re.IGNORECASE,
)
_UNITS = (
    r"(?!\s*(?:cups?|tbsp|tsp|tablespoons?|teaspoons?|minutes?|mins?|hours?|grams?|g\b|kg|ml|l\b|%"
    r"|steps?|servings?|cloves?|eggs?|inch|cm|°))"
)
_PHRASES = [
    re.compile(
        r"\b(?:rating|score|grade)\b\s*(?:of|is|would\s+be|:|=|-|—)?[\s*_]*" + _NUM + _UNITS, re.IGNORECASE
    ),
    re.compile(
        r"\b(?:rate|rated|rating|give|given|gives|giving|deserves?|gets?|earns?|scores?|award(?:ed)?|assign(?:ed)?)\b"
        r"[^.\n\d]{0,50}?\b(?:as\s+|at\s+)?(?:an?\s+)?\**" + _NUM + _UNITS,
        re.IGNORECASE,
    ),
    re.compile(_NUM + r"\s*(?:/\s*5|out\s+of\s+(?:5|five))", re.IGNORECASE),
]


def _value(raw: str) -> int | None:
    raw = raw.strip().lower()
    if raw in _WORDS:
        return _WORDS[raw]
    return int(raw) if raw.isascii() and raw.isdigit() and 1 <= int(raw) <= 5 else None


def _without_scales(text: str) -> str:
    for pattern in _SCALES:
        text = pattern.sub(" ", text)
    return text


def parse_ratings(text: str, criteria: Sequence[str]) -> dict[str, int | None]:
    """The rating of each criterion in ``text``: an integer 1-5, or None when missing or
    not a valid rating (see the module docstring for the rules)."""
    text = _without_scales(text or "")
    mentions = sorted(
        (m.start(), m.end(), c)
        for c in criteria
        for m in re.finditer(rf"(?<![A-Za-z]){re.escape(c)}(?![A-Za-z])", text, re.IGNORECASE)
    )
    out: dict[str, int | None] = {}
    for criterion in criteria:
        own = [(i, s, e) for i, (s, e, c) in enumerate(mentions) if c == criterion]
        headed = [m for m in own if _opens_line(text, m[1])]
        out[criterion] = None
        for group in (headed, [m for m in own if m not in headed]):
            found = _first_rating(text, mentions, group)
            if found is not None:
                out[criterion] = found[0]
                break
    return out


def _opens_line(text: str, start: int) -> bool:
    line = text[text.rfind("\n", 0, start) + 1 : start]
    return re.fullmatch(r"[\s*_#|>\-•\d.)\[\"{,]*", line) is not None


def _first_rating(
    text: str, mentions: list[tuple[int, int, str]], group: list[tuple[int, int, int]]
) -> tuple[int | None] | None:
    """(value,) of the first mention in ``group`` followed by a rating, or None."""
    for index, _, end in group:
        criterion = mentions[index][2]
        stop = next((s for s, _, c in mentions[index + 1 :] if c != criterion), len(text))
        stretch = text[end:stop]
        right = _RIGHT_AFTER.match(stretch)
        if right:
            return (_value(right.group(1)),)
        hits = [m for p in _PHRASES for m in [p.search(stretch)] if m]
        if hits:
            return (_value(min(hits, key=lambda m: m.start()).group(1)),)
    return None
