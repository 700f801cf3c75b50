"""Extract countries (ISO 3166-1 alpha-2) from free-text model answers in ru, uk and en.

Names come from the Unicode CLDR (babel) for every ISO country in the three languages, plus
``data/country_aliases.yaml`` (short forms, historical names, regions, unambiguous
adjectives). Every name and every answer token is lemmatised with pymorphy3 (Russian or
Ukrainian dictionaries), so inflected forms match their dictionary form: "в Украине",
"з України", "России", "Грузії", "грузинская кухня". Matching is greedy longest-first over
lemma n-grams; each token keeps its top parses so ambiguous inflections still match.
No spaCy model or download is needed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from culturebench.countries import all_alpha2, country_name
from culturebench.yamlio import load_yaml

LANGUAGES = ("ru", "uk", "en")  # the languages of the CLDR names and of data/country_aliases.yaml
# Languages lemmatised with pymorphy3: its dictionaries (pyproject: pymorphy3-dicts-ru, -uk).
# Both are written in Cyrillic; a Cyrillic token is tried in the answer's language first.
MORPH_LANGUAGES = ("ru", "uk")
MAX_PARSES = 3
# Parses that never name a country: pronouns (incl. pronominal adjectives like "тот"),
# prepositions, conjunctions, particles, interjections, numerals.
_FUNCTION_POS = {"NPRO", "PREP", "CONJ", "PRCL", "INTJ", "NUMR"}
_TOKEN = re.compile(r"[A-Za-zА-Яа-яЁёІіЇїЄєҐґ'’ʼ.]+|\d+")
_CYRILLIC = re.compile(r"[А-Яа-яЁёІіЇїЄєҐґ]")
_ALIASES = Path(__file__).parent / "data" / "country_aliases.yaml"


@lru_cache(maxsize=2)
def _morph(lang: str):
    import pymorphy3

    return pymorphy3.MorphAnalyzer(lang=lang)


def _clean(token: str) -> str:
    return token.replace("’", "'").replace("ʼ", "'").strip(".'").lower()


class CountryExtractor:
    """Finds country mentions in text. Build once (dictionaries load in about a second)."""

    def __init__(self, aliases_path: Path = _ALIASES) -> None:
        data = load_yaml(aliases_path)
        self.ambiguous = {
            lang: {w.lower() for w in words} for lang, words in data.get("ambiguous", {}).items()
        }
        self.index: dict[tuple[str, ...], str] = {}
        self.max_len = 1
        for code in all_alpha2():
            for lang in LANGUAGES:
                self._add(country_name(code, lang), code, lang)
        for code, name in _iso_english_names():  # "Myanmar", "Bosnia and Herzegovina", ...
            self._add(name, code, "en")
        for code, by_lang in data["aliases"].items():
            for lang, names in by_lang.items():
                for name in names:
                    self._add(str(name), code, lang)

    def _lemmas(self, token: str, lang: str, *, name: bool = False) -> list[str]:
        """Candidate lemmas of one token (surface form first). For a country's name
        (``name``): only noun readings in the name's own language, so that a name's key is
        never the lemma of a common word of the other language (the Russian "Мали" read as
        the Ukrainian verb "мали", lemma "мати", made every Ukrainian "має" name Mali)."""
        word = _clean(token)
        if not word:
            return []
        out = [word]
        if _CYRILLIC.search(word):
            langs = [lang] if lang in MORPH_LANGUAGES else list(MORPH_LANGUAGES)
            if not name:
                langs += [other for other in MORPH_LANGUAGES if other not in langs]
            for morph_lang in langs:
                for parse in _morph(morph_lang).parse(word)[:MAX_PARSES]:
                    if parse.tag.POS in _FUNCTION_POS or "Apro" in str(parse.tag):
                        continue
                    if name and parse.tag.POS not in ("NOUN", "ADJF"):
                        continue
                    if parse.normal_form not in out:
                        out.append(parse.normal_form)
        elif word.endswith("'s"):
            out.append(word[:-2])
        return out

    def _add(self, name: str, code: str, lang: str) -> None:
        tokens = _TOKEN.findall(name)
        if not tokens:
            return
        lemmas = [self._lemmas(t, lang, name=True) for t in tokens]
        key = tuple(
            options[1] if len(options) > 1 else _clean(t) for t, options in zip(tokens, lemmas, strict=True)
        )
        surface = tuple(_clean(t) for t in tokens)
        for form in {key, surface}:
            self.index.setdefault(form, code)
        self.max_len = max(self.max_len, len(tokens))

    def extract(self, text: str, lang: str) -> list[str]:
        """Country codes mentioned in ``text`` (written in ``lang``, one of :data:`LANGUAGES`),
        unique, in order of first mention."""
        matches = list(_TOKEN.finditer(text or ""))
        tokens = [m.group(0) for m in matches]
        starts = [_sentence_start(text, m.start()) for m in matches]
        candidates = [self._lemmas(t, lang) for t in tokens]
        found: list[str] = []
        i = 0
        while i < len(tokens):
            match = self._match_at(tokens, candidates, i, lang, starts[i])
            if match is None:
                i += 1
                continue
            code, length = match
            if code not in found:
                found.append(code)
            i += length
        return found

    def _match_at(
        self, tokens: list[str], candidates: list[list[str]], i: int, lang: str, sentence_start: bool
    ) -> tuple[str, int] | None:
        for length in range(min(self.max_len, len(tokens) - i), 0, -1):
            window = candidates[i : i + length]
            if length == 1:
                # A word that is also a common word ("того", "turkey") names a country only
                # when capitalised where capitals are not automatic.
                # Cyrillic ones ("Того" is also "of that") must not start a sentence either.
                upper = tokens[i][:1].isupper()
                if any(c in self.ambiguous.get("en", set()) for c in window[0]) and not upper:
                    continue
                cyrillic_amb = set().union(*(self.ambiguous.get(m, set()) for m in MORPH_LANGUAGES))
                if any(c in cyrillic_amb for c in window[0]) and not (upper and not sentence_start):
                    continue
            for key in _product(window):
                code = self.index.get(key)
                if code:
                    return code, length
        return None


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


def _sentence_start(text: str, offset: int) -> bool:
    before = text[:offset].rstrip()
    return not before or before[-1] in '.!?:;\n"«(—-'


def _product(window: list[list[str]], limit: int = 64) -> list[tuple[str, ...]]:
    keys: list[tuple[str, ...]] = [()]
    for options in window:
        keys = [(*k, o) for k in keys for o in options][:limit]
    return keys


@lru_cache(maxsize=1)
def default_extractor() -> CountryExtractor:
    """A shared extractor (building the index takes about a second)."""
    return CountryExtractor()


def country_surface_names(lang: str) -> dict[str, list[str]]:
    """Every name a country goes by in ``lang`` (CLDR name plus the aliases of
    ``data/country_aliases.yaml``, ISO English names for ``en``), by alpha-2 code; words the
    alias file marks as ambiguous in that language are left out. For matchers that work on
    surface forms (the corpus counter) rather than on lemmas."""
    data = load_yaml(_ALIASES)
    ambiguous = {w.lower() for w in data.get("ambiguous", {}).get(lang, [])}
    out: dict[str, list[str]] = {}
    for code in all_alpha2():
        out.setdefault(code, []).append(country_name(code, lang))
    if lang == "en":
        for code, name in _iso_english_names():
            out.setdefault(code, []).append(name)
    for code, by_lang in data["aliases"].items():
        out.setdefault(code, []).extend(str(n) for n in by_lang.get(lang, []))
    return {
        code: list(dict.fromkeys(n for n in names if n and n.lower() not in ambiguous))
        for code, names in out.items()
    }
