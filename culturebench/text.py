"""Text normalisation shared by builders and evaluation (dish names, tokens).

``normalize_name`` gives the matching form of a dish name: the published spelling is kept
in another column; this form is for joins, de-duplication and answer matching.
"""

from __future__ import annotations

import re
import unicodedata

# Latin letters that look exactly like Cyrillic ones (upstream has e.g. "ТЭМПYPА" with a
# Latin Y and P). Only applied inside words that are otherwise Cyrillic.
_LATIN_TO_CYRILLIC = str.maketrans(
    {
        "A": "А",
        "B": "В",
        "C": "С",
        "E": "Е",
        "H": "Н",
        "I": "І",
        "K": "К",
        "M": "М",
        "O": "О",
        "P": "Р",
        "T": "Т",
        "X": "Х",
        "Y": "У",
        "a": "а",
        "c": "с",
        "e": "е",
        "i": "і",
        "o": "о",
        "p": "р",
        "x": "х",
        "y": "у",
    }
)
_APOSTROPHES = "\u2019\u02bc\u2018`\u00b4\u2032"  # ’ ʼ ‘ ` ´ ′  -> '
_QUOTES = '«»\u201c\u201d\u201e"'  # « » “ ” „ "
_WS = re.compile(r"\s+")
_CYRILLIC = re.compile(r"[\u0400-\u04FF]")
_LATIN = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"[^\s\-()]+")


def has_mixed_script(word: str) -> bool:
    """True when one word mixes Cyrillic and Latin letters (a homoglyph typo)."""
    return bool(_CYRILLIC.search(word)) and bool(_LATIN.search(word))


def fix_homoglyphs(text: str) -> str:
    """Replace Latin look-alike letters with Cyrillic ones inside mixed-script words."""

    def repl(match: re.Match[str]) -> str:
        word = match.group(0)
        return word.translate(_LATIN_TO_CYRILLIC) if has_mixed_script(word) else word

    return _WORD.sub(repl, text)


def clean_whitespace(text: str) -> str:
    """Strip outer whitespace (tabs included) and collapse inner runs to one space."""
    return _WS.sub(" ", text).strip()


def normalize_name(name: str) -> str:
    """Matching form of a dish name.

    NFC; whitespace cleaned; Latin homoglyphs inside Cyrillic words fixed; apostrophe
    variants unified to ``'``; typographic quotes removed; Unicode case-folded.
    ``"САЛАТ «ОЛІВ’Є»"`` -> ``"салат олів'є"``.
    """
    text = unicodedata.normalize("NFC", name)
    text = fix_homoglyphs(clean_whitespace(text))
    text = text.translate({ord(ch): "'" for ch in _APOSTROPHES})
    text = text.translate({ord(ch): None for ch in _QUOTES})
    return clean_whitespace(text).casefold()
