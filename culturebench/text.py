"""Text normalisation shared by builders and evaluation (dish names, tokens).

``normalize_name`` gives the matching form of a dish name: the published spelling is kept
in another column; this form is for joins, de-duplication and answer matching.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

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
_APOSTROPHES_AND_QUOTES = str.maketrans({**dict.fromkeys(_APOSTROPHES, "'"), **dict.fromkeys(_QUOTES)})
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
    text = text.translate(_APOSTROPHES_AND_QUOTES)
    return clean_whitespace(text).casefold()


# ---------------------------------------------------------------------- input hygiene
MAX_CELL_CHARS = 100_000  # the longest real upstream cell is 18,547 characters (a WWD recipe)
MAX_NAME_CHARS = 300  # the longest real dish name is under 100 characters
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def cell_problem(value: str) -> str | None:
    """Why a source text cell is unusable (control characters, absurd length), or None."""
    bad = _CONTROL.search(value)
    if bad:
        return f"contains the control character U+{ord(bad.group()):04X}"
    if len(value) > MAX_CELL_CHARS:
        return f"is {len(value):,} characters long (limit {MAX_CELL_CHARS:,})"
    return None


def is_blank(text: str) -> bool:
    """True when ``text`` has nothing visible: only whitespace, zero-width or other format
    characters (U+200B, U+200D, U+FEFF, ...)."""
    return all(ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc", "Zs", "Zl", "Zp") for ch in text)


def name_problem(name: str) -> str | None:
    """Why a dish name cannot be accepted (blank or invisible, too long), or None."""
    if is_blank(name):
        return "empty dish name (nothing visible: only whitespace or zero-width characters)"
    if len(name) > MAX_NAME_CHARS:
        return f"dish name is {len(name):,} characters long (limit {MAX_NAME_CHARS})"
    return cell_problem(name)


def file_name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain file name (a path, ``..``, a backslash, control
    characters), or None."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or _CONTROL.search(name):
        return f"{name!r} is not a plain file name (no paths, '..', backslashes or control characters)"
    return None


# ---------------------------------------------------------------------- inflection rule
_FINAL_VOWELS = set("аеёийоуыэюяіїєьъaeiouy")
MIN_STEM = 4


def inflection_stem(word: str) -> tuple[str, int]:
    """(stem, how many letters may follow it) for matching a word's inflected forms in
    running text without a dictionary (Russian and Ukrainian decline by ending).

    The stem is the lower-cased word without its final vowels, soft/hard sign and й, but never
    shorter than four letters; up to three letters may follow (Україна -> україн + і/у/ою;
    український -> українськ + а/ого/ими; вареники -> вареник + ами; борщ -> борщ + а/ом).
    A word of at most four letters keeps its whole form and allows two letters (борщ + ом)
    so that short words do not swallow longer ones; one of one or two letters (ЩИ) must stand
    as written (щи + ро would be "щиро")."""
    lowered = word.lower().replace("ё", "е")
    if len(lowered) <= 2:
        return lowered, 0
    if len(lowered) <= MIN_STEM:
        return lowered, 2
    stem = lowered
    while len(stem) > MIN_STEM and stem[-1] in _FINAL_VOWELS:
        stem = stem[:-1]
    return stem, 3


# ------------------------------------------------------------------ Markdown table cells
_PIPE = re.compile(r"(\\*)\|")  # a pipe with the backslashes right before it
_NEWLINE = re.compile(r"\s*(?:\r\n|\r|\n)\s*")


_BACKTICK = re.compile(r"(\\*)`")


def md_cell(value: Any) -> str:
    """Text for one cell of a Markdown table (GitHub-flavoured), or a name written into a
    Markdown line (a model, a task, a label): a pipe and a backtick are escaped with a
    backslash (backslashes right before either doubled, so they stay text and the mark stays
    escaped), ``<`` and ``>`` become ``&lt;`` and ``&gt;`` (no HTML from a name reaches the
    page), and a line break becomes a space, so that a label such as ``origin-vqa | name``
    stays one cell and a name one line. Every table row and name this package writes into
    Markdown goes through it (run reports, ``eval paper``, ``eval compare``, URL checks)."""
    text = _NEWLINE.sub(" ", str(value).strip()).replace("<", "&lt;").replace(">", "&gt;")
    text = _BACKTICK.sub(lambda m: m.group(1) * 2 + "\\`", text)
    return _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", text)


def web_url(value: Any) -> str | None:
    """``value`` when it is an ``http`` or ``https`` URL with a host, else None: the one test
    of every writer that turns a URL from data into a link (the site's pages; anything else,
    ``javascript:`` or ``data:`` or ``file:``, is shown as text, never as a link)."""
    from urllib.parse import urlsplit

    if not isinstance(value, str) or value != value.strip() or any(ord(c) < 32 for c in value):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    return value if parts.scheme.lower() in ("http", "https") and parts.hostname else None


def md_row(cells: Sequence[Any]) -> str:
    """One Markdown table row, each cell through :func:`md_cell` (an empty cell as ``| |``)."""
    return "|" + "".join(f" {text} |" if (text := md_cell(c)) else " |" for c in cells)
