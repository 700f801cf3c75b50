"""The countries an answer commits to, in ru, uk and en (docs/evaluating.md, "How answers
are read").

Names are found as :class:`~culturebench.eval.country_extractor.CountryExtractor` finds them
(CLDR and ISO names, aliases, every inflected form through pymorphy3), plus the places of
``eval/data/places.yaml`` (regions, cities and peoples of one country, former names; labels of
several countries and defunct states that name none) and names misspelt by one edit. Then
each name is weighed as a careful reader weighs it:

1. the answer is what follows the last reasoning block (:func:`spans.focus`); an explicit
   answer line ("Ответ:", "Answer:", "Відповідь:") that names a country is read alone;
2. a negated name ("не русская", "not from Russia", "точно не Россия"), or one ruled out after
   it ("Россия? Нет", "Russia is unlikely"), is never an answer;
3. a name in a context clause ("also eaten in", "похожие блюда есть в", "граничит с",
   "some sources say") is not an answer; nor one in a conceding clause ("хотя его едят и в
   Польше") when the sentence names a country outside it;
4. after a correction ("на самом деле", "actually", "хотя нет"), only what follows counts;
   after "but"/"но"/"але", names before it in the sentence give way to the names after it;
5. the last concluding sentence ("Итак…", "So…", "Отже…") wins; else the names stated as
   the origin or a firm pick ("родина —", "most likely", "я думаю"); else every name left,
   names only hedged ("возможно") last. An undecided "X или Y" gives both.

Where no country is left, the reading is unparsed with a reason (``ruled_out``,
``context_only``, ``refusal``, ``no_country``, ``empty``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from culturebench.eval.answers import cues, spans
from culturebench.eval.answers.reading import Reading
from culturebench.eval.country_extractor import CountryExtractor

#: Bumped whenever a change can alter the countries read from some answer (results.json ``parsers``).
VERSION = "4"
PLACES = Path(__file__).resolve().parents[1] / "data" / "places.yaml"
#: a misspelt name is read only from a word at least this long, for a name at least one longer
#: than the shortest (short names are one edit from too many words: "Omar", "Chin")
TYPO_MIN_NAME = 6
#: characters after a name searched for a ruling-out cue ("Россия? Нет", "Russia is unlikely")
RULED_OUT_REACH = 60
_JOINERS = (
    r"^[\s,;/]*(?:и|или|либо|ни|та|і|й|або|чи|ані|and|or|nor|,)?[\s,]*(?:из|с|от|з|із|від|in|from)?[\s«\"*]*$"
)


@dataclass
class _Name:
    code: str
    start: int
    end: int
    sentence: int = 0
    clause: tuple[int, int] = (0, 0)
    negated: bool = False
    context: bool = False
    also: bool = False
    conceded: bool = False
    superseded: bool = False
    preferred: bool = False
    weak: bool = False
    concluding: bool = False

    @property
    def positive(self) -> bool:
        return bool(self.code) and not (
            self.negated or self.context or self.also or self.conceded or self.superseded
        )


class CommittedCountryReader:
    """Reads the countries an answer commits to. Build once (the name index is cached on disk
    by :func:`default_reader`)."""

    def __init__(self, extractor: CountryExtractor) -> None:
        self.extractor = extractor
        self._typos: dict[str, set[str]] | None = None
        self._fixed: dict[tuple[str, bool], list[str]] = {}  # (word, capitalised) -> name words (memo)

    # -- misspelt names ------------------------------------------------------------------
    def _typo_index(self) -> dict[str, set[str]]:
        """Deletion variants of every single-word name form -> the name words they may be."""
        if self._typos is None:
            index: dict[str, set[str]] = {}
            from culturebench.countries import all_alpha2, country_name

            single = {key[0] for key, code in self.extractor.index.items() if code and len(key) == 1}
            nouns = {country_name(code, "en").lower() for code in all_alpha2()}
            # Cyrillic names in every inflected form; Latin ones only as the country's name
            # ("Rusia"), not adjectives ("pre-Columbian" is no "Colombian")
            forms = [(f, w) for f, w in self.extractor.forms.items() if w & single and not f.isascii()]
            forms += [(word, {word}) for word in single & nouns if word.isascii()]
            for form, words in forms:
                if len(form) < TYPO_MIN_NAME:
                    continue
                for variant in _deletions(form):
                    index.setdefault(variant, set()).update(w for w in words if w in single)
            self._typos = index
        return self._typos

    def fix(self, token: str, question_words: frozenset[str] = frozenset()) -> list[str]:
        """The one name word ``token`` (as written) is one edit from, when it is no dictionary
        word itself nor one of ``question_words`` (a dish's name); else nothing. A capitalised
        word may also be a verb form or a personal name ("Грузя")."""
        from culturebench.eval.country_extractor import _clean

        word, capitalised = _clean(token), token[:1].isupper()
        if word in question_words:
            return []
        if (word, capitalised) not in self._fixed:
            self._fixed[(word, capitalised)] = self._fix(word, capitalised)
        return self._fixed[(word, capitalised)]

    def _fix(self, word: str, capitalised: bool) -> list[str]:
        plain = _unaccented(word)
        if plain != word and ((plain,) in self.extractor.index or plain in self.extractor.forms):
            return [plain]  # "Perú", "México"
        if len(word) < TYPO_MIN_NAME - 1 or not word.isalpha() or _known_word(word, capitalised):
            return []
        index = self._typo_index()
        candidates: set[str] = set()
        for variant in _deletions(word):
            candidates |= index.get(variant, set())
        codes = {self.extractor.index.get((c,)) for c in candidates}
        return (
            sorted(candidates)
            if len(codes) == 1 and _one_edit_of_any(word, candidates, self.extractor)
            else []
        )

    # -- reading -------------------------------------------------------------------------
    def read(self, text: str, lang: str | None = None, prompt: str | None = None) -> Reading:
        """The countries ``text`` commits to (alpha-2 codes in the answer's order), or an
        unparsed reading with its reason. ``lang`` is the prompt's language (names of ru, uk
        and en are read in every answer); ``prompt``, when given, tells whether the question
        asks where the dish is eaten or popular (then "also eaten in Y" answers it too)."""
        text = text or ""
        where_eaten = bool(prompt and cues.pattern("where_eaten_question").search(cues.fold(prompt)))
        if not text.strip():
            return Reading.unparsed("empty")
        folded = cues.fold(text)
        start, end = spans.focus(text)
        asked = frozenset(w.lower() for w in re.findall(r"[^\W\d_]+", cues.fold(prompt or "")))
        names = [
            _Name(code, s + start, e + start)
            for code, s, e in self.extractor.mentions(text[start:end], fix=lambda t: self.fix(t, asked))
        ]
        flags = [_Name(_flag_code(m.group(0)), m.start(), m.end()) for m in _FLAG.finditer(text, start, end)]
        if flags:  # "🇯🇵": a flag is its country's name
            names = sorted(names + flags, key=lambda n: n.start)
        lines = spans.answer_lines(text, start, end)
        sentences = spans.sentences(text, start, end)
        if spans.unfinished(text) and not lines and not _concludes(folded, start, end, sentences):
            return Reading.unparsed("unfinished")  # a reasoning block cut off before any conclusion
        correction = _last_correction(folded, end)
        for line_start, line_end in reversed(lines):
            inside = [n for n in names if line_start <= n.start < line_end]
            if inside and not _corrected_after(correction, line_end, names):
                return _select(text, folded, line_start, line_end, inside, where_eaten)
        lead = None if where_eaten else _leading_answer(folded, end, names, sentences, correction)
        if lead is not None:
            inside = [n for n in names if lead[0] <= n.start < lead[1]]
            return _select(text, folded, lead[0], lead[1], inside, where_eaten)
        return _select(text, folded, start, end, names, where_eaten, sentences)


#: words besides the names that an opening answer may hold ("Probably Norway", "Фондю — Швейцария")
LEADING_WORDS = 3
#: words an opening answer may hold beyond that count
_LEADING_FILLERS = frozenset(
    {
        "и",
        "или",
        "і",
        "та",
        "або",
        "чи",
        "and",
        "or",
        "the",
        "answer",
        "ответ",
        "відповідь",
        "из",
        "з",
        "from",
    }
)


def _leading_answer(
    folded: str,
    end: int,
    names: Sequence[_Name],
    sentences: list[tuple[int, int]],
    correction: tuple[int, int] | None,
) -> tuple[int, int] | None:
    """The opening sentence when it is a short answer: names and at most
    :data:`LEADING_WORDS` other words ("Грузия.", "Эфиопия. Инджера — …", "Фондю — Швейцария.",
    "Probably Norway — lutefisk is eaten there and in Sweden"), not a question, and no
    correction with a country after it."""
    if not sentences or (len(sentences) < 2 and not re.search(r"\s[—–-]\s", folded[sentences[0][0] : end])):
        return None
    s_start, s_end = sentences[0]
    dash = re.search(r"\s[—–-]\s", folded[s_start:s_end])
    if dash and not any(s_start <= n.start < s_start + dash.start() for n in names if n.code):
        head_end = s_end  # "Фондю — Швейцария": the dish, then its country
    elif dash:
        head_end = s_start + dash.start()  # "Probably Norway — lutefisk is eaten there…"
    else:
        head_end = s_end
    inside = [n for n in names if s_start <= n.start < head_end]
    head = folded[s_start:head_end]
    if (
        len({n.code for n in inside if n.code}) != 1  # candidates ("Латвія чи Литва...") are weighed whole
        or folded[s_end : s_end + 1] == "?"
        or folded[s_end : s_end + 3] == "..."
        or re.match(r"\s*(?:[-*•]|\d+[.)])\s", head)  # a list's first item
        or cues.pattern("weak").search(head)
        or re.match(r"\s*[—–-]\s*(?:или|либо|або|чи|or)(?!\w)", folded[head_end:s_end])
        or re.search(r"(?<!\w)(?:не|ні|нет|not|no)(?!\w)", head, re.IGNORECASE)
        or any(
            cues.pattern(role).search(folded, head_end, end) for role in ("pick", "correction")
        )  # a pick or a change of mind later on
        or any(cues.opening("conclusion").match(folded, a) for a, _ in sentences[1:])
    ):
        return None
    rest = head
    for name in reversed(inside):
        rest = rest[: name.start - s_start] + " " + rest[name.end - s_start :]
    others = [w for w in re.findall(r"[^\W\d_]+", rest) if w.lower() not in _LEADING_FILLERS]
    if len(others) > LEADING_WORDS or _corrected_after(correction, head_end, names):
        return None
    return s_start, head_end


def _last_correction(folded: str, end: int) -> tuple[int, int] | None:
    """The span of the last correction in ``folded[:end]``, or None."""
    found = list(cues.pattern("correction").finditer(folded, 0, end))
    return found[-1].span() if found else None


#: a clause that states the homeland outright ("Батьківщина ж — Османська імперія")
_HOMELAND = re.compile(r"родин|батьківщин|homeland|birthplace|происхожд|походженн|originat", re.IGNORECASE)
_FLAG = re.compile("[\U0001f1e6-\U0001f1ff]{2}")


def _flag_code(flag: str) -> str:
    return "".join(chr(ord(c) - 0x1F1E6 + ord("A")) for c in flag)


def _concludes(folded: str, start: int, end: int, sentences: list[tuple[int, int]]) -> bool:
    """Whether some sentence of ``folded[start:end]`` concludes or picks ("Отже, …", "So …")."""
    if cues.pattern("pick").search(folded, start, end):
        return True
    return any(cues.opening("conclusion").match(folded, s) for s, _ in sentences)


def _corrected_after(correction: tuple[int, int] | None, pos: int, names: Sequence[_Name]) -> bool:
    """Whether the answer's last correction (its span) comes after ``pos`` (an answer line's
    end) and a country is named after it."""
    if correction is None or correction[0] < pos:
        return False
    last_named = next((n.start for n in reversed(names) if n.code), -1)  # names are in text order
    return last_named > correction[1]


def _select(
    text: str,
    folded: str,
    start: int,
    end: int,
    names: list[_Name],
    where_eaten: bool = False,
    sentences: list[tuple[int, int]] | None = None,
) -> Reading:
    """Weigh ``names`` (those of ``text[start:end]``) and return what the span commits to;
    ``sentences`` of the span when already split."""
    if not any(n.code for n in names):
        return Reading.unparsed(_no_name_reason(folded, start, end, names))
    sentences = sentences if sentences is not None else spans.sentences(text, start, end)
    clause_list: list[tuple[int, tuple[int, int]]] = []
    for index, (s, e) in enumerate(sentences):
        clause_list += [(index, c) for c in spans.clauses(text, s, e)]
    k = 0
    for name in names:  # both in text order: one walk
        while k + 1 < len(clause_list) and clause_list[k][1][1] <= name.start:
            k += 1
        if clause_list and clause_list[k][1][0] <= name.start < clause_list[k][1][1]:
            name.sentence, name.clause = clause_list[k]
        else:
            name.sentence = clause_list[k][0] if clause_list else 0
    _weigh(folded, sentences, names, where_eaten)
    _correct(folded, start, end, names)
    if not where_eaten:  # "A, а ещё в B" adds places to a where-eaten answer
        _adversative(folded, sentences, names)
    refuted: dict[int, int] = {}  # sentence -> where its refutation ends ("…, но это неверно")
    for name in names:
        if name.sentence not in refuted:
            s_start, s_end = sentences[name.sentence]
            found = [m.start() for m in cues.pattern("refuted").finditer(folded, s_start, s_end + 1)]
            refuted[name.sentence] = found[-1] if found else -1
        if name.end <= refuted[name.sentence]:
            name.negated = True
    positives = [n for n in names if n.positive]
    homeland = [
        n
        for n in names
        if not n.code
        and (n.concluding or _HOMELAND.search(folded, n.clause[0], n.clause[1]))
        and not (n.negated or n.context or n.superseded)
    ]
    if homeland and not where_eaten:  # "…популярен в X, Y. Батьківщина ж — Османська імперія"
        last = max(n.start for n in homeland)
        if not any(
            n.start > last or (n.sentence == homeland[-1].sentence and n.preferred) for n in positives
        ):
            return Reading.unparsed("no_country")
    if where_eaten and positives:  # every place the dish is eaten, served or popular answers it
        return Reading(list(dict.fromkeys(n.code for n in positives)))
    if not positives:  # "Её готовят и в Киргизстане, и в Таджикистане": the also-names are all there is
        positives = [n for n in names if n.also and n.code and not (n.negated or n.context or n.superseded)]
    if not positives:
        return Reading.unparsed(_no_name_reason(folded, start, end, names))
    concluding = [n for n in positives if n.concluding]
    if concluding:
        last = max(n.sentence for n in concluding)
        chosen = [n for n in concluding if n.sentence == last]
    else:
        firm = [n for n in positives if not n.weak]
        preferred = [n for n in firm if n.preferred]
        chosen = preferred or firm or positives
    return Reading(list(dict.fromkeys(n.code for n in chosen)))


#: how far before a name a negation is looked for ("точно не из России"): a bounded window
#: keeps the reader linear in the answer's length
NEGATION_REACH = 80


class _Spans:
    """The first cue of each role in a clause or sentence, found once (a name asks its clause
    or sentence, never scans it again: the reader stays linear)."""

    def __init__(self, folded: str) -> None:
        self.folded = folded
        self._first: dict[tuple[str, int, int], int] = {}

    def first(self, role: str, start: int, end: int) -> int:
        """Where the first cue of ``role`` in ``[start, end)`` starts, or ``end`` when none."""
        key = (role, start, end)
        if key not in self._first:
            match = cues.pattern(role).search(self.folded, start, end)
            self._first[key] = match.start() if match else end
        return self._first[key]


def _weigh(
    folded: str, sentences: list[tuple[int, int]], names: list[_Name], where_eaten: bool = False
) -> None:
    """Each name's negation, context, concession, preference, hedge and conclusion."""
    negation = cues.negation_before()
    found = _Spans(folded)
    starts = [n.start for n in names]
    for i, name in enumerate(names):
        c_start, c_end = name.clause
        s_start, s_end = sentences[name.sentence]
        previous = names[i - 1] if i else None
        window = max(c_start, name.start - NEGATION_REACH)
        name.negated = bool(negation.search(folded, window, name.start)) or (
            previous is not None
            and previous.negated
            and previous.clause == name.clause
            and re.match(_JOINERS, folded[previous.end : name.start], re.IGNORECASE) is not None
        )
        following = names[i + 1].start if i + 1 < len(names) else len(folded)
        after = cues.pattern("ruled_out_after").search(
            folded, name.end, min(following, name.end + RULED_OUT_REACH)
        )
        if after and re.search(
            r"(?<!\w)(?:не|not|don't)\s+$", folded[max(0, after.start() - 8) : after.start()]
        ):
            after = None  # "не виключаю": not ruling it out
        if after:
            name.negated = True
        # a context cue before the name in its clause ("similar dishes exist in Poland"), or one
        # of the cues said after a name right after it, no other name between ("в Польше тоже")
        # within the name's clause, or on through a relative clause ("в Нью-Йорке, куда его
        # привезли"), never into a conceding or turning one ("одеська страва, хоча її коріння…")
        reach = s_end if _RELATIVE_NEXT.match(folded, c_end) else c_end
        after_cue = cues.pattern("context_after").search(
            folded, name.end, min(following, reach, name.end + 40)
        )
        if after_cue and not _BACKWARD.match(after_cue.group(0)):
            later = bisect.bisect_right(starts, after_cue.end())
            if later < len(starts) and starts[later] < s_end:
                after_cue = None  # "Algeria (a similar dish is also found in Tunisia)": the cue looks ahead
        if after_cue and where_eaten and _BACKWARD.match(after_cue.group(0)):
            after_cue = None  # "в США, куда его привезли эмигранты": eaten there all the same
        before_context = found.first("context", c_start, c_end) < name.start
        name.context = before_context or bool(after_cue and not _only_also(after_cue.group(0)))
        if not where_eaten:
            before_also = found.first("context_also", c_start, c_end) < name.start
            name.also = before_also or bool(after_cue and _only_also(after_cue.group(0)))
        if _quoted_name(folded, name):  # «российский салат»: a name inside the dish's own name
            name.context = True
        name.weak = (
            folded[s_end : s_end + 1] == "?"
        )  # "Армения или Азербайджан?": a question, not yet an answer
        name.concluding = found.first("pick", s_start, s_end) < name.start or bool(
            cues.opening("conclusion").match(folded, s_start)
            or cues.opening("conclusion").match(folded, c_start)
        )
        name.preferred = found.first("preference", c_start, c_end) < c_end
        name.weak = name.weak or found.first("weak", c_start, c_end) < c_end
    _concede(folded, sentences, names)


def _concede(folded: str, sentences: list[tuple[int, int]], names: list[_Name]) -> None:
    """A conceding clause gives way to a country named elsewhere in its sentence ("Это блюдо из
    Индии, хотя его едят и в Пакистане"), or, opening a sentence, in the sentence before ("Хотя
    во Франции есть свои варианты.")."""
    conceding = {n.clause[0]: bool(cues.opening("concession").match(folded, n.clause[0])) for n in names}
    firm: dict[int, set[tuple[int, int]]] = {}  # sentence -> clauses with a name stated outright
    for n in names:
        if n.code and not (n.negated or n.context) and not conceding[n.clause[0]]:
            firm.setdefault(n.sentence, set()).add(n.clause)
    for name in names:
        if not conceding[name.clause[0]]:
            continue
        opens_sentence = name.clause[0] == sentences[name.sentence][0]
        elsewhere = firm.get(name.sentence, set()) - {name.clause}
        if elsewhere or (opens_sentence and firm.get(name.sentence - 1)):
            name.conceded = True


def _only_also(cue: str) -> bool:
    """Whether a cue said after a name is of the "also" kind ("тоже", "too")."""
    return bool(cues.pattern("context_also").fullmatch(cue))


_RELATIVE_NEXT = re.compile(
    r"[\s,;:—–-]*(?:куда|где|откуда|который|которая|которое|которые|куди|де|звідки|який|яка|яке|які|where|which)(?!\w)",
    re.IGNORECASE,
)
#: cues said after a name that never point ahead ("В США её привезли итальянские эмигранты");
#: the others ("также", "similar") belong to a name after them when there is one
_BACKWARD = re.compile(r"привез|завез|brought|roots|корн|корін|влияни|вплив|influence", re.IGNORECASE)
_QUOTES = {"«": "»", "“": "”", "„": "“", '"': '"'}


def _quoted_name(folded: str, name: _Name) -> bool:
    """Whether a name stands inside quotes that hold other words too (a dish's name, «русский
    салат»), not a quoted answer («Россия»)."""
    left = max(folded.rfind(q, max(0, name.start - 60), name.start) for q in _QUOTES)
    if left < 0:
        return False
    close = _QUOTES[folded[left]]
    right = folded.find(close, name.end, name.end + 60)
    if right < 0 or folded.find("\n", left, right) >= 0:
        return False
    inside = folded[left + 1 : right]
    return len(re.findall(r"[^\W\d_]+", inside)) > len(
        re.findall(r"[^\W\d_]+", folded[name.start : name.end])
    )


def _correct(folded: str, start: int, end: int, names: list[_Name]) -> None:
    """After the last correction that is followed by a country, earlier names are superseded."""
    last_positive = max((n.start for n in names if n.positive), default=-1)
    last = None
    for match in cues.pattern("correction").finditer(folded, start, end):
        if match.end() <= last_positive:
            last = match
    if last is not None:
        for name in names:
            if name.start < last.start():
                name.superseded = True


def _adversative(folded: str, sentences: list[tuple[int, int]], names: list[_Name]) -> None:
    """ "A, но B": when B's clause commits to a country, A's names in the same sentence (and,
    for a sentence opening with "Но", the previous sentence) give way."""
    opening = cues.opening("adversative")
    turns: dict[int, int] = {}  # sentence -> start of its last clause that turns and commits
    opens: set[int] = set()  # sentences that open with such a clause
    for name in names:
        if not name.positive or name.weak or not opening.match(folded, name.clause[0]):
            continue
        if cues.pattern("context_also").search(folded, name.clause[0], min(name.start, name.clause[0] + 20)):
            continue  # "а также", "but also": it adds, it does not replace
        turns[name.sentence] = max(turns.get(name.sentence, -1), name.clause[0])
        if name.clause[0] == sentences[name.sentence][0]:
            opens.add(name.sentence)
    for other in names:
        turn = turns.get(other.sentence)
        if other.positive and ((turn is not None and other.start < turn) or other.sentence + 1 in opens):
            other.superseded = True


def _no_name_reason(folded: str, start: int, end: int, names: Sequence[_Name]) -> str:
    if any(n.code and n.negated for n in names):
        return "ruled_out"
    if any(n.code and (n.context or n.conceded or n.also) for n in names):
        return "context_only"
    if cues.pattern("refusal").search(folded, start, end):
        return "refusal"
    if not folded[start:end].strip():
        return "empty"
    return "no_country"


def _deletions(word: str) -> set[str]:
    """``word`` and every form of it with one letter left out (two words one edit apart share
    one of these: the symmetric-deletion index of the typo rule)."""
    return {word, *(word[:i] + word[i + 1 :] for i in range(len(word)))}


def _one_edit_of_any(word: str, candidates: set[str], extractor: CountryExtractor) -> bool:
    """Whether ``word`` is within one edit (Levenshtein) of some form of a candidate."""
    from rapidfuzz.distance import Levenshtein

    forms = {f for f, words in extractor.forms.items() if words & candidates} | candidates
    return any(
        Levenshtein.distance(word, f, score_cutoff=1) <= 1 for f in forms if abs(len(f) - len(word)) <= 1
    )


def _unaccented(word: str) -> str:
    """A Latin word without its diacritics ("perú" -> "peru"); Cyrillic is left as it is."""
    import unicodedata

    if re.search(r"[а-яёіїєґ]", word):
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


#: dictionary readings a capitalised word may have and still be a misspelt name ("Грузя" is also
#: the gerund of "грузить"; a name is a noun)
_NOT_A_NAME = frozenset({"GRND", "VERB", "INFN", "PRTS", "ADVB", "PRCL", "INTJ"})


def _known_word(word: str, capitalised: bool = False) -> bool:
    """Whether ``word`` is a dictionary word of Russian or Ukrainian (pymorphy3); Latin words
    are taken as unknown (no English dictionary ships with the package)."""
    if word.isascii():
        return False
    from culturebench.eval.country_extractor import MORPH_LANGUAGES, _morph

    return any(
        parse.is_known
        and not (_NOT_A_WORD & parse.tag.grammemes)
        and not (capitalised and parse.tag.POS in _NOT_A_NAME)
        for lang in MORPH_LANGUAGES
        for parse in _morph(lang).parse(word)
    )


#: dictionary readings that do not make a word a real word for this rule: distorted and
#: dialect forms ("украіна"), abbreviations, personal names ("Грузя")
_NOT_A_WORD = frozenset({"Dist", "Erro", "Abbr", "Name", "Surn", "Patr", "Init"})


@lru_cache(maxsize=1)
def default_reader() -> CommittedCountryReader:
    """A shared reader over the committed extractor (the places of ``data/places.yaml`` added
    to the name index; cached on disk like the mention index)."""
    from culturebench.eval.country_extractor import cached_extractor

    return CommittedCountryReader(cached_extractor(PLACES))


def read_countries(text: str, lang: str | None = None, prompt: str | None = None) -> Reading:
    """The countries ``text`` commits to (see the module docstring)."""
    return default_reader().read(text, lang, prompt)
