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
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from culturebench.choice_labels import LETTERS
from culturebench.eval.answers import cues, spans
from culturebench.eval.answers.reading import Reading

#: Bumped whenever a change can alter the letter read from some output (results.json ``parsers``).
VERSION = "4"

#: Cyrillic capitals read as labels: the look-alikes А, В, С, Е, and Б, Г, Д, which have none
#: and are the second, fourth and fifth letters where a model letters the options in Cyrillic
_HOMOGLYPHS = {"А": "A", "В": "B", "С": "C", "Е": "E", "Б": "B", "Г": "D", "Д": "E"}
_W = r"A-Za-zÀ-ÿА-Яа-яЁёІіЇїЄєҐґ"
_TAG = re.compile(r"<answer>([^<]{0,300})</answer>", re.IGNORECASE)
_EXAMPLE = re.compile(
    r"(?:например|наприклад|for\s+example|e\.g\.|例如|внутри\s+тега|всередині\s+тегу|inside\s+the\s+tags?|in\s+the\s+tags?)\s*:?\s*$",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"ошиб|исправ|поправк|на самом деле|хотя нет|помил|виправ|насправді|sorry|mistake|correction"
    r"|actually|wait|抱歉|更正|不对",
    re.IGNORECASE,
)
_ORDINAL_WORDS = [
    (0, r"first|1st|перв\w*|перш\w*|第一|第1"),
    (1, r"second|2nd|втор\w*|другий|другому|друга|другу|другої|другим|第二|第2"),
    (2, r"third|3rd|трет\w*|第三|第3"),
    (3, r"fourth|4th|четв[её]рт\w*|четверт\w*|第四|第4"),
    (4, r"fifth|5th|пят\w*|п[\'’ʼ]?ят\w*|第五|第5"),
    (-1, r"last|последн\w*|останн\w*|最后一"),
]
_ORDINAL_NOUN = (
    r"(?:\s+|\s*[-—]?\s*)(?:option|one|choice|image|picture|photo|вариант\w*|пункт\w*|опци\w*|"
    r"изображени\w*|картин\w*|фото\w*|варіант\w*|зображенн\w*|світлин\w*|个|项|张|幅|选项|图)"
)
_ORDINALS = re.compile(
    r"(?<![\w])("
    + "|".join(f"(?P<o{i}>{w})" for i, (_, w) in enumerate(_ORDINAL_WORDS))
    + r")"
    + _ORDINAL_NOUN,
    re.IGNORECASE,
)
_ORDINAL_CJK = re.compile(r"第\s*([一二三四五12345])\s*(?:个|项|张|幅|选项|张图|个选项)?|最后一(?:个|项|张)")
_CJK_DIGITS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "1": 0, "2": 1, "3": 2, "4": 3, "5": 4}
_FUZZY_CUE = re.compile(
    r"(?<!\w)([^\W\d_]{4,11}|答案|答)[^\S\n]*[:：\-—][^\S\n]*[\(\[*«\"]*[^\S\n]*(\w)[^\S\n]*[\)\]*»\".。]*(?=\s|$)"
)
_CUE_WORDS = ("answer", "ответ", "відповідь", "вариант", "варіант", "option", "choice")


class _Patterns:
    """The reading patterns for one label set (A-D, A-E, 1-4, ...)."""

    def __init__(self, labels: tuple[str, ...]) -> None:
        self.labels = labels
        self.numeric = all(label.isdigit() for label in labels)
        chars = "".join(re.escape(label) for label in labels)
        if self.numeric:
            klass = f"[{chars}]"
            self.L = rf"(?<![\d.,/A-Za-zА-Яа-яЁёІіЇїЄєҐґ])({klass})(?![\w%/]|[.,]\d)"
            self.L_ANY_CASE = self.L
        else:
            homoglyphs = "".join(c for c, latin in _HOMOGLYPHS.items() if latin in labels)
            klass = f"[{chars}{homoglyphs}]"
            # one label standing alone: no letter of any script or digit on either side, and
            # not the English article ("A dish"; "A or C" is a letter)
            # a Cyrillic capital followed by a lower-case Cyrillic word is a word ("В предложении",
            # "С 1976", "А вот"), not a label
            self.L = (
                rf"(?-i:(?<![{_W}0-9])({klass})(?![{_W}0-9])(?!(?<=A)\s+(?!(?:or|and|is|was)\b)[a-z])"
                rf"(?!(?<=[{homoglyphs or 'А'}])\s+[а-яёіїєґ]))"
            )
            lower = "".join(label.lower() for label in labels)
            self.L_ANY_CASE = rf"(?<![{_W}0-9])([{chars}{lower}{homoglyphs}])(?![{_W}0-9])"
        L = self.L
        opt = (
            r"(?:(?:вариант|варіант|опци[яю]|пункт|option|choice|letter|number|номер|选项|图)\s{0,3})?"
            r"[\(\[«\"“*]{0,4}\s{0,3}"
        )
        statements = [
            # English
            rf"(?:final\s+)?answer\s*(?:is\s*:|is|would\s+be|will\s+be|should\s+be|:|-|—)\s*(?:probably\s+|likely\s+|therefore\s+)?{opt}{L}",
            rf"(?:ответ|answer|відповідь)\w*\s*:?\s*<\s*{L}\s*>",
            rf"correct\s+(?:answer|option|choice|letter)\s*(?:is|would\s+be|:|-|—)?\s*{opt}{L}",
            rf"(?:I(?:\s+would|\s+will|'d|’d|'ll|’ll)?\s+(?:choose|pick|select|go\s+with|say|settle\s+on))\s*,?\s*{opt}{L}",
            rf"(?:going|let's\s+go|let’s\s+go|sticking|stick|staying)\s+with\s*{opt}{L}",
            rf"(?:revis\w*|chang\w*)\s+(?:it\s+|my\s+answer\s+|the\s+answer\s+)?to\s*{opt}{L}",
            rf"(?:изменю|меняю|исправляю|змінюю|виправляю)\s+(?:ответ\s+|відповідь\s+)?на\s*{opt}{L}",
            rf"ответ\w*\s+на\s+вопрос\s*(?:«[^»\n]{{0,200}}»|\"[^\"\n]{{0,200}}\")?\s*(?:является|будет|—|-|:)\s*:?\s*{opt}{L}",
            rf"відповідь\s+на\s+питання\s*(?:«[^»\n]{{0,200}}»|\"[^\"\n]{{0,200}}\")?\s*(?:є|буде|—|-|:)\s*{opt}{L}",
            rf"{L}\)\s*[^\n]{{1,80}}?\s+[-—–]\s+(?:это|це|this\s+is)\s+(?:правильн\w+|верн\w+|вірн\w+|the\s+correct)",
            rf"my\s+(?:final\s+)?(?:choice|pick|answer|guess)\s+(?:is|would\s+be|will\s+be|:|-|—)\s*{opt}{L}",
            rf"(?:мой\s+(?:окончательный\s+|финальный\s+)?выбор|мій\s+(?:остаточний\s+)?вибір)\s*(?:—|-|:)?\s*{opt}{L}",
            rf"(?:то\s+есть|тобто|that\s+is|i\.e\.)\s*,?\s*{opt}{L}",
            rf"(?:probably|most\s+likely|likely|perhaps\s+rather|скорее\s+всего|вероятнее\s+всего|вероятно|пожалуй|наверное|"
            rf"найімовірніше|мабуть|напевно|скоріше\s+за\s+все|оставляю|остаюсь\s+при|залишаю|更倾向于|倾向于|我倾向)\s*,?\s*{opt}{L}",
            rf"{opt}{L}[\)\]*\"”»]*\s+is\s+(?:the\s+)?(?:correct|right|best)",
            rf"\b(?:so|therefore|thus|hence)\b,?\s+(?:it(?:'s|\s+is)\s+|the\s+answer\s+is\s+)?{opt}{L}",
            # Russian
            rf"ответ(?:ом)?\s*(?:будет|является|—|-|:)?\s*(?:это\s+|будет\s+)?(?:в\s+)?{opt}{L}",
            rf"(?:правильный|верный)\s+(?:вариант|пункт)\s*(?:ответа\s*)?(?:—|-|:|это)?\s*[\(\[«\"*]{{0,4}}\s*{L}",
            rf"(?:выбираю|выбрал[аи]?|выберу|остановлюсь\s+на)\s*{opt}{L}",
            rf"(?:думаю|считаю|полагаю),?\s+(?:что\s+)?(?:это\s+|ответ\s+)?(?:верн\w*|правильн\w*)?\s*(?:ответ\s*)?(?:—|-|:)?\s*{opt}{L}",
            rf"(?:верн\w*|правильн\w*)\s+(?:—\s*|-\s*|:\s*)?{opt}{L}",
            rf"{opt}{L}[\)\]*»\"]*\s*(?:—|-|является)?\s*(?:правильный|верный)",
            rf"(?:значит|поэтому|следовательно|итак|выходит)\s*,?\s*(?:это\s+|ответ\s+)?{opt}{L}",
            # Ukrainian
            rf"відповідь\s*(?:буде|—|-|:)?\s*(?:це\s+)?{opt}{L}",
            rf"(?:правильн\w*|вірн\w*)\s+(?:варіант|відповідь)?\s*(?:—|-|:|це)?\s*[\(\[«\"*]{{0,4}}\s*{L}",
            rf"(?:обираю|вибираю|обрав|обрала|оберу|виберу|зупинюся\s+на)\s*{opt}{L}",
            rf"(?:отже|тому|значить|тож)\s*,?\s*(?:це\s+|відповідь\s+)?{opt}{L}",
            # Chinese
            rf"答案\s*(?:应该|应)?\s*(?:是|为)?\s*:?\s*{opt}{L}",
            rf"(?:我)?(?:选择?|选)\s*{opt}{L}",
            rf"(?:最合适的|最符合的|最好的|最佳的?)(?:选项|答案)?\s*(?:是|为)\s*{opt}{L}",
            rf"我?(?:认为|觉得|想)(?:应该)?是\s*{opt}{L}",
            rf"应该?(?:是|选)\s*{opt}{L}",
            rf"(?:所以|因此|故)\s*[,，]?\s*(?:是|选|答案是)?\s*{opt}{L}",
            rf"(?:大概率|更可能|最可能|很可能)\s*(?:是|选)\s*{opt}{L}",
            rf"{opt}{L}\s*(?:选项)?\s*(?:是)?\s*(?:正确|对)",
        ]
        self.stated = re.compile("|".join(f"(?:{p})" for p in statements), re.IGNORECASE)
        self.leading = re.compile(
            rf"^[\s*#>\-_]*(?:答案\s*(?:为|是)?\s*:?\s*)?(?:图|选项|option\s*|вариант\s*|варіант\s*)?[\(\[【«\"]?\s*{L}"
            r"(?=\s*(?:$|[\)\]】.:,，。、;；!！*»\"\n—–-]|[\u4e00-\u9fff]))",
            re.IGNORECASE,
        )
        lower = "".join(label.lower() for label in labels)
        self.lower_alone = re.compile(rf"^[\s*(\[]*([{re.escape(lower)}])[\s*).\]]*$")
        self.final = re.compile(rf"(?<![(\[«])\s{L}[\s*.!)»\"]*$")
        join = r"(?:,?\s*(?:or|and|или|либо|и|або|чи|і|та)\b|,|或者|或是|或|和|与|跟|/|、)"
        self.pair = re.compile(
            rf"{L}\s*[\)\]]?\s*{join}\s*(?:option\s*|вариант\s*|варіант\s*|图)?[\(\[]?\s*{L}", re.IGNORECASE
        )
        self.list_marker = re.compile(
            rf"(?:^|\n)\s*(?:option\s*\(\s*)?{L}\s*[.)）、]|option\s*\(\s*{L}\s*\)", re.IGNORECASE
        )
        # an option list echoed inline: "A) Sichuan B) Shanghai", "A — борщ, B — юшка", "图A是饺子，图B是"
        self.inline_list = re.compile(rf"(?:^|[\s,;，；。:])(?:图)?{L}(?:\)|\s[—–-]\s|是)", re.IGNORECASE)
        self.standalone = re.compile(L)
        negation = (
            r"(?:not|no|never|не|ні|нет|не\s+это|точно\s+не|явно\s+не|exclude|excluding|исключаем|виключаємо"
            r"|不是|并非|排除)"
        )
        self.ruled_out = re.compile(
            rf"{L}\s*[\)\]]?\s*(?:\?\s*(?:нет|no|ні|не)\b|—\s*(?:нет|no|ні)\b|не\s+подходит|не\s+підходить|can'?t\s+be\s+right|"
            rf"(?:is|seems)\s+(?:wrong|incorrect|unlikely)|неверн\w*|неправильн\w*|відпада\w*|отпада\w*|исключа\w*|не\s+так)",
            re.IGNORECASE,
        )
        self.negated = re.compile(
            rf"{negation}\s*(?:option\s*|вариант\s*|варіант\s*|选项\s*)?[\(\[«\"*]{{0,3}}\s*{L}"
            rf"(?:\s*[\)\]]?\s*(?:,|or|nor|и|или|ни|і|та|або|чи|和|或)\s*(?:не\s+|not\s+)?[\(\[]?\s*{L})*",
            re.IGNORECASE,
        )

    def letter(self, raw: str) -> str:
        """A matched label as the task's label (look-alikes and lower case mapped)."""
        if self.numeric:
            return raw
        return _HOMOGLYPHS.get(raw.upper(), raw.upper())


@lru_cache(maxsize=16)
def _patterns(labels: tuple[str, ...]) -> _Patterns:
    return _Patterns(labels)


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\W_]+", " ", text).strip()


def _lemmas(text: str, lang: str) -> str:
    """``text`` as a sequence of dictionary forms (pymorphy3 for Cyrillic words, in ``lang``):
    "Лермонтова" and "Лермонтов" read alike."""
    return " ".join(_lemma(w, lang) if re.search(r"[а-яёіїєґ]", w) else w for w in _norm(text).split())


@lru_cache(maxsize=65536)
def _lemma(word: str, lang: str) -> str:
    from culturebench.eval.country_extractor import _morph

    parses = _morph(lang).parse(word)
    return parses[0].normal_form.replace("ё", "е") if parses else word


def _by_option_text(text: str, options: Sequence[str], labels: Sequence[str] = LETTERS) -> str | None:
    """The label of the one option whose text appears in the output (word-bounded; a Chinese
    option anywhere, as Chinese is written without spaces), in any inflected form."""
    found = _option_hits(_norm(text), [_norm(str(o)) for o in options])
    if not found and re.search(r"[А-Яа-яЁёІіЇїЄєҐґ]", text):
        lang = _morph_language(text + " " + " ".join(map(str, options)))
        found = _stem_hits(_lemmas(text, lang).split(), [_lemmas(str(o), lang).split() for o in options])
    if len(found) > 1:  # "Крученики ж … Тож тут підходять саме голубці": the concluding sentence's
        found = _concluded(text, options, found)
    if len(found) == 1 and len(options) <= len(labels):
        return labels[found.pop()]
    return None


_ANSWER_CUE = re.compile(
    r"(?:answer\s+is|answer\s*:|ответ\s*(?:—|-|:|является|будет)|відповідь\s*(?:—|-|:|є|буде)|答案\s*(?:是|为|:))",
    re.IGNORECASE,
)


def _after_answer_cue(text: str) -> str | None:
    """What follows the last answer cue ("the answer is:", "ответ —"), its first 120
    characters, or None when there is no cue."""
    found = list(_ANSWER_CUE.finditer(text))
    return text[found[-1].end() : found[-1].end() + 120].lstrip(" \t\n:*") if found else None


def _stated_option_text(text: str, options: Sequence[str], labels: Sequence[str]) -> str | None:
    """The one option whose text follows the last answer cue ("the answer is: Hunan", "ответ —
    Лермонтов"), within the next line or two."""
    window = _after_answer_cue(text)
    if window is None:
        return None
    return _by_option_text(re.split(r"\n\s*\n", window, maxsplit=1)[0], options, labels)


def _answered_otherwise(text: str, options: Sequence[str], pats: _Patterns) -> bool:
    """Whether the last answer cue is followed by an answer that is no option ("The best answer
    is:\n\nBienzen"): then an option named elsewhere in the text is no answer."""
    window = _after_answer_cue(text)
    if window is None:
        return False
    first_line = window.split("\n", 1)[0].strip(" .*")
    if not first_line or len(first_line.split()) > 3 or re.search(pats.L_ANY_CASE, first_line):
        return False
    if _ordinal(first_line, pats.labels) or _ordinal_alone(first_line, pats.labels):
        return False
    return _by_option_text(first_line, options, pats.labels) is None


def _concluded(text: str, options: Sequence[str], found: set[int]) -> set[int]:
    """Of several options named, those the last concluding sentence names ("Тож…", "So…")."""
    sentences = re.split(r"(?<=[.!?。！？])\s+|\n+", text)
    for sentence in reversed(sentences):
        if cues.opening("conclusion").match(cues.fold(sentence)):
            named = _option_hits(_norm(sentence), [_norm(str(o)) for o in options])
            return named & found if named & found else found
    return found


def _option_hits(haystack: str, normed: list[str]) -> set[int]:
    haystack = f" {haystack} "

    def found(option: str) -> bool:
        if re.search(r"[\u4e00-\u9fff]", option):
            return option in haystack
        return f" {option} " in haystack

    hits = {i for i, o in enumerate(normed) if o and found(o) and not _only_negated(haystack, o)}
    # an option contained in a longer option that also appears is that longer one's echo
    return {i for i in hits if not any(j != i and normed[i] in normed[j] for j in hits)}


def _morph_language(text: str) -> str:
    """The pymorphy3 language (of those installed) that knows most of ``text``'s words."""
    from culturebench.eval.country_extractor import MORPH_LANGUAGES, _morph

    words = re.findall(r"[^\W\d_]+", text.casefold())[:40]
    return max(MORPH_LANGUAGES, key=lambda lang: sum(_morph(lang).word_is_known(w) for w in words))


def _same_word(a: str, b: str) -> bool:
    """Two dictionary forms of one word: equal, or sharing all but their last two letters
    (pymorphy3 reads "Донской" as "донский" and "Донского" as "донской")."""
    if a == b:
        return True
    short = min(len(a), len(b))
    return short >= 5 and a[: short - 2] == b[: short - 2] and abs(len(a) - len(b)) <= 2


def _stem_hits(words: list[str], options: list[list[str]]) -> set[int]:
    """The options whose every word appears, in order, among the answer's words (as
    :func:`_same_word`), none of them negated."""
    hits = set()
    for i, option in enumerate(options):
        if not option:
            continue
        for start in range(len(words) - len(option) + 1):
            negated = start and words[start - 1] in ("не", "ні", "not")
            if not negated and all(_same_word(words[start + k], option[k]) for k in range(len(option))):
                hits.add(i)
                break
    joined = [" ".join(o) for o in options]
    return {i for i in hits if not any(j != i and joined[i] in joined[j] for j in hits)}


_NEGATED_OPTION = r"(?:не|ні|not|no|不是|并非|не\s+это|точно\s+не|і\s+не|и\s+не)\s"


def _only_negated(haystack: str, option: str) -> bool:
    """Whether every mention of an option's text is negated ("не «щуку из реки»", "不是上海")."""
    spaced = f" {option} " if not re.search(r"[\u4e00-\u9fff]", option) else option
    positions = [m.start() for m in re.finditer(re.escape(spaced), haystack)]
    return bool(positions) and all(
        re.search(_NEGATED_OPTION + r"*$", haystack[max(0, p - 12) : p + 1])
        or haystack[max(0, p - 2) : p] in ("不是",)
        for p in positions
    )


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


def _tag_letter(text: str, options: Sequence[str] | None, pats: _Patterns) -> str | bool | None:
    """The label the answer tags give (a label, or an option's text, inside), None when they
    give no single answer, False when the output has no tag that is an answer."""
    tags = list(_TAG.finditer(text))
    if not tags:
        return False
    letters = []
    for tag in tags:
        inside = {pats.letter(x) for x in re.findall(pats.L_ANY_CASE, tag.group(1))}
        if not inside and options:
            inside = {x for x in [_by_option_text(tag.group(1), options, pats.labels)] if x}
        if len(inside) != 1:
            return None  # "<answer>B, D</answer>", or a tag with no letter
        letters.append(inside.pop())
    if len(set(letters)) == 1:
        return letters[-1]
    last, before = tags[-1], tags[-2]
    return letters[-1] if _CORRECTION.search(text[before.end() : last.start()]) else None


def _fuzzy_cue(text: str, pats: _Patterns) -> tuple[int, str] | None:
    """The last "anwser: b", "Отвте: в": a cue word within two edits of "answer"/"ответ"
    followed by one label in any case."""
    from rapidfuzz.distance import Levenshtein

    found = None
    for match in _FUZZY_CUE.finditer(text):
        word, raw = match.group(1).casefold(), match.group(2)
        label = pats.letter(raw) if not pats.numeric else raw
        if label not in pats.labels:
            continue
        if word in ("答", "答案") or any(
            Levenshtein.distance(word, cue, score_cutoff=2) <= 2 for cue in _CUE_WORDS
        ):
            found = (match.start(2), label)
    return found


def _ordinal(text: str, labels: Sequence[str]) -> str | None:
    """The one option named by its position ("the third option", "второй вариант", "第二个",
    "the last one"), or None."""
    picked: set[int] = set()
    for match in _ORDINALS.finditer(text):
        slot = next(_ORDINAL_WORDS[i][0] for i in range(len(_ORDINAL_WORDS)) if match.group(f"o{i}"))
        picked.add(slot if slot >= 0 else len(labels) - 1)
    for match in _ORDINAL_CJK.finditer(text):
        picked.add(_CJK_DIGITS[match.group(1)] if match.group(1) else len(labels) - 1)
    picked = {i for i in picked if 0 <= i < len(labels)}
    return labels[picked.pop()] if len(picked) == 1 else None


_ORDINAL_STATED = re.compile(
    r"(?:answer\s+is|answer:|choose|pick|go\s+with|ответ\s*(?:—|-|:)?|выбираю|выберу|відповідь\s*(?:—|-|:)?|обираю|оберу|答案是|选)"
    r"\s*(?:the\s+)?(?:" + "|".join(w for _, w in _ORDINAL_WORDS) + r")",
    re.IGNORECASE,
)


def _stated_ordinal(text: str, labels: Sequence[str]) -> str | None:
    """The last ordinal an answer cue states ("so the answer is the third image", "ответ —
    второй вариант"), when several ordinals are mentioned along the way."""
    starts = [m.start() for m in _ORDINAL_STATED.finditer(text)]
    return _ordinal(text[starts[-1] :], labels) if starts else None


def _ordinal_alone(text: str, labels: Sequence[str]) -> str | None:
    """An answer that is, or opens with a sentence that is, only an ordinal word: "Второй.",
    "Останній", "The third.", "Второй. Это фраза Волка…"."""
    first = re.split(r"(?<=[.!?。])\s", text.strip(), maxsplit=1)[0]
    words = re.findall(r"[^\W\d_]+", first.casefold())
    words = [w for w in words if w not in {"the", "one", "option"}]
    if len(words) != 1:
        return None
    for slot, pattern in _ORDINAL_WORDS:
        if re.fullmatch(pattern, words[0], re.IGNORECASE):
            index = slot if slot >= 0 else len(labels) - 1
            return labels[index] if index < len(labels) else None
    return None


def _after_correction(text: str, pats: _Patterns) -> str:
    """The text after the writer's last change of mind ("но теперь думаю", "actually",
    "на самом деле"), when a label follows it; else ``text``."""
    last = None
    for match in cues.pattern("correction").finditer(cues.fold(text)):
        if pats.standalone.search(text, match.end()) or pats.stated.search(text, match.end()):
            last = match
    return text[last.end() :] if last is not None else text


def read_choice(
    output: str, options: Sequence[str] | None = None, labels: Sequence[str] = LETTERS
) -> Reading:
    """The option label an output commits to, as a :class:`Reading` (value None with a reason
    when it commits to none). ``options`` (the option texts, in label order) lets an answer
    given as an option's text be read; ``labels`` are the task's labels (A-D by default; A-E,
    1-4 ...)."""
    pats = _patterns(tuple(str(label) for label in labels))
    raw = unicodedata.normalize("NFKC", output or "")
    if not raw.strip():
        return Reading.unparsed("empty")
    start, end = spans.focus(raw)
    text = _squeezed(raw[start:end])
    text = _without_echoed_tags(text)
    tagged = _tag_letter(text, options, pats)
    tags = list(_TAG.finditer(text))
    last_tag = tags[-1] if tags else None
    if (
        tagged
        and last_tag is not None
        and _after_correction(text[last_tag.end() :], pats) != text[last_tag.end() :]
    ):
        tagged = False  # "<answer>B</answer> Нет, беру свои слова назад: … то есть D": read what follows
    if tagged is None:  # different tags: the last one not ruled out afterwards ("D? Нет, D не подходит")
        out = {pats.letter(m.group(1)) for m in pats.ruled_out.finditer(text)}
        inside = [re.findall(pats.L_ANY_CASE, t.group(1)) for t in tags]
        if all(len(x) == 1 for x in inside):
            kept = [pats.letter(x[0]) for x in inside if pats.letter(x[0]) not in out]
            tagged = kept[-1] if kept else None
    if tagged is not False:
        return Reading(tagged) if tagged else Reading.unparsed("undecided")
    text = _after_correction(text, pats)
    negated = {pats.letter(x) for m in pats.negated.finditer(text) for x in m.groups() if x}
    ruled_out = {(m.start(1), pats.letter(m.group(1))) for m in pats.ruled_out.finditer(text)}
    negated |= {letter for _, letter in ruled_out}
    candidates: list[tuple[int, str | None]] = []
    for match in pats.stated.finditer(text):
        group = next(i for i, g in enumerate(match.groups(), 1) if g)
        letter = pats.letter(match.group(group))
        if any(letter == other and pos >= match.start(group) for pos, other in ruled_out):
            continue  # "Or maybe answer: C? No, C can't be right."
        alternatives = pats.pair.match(text, match.start(group))
        candidates.append((match.start(group), None if alternatives else letter))
    inline = {pats.letter(x) for m in pats.inline_list.finditer(text) for x in m.groups() if x}
    listed = {pats.letter(x) for m in pats.list_marker.finditer(text) for x in m.groups() if x}
    # "Варіанти: A — борщ, B — юшка, …" and looping option lists are no cue's answer
    fuzzy = _fuzzy_cue(text, pats) if len(inline) < 3 and len(listed) < 3 else None
    if fuzzy:
        candidates.append((fuzzy[0], None if pats.pair.match(text, fuzzy[0]) else fuzzy[1]))
    if candidates:
        _, chosen = max(candidates, key=lambda c: c[0])
        if chosen is None:
            return Reading.unparsed("undecided")
        return Reading(chosen) if chosen in pats.labels else Reading.unparsed("not_a_label")
    if options:  # "Therefore, the answer is: Hunan" after walking through every option
        stated = _stated_option_text(text, options, pats.labels)
        if stated and stated not in negated:
            return Reading(stated)
    final = pats.final.search(text)
    if final and len(listed) < 3 and pats.letter(final.group(1)) not in negated:
        # no label when it ends two alternatives: "it could be A or B."
        if pats.pair.search(text[max(0, final.start() - 30) : final.end()]):
            return Reading.unparsed("undecided")
        return Reading(pats.letter(final.group(1)))
    lower = pats.lower_alone.match(text)
    if lower:
        return Reading(pats.letter(lower.group(1)))
    lead = pats.leading.search(text)
    echoed = len(listed | inline) >= 3 and lead is not None and pats.letter(lead.group(1)) in inline
    if lead and len(listed) < 3 and not echoed and pats.letter(lead.group(1)) not in negated:
        if pats.pair.match(text, lead.start(1)):
            return Reading.unparsed("undecided")  # "A或图C", "B) and Option (D)"
        return Reading(pats.letter(lead.group(1)))
    standalone = {pats.letter(m) for m in pats.standalone.findall(text)} - negated
    if options and _answered_otherwise(text, options, pats):
        return Reading.unparsed("not_a_label")  # "The best answer is: Bienzen": no option's text
    if options:
        by_text = _by_option_text(text, options, pats.labels)
        if by_text in negated:
            by_text = None  # "Точно не A: гжель — это керамика"
        if by_text:
            others = standalone - {by_text}
            # '"ёлочная игрушка" (A)' for B: no single answer
            return Reading.unparsed("undecided") if others else Reading(by_text)
    ordinal = (
        _stated_ordinal(text, pats.labels) or _ordinal(text, pats.labels) or _ordinal_alone(text, pats.labels)
    )
    if ordinal and ordinal not in negated:
        return Reading(ordinal)
    if len(listed | inline) >= 3:
        return Reading.unparsed("no_choice")  # the option list echoed, no pick
    if len(standalone) == 1:
        return Reading(standalone.pop())
    if len(standalone) > 1:
        return Reading.unparsed("undecided")
    if negated:
        return Reading.unparsed("ruled_out")
    return Reading.unparsed("refusal" if cues.pattern("refusal").search(cues.fold(text)) else "no_choice")


def extract_letter(
    output: str, options: Sequence[str] | None = None, labels: Sequence[str] = LETTERS
) -> str | None:
    """The answer label of a model output, or None when none can be read (:func:`read_choice`)."""
    return read_choice(output, options, labels).value


def score_letter(output: str, gold: int, options: Sequence[str] | None = None) -> dict[str, Any]:
    """``pred`` (letter or None), ``parsed`` and ``correct`` (unparseable = wrong)."""
    reading = read_choice(output, options)
    pred = reading.value
    return {
        "pred": pred,
        "parsed": pred is not None,
        "unparsed_reason": reading.reason,
        "correct": pred == LETTERS[gold],
    }


def accuracy_block(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """n, accuracy, unparseable count and rate of a group of scored samples."""
    n = len(samples)
    correct = sum(bool(s["correct"]) for s in samples)
    unparsed = sum(not s["parsed"] for s in samples)
    reasons = Counter(
        str(s.get("unparsed_reason")) for s in samples if not s["parsed"] and s.get("unparsed_reason")
    )
    return {
        "n": n,
        "accuracy": correct / n if n else None,
        "unparseable": unparsed,
        "unparseable_rate": unparsed / n if n else None,
        "unparsed_reasons": dict(sorted(reasons.items())),
    }


def wrong_positions(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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
