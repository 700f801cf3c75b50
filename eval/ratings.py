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
from collections.abc import Mapping, Sequence
from functools import lru_cache

from culturebench.eval.answers import spans
from culturebench.eval.answers.reading import Reading

#: Bumped whenever a change can alter a rating read from some text (results.json ``parsers``).
VERSION = "4"

# A rating is looked for at most this far after a mention, and at most this many mentions of a
# criterion are tried: a judge's answer is short, and a pathological one stays linear.
STRETCH = 2000
MAX_MENTIONS = 50
_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "один": 1, "одна": 1, "одну": 1, "одне": 1, "два": 2, "две": 2, "дві": 2, "три": 3,
    "четыре": 4, "чотири": 4,
    "пять": 5, "п'ять": 5, "пʼять": 5, "п’ять": 5,
    "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
}  # fmt: skip
_NUM = (
    r"(\d+(?:[.,]\d+)?(?!\d)|(?:one|two|three|four|five|один|одна|одну|одне|два|две|дві|три|четыре|чотири|пять"
    r"|п['ʼ’]ять)(?![\w'ʼ’])|[一二两三四五](?=\s*分))"
)
# what may follow a number that is a single rating: not a unit, not a range, not "/4"
_TAIL = re.compile(r"[ \t]*(?:-|–|to|or|/|out\s+of|из|з|із)[ \t]*(\d+)(?!\s*%)", re.IGNORECASE)
_UNITS = re.compile(
    r"\s*(?:cups?|tbsp|tsp|tablespoons?|teaspoons?|minutes?|mins?|hours?|seconds?|pounds?|lbs?|ounces?|oz"
    r"|grams?|g\b|kg|ml|l\b|%|°|degrees?|steps?|servings?|cloves?|eggs?|inch(?:es)?|cm|times?|pieces?|slices?)",
    re.IGNORECASE,
)
_OF_COUNT = re.compile(
    r"\s+(?:of|из|з|із)\s+(?:(?:the|its)\s+(?:\d+|\w+\s+\d+)|(?!5\b)\d+|\w+\s+\d+)", re.IGNORECASE
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
_SEPS = r"[\s*_#:：=|\-—–→>\]\)\"'.,<\[(]*"
_RIGHT_AFTER = re.compile(
    "^"
    + _SEPS
    + r"(?:(?:I'd|I’d|I\s+would|I\s+will|I'll|I)\s+(?:say|give(?:\s+it)?|rate(?:\s+it)?|put\s+it\s+at)\s+)?"
    r"(?:(?:я\s+)?(?:бы\s+|б\s+)?(?:оценил[аи]?|оцениваю|оценю|ставлю|поставил[аи]?|поставлю|даю|дал[аи]?|оцінив|оцінила"
    r"|оцінюю|оціню|поставив|поставила|поставлю|даю|дав|дала|повышаю|понижаю|підвищую|знижую)\s+(?:бы\s+|б\s+)?"
    r"(?:(?:её|его|её|її|його|\w+)\s+)?)?"
    r"(?:(?:is|as|at|gets?|of|scores?|rated|deserves?|earns?|should\s+be|would\s+be|is\s+now|becomes?|now|goes\s+to|to"
    r"|на|до|в|打|给|为|是|得|应为|应该是|应该为)\s*)?"
    r"(?:(?:also|still|easily|clearly|probably|likely|just|only|definitely|then)\s+)?(?:(?:a|an)\s+)?"
    r"(?:(?:solid|strong|weak|fair|good|clear|firm|low|high|middling|moderate|average|decent|excellent|poor|mediocre"
    r"|okay|ok)\s+)?"
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
    re.compile(r"[\[<(]\s*" + _NUM + r"\s*[\]>)]", re.IGNORECASE),
    re.compile(
        r"(?<![\w])(?:ставлю|ставим|поставлю|поставил[аи]?|даю|дам|оцениваю|оценю|оцінюю|оціню|поставлю|поставив)"
        r"\s+(?:ей\s+|ему\s+|їй\s+|йому\s+)?(?:на\s+)?" + _NUM,
        re.IGNORECASE,
    ),
    re.compile(r"(?:给|打|评)\s*" + _NUM + r"\s*分?"),
    re.compile(r"[:：]\s*" + _NUM + r"(?=\s*(?:[.;,。；]|$))", re.IGNORECASE | re.MULTILINE),
    re.compile(
        r"\b(?:so|hence|thus|therefore|overall|итого|поэтому|значит|отже|тому|所以)\s*[,:—–-]?\s*(?:an?\s+|a\s+solid\s+)?"
        + _NUM,
        re.IGNORECASE,
    ),
    re.compile(r"(?:^|[,;:—–])\s*(?:an?\s+)" + _NUM + r"(?=\s*[,.;:)]|\s*$)", re.IGNORECASE | re.MULTILINE),
]


def _value(text: str, match: re.Match[str]) -> int | bool | None:
    """The rating a number match gives: an int, None (invalid), or False (not a rating at
    all: a quantity with a unit)."""
    raw = match.group(match.lastindex or 1).strip().lower()
    after = text[match.end(match.lastindex or 1) :]
    if re.match(r"\s*(?:%|[½¼¾⅓⅔])", after):
        return None  # a percentage: another scale
    if _UNITS.match(after) or _OF_COUNT.match(after):
        return False
    tail = _TAIL.match(after)
    if tail and tail.group(1) is not None:
        joined = tail.group(0)
        if re.match(r"\s*(?:/|out\s+of|из|з|із)", joined, re.IGNORECASE):
            if tail.group(1) != "5":
                return None  # "3/4": another scale
        else:
            return None  # "3-4", "2 to 3", "3 or 4"
    if raw in _WORDS:
        return _WORDS[raw]
    number = raw.replace(",", ".")
    if re.fullmatch(r"\d+\.0+", number):
        number = number.split(".")[0]  # "4.0" is 4
    return int(number) if number.isascii() and number.isdigit() and 1 <= int(number) <= 5 else None


def _without_scales(text: str) -> str:
    for pattern in _SCALES:
        text = pattern.sub(" ", text)
    return text


def parse_ratings(
    text: str, criteria: Sequence[str], names: Mapping[str, Sequence[str]] | None = None
) -> dict[str, int | None]:
    """The rating of each criterion in ``text``: an integer 1-5, or None when missing or
    not a valid rating (see the module docstring for the rules)."""
    return {c: r.value for c, r in read_ratings(text, criteria, names).items()}


def read_ratings(
    text: str, criteria: Sequence[str], names: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Reading]:
    r"""Each criterion's committed rating as a :class:`Reading` (None with ``missing``,
    ``invalid`` or ``conflict``). ``names`` gives a criterion's other names, as regular
    expression fragments (translations, inflected stems: ``аутентичн\w*``)."""
    raw = text or ""
    start, end = spans.focus(raw)
    text = _without_scales(raw[start:end])
    name_re = {c: _name_pattern(c, tuple((names or {}).get(c, ()))) for c in criteria}
    by_table = _table_columns(text, criteria, name_re)
    by_json = _json_ratings(text, criteria, name_re)
    mentions = sorted((m.start(), m.end(), c) for c in criteria for m in name_re[c].finditer(text))
    # where each mention's stretch ends: the next mention of another criterion (one pass)
    stops = [len(text)] * len(mentions)
    next_start: dict[str, int] = {}
    for i in range(len(mentions) - 1, -1, -1):
        begin, _, criterion = mentions[i]
        stops[i] = min((v for c, v in next_start.items() if c != criterion), default=len(text))
        next_start[criterion] = begin
    others = "|".join(p.pattern for p in name_re.values())
    out: dict[str, Reading] = {}
    for criterion in criteria:
        stated: list[tuple[int, int | None]] = [*by_json.get(criterion, [])]
        if criterion in by_table:
            stated.append(by_table[criterion])
        own = [(i, s, e) for i, (s, e, c) in enumerate(mentions) if c == criterion][:MAX_MENTIONS]
        for index, begin, stop in own:
            stretch = text[stop : min(stops[index], stop + STRETCH)]
            if criterion in by_table and _in_table_line(text, begin):
                continue  # the table's own cells are read by column
            match = _RIGHT_AFTER.match(stretch)
            if match and _belongs_to_next(text, stop, match, others):
                continue  # "a 5 for sensitivity", "3 — Authenticity / 4 — Sensitivity": another criterion's
            value = _value(stretch, match) if match else False
            if value is not False:
                stated.append((begin, value))
                amended = _AMENDED.match(stretch, match.end()) if match else None
                if amended:  # "2 → 3 after re-reading", "4 — no wait, 3"
                    stated.append((stop + amended.start(1), _value(stretch, amended)))
        name = name_re[criterion].pattern
        for pattern in (_before(name), _value_first(name), _bracketed_first(name), _value_then_name(name)):
            for match in pattern.finditer(text):
                value = _value(text, match)
                if value is not False:
                    stated.append((match.start(), value))
        if not stated:
            for index, _begin, stop in own:
                value = _first(text[stop : min(stops[index], stop + STRETCH)], _PHRASES)
                if value is not False:
                    stated.append((stop, value))
                    break
        out[criterion] = _resolve(text, sorted(stated, key=lambda s: s[0]))
    return out


_AMENDED = re.compile(
    r"\s*(?:→|->|=>|[—–,-]?\s*(?:no\s+wait|wait|actually|sorry|make\s+it|нет|ні|точнее|вернее|точніше|вірніше"
    r"|(?:revised|changed|raised|lowered|updated|bumped)\s+(?:it\s+)?to|(?:повышаю|понижаю|підвищую|знижую)\s+до"
    r"|(?:исправляю|змінюю|виправляю)\s+на)\s*,?)\s*" + _NUM,
    re.IGNORECASE,
)


def _belongs_to_next(text: str, stop: int, match: re.Match[str], others: str) -> bool:
    """Whether the value right after a criterion's name is the next criterion's: "a 5 for
    sensitivity", or a value opening the next line before the next name ("3 — Authenticity\n4 —
    Sensitivity"); not "AUTHENTICITY: 4 | SENSITIVITY: 2" (a value after its own name's colon)."""
    after = text[stop + match.end() : stop + match.end() + 80]
    stretch = text[stop : stop + match.end()]
    if re.match(
        rf"\s*(?:/\s*5)?\s*(?:for|on|in|за|по)\s+(?:the\s+|its\s+)?(?:{others})", after, re.IGNORECASE
    ):
        return True
    opens_line = "\n" in stretch[: match.start(match.lastindex or 1)]
    return (
        opens_line
        and re.match(rf"(?:\s*/\s*5)?[ \t*]*[—–\-:=|][ \t*]*(?:{others})", after, re.IGNORECASE) is not None
    )


def _in_table_line(text: str, pos: int) -> bool:
    return text[text.rfind("\n", 0, pos) + 1 : pos].lstrip().startswith("|")


def _resolve(text: str, stated: list[tuple[int, int | None]]) -> Reading:
    """One criterion's reading from every value stated for it, in order: one value is it; a
    later value after a stated revision ("on reflection", "revised", "final") wins; two
    values and no revision are a conflict."""
    if not stated:
        return Reading.unparsed("missing")
    values = [v for _, v in stated]
    if len(set(values)) > 1:
        first_other = next(p for p, v in stated if v != values[0])
        revision = _REVISION.search(text, stated[0][0], stated[-1][0] + 1)
        if revision is None or revision.start() > stated[-1][0]:
            return Reading.unparsed("conflict")
        revised = [v for p, v in stated if p >= revision.start()] or [values[-1]]
        if len(set(revised)) > 1 and first_other >= revision.start():
            return Reading.unparsed("conflict")
        value = revised[-1]
    else:
        value = values[0]
    return Reading(value) if value is not None else Reading.unparsed("invalid")


_REVISION = re.compile(
    r"revis\w*|on\s+reflection|on\s+second\s+thought|correct(?:ion|ed)|updat\w*|actually|no\s+wait|wait|chang\w*|"
    r"adjust\w*|after\s+re-?\w+|no\s+wait|thinking\s+(?:about\s+it\s+)?again|reconsider\w*|second\s+look|lower\w*\s+(?:it|my|the|\w+\s+to)|rais\w*\s+(?:it|my|the|\w+\s+to)|final|→|->|"
    r"повыша\w*|понижа\w*|підвищу\w*|знижу\w*|пересмотр\w*|исправ\w*|уточн\w*|передума\w*|на\s+самом\s+деле|итогов\w*|окончательн\w*|"
    r"переглян\w*|виправ\w*|уточн\w*|насправді|підсумков\w*|остаточн\w*|修改|修正|更正|最终|调整",
    re.IGNORECASE,
)


@lru_cache(maxsize=64)
def _name_pattern(criterion: str, names: tuple[str, ...]) -> re.Pattern[str]:
    """A criterion's name or any of its other names, not inside a longer word."""
    alternatives = [re.escape(criterion), *names]
    letters = r"A-Za-zА-Яа-яЁёІіЇїЄєҐґ"
    return re.compile(rf"(?<![{letters}])(?:{'|'.join(alternatives)})(?![{letters}])", re.IGNORECASE)


@lru_cache(maxsize=64)
def _value_first(name: str) -> re.Pattern[str]:
    """A value opening a line before the criterion's name: "3 — Authenticity"."""
    return re.compile(
        r"(?:^|\n)[ \t*#>\-•]*" + _NUM + r"(?:\s*/\s*5)?[ \t*]*(?:—|–|-|:|=|\||for)[ \t*]*" + rf"(?:{name})",
        re.IGNORECASE,
    )


@lru_cache(maxsize=64)
def _bracketed_first(name: str) -> re.Pattern[str]:
    """A bracketed value opening a line before the name: "[4] AUTHENTICITY — …"."""
    return re.compile(
        r"(?:^|\n)[ \t*#>\-•]*[\[(]\s*" + _NUM + rf"(?:\s*/\s*5)?\s*[\])][ \t*:—–-]*(?:{name})", re.IGNORECASE
    )


@lru_cache(maxsize=64)
def _value_then_name(name: str) -> re.Pattern[str]:
    """A value with the name in parentheses after it: "Score = 2 (AUTHENTICITY)"."""
    return re.compile(_NUM + rf"(?:\s*/\s*5)?\s*\(\s*(?:{name})\s*\)", re.IGNORECASE)


def _json_ratings(
    text: str, criteria: Sequence[str], name_re: Mapping[str, re.Pattern[str]]
) -> dict[str, list[tuple[int, int | None]]]:
    """Ratings from JSON objects in the text (fenced or bare; trailing commas and single
    quotes tolerated), by criterion, with each object's position."""
    import json

    out: dict[str, list[tuple[int, int | None]]] = {}
    for match in re.finditer(r"\{[^{}]{0,3000}(?:\{[^{}]{0,600}\}[^{}]{0,1500})*\}", text):
        body = re.sub(r",\s*([}\]])", r"\1", match.group(0))
        try:
            data = json.loads(body)
        except ValueError:
            try:
                data = json.loads(re.sub(r"(?<![\w])'|'(?![\w])", '"', body))
            except ValueError:
                continue
        if not isinstance(data, dict):
            continue
        for key, raw in data.items():
            criterion = next((c for c in criteria if name_re[c].fullmatch(str(key).strip())), None)
            if criterion is None:
                continue
            if isinstance(raw, dict):
                raw = next(
                    (
                        v
                        for k, v in raw.items()
                        if re.match(r"score|rating|value|grade|оценк|оцін|бал|评分|分", str(k), re.I)
                    ),
                    None,
                )
            out.setdefault(criterion, []).append((match.start(), _json_value(raw)))
    return out


def _json_value(raw: object) -> int | None:
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        return int(raw) if float(raw).is_integer() and 1 <= raw <= 5 else None
    match = re.fullmatch(r"\s*" + _NUM + r"\s*(?:/\s*5)?\s*", str(raw), re.IGNORECASE)
    return _value(str(raw), match) or None if match else None


@lru_cache(maxsize=64)
def _before(name: str) -> re.Pattern[str]:
    """A value written before the criterion's name (``name``: its pattern): "earns a 2 for
    authenticity"."""
    return re.compile(
        r"(?:\b(?:an?)\s+)?" + _NUM + rf"(?:\s*/\s*5)?\s+(?:for|on|in|за|по)\s+(?:the\s+|its\s+)?(?:{name})",
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


_SCORE_HEADER = re.compile(
    r"score|rating|grade|value|points?|оценк|балл?|бал|рейтинг|评分|分数|得分|打分", re.IGNORECASE
)
_NAME_HEADER = re.compile(
    r"项|criteri|критери|критері|aspect|category|dimension|показател|показник", re.IGNORECASE
)
_SCALE_HEADER = re.compile(r"scale|max|out\s+of|range|шкала|макс|діапазон|满分|范围|区间", re.IGNORECASE)


def _table_columns(
    text: str, criteria: Sequence[str], name_re: Mapping[str, re.Pattern[str]]
) -> dict[str, tuple[int, int | None]]:
    """Ratings from a markdown table, with the row's position: the criteria as columns (one
    row of values), or as rows (the value in the column headed "Score"/"Rating", never in one
    headed "Scale"/"Max"; without such a header, the row's one number)."""
    lines = [(m.start(), m.group(0).strip()) for m in re.finditer(r"[^\n]+", text)]
    rows = [
        (pos, [c.strip().strip("*").strip() for c in line.strip("|").split("|")])
        for pos, line in lines
        if line.startswith("|")
    ]
    out: dict[str, tuple[int, int | None]] = {}
    header: list[str] = []
    columns: dict[str, int] = {}
    for pos, cells in rows:
        if all(re.fullmatch(r":?-{2,}:?|", c) for c in cells):
            continue
        named = {c: j for c in criteria for j, cell in enumerate(cells) if name_re[c].fullmatch(cell)}
        if len(named) >= 2 and not header:  # the criteria as columns
            header = cells
            columns = named
            continue
        if columns and not named:
            values = {c: _cell_value(cells[j]) if j < len(cells) else None for c, j in columns.items()}
            if any(v is not None for v in values.values()):
                return {c: (pos, v) for c, v in values.items()}
        if not named and any(_SCORE_HEADER.search(c) or _SCALE_HEADER.search(c) for c in cells):
            header = cells
            continue
        for criterion, j in named.items():
            scores = [
                k
                for k, h in enumerate(header)
                if k != j
                and _SCORE_HEADER.search(h)
                and not _SCALE_HEADER.search(h)
                and not _NAME_HEADER.search(h)
            ]
            scales = {k for k, h in enumerate(header) if _SCALE_HEADER.search(h)}
            if scores and scores[0] < len(cells):
                out[criterion] = (pos, _cell_value(cells[scores[0]]))
            else:
                numbers = [
                    k
                    for k, cell in enumerate(cells)
                    if k != j and k not in scales and re.fullmatch(r"[\d.,/ ]+(?:/\s*5)?", cell)
                ]
                if len(numbers) == 1:
                    out[criterion] = (pos, _cell_value(cells[numbers[0]]))
    return out


def _cell_value(cell: str) -> int | None:
    match = re.match(r"\s*" + _NUM, cell, re.IGNORECASE)
    value = _value(cell, match) if match else None
    return None if value is False else value
