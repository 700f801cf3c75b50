"""Name normalisation and CLDR/ISO country helpers."""

from __future__ import annotations

import json

import pytest

from culturebench.countries import all_alpha2, country_name, country_names, is_iso_alpha2
from culturebench.text import clean_whitespace, fix_homoglyphs, has_mixed_script, normalize_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("БОРЩ", "борщ"),
        ("СТИР-ФРАИ\t", "стир-фраи"),
        ("ТЭМПYPА", "тэмпура"),  # Latin Y and P inside a Cyrillic word
        ("КУРАБ’Є", "кураб'є"),
        ("КУЛЕБ'ЯКА", "кулеб'яка"),
        ("САЛАТ «ОЛІВ’Є»", "салат олів'є"),
        ("  ТОРТ   «ПРАГА» ", "торт прага"),
        ("ЗЕЛЁНЫЕ ЩИ", "зелёные щи"),
    ],
)
def test_normalize_name(raw: str, expected: str) -> None:
    assert normalize_name(raw) == expected


def test_homoglyphs_only_fixed_inside_cyrillic_words() -> None:
    assert has_mixed_script("ТЭМПYPА")
    assert not has_mixed_script("PIZZA")
    assert fix_homoglyphs("PIZZA ТЭМПYPА") == "PIZZA ТЭМПУРА"
    assert clean_whitespace("a\t b\n") == "a b"


def test_iso_codes() -> None:
    assert is_iso_alpha2("UA")
    assert is_iso_alpha2("PS")
    assert not is_iso_alpha2("XX")
    assert not is_iso_alpha2("ua")
    assert not is_iso_alpha2("UKR")
    assert len(all_alpha2()) == 249


def test_country_names_come_from_cldr() -> None:
    assert country_name("UA", "uk") == "Україна"
    assert country_name("UA", "ru") == "Украина"
    assert country_name("RU", "uk") == "Росія"
    assert country_name("BY", "en") == "Belarus"
    assert country_names(["GE", "AM"], "ru") == ["Грузия", "Армения"]
    with pytest.raises(KeyError):
        country_name("XX", "en")


def test_a_common_ukrainian_verb_is_not_mali() -> None:
    """SmolLM2's real answers (tests/test_real_model.py) showed it: the Russian name "Мали" was
    indexed under its Ukrainian verb reading ("мали", lemma "мати"), so every "має" ("has")
    named Mali. A country's name is now indexed by its own language's noun readings."""
    from culturebench.eval.country_extractor import default_extractor

    extractor = default_extractor()
    for answer in ("Какіѕ має страва Кулеш?", "Яка країна має таку страву?", "Ми мали борщ на обід."):
        assert extractor.extract(answer, "uk") == []
    assert extractor.extract("Ця страва з Малі.", "uk") == ["ML"]
    assert extractor.extract("Это блюдо из Мали.", "ru") == ["ML"]


def test_surface_names_leave_out_both_lists_of_ambiguous_words() -> None:
    """The corpus counter's names: words the alias file lists as ambiguous, in either list
    (capitalised only, or also not at a sentence start), are never counted ("того", "чад")."""
    from culturebench.eval.country_extractor import country_surface_names

    ru, uk = country_surface_names("ru"), country_surface_names("uk")
    assert "Того" not in ru["TG"] and "Чад" not in ru["TD"] and "Мали" not in ru["ML"]
    assert "Малі" not in uk["ML"] and "Норвегія" in uk["NO"]


def test_the_country_index_is_kept_on_disk_and_rebuilt_when_damaged(tmp_path, monkeypatch) -> None:
    """default_extractor() builds the index once and keeps it (keyed by its sources); the kept
    index extracts exactly what a fresh build does, and a damaged file is rebuilt."""
    from culturebench.eval import country_extractor as ce

    monkeypatch.setenv("CULTUREBENCH_CACHE", str(tmp_path))
    ce.default_extractor.cache_clear()
    try:
        built = ce.default_extractor()
        (kept,) = (tmp_path / "country-index").glob("*.json")
        ce.default_extractor.cache_clear()
        loaded = ce.default_extractor()
        assert loaded is not built and loaded.state() == ce.CountryExtractor().state()
        answers = (("Это блюдо из Грузии и Армении.", "ru"), ("Страва з України", "uk"), ("USA", "en"))
        for text, lang in answers:
            assert loaded.extract(text, lang) == built.extract(text, lang) != []
        kept.write_text("{not json", encoding="utf-8")
        ce.default_extractor.cache_clear()
        assert ce.default_extractor().state() == built.state()
        assert json.loads(kept.read_text(encoding="utf-8"))["max_len"] == built.max_len  # written again
    finally:
        ce.default_extractor.cache_clear()
