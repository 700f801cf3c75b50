"""Deterministic answer-letter extraction for multiple-choice tasks and the shared scoring.

The rules, in order (never a random fallback: no letter means *unparseable*, scored wrong and
counted), measured on ``tests/data/answers/letters/`` (docs/evaluating.md, "How answers are
read"):

1. an ``<answer>X</answer>`` tag (``<answer>(b)</answer>``, ``<answer>B) Гоголь</answer>``).
   Tags in an echo of the prompt's own example ("например: <answer>B</answer>") are not
   answers; two tags with different letters are read at the last only when the model
   corrects itself between them ("Извините, я ошибся"), else they are no answer;
2. the last explicit statement or conclusion: "answer is X", "Answer: (X)", "the correct
   option is X", "I'd go with X", "X is correct", "so Option (C)", "ответ: X", "правильный
   ответ — вариант X", "выбираю X", "значит, B", "поэтому C", "答案是X", "答案应为D",
   "答案为：图X", "选B", "我选择A", "所以选C". The *last* one wins, so an answer that walks
   through the options ("Вариант A неверен, вариант B тоже. Правильный ответ: C.") or changes
   its mind is read at its final pick; a bare mention ("вариант A неверен") is not a statement;
3. a letter standing alone at the very end of the output ("…Чайковский, A.", "…— это B.").
   A model that goes on to write the next turn ("\n\nHuman: …") is read up to that turn;
4. the output starts with the letter (the FoodieQA templates end with "答案为：图" or
   "Option (" for the model to complete): "B", "B)", "**C**", "(D)", "C。因为…", "В — гжель";
   not when the output is an echo of the option list (three or more options listed);
5. the text of exactly one option, when the options are known ("Правильный ответ: Лермонтов",
   "答案是饺子");
6. exactly one image named by its position, for image options ("第三张图…", "the second
   image");
7. exactly one distinct letter standing alone anywhere in the output.

A letter is a capital A-D standing alone: not inside or next to a word of any script. The
Cyrillic capitals А, В, С are read as A, B, C only where they stand alone ("Ответ: В"); the
first letter of a word ("Скорее всего, это B.", "Вариант…") never is. An English article
("A dish like this…") is not a letter. A lower-case letter counts only as the whole output
("c", "a)"). Full-width forms are read as ASCII (NFKC).
Genuinely ambiguous outputs give no letter: two letters joined as alternatives ("A или C",
"A和D", "B) or Option (C)"), two different tags, an echoed option list with no pick, a letter
outside A-D.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

from culturebench.choice_labels import LETTERS

#: Bumped whenever a change can alter the letter read from some output (results.json ``parsers``).
VERSION = "2"

_HOMOGLYPHS = {"А": "A", "В": "B", "С": "C"}
_W = r"A-Za-zÀ-ÿА-Яа-яЁёІіЇїЄєҐґ"
# One letter standing alone: capital A-D or a Cyrillic look-alike (case-sensitive even inside
# case-insensitive patterns), no letter of any script or digit on either side, and not the
# English article ("A dish"; "A or C" is a letter).
_L = rf"(?-i:(?<![{_W}0-9])([A-DАВС])(?![{_W}0-9])(?!(?<=A)\s+(?!(?:or|and)\b)[a-z]))"
_L_ANY_CASE = rf"(?<![{_W}0-9])([A-Da-dАВС])(?![{_W}0-9])"
_TAG = re.compile(r"<answer>([^<]{0,300})</answer>", re.IGNORECASE)
_EXAMPLE = re.compile(
    r"(?:например|for\s+example|e\.g\.|例如|внутри\s+тега|inside\s+the\s+tags?|in\s+the\s+tags?)\s*:?\s*$",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"ошиб|исправ|поправк|на самом деле|хотя нет|sorry|mistake|correction|actually|wait|抱歉|更正|不对",
    re.IGNORECASE,
)
_OPT = r"(?:(?:вариант|опци[яю]|пункт|option|choice|letter|选项|图)\s{0,3})?[\(\[«\"“*]{0,4}\s{0,3}"
_STATEMENTS = [
    # English
    rf"(?:final\s+)?answer\s*(?:is|would\s+be|will\s+be|should\s+be|:|-|—)\s*(?:probably\s+|likely\s+|therefore\s+)?{_OPT}{_L}",
    rf"correct\s+(?:answer|option|choice|letter)\s*(?:is|would\s+be|:|-|—)?\s*{_OPT}{_L}",
    rf"(?:I\s+(?:would\s+|will\s+|'d\s+|’d\s+)?(?:choose|pick|select|go\s+with))\s*{_OPT}{_L}",
    rf"{_OPT}{_L}[\)\]*\"”»]*\s+is\s+(?:the\s+)?(?:correct|right|best)",
    rf"\b(?:so|therefore|thus|hence)\b,?\s+(?:it(?:'s|\s+is)\s+|the\s+answer\s+is\s+)?{_OPT}{_L}",
    # Russian
    rf"ответ(?:ом)?\s*(?:будет|является|—|-|:)?\s*(?:это\s+|будет\s+)?(?:в\s+)?{_OPT}{_L}",
    rf"(?:правильный|верный)\s+(?:вариант|пункт)\s*(?:ответа\s*)?(?:—|-|:|это)?\s*[\(\[«\"*]{0, 4}\s*{_L}",
    rf"(?:выбираю|выбрал[аи]?|выберу|остановлюсь\s+на)\s*{_OPT}{_L}",
    rf"{_OPT}{_L}[\)\]*»\"]*\s*(?:—|-|является)?\s*(?:правильный|верный)",
    rf"(?:значит|поэтому|следовательно|итак|выходит)\s*,?\s*(?:это\s+|ответ\s+)?{_OPT}{_L}",
    # Chinese
    rf"答案\s*(?:应该|应)?\s*(?:是|为)?\s*:?\s*{_OPT}{_L}",
    rf"(?:我)?(?:选择?|选)\s*{_OPT}{_L}",
    rf"应该?(?:是|选)\s*{_OPT}{_L}",
    rf"(?:所以|因此|故)\s*(?:是|选|答案是)?\s*{_OPT}{_L}",
    rf"{_OPT}{_L}\s*(?:选项)?\s*(?:是)?\s*(?:正确|对)",
]
_STATED = re.compile("|".join(f"(?:{p})" for p in _STATEMENTS), re.IGNORECASE)
_LEADING = re.compile(
    rf"^[\s*#>\-_]*(?:答案\s*(?:为|是)?\s*:?\s*)?(?:图|选项|option\s*|вариант\s*)?[\(\[【«\"]?\s*{_L}"
    r"(?=\s*(?:$|[\)\]】.:,，。、;；!！*»\"\n—–-]|[\u4e00-\u9fff]))",
    re.IGNORECASE,
)
_LOWER_ALONE = re.compile(r"^[\s*(\[]*([a-d])[\s*).\]]*$")
_FINAL = re.compile(rf"(?<![(\[«])\s{_L}[\s*.!)»\"]*$")
_JOIN = r"(?:,?\s*(?:or|and|или|либо|и)\b|,|或者|或是|或|和|与|跟|/|、)"
_PAIR = re.compile(rf"{_L}\s*[\)\]]?\s*{_JOIN}\s*(?:option\s*|вариант\s*|图)?[\(\[]?\s*{_L}", re.IGNORECASE)
_LIST_MARKER = re.compile(
    rf"(?:^|\n)\s*(?:option\s*\(\s*)?{_L}\s*[.)）、]|option\s*\(\s*{_L}\s*\)", re.IGNORECASE
)
_STANDALONE = re.compile(_L)
_NEXT_TURN = re.compile(r"\n\s*(?:#+\s*)?(?:Human|User|Пользователь|用户)\s*:", re.IGNORECASE)
_ORDINALS = {
    "A": r"第一张图|first\s+image|1st\s+image",
    "B": r"第二张图|second\s+image|2nd\s+image",
    "C": r"第三张图|third\s+image|3rd\s+image",
    "D": r"第四张图|fourth\s+image|4th\s+image",
}


def _letter(raw: str) -> str:
    return _HOMOGLYPHS.get(raw, raw).upper()


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\W_]+", " ", text).strip()


def _by_option_text(text: str, options: Sequence[str]) -> str | None:
    """The letter of the one option whose text appears in the output (word-bounded; a
    Chinese option anywhere, as Chinese is written without spaces)."""
    haystack = f" {_norm(text)} "
    normed = [_norm(str(o)) for o in options]

    def found(option: str) -> bool:
        if re.search(r"[\u4e00-\u9fff]", option):
            return option in haystack
        return f" {option} " in haystack

    hits = {i for i, o in enumerate(normed) if o and found(o)}
    # an option contained in a longer option that also appears is that longer one's echo
    hits = {i for i in hits if not any(j != i and normed[i] in normed[j] for j in hits)}
    if len(hits) == 1 and len(normed) <= len(LETTERS):
        return LETTERS[hits.pop()]
    return None


_SPACES = re.compile(r"[^\S\n]{2,}")
_BLANK_LINES = re.compile(r"\n(?:[^\S\n]*\n){2,}")
_REPEATS = re.compile(r"([^\w\s])\1{3,}")


def _squeezed(text: str) -> str:
    """Runs of spaces, blank lines and repeated punctuation cut short ("*****" -> "***"):
    nothing a rule reads changes, and no pattern meets a run long enough to backtrack over
    (a 50,000-space output took minutes)."""
    return _REPEATS.sub(r"\1\1\1", _BLANK_LINES.sub("\n\n", _SPACES.sub(" ", text)))


def _without_echoed_tags(text: str) -> str:
    """``text`` without the tags that echo the prompt's instruction or example ("внутри тега
    <answer></answer>, например: <answer>B</answer>"): neither they nor their letter answer."""
    echoed = [m for m in _TAG.finditer(text) if _EXAMPLE.search(text[max(0, m.start() - 20) : m.start()])]
    for match in reversed(echoed):
        text = text[: match.start()] + " " + text[match.end() :]
    return text


def _tag_letter(text: str, options: Sequence[str] | None) -> str | bool | None:
    """The letter the answer tags give (a letter, or an option's text, inside), None when they
    give no single answer, False when the output has no tag that is an answer."""
    tags = list(_TAG.finditer(text))
    if not tags:
        return False
    letters = []
    for tag in tags:
        inside = {_letter(x) for x in re.findall(_L_ANY_CASE, tag.group(1))}
        if not inside and options:
            inside = {x for x in [_by_option_text(tag.group(1), options)] if x}
        if len(inside) != 1:
            return None  # "<answer>B, D</answer>", or a tag with no letter
        letters.append(inside.pop())
    if len(set(letters)) == 1:
        return letters[-1]
    last, before = tags[-1], tags[-2]
    return letters[-1] if _CORRECTION.search(text[before.end() : last.start()]) else None


def extract_letter(output: str, options: Sequence[str] | None = None) -> str | None:
    """The answer letter of a model output, or None when none can be extracted. ``options``
    (the option texts, A-D order) lets an answer given as an option's text be read."""
    text = _squeezed(unicodedata.normalize("NFKC", output or ""))
    turn = _NEXT_TURN.search(text)
    if turn and turn.start() > 0:
        text = text[: turn.start()]  # the model went on to write the next turn itself
    text = _without_echoed_tags(text)
    tagged = _tag_letter(text, options)
    if tagged is not False:
        return tagged
    stated = list(_STATED.finditer(text))
    if stated:
        last = stated[-1]
        group = next(i for i, g in enumerate(last.groups(), 1) if g)
        if _PAIR.match(text, last.start(group)):
            return None  # "answer: A or C"
        return _letter(last.group(group))
    final = _FINAL.search(text)
    if final:  # no letter when it ends two alternatives: "it could be A or B."
        alternatives = _PAIR.search(text[max(0, final.start() - 30) : final.end()])
        return None if alternatives else _letter(final.group(1))
    lower = _LOWER_ALONE.match(text)
    if lower:
        return lower.group(1).upper()
    lead = _LEADING.search(text)
    listed = {_letter(x) for m in _LIST_MARKER.finditer(text) for x in m.groups() if x}
    if lead and len(listed) < 3:
        if _PAIR.match(text, lead.start(1)):
            return None  # "A或图C", "B) and Option (D)"
        return _letter(lead.group(1))
    standalone = {_letter(m) for m in _STANDALONE.findall(text)}
    if options:
        by_text = _by_option_text(text, options)
        if by_text:
            others = standalone - {by_text}
            return None if others else by_text  # '"ёлочная игрушка" (A)' for B: no single answer
    images = {letter for letter, pattern in _ORDINALS.items() if re.search(pattern, text, re.IGNORECASE)}
    if len(images) == 1:
        return images.pop()
    if len(listed) >= 3:
        return None  # the option list echoed, no pick
    return standalone.pop() if len(standalone) == 1 else None


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
