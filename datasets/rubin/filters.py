"""RuBIN's multiple-choice integrity rules (the filters the paper applied, Section 3.2), shared
by the builder, the validation checks and the distractor stage. The answer letters and their
parsing are generic (:mod:`culturebench.choice_labels`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from culturebench.choice_labels import LETTERS

_CYRILLIC = re.compile(r"[\u0400-\u04FF]")
_LATIN = re.compile(r"[A-Za-z]")


def is_russian_text(text: str) -> bool:
    """Cyrillic letters and no Latin ones (digits and punctuation allowed)."""
    return bool(_CYRILLIC.search(text)) and not _LATIN.search(text)


def normalize_option(text: str) -> str:
    """Comparison key of an option: case, ё/е, inner spaces and final punctuation folded."""
    return re.sub(r"\s+", " ", text.strip().casefold().replace("ё", "е")).strip(" .!?…")


def option_problems(options: Sequence[object]) -> list[tuple[str, str]]:
    """The paper's content filters on four options: (code, message) per problem found.

    Codes: ``empty_option``, ``duplicate_option`` (equal after case, ё/е, space and final
    punctuation folding), ``non_russian_option``.
    """
    out = []
    texts = ["" if o is None else str(o) for o in options]
    empty = [LETTERS[i] for i, t in enumerate(texts) if not t.strip()]
    if empty:
        out.append(("empty_option", f"empty option(s) {', '.join(empty)}"))
    seen: dict[str, str] = {}
    for i, text in enumerate(texts):
        if not text.strip():
            continue
        key = normalize_option(text)
        if key in seen:
            out.append(("duplicate_option", f"option {LETTERS[i]} repeats option {seen[key]} ({text!r})"))
        else:
            seen[key] = LETTERS[i]
    foreign = [LETTERS[i] for i, t in enumerate(texts) if t.strip() and not is_russian_text(t)]
    if foreign:
        out.append(("non_russian_option", f"option(s) {', '.join(foreign)} not in Russian (Cyrillic only)"))
    return out
