"""Read integer rubric ratings (1-5) for named criteria from an LLM judge's free text.

Rules (measured on ``tests/data/answers/ratings.yaml``; docs/evaluating.md, "How answers are
read"):

* The rubric's scale echoed back is never a rating: "(1-5)", "[1–5]", "(scale 1-5)", "(out
  of 5)", "(1 = worst, 5 = best)", "on a scale of 1 to 5" are removed first.
* A criterion's rating is looked for around each mention of its name, headed mentions (the
  name opening a line, as the requested format does) first:
  1. the value right after the name, past separators and a few linking words:
     "AUTHENTICITY: 4", "**Authenticity:** 4/5", "1. AUTHENTICITY - Rating: 4",
     "| Authenticity | 4 |", ``"authenticity": 4``, "AUTHENTICITY → 5", "AUTHENTICITY: <3>",
     "Authenticity — a solid four", "Authenticity: I'd say 3", "For SENSITIVITY, a four",
     "authenticity is a 4", "give harmony a 3";
  2. the value before the name: "earns a 2 for authenticity", "a 5 for sensitivity";
  3. a rating phrase before the next criterion's name: "Score: 4", "Rating: 5", "I'd give it
     a 5", "4 out of a possible 5", "4/5", "[4]", ", a 3,".
  A table with the criteria as its columns is read by column.
* Numbers with a unit ("2 tablespoons", "4 minutes", "350°F") or inside a decimal are never
  ratings. The first rating found is the criterion's ("3 (maybe 4)" is 3).
* A value that is not an integer from 1 to 5 ("3.5", "6", "0"), a range or a choice ("3-4",
  "2 to 3", "3 or 4") and a fraction of another scale ("3/4") make the criterion *missing*:
  counted, never imputed or rounded. The words one to five count as their integers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

#: Bumped whenever a change can alter a rating read from some text (results.json ``parsers``).
VERSION = "2"

# A rating is looked for at most this far after a mention, and at most this many mentions of a
# criterion are tried: a judge's answer is short, and a pathological one stays linear.
STRETCH = 2000
MAX_MENTIONS = 50
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_NUM = r"(\d+(?:[.,]\d+)?|one|two|three|four|five)\b"
# what may follow a number that is a single rating: not a unit, not a range, not "/4"
_TAIL = re.compile(r"[ \t]*(?:-|–|—|to|or|/|out\s+of)[ \t]*(\d+)", re.IGNORECASE)
_UNITS = re.compile(
    r"\s*(?:cups?|tbsp|tsp|tablespoons?|teaspoons?|minutes?|mins?|hours?|seconds?|pounds?|lbs?|ounces?|oz"
    r"|grams?|g\b|kg|ml|l\b|%|°|degrees?|steps?|servings?|cloves?|eggs?|inch(?:es)?|cm|times?|pieces?|slices?)",
    re.IGNORECASE,
)
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
    re.compile(
        r"\([^()\n]*(?:\bwhere\b|\bscale\b|\bworst\b|\bbest\b|=|\bout\s+of\b)[^()\n]*\)", re.IGNORECASE
    ),
]
_SEPS = r"[\s*_#:=|\-—–→>\]\)\"'.,<\[(]*"
_RIGHT_AFTER = re.compile(
    "^"
    + _SEPS
    + r"(?:(?:I'd|I’d|I\s+would|I\s+will|I'll|I)\s+(?:say|give(?:\s+it)?|rate(?:\s+it)?|put\s+it\s+at)\s+)?"
    r"(?:(?:is|as|at|gets?|of|scores?|rated|deserves?|earns?)\s+)?"
    r"(?:(?:also|still|easily|clearly|probably|likely|just|only|definitely|then)\s+)?(?:(?:a|an)\s+)?"
    r"(?:(?:solid|strong|weak|fair|good|clear|firm|low|high)\s+)?"
    r"(?:(?:rating|score|grade)\s*(?:of\s*)?[\s*_:=|\-—–\"']*)?[\[\(<]?\s*\**\s*" + _NUM,
    re.IGNORECASE,
)
_PHRASES = [
    re.compile(r"\b(?:rating|score|grade)\b\s*(?:of|is|would\s+be|:|=|-|—)?[\s*_]*" + _NUM, re.IGNORECASE),
    re.compile(
        r"\b(?:rate|rated|rating|give|given|gives|giving|deserves?|gets?|earns?|scores?|award(?:ed)?|assign(?:ed)?|say)\b"
        r"[^.\n\d]{0,50}?\b(?:as\s+|at\s+)?(?:an?\s+)?\**" + _NUM,
        re.IGNORECASE,
    ),
    re.compile(
        _NUM + r"\s*(?=/\s*5|out\s+of\s+(?:a\s+)?(?:possible\s+|maximum\s+(?:of\s+)?)?(?:5|five))",
        re.IGNORECASE,
    ),
    re.compile(r"[\[<]\s*" + _NUM + r"\s*[\]>]", re.IGNORECASE),
    re.compile(r"(?:^|[,;:—–])\s*(?:an?\s+)" + _NUM + r"(?=\s*[,.;:)]|\s*$)", re.IGNORECASE | re.MULTILINE),
]


def _value(text: str, match: re.Match[str]) -> int | bool | None:
    """The rating a number match gives: an int, None (invalid), or False (not a rating at
    all: a quantity with a unit)."""
    raw = match.group(match.lastindex or 1).strip().lower()
    after = text[match.end(match.lastindex or 1) :]
    if _UNITS.match(after):
        return False
    tail = _TAIL.match(after)
    if tail and tail.group(1) is not None:
        joined = tail.group(0)
        if re.match(r"\s*(?:/|out\s+of)", joined, re.IGNORECASE):
            if tail.group(1) != "5":
                return None  # "3/4": another scale
        else:
            return None  # "3-4", "2 to 3", "3 or 4"
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
    by_table = _table_columns(text, criteria)
    mentions = sorted(
        (m.start(), m.end(), c)
        for c in criteria
        for m in re.finditer(rf"(?<![A-Za-z]){re.escape(c)}(?![A-Za-z])", text, re.IGNORECASE)
    )
    # where each mention's stretch ends: the next mention of another criterion (one pass)
    stops = [len(text)] * len(mentions)
    next_start: dict[str, int] = {}
    for i in range(len(mentions) - 1, -1, -1):
        start, _, criterion = mentions[i]
        stops[i] = min((v for c, v in next_start.items() if c != criterion), default=len(text))
        next_start[criterion] = start
    out: dict[str, int | None] = {}
    for criterion in criteria:
        if criterion in by_table:
            out[criterion] = by_table[criterion]
            continue
        own = [(i, s, e) for i, (s, e, c) in enumerate(mentions) if c == criterion][:MAX_MENTIONS]
        headed = [m for m in own if _opens_line(text, m[1])]
        ordered = headed + [m for m in own if m not in headed]
        out[criterion] = _rating(text, stops, ordered, criterion)
    return out


def _rating(text: str, stops: list[int], ordered: list[tuple[int, int, int]], criterion: str) -> int | None:
    stretches = []
    for index, _start, end in ordered:
        stretches.append(text[end : min(stops[index], end + STRETCH)])
        value = _first(stretches[-1], [_RIGHT_AFTER])
        if value is not False:
            return value
    value = _first(text, [_before(criterion)])
    if value is not False:
        return value
    for stretch in stretches:
        value = _first(stretch, _PHRASES)
        if value is not False:
            return value
    return None


@lru_cache(maxsize=64)
def _before(criterion: str) -> re.Pattern[str]:
    """A value written before the criterion's name: "earns a 2 for authenticity"."""
    return re.compile(
        r"(?:\b(?:an?)\s+)?"
        + _NUM
        + rf"(?:\s*/\s*5)?\s+(?:for|on|in)\s+(?:the\s+|its\s+)?{re.escape(criterion)}",
        re.IGNORECASE,
    )


def _first(text: str, patterns: Sequence[re.Pattern[str]]) -> int | bool | None:
    """The value of the earliest rating any pattern finds (skipping quantities), or False."""
    hits = sorted((m for p in patterns for m in p.finditer(text)), key=lambda m: m.start())
    for match in hits:
        value = _value(text, match)
        if value is not False:
            return value
    return False


def _opens_line(text: str, start: int) -> bool:
    line = text[text.rfind("\n", 0, start) + 1 : start]
    return re.fullmatch(r"[\s*_#|>\-•\d.)\[\"{,]*(?:for\s+)?", line, re.IGNORECASE) is not None


def _table_columns(text: str, criteria: Sequence[str]) -> dict[str, int | None]:
    """Ratings from a markdown table whose header row names the criteria as columns."""
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.strip().startswith("|")]
    for i, header in enumerate(rows):
        names = [cell.strip().strip("*").lower() for cell in header]
        columns = {c: names.index(c.lower()) for c in criteria if c.lower() in names}
        if not columns:
            continue
        for row in rows[i + 1 :]:
            cells = [cell.strip().strip("*").strip() for cell in row]
            if all(
                j < len(cells) and re.fullmatch(r"\d+(?:\.\d+)?(?:\s*/\s*5)?", cells[j])
                for j in columns.values()
            ):
                values = {}
                for c, j in columns.items():
                    match = re.match(_NUM, cells[j])
                    values[c] = _value(cells[j], match) if match else None
                return {c: (None if v is False else v) for c, v in values.items()}
    return {}
