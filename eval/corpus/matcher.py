"""Multi-pattern matching of dish and country names in documents: one Aho-Corasick automaton
(pyahocorasick) over the first word of every name, each hit verified in place.

A name matches in its inflected forms by the package's inflection rule
(:func:`culturebench.text.inflection_stem`): every word of the name is its stem followed by at
most a few letters, words of a multi-word name separated by non-letters, and the whole match
bounded by non-letters. Case: a name's first word matches in lower case, Title case or UPPER
CASE (the text itself is not lower-cased, which cost as much as the scan), later words in any
case; ё is read as е. Only the automaton scans the text; the per-hit check looks at a few
characters around the hit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MATCHER_VERSION = "4"  # bump when the rule changes: recorded in every count's provenance
# What may precede a name: whitespace and the punctuation that opens or separates words. They
# become spaces before the scan and every automaton key starts with a space, so the automaton
# reports only matches at a word start and stays small (one key per first stem).
BOUNDARIES = tuple('\n\t\r\xa0(«"„“‹[{/-–—.,:;!?…*')
# Between documents scanned together: a match never crosses it; its space starts the next word.
DOC_SEPARATOR = "\x00 "
APOSTROPHES = ("’", "ʼ", "‘", "`")  # read as ' (м'ясо, в'єтнамський)


@dataclass(frozen=True)
class Term:
    """One name to find: ``key`` identifies what it names (e.g. ``("dish", "ru-12", "ru")``
    or ``("country", "UA")``)."""

    key: tuple[str, ...]
    name: str


@dataclass
class Hit:
    key: tuple[str, ...]
    start: int
    end: int


@dataclass
class Matcher:
    """Built once from terms (cheap to rebuild in a worker: it pickles as its terms)."""

    terms: list[Term]
    _automaton: object = field(default=None, init=False, repr=False)

    def __getstate__(self) -> dict:
        return {"terms": self.terms}

    def __setstate__(self, state: dict) -> None:
        self.terms = state["terms"]
        self._automaton = None

    def automaton(self):
        if self._automaton is None:
            import ahocorasick

            from culturebench.text import inflection_stem

            automaton = ahocorasick.Automaton()
            heads: dict[str, list[tuple[tuple[str, ...], list[tuple[str, int]]]]] = {}
            for term in self.terms:
                words = _words(term.name)
                if not words:
                    continue
                stems = [inflection_stem(w) for w in words]
                heads.setdefault(stems[0][0], []).append((term.key, stems))
            for head, entries in heads.items():
                # the text is not lower-cased (that alone cost as much as the scan): each first
                # stem is a key in lower case, Title case and UPPER CASE, after a space
                for variant in {head, head.capitalize(), head.upper()}:
                    if len(variant) == len(head):
                        automaton.add_word(" " + variant, entries)
            automaton.make_automaton()
            self._automaton = automaton
        return self._automaton

    def find(self, text: str) -> list[Hit]:
        """Every verified match in ``text``: (key, start, end) in ``text``'s own positions."""
        return self.find_many([text])[0]

    def find_many(self, texts: Sequence[str]) -> list[list[Hit]]:
        """:meth:`find` for many documents in one scan: they are scanned as one string with a
        separator no match may cross (fewer calls, same result). Boundaries become spaces, ё
        becomes е and typographic apostrophes ', all one for one (positions are kept)."""
        norm = " " + DOC_SEPARATOR.join(texts)  # a boundary before the first word too
        for mark, into in REWRITES:  # str.replace runs at memory speed; skipped when absent
            if mark in norm:
                norm = norm.replace(mark, into)
        return self._scan(norm, [len(t) for t in texts])

    def _scan(self, norm: str, lengths: Sequence[int]) -> list[list[Hit]]:
        from bisect import bisect_right
        from itertools import accumulate

        starts = [0, *accumulate(n + len(DOC_SEPARATOR) for n in lengths)][:-1]  # in the joined text
        out: list[list[Hit]] = [[] for _ in lengths]
        automaton = self.automaton()
        if len(automaton) == 0:
            return out
        for end_index, entries in automaton.iter(norm):
            for key, stems in entries:
                start = end_index - len(stems[0][0])  # in the joined text (norm has one extra space)
                end = _match_rest(norm, end_index + 1, stems)
                if end is not None:
                    doc = bisect_right(starts, start) - 1
                    out[doc].append(Hit(key, start - starts[doc], end - 1 - starts[doc]))
        return out

    def count(self, text: str) -> Counter:
        """Occurrences per key in ``text``."""
        return Counter(hit.key for hit in self.find(text))


def _rewrites() -> tuple[tuple[str, str], ...]:
    return (
        *((mark, " ") for mark in BOUNDARIES),
        ("ё", "е"),
        ("Ё", "Е"),
        *((mark, "'") for mark in APOSTROPHES),
    )


def normalise(text: str) -> str:
    """Lower case, ё as е, one apostrophe; the same length as ``text`` whenever lower-casing
    keeps it."""
    out = (text or "").lower().replace("ё", "е")
    for mark in APOSTROPHES:  # str.replace runs at memory speed; translate() would not
        if mark in out:
            out = out.replace(mark, "'")
    return out


def _letter(ch: str) -> bool:
    """Part of a word: letters, digits, and the apostrophe inside Ukrainian words."""
    return ch.isalnum() or ch == "'"


def name_key(name: str) -> tuple[str, ...]:
    """What the matcher sees of a name: the stems of its words. Two names with one key (ПЕЛЬМЕНИ
    and ПЕЛЬМЕНІ) match the same text and cannot be told apart in a corpus."""
    from culturebench.text import inflection_stem

    return tuple(inflection_stem(w)[0] for w in _words(name))


def _words(name: str) -> list[str]:
    out, word = [], []
    for ch in normalise(name):
        if _letter(ch):
            word.append(ch)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


def _match_rest(text: str, pos: int, stems: Sequence[tuple[str, int]]) -> int | None:
    """End of the match whose first stem ends at ``pos``, or None."""
    n = len(text)
    for k, (stem, extra) in enumerate(stems):
        if k > 0:  # separator, then the next stem
            sep = pos
            while pos < n and not _letter(text[pos]):
                if text[pos] == DOC_SEPARATOR[0]:
                    return None
                pos += 1
            if pos == sep or text[pos : pos + len(stem)].lower() != stem:
                return None
            pos += len(stem)
        letters = 0
        while pos < n and _letter(text[pos]) and letters < extra:
            pos += 1
            letters += 1
        if pos < n and _letter(text[pos]):
            return None  # longer than the rule allows: another word
    return pos


def sentence_around(text: str, start: int, end: int, limit: int = 300) -> str:
    """The sentence holding ``text[start:end]`` (split on . ! ? and line breaks), at most
    ``limit`` characters around the match."""
    left = max(text.rfind(c, 0, start) for c in ".!?\n")
    rights = [i for i in (text.find(c, end) for c in ".!?\n") if i != -1]
    right = min(rights) + 1 if rights else len(text)
    left += 1
    if right - left > limit:
        half = limit // 2
        left, right = max(left, start - half), min(right, end + half)
    return " ".join(text[left:right].split())


def dish_terms(dishes: Iterable[tuple[str, str, str]]) -> list[Term]:
    """Terms for ``(dish id, name language, name)``."""
    return [Term(("dish", dish, lang), name) for dish, lang, name in dishes if name]


def country_terms(lang: str) -> list[Term]:
    """Terms for every country name and alias in ``lang`` (CLDR + the extractor's aliases)."""
    from culturebench.eval.countries import country_surface_names

    return [
        Term(("country", code), name) for code, names in country_surface_names(lang).items() for name in names
    ]


REWRITES = _rewrites()
