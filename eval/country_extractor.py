"""Extract countries (ISO 3166-1 alpha-2) from free-text model answers in ru, uk and en.

Names come from the Unicode CLDR (babel) for every ISO country in the three languages, ISO
3166 English names (pycountry), and ``data/country_aliases.yaml`` (names CLDR does not use:
short and recent forms such as "Кыргызстан", "Штаты"; the nationality adjective of every
country). Every name word is expanded to all its inflected forms with pymorphy3 (the whole
lexeme of each of its noun, adjective or participle readings, in the name's own language; a
plural name keeps its plural forms), so "українська", "из Соединённых Штатов", "в
Кыргызстане" and "американское" all reach their dictionary entry without lemmatising the
answer. ё is read as е and the apostrophes ’ ʼ as '. Matching is greedy and longest-first
over words; multi-word regions that contain a country's name ("Латинская Америка", "South
America", "New Mexico") are listed in the alias file as ``not_countries`` and consumed without
naming a country.

How answers are read (measured on ``tests/data/answers/country/``, docs/evaluating.md):

* every country the answer names counts, whatever is said of it: "не русское, а украинское"
  gives RU and UA (mention semantics; the BORSCH scores compare these sets with the gold
  origins);
* words that are also common words ("перу", "бутан", "turkey", "chile") count only when
  capitalised; some ("того", "чад", uk "мали") must also not open a sentence, unless they are
  the whole answer;
* names in capitals (US, UK, США, ПАР) count only when written in capitals;
* regions, cities and peoples count only where the alias file ties them to one country
  (Tatarstan is Russia, Scotland the United Kingdom); continents, "СССР" and supranational
  regions name none.

No spaCy model or download is needed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from culturebench.countries import all_alpha2, country_name
from culturebench.yamlio import load_yaml

#: Bumped whenever a change can alter what is extracted from some answer; written into every
#: run's results.json (``parsers``), so two runs read by different rules never pass unnoticed.
VERSION = "2"
LANGUAGES = ("ru", "uk", "en")  # the languages of the CLDR names and of data/country_aliases.yaml
# Languages whose names are expanded to their inflected forms with pymorphy3 (pyproject:
# pymorphy3-dicts-ru, -uk).
MORPH_LANGUAGES = ("ru", "uk")
# Readings of a name word whose lexeme is taken: nouns, full adjectives, participles
# ("Соединённые"). Pronouns, short forms and verbs never name a country.
_NAME_POS = {"NOUN", "ADJF", "PRTF"}
_TOKEN = re.compile(r"[A-Za-zÀ-ÿĀ-žƏəА-Яа-яЁёІіЇїЄєҐґ'’ʼʻ.]+|\d+")
_CYRILLIC = re.compile(r"[А-Яа-яЁёІіЇїЄєҐґ]")
_ALIASES = Path(__file__).parent / "data" / "country_aliases.yaml"
_NOT_A_COUNTRY = ""  # index value of a region that contains a country's name


@lru_cache(maxsize=2)
def _morph(lang: str):
    import pymorphy3

    return pymorphy3.MorphAnalyzer(lang=lang)


def _clean(token: str) -> str:
    word = token.replace("’", "'").replace("ʼ", "'").replace("ʻ", "'").strip(".'").lower()
    return word.replace("ё", "е")


def _forms(word: str, lang: str) -> set[str]:
    """Every inflected form of a (cleaned) name word in ``lang``: the lexemes of its noun,
    adjective and participle readings, each kept to its own part of speech, a noun to its
    own number, a participle to its own voice and tense."""
    if not _CYRILLIC.search(word):  # English: possessive and plural ("Ukraine's", "Georgians")
        return {word, f"{word}'s", f"{word}s"}
    out = {word}
    if lang not in MORPH_LANGUAGES:
        return out
    for parse in _morph(lang).parse(word):
        tag = parse.tag
        if tag.POS not in _NAME_POS or "Apro" in str(tag):
            continue
        for form in parse.lexeme:
            ftag = form.tag
            if ftag.POS != tag.POS:
                continue
            if tag.POS == "NOUN" and tag.number and ftag.number != tag.number:
                continue
            if tag.POS == "PRTF" and (ftag.voice, ftag.tense) != (tag.voice, tag.tense):
                continue
            out.add(_clean(form.word))
    return out


class CountryExtractor:
    """Finds country mentions in text. Build once (the index takes about a second)."""

    def __init__(self, aliases_path: Path = _ALIASES, places_path: Path | None = None) -> None:
        data = load_yaml(aliases_path)
        self.ambiguous = _ambiguous(data, "ambiguous")
        self.ambiguous_at_start = _ambiguous(data, "ambiguous_at_sentence_start")
        self.index: dict[tuple[str, ...], str] = {}
        self.forms: dict[str, set[str]] = {}  # inflected form -> name words it is a form of
        self.max_len = 1
        parts = []  # "Мʼянма (Бірма)": each part also names the country, after every full name
        for code in all_alpha2():
            for lang in LANGUAGES:
                name, *alternatives = _name_parts(country_name(code, lang))
                self._add(name, code, lang)
                parts += [(part, code, lang) for part in alternatives]
        for code, name in _iso_english_names():  # "Myanmar", "Bosnia and Herzegovina", ...
            self._add(name, code, "en")
        for code, by_lang in data["aliases"].items():
            for lang, names in by_lang.items():
                for name in names:
                    self._add(str(name), code, lang)
        for lang, names in data.get("not_countries", {}).items():
            for name in names:
                self._add(str(name), _NOT_A_COUNTRY, lang)
        for part, code, lang in parts:
            self._add(part, code, lang)
        if places_path is not None:  # the committed reader's places: they win over the above
            places = load_yaml(places_path)
            self.ambiguous |= {_clean(str(w)) for w in places.get("ambiguous") or []}
            self._add_foreign(places.get("foreign_name_locales") or [])
            for code, by_lang in places_entries(places_path):
                for lang, names in by_lang.items():
                    for name in names:
                        self._add(str(name), code, lang, override=True)

    def _add_foreign(self, locales: list[str]) -> None:
        """Country names in other languages (CLDR), each new word read only when capitalised;
        a name already known keeps its own rules."""
        for locale in locales:
            for code in all_alpha2():
                name = country_name(code, str(locale)).replace("ʻ", "'").replace("ʼ", "'")
                tokens = tuple(t for t in (_key(t) for t in _TOKEN.findall(name)) if t)
                if not tokens or tokens in self.index or min(len(t) for t in tokens) < 4:
                    continue
                if any(t in self.forms for t in tokens):
                    continue  # a word of another name ("Chili" is French for Chile, and a pepper)
                self.index[tokens] = code
                self.max_len = max(self.max_len, len(tokens))
                for word in tokens:
                    self.forms[word] = {word}
                    self.ambiguous.add(word)

    def _add(self, name: str, code: str, lang: str, override: bool = False) -> None:
        tokens = [_key(t) for t in _TOKEN.findall(name)]
        tokens = [t for t in tokens if t]
        if not tokens:
            return
        key = tuple(tokens)
        if code == _NOT_A_COUNTRY or override:
            self.index[key] = code
        else:
            self.index.setdefault(key, code)
        for word in tokens:
            if not word.islower():  # an abbreviation in capitals: matched as written
                continue
            for form in _forms(word, lang):
                self.forms.setdefault(form, set()).add(word)
        self.max_len = max(self.max_len, len(tokens))

    def state(self) -> dict:
        """The built index as JSON-ready data (:meth:`from_state` restores it)."""
        return {
            "ambiguous": sorted(self.ambiguous),
            "ambiguous_at_start": sorted(self.ambiguous_at_start),
            "index": [[list(key), code] for key, code in self.index.items()],
            "forms": {form: sorted(words) for form, words in self.forms.items()},
            "max_len": self.max_len,
        }

    @classmethod
    def from_state(cls, state: dict) -> CountryExtractor:
        """An extractor from :meth:`state`'s data, without building anything."""
        extractor = cls.__new__(cls)
        extractor.ambiguous = set(state["ambiguous"])
        extractor.ambiguous_at_start = set(state["ambiguous_at_start"])
        extractor.index = {tuple(key): str(code) for key, code in state["index"]}
        extractor.forms = {form: set(words) for form, words in state["forms"].items()}
        extractor.max_len = int(state["max_len"])
        return extractor

    def _readings(self, token: str) -> list[str]:
        """The name words an answer token can be a form of (its own cleaned form first; a
        token in capitals also as written, for abbreviations)."""
        word = _clean(token)
        if not word:
            return []
        key = _key(token)
        caps = [key] if key != word else []
        return [word, *caps, *sorted(self.forms.get(word, set()) - {word})]

    def extract(self, text: str, lang: str) -> list[str]:
        """Country codes mentioned in ``text`` (written in ``lang``, one of :data:`LANGUAGES`),
        unique, in order of first mention. ``lang`` is kept for callers; names of all three
        languages are matched, as models often answer in another language than asked."""
        found: list[str] = []
        for code, _start, _end in self.mentions(text):
            if code and code not in found:
                found.append(code)
        return found

    def mentions(
        self, text: str, fix: Callable[[str], list[str]] | None = None
    ) -> list[tuple[str, int, int]]:
        """Every name found in ``text`` as ``(code, start, end)`` character spans, in order; a
        region that names no country (continents, the USSR) has the code ``""``. ``fix``, when
        given, offers name words for a token (as written) that reads as no name word at all (a
        misspelt name: :mod:`culturebench.eval.answers.countries`)."""
        text = text or ""
        matches = list(_TOKEN.finditer(text))
        tokens = [m.group(0) for m in matches]
        candidates = [self._readings(t) for t in tokens]
        if fix is not None:
            for token, options in zip(tokens, candidates, strict=True):
                if options and not any(o in self.forms or (o,) in self.index for o in options):
                    options.extend(fix(token))
        alone = len(tokens) == 1
        found: list[tuple[str, int, int]] = []
        i = 0
        while i < len(tokens):
            match = self._match_at(
                tokens, candidates, i, functools.partial(_sentence_start, text, matches[i].start()), alone
            )
            if match is None:
                i += 1
                continue
            code, length = match
            found.append((code, matches[i].start(), matches[i + length - 1].end()))
            i += length
        return found

    def _match_at(
        self,
        tokens: list[str],
        candidates: list[list[str]],
        i: int,
        sentence_start: Callable[[], bool],
        alone: bool,
    ) -> tuple[str, int] | None:
        """The (code, length) of the longest name starting at token ``i``, or None;
        ``sentence_start`` is asked only for a word that is also a common word."""
        for length in range(min(self.max_len, len(tokens) - i), 0, -1):
            window = candidates[i : i + length]
            if length == 1 and any(c in self.ambiguous or c in self.ambiguous_at_start for c in window[0]):
                # A word that is also a common word ("перу", "turkey") names a country only
                # when capitalised; some ("Того" is also "of that") must not open a sentence
                # either, unless they are the whole answer.
                if not tokens[i][:1].isupper():
                    continue
                at_start = any(c in self.ambiguous_at_start for c in window[0])
                if at_start and not alone and sentence_start():
                    continue
            for key in _product(window):
                code = self.index.get(key)
                if code is not None:
                    return code, length
        return None


def places_entries(path: Path) -> list[tuple[str, dict[str, list[str]]]]:
    """``(code, names by language)`` for every entry of a places file
    (``data/places.yaml``): a region, city, people or former name with its country's code, or
    ``""`` for a label that names no single country (sections ``none_*``)."""
    out: list[tuple[str, dict[str, list[str]]]] = []
    for section, entries in load_yaml(path).items():
        if section in ("ambiguous", "foreign_name_locales"):
            continue
        for entry in entries or []:
            code = "" if section.startswith("none") else str(entry["country"])
            out.append((code, {lang: list(entry.get(lang) or []) for lang in LANGUAGES}))
    return out


#: ISO short names that name two countries in practice: never matched on their own.
_AMBIGUOUS_ISO_NAMES = {"congo"}


def _iso_english_names() -> list[tuple[str, str]]:
    """English names from ISO 3166 (pycountry) that CLDR writes differently: CLDR says
    "Myanmar (Burma)", "Congo - Kinshasa", "Bosnia & Herzegovina", "Hong Kong SAR China";
    answers say "Myanmar", "Bosnia and Herzegovina", "Hong Kong"."""
    import pycountry

    out = []
    for country in pycountry.countries:
        for attr in ("name", "common_name", "official_name"):
            name = getattr(country, attr, None)
            if name and "," not in name and name.lower() not in _AMBIGUOUS_ISO_NAMES:
                out.append((country.alpha_2, name))
    return out


def _ambiguous(data: dict, key: str, lang: str | None = None) -> set[str]:
    """The cleaned words of one of the alias file's ambiguous lists (``ambiguous``,
    ``ambiguous_at_sentence_start``), of ``lang`` or of every language."""
    by_lang = data.get(key) or {}
    return {_clean(w) for code, words in by_lang.items() if lang in (None, code) for w in words}


def _key(token: str) -> str:
    """A name word's index form: cleaned and lower-case, except an abbreviation written in
    capitals ("US", "UK", "США", "ПАР"), which is kept in capitals so that "us" is not the US."""
    word = _clean(token)
    raw = token.replace("’", "'").replace("ʼ", "'").strip(".'").replace("Ё", "Е")
    letters = [c for c in raw if c.isalpha()]
    return raw if len(letters) >= 2 and all(c.isupper() for c in letters) else word


def _name_parts(name: str) -> list[str]:
    """A CLDR name and, when it has a parenthesised alternative ("Мьянма (Бирма)", "Myanmar
    (Burma)"), each part on its own."""
    match = re.fullmatch(r"\s*(.+?)\s*\((.+)\)\s*", name)
    return [name, match.group(1), match.group(2)] if match else [name]


def _sentence_start(text: str, offset: int) -> bool:
    # a bounded look back (the whole prefix made a long answer quadratic); after 200 blank
    # characters a new sentence has begun anyway
    before = text[max(0, offset - 200) : offset].rstrip()
    return not before or before[-1] in '.!?:;\n"«(—-'


def _product(window: list[list[str]], limit: int = 64) -> list[tuple[str, ...]]:
    keys: list[tuple[str, ...]] = [()]
    for options in window:
        keys = [(*k, o) for k in keys for o in options][:limit]
    return keys


@lru_cache(maxsize=1)
def default_extractor() -> CountryExtractor:
    """A shared extractor of every mention (the names of CLDR, ISO and the alias file)."""
    return cached_extractor(None)


def cached_extractor(places_path: Path | None = None) -> CountryExtractor:
    """An extractor whose index, built with ``places_path`` added when given, is kept. Building
    the index takes most of a second (every name word's inflected forms from pymorphy3), so it
    is kept on disk under the culturebench cache (``country-index/<key>.json``, written
    atomically), keyed by everything it is built from: this module's code, the alias and places
    files, and the versions of the libraries that give the names and forms. A key that changes
    builds it again; an unreadable file is rebuilt."""
    import json

    from culturebench.atomic import write_text_atomic
    from culturebench.cache_dirs import cache_root

    path = cache_root() / "country-index" / f"{_index_key(places_path)}.json"
    try:
        return CountryExtractor.from_state(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    extractor = CountryExtractor(places_path=places_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(extractor.state(), ensure_ascii=False, sort_keys=True))
    except OSError:  # a read-only cache: build it per process, as before
        pass
    return extractor


def _index_key(places_path: Path | None = None) -> str:
    """What an index is built from: this file, the alias file (and places file), the
    country-name module, and the name and inflection libraries' versions."""
    from culturebench import countries
    from culturebench.eval.backends.base import package_versions
    from culturebench.hashing import sha256_bytes, sha256_text

    sources = (Path(__file__), _ALIASES, Path(countries.__file__), *([places_path] if places_path else []))
    parts = [sha256_bytes(path.read_bytes()) for path in sources]
    dictionaries = [f"pymorphy3-dicts-{lang}" for lang in MORPH_LANGUAGES]
    versions = package_versions(["babel", "pycountry", "pymorphy3", *dictionaries])
    parts += [f"{package}={installed}" for package, installed in versions.items()]
    return sha256_text("\n".join(parts))[:24]


def country_surface_names(lang: str) -> dict[str, list[str]]:
    """Every name a country goes by in ``lang`` (CLDR name plus the aliases of
    ``data/country_aliases.yaml``, ISO English names for ``en``), by alpha-2 code; words the
    alias file marks as ambiguous in that language (either list) are left out. For matchers that work on
    surface forms (the corpus counter) rather than on lemmas."""
    data = load_yaml(_ALIASES)
    ambiguous = _ambiguous(data, "ambiguous", lang) | _ambiguous(data, "ambiguous_at_sentence_start", lang)
    out: dict[str, list[str]] = {}
    for code in all_alpha2():
        out.setdefault(code, []).append(country_name(code, lang))
    if lang == "en":
        for code, name in _iso_english_names():
            out.setdefault(code, []).append(name)
    for code, by_lang in data["aliases"].items():
        out.setdefault(code, []).extend(str(n) for n in by_lang.get(lang, []))
    return {
        code: list(dict.fromkeys(n for n in names if n and _clean(n) not in ambiguous))
        for code, names in out.items()
    }
