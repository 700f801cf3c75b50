"""Multi-pattern matching of dish and country names in documents: one Aho-Corasick automaton
over UTF-8 bytes finds the first word of every name at a word start, and the rest of the match
is checked in place. The automaton is daachorse's double array, whose keys carry every boundary
character in front as it stands in the text (docs/corpus.md says why it was chosen); without
daachorse, ahocorasick-rs's DFA over text whose one-byte boundaries were made spaces (the two
give the same hits: tests/test_corpus.py).

A name matches in its inflected forms by the package's inflection rule
(:func:`culturebench.text.inflection_stem`): every word of the name is its stem followed by at
most a few letters, words of a multi-word name separated by non-letters, and the whole match
bounded by non-letters. Case: a name's first word matches in lower case, Title case or UPPER
CASE (the text itself is not lower-cased, which cost as much as the scan), later words in any
case; ё is read as е and the typographic apostrophes as '. Only the automaton scans the text;
the check of a candidate looks at a few characters after it.

How the scan stays at memory speed: a batch of documents is joined once and encoded to UTF-8
(one C call); the automaton's keys are the first stems with each boundary character in front
(one-byte ones are made spaces by one bytes.translate pass, the few multi-byte ones stay in the
text), in each case and apostrophe form, so only matches at a word start are reported; ё and Ё
become е and Е, which have their UTF-8 length, so byte positions never move. Documents read from
JSON Lines are scanned as the file writes them (:class:`JsonTexts`: no text decoded and encoded
again); there a newline, tab or carriage return stands as its escape (``\\n``), which the keys
carry too, and each candidate's few bytes are read through their escapes.
"""

from __future__ import annotations

import functools
import itertools
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from culturebench.eval.corpus.json_texts import JsonTexts, escape_starts, unescape

# bump when the rule changes: recorded in every count's provenance. 6: a document's hits are in
# the order of their position (were the automaton's report order, which differed only where
# names overlap), so the first hit of a dish, whose sentence a sample shows, is the first in
# the text whichever automaton ran; the hits themselves are those of version 5.
MATCHER_VERSION = "6"
# What may precede a name: whitespace and the punctuation that opens or separates words.
BOUNDARIES = tuple(' \n\t\r\xa0(«"„“‹[{/-–—.,:;!?…*')
# Between documents scanned together: a match never crosses it; its space starts the next word.
DOC_SEPARATOR = "\x00 "
APOSTROPHES = ("’", "ʼ", "‘", "`")  # read as ' (м'ясо, в'єтнамський)
# In the checks: the apostrophes are made ' in each candidate's few characters first.
_LETTER = "(?:[^\\W_]|')"  # str.isalnum() or the apostrophe
_OTHER = "(?:_|[^\\w'\\x00])"  # anything else but the document separator
DFA_MAX_KEYS = 100_000  # up to ~250 MB of automaton per worker; past it, the slower NFA
# One-byte boundaries become spaces in the scanned bytes (one bytes.translate pass); the others
# (no-break space, guillemets, dashes, the ellipsis) stay, and the keys carry them in front.
_SPACED = bytes.maketrans(
    "".join(b for b in BOUNDARIES if b.isascii()).encode(), b" " * sum(b.isascii() for b in BOUNDARIES)
)
_PREFIXES = (" ", *(b for b in BOUNDARIES if not b.isascii()))
# The boundaries a JSON string literal writes as an escape (the other boundaries stand as they
# are there, " and / also after their backslash): keys of the double array too.
JSON_MARKS = ("\\n", "\\t", "\\r")


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
    _automaton: Any = field(default=None, init=False, repr=False)
    _boundary: Any = field(default=None, init=False, repr=False)

    def __getstate__(self) -> dict:
        return {"terms": self.terms}

    def __setstate__(self, state: dict) -> None:
        self.terms = state["terms"]
        self._automaton = None
        self._boundary = None

    def automaton(self) -> tuple:
        """(ahocorasick-rs automaton of the first stems after each of :data:`_PREFIXES`, the
        keys' owners), built once; the automaton is None without names."""
        if self._automaton is None:
            import ahocorasick_rs

            keys, owners = _stem_keys(self.terms, _PREFIXES)
            # a DFA scans about twice as fast as the NFA but takes ~2.5 KB per key
            kind = ahocorasick_rs.Implementation
            fast = kind.DFA if len(keys) <= DFA_MAX_KEYS else kind.ContiguousNFA
            automaton = ahocorasick_rs.BytesAhoCorasick(keys, implementation=fast) if keys else None
            self._automaton = (automaton, owners)
        return self._automaton

    def boundary_automaton(self) -> tuple | None:
        """(daachorse double-array automaton of the first stems after each of
        :data:`BOUNDARIES` as it stands in the text, the keys' owners), built once (0.2 s for
        866 names); None without daachorse or names (:meth:`automaton` over translated text
        is used then)."""
        if self._boundary is None:
            self._boundary = _double_array(self.terms) or ()
        return self._boundary or None

    def find(self, text: str) -> list[Hit]:
        """Every verified match in ``text``: (key, start, end) in ``text``'s own positions."""
        return self.find_many([text])[0]

    def find_many(self, texts: Sequence[str] | JsonTexts) -> list[list[Hit]]:
        """:meth:`find` for many documents in one scan: they are scanned as one UTF-8 string
        with a separator no match may cross (fewer calls, same result). Documents given as
        JSON string literals (:class:`JsonTexts`) are scanned as they stand in the file."""
        out: list[list[Hit]] = [[] for _ in range(len(texts))]
        if not len(texts) or not self.terms:
            return out
        boundary = self.boundary_automaton() if USE_BOUNDARY_KEYS else None
        literals = texts if isinstance(texts, JsonTexts) and boundary is not None else None
        if isinstance(texts, JsonTexts) and literals is None:
            texts = list(texts)  # the translated-text automaton reads decoded text
        marks: Sequence[str]
        if literals is not None:
            automaton, owners = boundary  # type: ignore[misc]
            data, marks = literals.data, APOSTROPHES  # apostrophes are looked for per window
            matches = automaton.find_overlapping(data)
        elif boundary is not None:
            automaton, owners = boundary
            data, marks = _scanned(" " + DOC_SEPARATOR.join(texts), spaced=False)
            matches = automaton.find_overlapping(data)
        else:
            automaton, owners = self.automaton()
            if automaton is None:
                return out
            data, marks = _scanned(" " + DOC_SEPARATOR.join(texts), spaced=True)
            matches = ((b, e, p) for p, b, e in automaton.find_matches_as_indexes(data, overlapping=True))
        found = _candidate_hits(data, matches, owners, marks, escaped=literals is not None)
        if found:
            found.sort(key=lambda hit: (hit[0], hit[1]))  # by position (stable: name order kept)
            starts = texts.starts if isinstance(texts, JsonTexts) else _doc_starts(data, texts)
            positions = sorted({at for at, _, _ in found})
            offsets = _char_offsets(data, starts, positions, literals)
            for at, length, key in found:
                doc, start = offsets[at]
                out[doc].append(Hit(key, start, start + length))
        return out

    def count(self, text: str) -> Counter:
        """Occurrences per key in ``text``."""
        return Counter(hit.key for hit in self.find(text))


USE_BOUNDARY_KEYS = True  # daachorse when installed (tests turn it off to compare the two paths)


def _stem_keys(
    terms: Sequence[Term], marks: Sequence[str], *, yo: bool = False
) -> tuple[list[bytes], list[tuple]]:
    """The automaton's keys, each first stem in its case forms (with ``yo``, also with ё for
    each е) after each of ``marks``, and per key its owner: (bytes of the mark, characters of
    the stem, the window's width in bytes, the checks of the names under the stem, the most
    letters any of them lets follow the stem, whether the mark is a JSON escape, a pattern of
    bytes that is surely a longer word)."""
    from culturebench.text import inflection_stem

    heads: dict[str, list[tuple[tuple[str, ...], list[tuple[str, int]]]]] = {}
    for term in terms:
        words = _words(term.name)
        if words:
            stems = [inflection_stem(w) for w in words]
            heads.setdefault(stems[0][0], []).append((term.key, stems))
    keys: list[bytes] = []
    owners: list[tuple[int, int, int, list[_Plan], int, bool, re.Pattern[bytes]]] = []
    for head, entries in heads.items():
        # room after the key's start for the longest of its names, in bytes
        width = 4 * max(
            len(" ".join(w for w, _ in stems)) + sum(e for _, e in stems) + 8 for _, stems in entries
        )
        plans = _plans(entries)
        most = max(plan.extra for plan in plans)
        # the text is not lower-cased (that alone cost as much as the scan): each first stem is
        # a key in lower case, Title case and UPPER CASE, after each boundary
        longer = _longer_word(most)
        for variant in sorted(_forms(head, yo=yo)):  # one order in every process (a cache key)
            for mark in marks:
                keys.append((mark + variant).encode())
                owners.append(
                    (len(mark.encode()), len(variant), width, plans, most, mark in JSON_MARKS, longer)
                )
    return keys, owners


def _double_array(terms: Sequence[Term]) -> tuple | None:
    """daachorse's automaton of the first stems after every boundary, and the keys' owners;
    None without daachorse (the ``corpus`` extra) or names."""
    try:
        import daachorse
    except ImportError:
        return None
    keys, owners = _stem_keys(terms, (*BOUNDARIES, *JSON_MARKS), yo=True)
    return (_built_double_array(daachorse, keys), owners) if keys else None


def _built_double_array(daachorse: Any, keys: list[bytes]) -> Any:
    """The double array of ``keys``. Building one for the ~900 names of a BORSCH release takes
    about 0.3 s, so it is kept under the culturebench cache (``corpus-automaton/<key>.daac``,
    written atomically), keyed by the keys themselves and daachorse's version; loading it takes
    milliseconds. The file ends with its own sha256, checked before it is loaded (a damaged
    file is built again)."""
    from importlib.metadata import version

    from culturebench.atomic import write_bytes_atomic
    from culturebench.cache_dirs import cache_root
    from culturebench.hashing import sha256_bytes

    digest = sha256_bytes(b"\n".join([version("daachorse").encode(), *keys]))[:24]
    path = cache_root() / "corpus-automaton" / f"{digest}.daac"
    try:
        stored = path.read_bytes()
        blob, check = stored[:-64], stored[-64:]
        if sha256_bytes(blob).encode() == check:
            return daachorse.DoubleArrayAhoCorasick.deserialize(blob)
    except (OSError, ValueError):
        pass
    automaton = daachorse.DoubleArrayAhoCorasick(keys)
    try:
        blob = automaton.serialize()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, blob + sha256_bytes(blob).encode())
    except OSError:  # a read-only cache: built per process
        pass
    return automaton


def _scanned(joined: str, *, spaced: bool) -> tuple[bytes, list[str]]:
    """The documents' bytes as the automaton scans them (ё read as е; with ``spaced``, the
    one-byte boundaries made spaces, which keeps every UTF-8 length), and the typographic
    apostrophes the text holds (looked for once, not per window)."""
    for mark, into in (("ё", "е"), ("Ё", "Е")):  # in the text (in UTF-8 bytes, 10x slower)
        if mark in joined:
            joined = joined.replace(mark, into)
    data = joined.encode("utf-8", "surrogatepass")
    return (data.translate(_SPACED) if spaced else data), [m for m in APOSTROPHES if m in joined]


def _candidate_hits(
    data: bytes,
    matches: Iterable[tuple[int, int, int]],
    owners: Sequence[tuple],
    marks: Sequence[str],
    *,
    escaped: bool = False,
) -> list[tuple[int, int, tuple[str, ...]]]:
    """The verified hits (byte position, length in characters, key) of the automaton's
    ``matches`` (key start, key end, key number); ``escaped``: ``data`` holds JSON string
    literals, read through their escapes."""
    size = len(data)
    found: list[tuple[int, int, tuple[str, ...]]] = []
    for begin, end, pattern in matches:
        skip, chars, width, plans, most, json_mark, longer = owners[pattern]
        if json_mark and not (escaped and escape_starts(data, begin)):
            continue  # a \n in decoded text, or the n of an escaped backslash and an n
        # most candidates are a longer word that starts with the stem: the few bytes after the
        # stem tell, most often without decoding them (typographic apostrophes left as they
        # are end the word early, so a word the rule would take is never dropped here; so does
        # an escape's backslash)
        if longer.match(data, end) or _word_end(_window(data, end, 4 * most + 4, size, ())) > most:
            continue
        at = begin + skip  # the first stem, in bytes of the joined text
        if escaped and data.find(b"\\", at, at + width) >= 0:
            window = _unescaped_window(data, at, width, size, marks)
        else:
            window = _window(data, at, width, size, marks)
        found.extend((at, length, key) for length, key in _verified(window, chars, plans))
    return found


def _window(data: bytes, at: int, width: int, size: int, marks: Sequence[str]) -> str:
    """The text from byte ``at`` on, about ``width`` bytes (to a whole character), with the
    typographic ``marks`` read as ' (one character for one: positions kept)."""
    stop = min(at + width, size)
    while stop < size and data[stop] & 0xC0 == 0x80:  # not inside a character
        stop += 1
    window = data[at:stop].decode("utf-8", "surrogatepass")
    for mark in marks:
        if mark in window:
            window = window.replace(mark, "'")
    return window


def _unescaped_window(data: bytes, at: int, width: int, size: int, marks: Sequence[str]) -> str:
    """:func:`_window` of a JSON string literal: the text of the escapes, as many bytes of it
    as the window of the decoded text would hold (an escape is two bytes for one character)."""
    text = unescape(_window(data, at, 2 * width, size, ())).encode("utf-8", "surrogatepass")
    return _window(text, 0, width, len(text), marks)


def _word_end(text: str) -> int:
    """Where the word at the start of ``text`` ends (:data:`_WORD` matches, if only the
    empty word)."""
    found = _WORD.match(text)
    return found.end() if found is not None else 0


def _forms(head: str, *, yo: bool = False) -> set[str]:
    """A first stem as the automaton looks for it: lower, Title and UPPER case (where the
    length is kept), each with every apostrophe form; with ``yo``, each е (Е) also as ё (Ё),
    for text scanned as written (the text path reads ё as е before the scan)."""
    cases = {v for v in (head, head.capitalize(), head.upper()) if len(v) == len(head)}
    if "'" in head:
        cases = {v.replace("'", mark) for v in cases for mark in ("'", *APOSTROPHES)}
    if not yo:
        return cases
    out = set()
    for form in cases:
        at = [i for i, ch in enumerate(form) if ch in "еЕ"]
        for choice in itertools.product((False, True), repeat=len(at)):
            chars = list(form)
            for i, change in zip(at, choice, strict=True):
                if change:
                    chars[i] = "ё" if chars[i] == "е" else "Ё"
            out.add("".join(chars))
    return out


@functools.lru_cache(maxsize=64)
def _longer_word(most: int) -> re.Pattern[bytes]:
    """Bytes that surely continue a word past ``most`` more letters: ``most`` + 1 letters of
    ASCII, Cyrillic U+0400-U+047F or the apostrophe (all letters to the rule). A candidate it
    matches is dropped without decoding; one it does not is checked exactly."""
    return re.compile(rb"(?:[A-Za-z0-9']|[\xd0\xd1][\x80-\xbf]){%d}" % (most + 1))


_WORD = re.compile(f"{_LETTER}*")  # the rest of a word
_NEXT_WORD = re.compile(f"{_OTHER}+({_LETTER}*)")  # a separator, then the next word


@dataclass(frozen=True)
class _Plan:
    """The names under one first stem that have the same words: the first word's extra
    letters allowed, each later word's (stem, extra letters), and the keys (with their order
    among the first stem's names, so hits come out in the order the names were given)."""

    extra: int
    later: tuple[tuple[str, int], ...]
    keys: tuple[tuple[int, tuple[str, ...]], ...]


def _plans(entries: Sequence[tuple[tuple[str, ...], list[tuple[str, int]]]]) -> list[_Plan]:
    """The checks of one first stem, one per distinct name (many names share a first stem:
    a dish's names in two languages, soups and salads of one head word)."""
    grouped: dict[tuple, list[tuple[int, tuple[str, ...]]]] = {}
    for order, (key, stems) in enumerate(entries):
        grouped.setdefault((stems[0][1], tuple(stems[1:])), []).append((order, key))
    return [_Plan(extra, later, tuple(keys)) for (extra, later), keys in grouped.items()]


def _verified(window: str, pos: int, plans: Sequence[_Plan]) -> list[tuple[int, tuple[str, ...]]]:
    """(end, key) of every name whose first stem ends at ``pos`` in ``window`` and whose rest
    is there: the first word's letters after its stem at most its extra letters; then for
    each later word a separator and a word that starts with the stem in any case (ё as е)
    with at most its extra letters after it; the match ends where its last word ends. The
    window is cut into words once, however many names share the first stem."""
    first = _WORD.match(window, pos)
    if first is None:  # no word at ``pos``: no name starts there
        return []
    first_end = first.end()
    rest = first_end - pos
    words: list[tuple[int, int]] = []  # the later words, as far as a name needs them
    out: list[tuple[int, int, tuple[str, ...]]] = []
    for plan in plans:
        if rest > plan.extra:
            continue
        end = first_end
        for i, (stem, extra) in enumerate(plan.later):
            while len(words) <= i:
                after = words[-1][1] if words else first_end
                found = _NEXT_WORD.match(window, after) if after >= 0 else None
                words.append(found.span(1) if found else (-1, -1))
            start, end = words[i]
            if start < 0 or end - start - len(stem) > extra:
                break
            if normalise(window[start : start + len(stem)]) != stem:
                break
        else:  # every later word is there
            out.extend((order, end, key) for order, key in plan.keys)
    if len(plans) > 1:
        out.sort(key=lambda hit: hit[0])
    return [(end, key) for _, end, key in out]


def _char_offsets(
    data: bytes, starts: Sequence[int], positions: Sequence[int], literals: JsonTexts | None = None
) -> dict[int, tuple[int, int]]:
    """Per byte position (sorted, each at a character start): (document, characters before it
    in that document). Each stretch of bytes is decoded once, from the previous position in
    the same document: linear in the text, however many hits a long document holds. In JSON
    string ``literals``, each escape is one character."""
    out: dict[int, tuple[int, int]] = {}
    doc, prev, chars = -1, 0, 0
    for at in positions:
        here = bisect_right(starts, at) - 1
        if here != doc:
            doc, prev, chars = here, starts[here], 0
        chars += len(data[prev:at].decode("utf-8", "surrogatepass"))
        if literals is not None:
            chars -= literals.escapes_between(prev, at)
        prev = at
        out[at] = (doc, chars)
    return out


def _doc_starts(data: bytes, texts: Sequence[str]) -> list[int]:
    """Byte offset of every document in the joined text: after each separator (found in one
    pass), or from each document's own length when a document holds a NUL itself."""
    import numpy as np

    nul = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0)
    if len(nul) == len(texts) - 1:
        return [1, *(nul + len(DOC_SEPARATOR.encode())).tolist()]
    starts, at = [], 1
    for text in texts:
        starts.append(at)
        at += len(text.encode("utf-8", "surrogatepass")) + len(DOC_SEPARATOR)
    return starts


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
    from culturebench.eval.country_extractor import country_surface_names

    return [
        Term(("country", code), name) for code, names in country_surface_names(lang).items() for name in names
    ]
