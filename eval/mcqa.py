"""Deterministic answer-letter extraction for multiple-choice tasks and the shared scoring.

The rules, in order (never a random fallback: no letter means *unparseable*, scored wrong and
counted), measured on ``tests/data/answers/letters/`` (docs/evaluating.md, "How answers are
read"):

1. the last ``<answer>X</answer>`` tag (``<answer>(b)</answer>``, ``<answer>B) Гоголь</answer>``);
2. the last explicit statement of the answer: "answer is X", "Answer: (X)", "the correct option
   is X", "I'd go with X", "X is correct", "ответ: X", "правильный ответ — вариант X",
   "выбираю X", "вариант X верный", "答案是X", "答案为：图X", "选B", "我选择A", "应该是D",
   "选项C正确". The *last* one wins, so an answer that walks through the options ("Вариант A
   неверен, вариант B тоже. Правильный ответ: C.") or changes its mind is read at its final
   pick; a bare mention ("вариант A неверен") is not a statement;
3. the output starts with the letter (the FoodieQA templates end with "答案为：图" or
   "Option (" for the model to complete): "B", "B)", "**C**", "(D)", "C。因为…";
4. the text of exactly one option, when the options are known ("Правильный ответ: Лермонтов",
   "答案是饺子");
5. exactly one distinct letter standing alone anywhere in the output.

A letter is a capital A-D standing alone: not inside or next to a word of any script. The
Cyrillic capitals А, В, С are read as A, B, C only where they stand alone ("Ответ: В"); the
first letter of a word ("Скорее всего, это B.", "Вариант…") never is. An English article
("A dish like this…") is not a leading letter: a leading letter must be followed by
punctuation, a line end, the end of the output or a CJK character.
Genuinely ambiguous outputs ("A или C", two different final answers in one sentence pair, a
letter outside A-D) give no letter.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

from culturebench.mcq import LETTERS

#: Bumped whenever a change can alter the letter read from some output (results.json ``parsers``).
VERSION = "2"

_FULLWIDTH = str.maketrans({"Ａ": "A", "Ｂ": "B", "Ｃ": "C", "Ｄ": "D", "（": "(", "）": ")", "：": ":"})
_HOMOGLYPHS = {"А": "A", "В": "B", "С": "C"}
_W = r"A-Za-zÀ-ÿА-Яа-яЁёІіЇїЄєҐґ"
# One letter standing alone: capital A-D or a Cyrillic look-alike (case-sensitive even inside
# case-insensitive patterns), no letter of any script or digit on either side, and not the
# English article ("A dish").
_L = rf"(?-i:(?<![{_W}0-9])([A-DАВС])(?![{_W}0-9])(?!\s+[a-z]))"
_LETTER_ANY_CASE = rf"(?<![{_W}0-9])([A-Da-dАВС])(?![{_W}0-9])"
_TAG = re.compile(rf"<answer>\s*[\(\[]?\s*{_LETTER_ANY_CASE}", re.IGNORECASE)
_OPT = r"(?:(?:вариант|опци[яю]|пункт|option|choice|letter|选项|图)\s*)?[\(\[«\"“*]*\s*"
_STATEMENTS = [
    # English
    rf"(?:final\s+)?answer\s*(?:is|would\s+be|will\s+be|should\s+be|:|-|—)\s*(?:probably\s+|likely\s+|therefore\s+)?{_OPT}{_L}",
    rf"correct\s+(?:answer|option|choice|letter)\s*(?:is|would\s+be|:|-|—)?\s*{_OPT}{_L}",
    rf"(?:I\s+(?:would\s+|will\s+|'d\s+|’d\s+)?(?:choose|pick|select|go\s+with))\s*{_OPT}{_L}",
    rf"{_OPT}{_L}[\)\]*\"”»]*\s+is\s+(?:the\s+)?(?:correct|right|best)",
    # Russian
    rf"ответ(?:ом)?\s*(?:будет|является|—|-|:)?\s*(?:это\s+|будет\s+)?(?:в\s+)?{_OPT}{_L}",
    rf"(?:правильный|верный)\s+(?:вариант|пункт)\s*(?:ответа\s*)?(?:—|-|:|это)?\s*[\(\[«\"*]*\s*{_L}",
    rf"(?:выбираю|выбрал[аи]?|выберу|остановлюсь\s+на)\s*{_OPT}{_L}",
    rf"{_OPT}{_L}[\)\]*»\"]*\s*(?:—|-|является)?\s*(?:правильный|верный)",
    # Chinese
    rf"答案\s*(?:应该)?\s*(?:是|为|:)?\s*{_OPT}{_L}",
    rf"(?:我)?(?:选择?|选)\s*{_OPT}{_L}",
    rf"应该?(?:是|选)\s*{_OPT}{_L}",
    rf"{_OPT}{_L}\s*(?:选项)?\s*(?:是)?\s*(?:正确|对)",
]
_STATED = re.compile("|".join(f"(?:{p})" for p in _STATEMENTS), re.IGNORECASE)
_LEADING = re.compile(
    rf"^[\s*#>\-_]*(?:答案\s*(?:为|是)?\s*:?\s*)?(?:图|选项|option\s*|вариант\s*)?[\(\[【«\"]?\s*{_L}"
    r"(?=\s*(?:$|[\)\]】）.:,，。、;；!！*»\"\n]|[\u4e00-\u9fff]))",
    re.IGNORECASE,
)
_STANDALONE = re.compile(_L)


def _letter(raw: str) -> str:
    return _HOMOGLYPHS.get(raw, raw).upper()


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\W_]+", " ", text).strip()


def _by_option_text(text: str, options: Sequence[str]) -> str | None:
    """The letter of the one option whose text appears in the output (word-bounded)."""
    haystack = f" {_norm(text)} "
    normed = [_norm(str(o)) for o in options]
    hits = {i for i, o in enumerate(normed) if o and f" {o} " in haystack}
    # an option contained in a longer option that also appears is that longer one's echo
    hits = {i for i in hits if not any(j != i and normed[i] in normed[j] for j in hits)}
    if len(hits) == 1 and len(normed) <= len(LETTERS):
        return LETTERS[hits.pop()]
    return None


def extract_letter(output: str, options: Sequence[str] | None = None) -> str | None:
    """The answer letter of a model output, or None when none can be extracted. ``options``
    (the option texts, A-D order) lets an answer given as an option's text be read."""
    text = unicodedata.normalize("NFC", output or "").translate(_FULLWIDTH)
    tags = _TAG.findall(text)
    if tags:
        return _letter(tags[-1])
    stated = [next(g for g in m.groups() if g) for m in _STATED.finditer(text)]
    if stated:
        return _letter(stated[-1])
    lead = _LEADING.search(text)
    if lead:
        return _letter(lead.group(1))
    if options:
        by_text = _by_option_text(text, options)
        if by_text:
            return by_text
    found = {_letter(m) for m in _STANDALONE.findall(text)}
    return found.pop() if len(found) == 1 else None


def score_letter(output: str, gold: int, options: Sequence[str] | None = None) -> dict[str, Any]:
    """``pred`` (letter or None), ``parsed`` and ``correct`` (unparseable = wrong)."""
    pred = extract_letter(output, options)
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
