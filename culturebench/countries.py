"""ISO 3166-1 country codes and their names in any CLDR locale.

Codes are validated with ``pycountry`` (the ISO 3166-1 table); names come from the Unicode
CLDR through ``babel``. Nothing here is a hand-typed table.
"""

from __future__ import annotations

from functools import lru_cache

import pycountry
from babel import Locale


@lru_cache(maxsize=512)
def is_iso_alpha2(code: str) -> bool:
    """True when ``code`` is an assigned ISO 3166-1 alpha-2 code (upper case)."""
    if len(code) != 2 or not code.isascii() or not code.isupper():
        return False
    return pycountry.countries.get(alpha_2=code) is not None


@lru_cache(maxsize=16)
def _territories(locale: str) -> dict[str, str]:
    return dict(Locale.parse(locale).territories)


def country_name(code: str, locale: str = "en") -> str:
    """The CLDR display name of an ISO alpha-2 ``code`` in ``locale`` (e.g. ``uk``).

    Falls back to the ISO 3166 English name when CLDR has none; raises ``KeyError`` for an
    unknown code.
    """
    if not is_iso_alpha2(code):
        raise KeyError(f"not an ISO 3166-1 alpha-2 code: {code!r}")
    name = _territories(locale).get(code)
    if name:
        return name
    country = pycountry.countries.get(alpha_2=code)  # pragma: no cover - CLDR covers ISO
    if country is None:  # pragma: no cover
        raise KeyError(f"not an ISO 3166-1 alpha-2 code: {code!r}")
    return str(country.name)  # pragma: no cover


def country_names(codes: list[str], locale: str) -> list[str]:
    """Names for a list of codes, order kept."""
    return [country_name(code, locale) for code in codes]


def all_alpha2() -> list[str]:
    """Every ISO 3166-1 alpha-2 code, sorted."""
    return sorted(country.alpha_2 for country in pycountry.countries)
