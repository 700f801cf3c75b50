"""The committed-answer readers (issue 52): each form the issue names, read as a careful reader
reads it, and the abstentions with their reasons. The sets of tests/data/answers/ measure the
readers as a whole (tests/test_answer_sets.py); these pin the forms one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturebench.datasets.ash.tasks import parse_ratings, read_ratings
from culturebench.eval.answers import model_reader
from culturebench.eval.answers.countries import read_countries
from culturebench.eval.answers.reading import Reading, unparsed_block
from culturebench.eval.multiple_choice import read_choice

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("answer", "countries"),
    [
        ("Это не русская кухня, а белорусская", ["BY"]),
        ("Драники часто называют русским блюдом, но придумали их в Беларуси", ["BY"]),
        ("Манты готовят в Казахстане, Киргизии и Узбекистане, но родина — Узбекистан", ["UZ"]),
        ("это крымское блюдо", ["UA"]),
        ("кримська кухня", ["UA"]),
        ("Это блюдо из Сычуани.", ["CN"]),
        ("казанская выпечка", ["RU"]),
        ("львівська кухня", ["UA"]),
        ("корейское блюдо", ["KR"]),
        ("Узбекистн", ["UZ"]),
        ("Rusia", ["RU"]),
        ("Украіна", ["UA"]),
        ("Perú.", ["PE"]),
        ("<think>Польша? Нет, скорее Украина или Беларусь.</think>\nОтвет: Беларусь.", ["BY"]),
        ("Let me think. Poland has pierogi, Russia has pelmeni. So the answer is Ukraine.", ["UA"]),
        ("Россия или Украина, точно сказать не могу.", ["RU", "UA"]),
        ("Плов популярен в Узбекистане, также его едят в Таджикистане.", ["UZ"]),
        ("Блюдо советской кухни.", None),  # a defunct state alone names no country
        ("Это блюдо кавказской кухни.", None),  # a region spanning several countries
        ("Блюдо из Персии.", ["IR"]),  # a former name: today's country
        ("Из Белоруссии.", ["BY"]),
        ("Его варят у казані на вогні. Отже, Україна.", ["UA"]),  # "казан" the cauldron, not Kazan
    ],
)
def test_countries_the_answer_commits_to(answer: str, countries: list[str] | None) -> None:
    assert read_countries(answer, "ru").value == countries


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("Ответ: точно не Россия, больше ничего сказать не могу.", "ruled_out"),
        ("Похожие блюда есть в Польше и Литве.", "context_only"),
        ("Не знаю, что это за блюдо.", "refusal"),
        ("   ", "empty"),
        ("Это блюдо балканской кухни.", "no_country"),
    ],
)
def test_no_committed_country_is_unparsed_with_its_reason(answer: str, reason: str) -> None:
    assert read_countries(answer, "ru") == Reading(None, reason)


def test_the_question_decides_whether_also_eaten_in_answers_it() -> None:
    """ "also eaten in Y" is context for a question about origin, an answer to one about where
    the dish is eaten."""
    answer = "Борщ готовят в Украине, а также его едят в Польше."
    assert read_countries(answer, "ru", "Из какой страны происходит блюдо борщ?").value == ["UA"]
    assert read_countries(answer, "ru", "В каких странах блюдо борщ популярно или традиционно?").value == [
        "UA",
        "PL",
    ]


def test_a_word_of_the_dish_name_is_no_misspelt_country() -> None:
    """ "Сальта" is one edit from "Мальта"; asked about сальта, it is the dish."""
    assert read_countries(
        "Сальта — єменська страва.", "uk", "Які країни вважаються батьківщиною страви сальта?"
    ).value == ["YE"]


@pytest.mark.parametrize(
    ("answer", "options", "labels", "choice"),
    [
        ("Not A, that much I know.", None, "ABCD", None),
        ("Сначала я выбрал B, но теперь думаю, что верно C.", None, "ABCD", "C"),
        ("C or D... I'll say D", None, "ABCD", "D"),
        ("the third one", None, "ABCD", "C"),
        ("Думаю, третий вариант.", None, "ABCD", "C"),
        ("第二个", None, "ABCD", "B"),
        ("anwser: b", None, "ABCD", "B"),
        ("Не A, не B и не D, значит C.", None, "ABCD", "C"),
        ("Правильный ответ — Лермонтова.", ["Пушкин", "Лермонтов", "Гоголь", "Толстой"], "ABCD", "B"),
        ("不是上海，是北京。", ["上海", "北京", "广州", "深圳"], "ABCD", "B"),
        ("<think>A? No. B fits.</think>\nAnswer: E", None, "ABCDE", "E"),
        ("Відповідь: 3", None, ("1", "2", "3", "4"), "3"),
        ("The last option.", None, "ABCDE", "E"),
        ("A или C, не уверен.", None, "ABCD", None),
    ],
)
def test_choices_the_answer_commits_to(answer: str, options, labels, choice: str | None) -> None:
    assert read_choice(answer, options, list(labels)).value == choice


def test_an_undecided_choice_says_so() -> None:
    assert read_choice("A или C, не уверен.").reason == "undecided"
    assert read_choice("Not A.").reason == "ruled_out"
    assert read_choice("").reason == "empty"


@pytest.mark.parametrize(
    ("answer", "ratings"),
    [
        ("I'd give a 2 for authenticity, a 5 for sensitivity and a 3 for harmony.", (2, 5, 3)),
        ("Authenticity: just 1 of the 3 usual spices is used, so 2.", (2, None, None)),
        ("3 — Authenticity\n4 — Sensitivity\n5 — Harmony", (3, 4, 5)),
        (
            "| Criterion | Max | Score |\n|---|---|---|\n| Authenticity | 5 | 4 |\n| Sensitivity | 5 | 3 |"
            "\n| Harmony | 5 | 2 |",
            (4, 3, 2),
        ),
        (
            '```json\n{"authenticity": 4, "sensitivity": 3, "harmony": 4,}\n```\nRevised: '
            "{'authenticity': 3, 'sensitivity': 3, 'harmony': 4}",
            (3, 3, 4),
        ),
        ("AUTHENTICITY: 4.0\nSENSITIVITY: 3.5\nHARMONY: 8/10", (4, None, None)),
        ("AUTHENTICITY: 4\nSENSITIVITY: 3\nHARMONY: 4\n\nSummary: AUTHENTICITY 2", (None, 3, 4)),
        ("Аутентичность: 4\nЧувствительность: 5\nГармония: 3", (4, 5, 3)),
        ("真实性：4\n敏感性：3\n和谐性：5", (4, 3, 5)),
    ],
)
def test_ratings_the_judge_commits_to(answer: str, ratings: tuple) -> None:
    got = parse_ratings(answer)
    assert (got["authenticity"], got["sensitivity"], got["harmony"]) == ratings


def test_a_rating_not_given_says_why() -> None:
    readings = read_ratings("AUTHENTICITY: 3.5\nSENSITIVITY: 4\nSENSITIVITY: 2")
    assert readings["authenticity"].reason == "invalid"
    assert readings["sensitivity"].reason == "conflict"
    assert readings["harmony"].reason == "missing"


def test_unparsed_counts_beside_their_n() -> None:
    block = unparsed_block(
        [{"unparsed_reason": "refusal"}, {"unparsed_reason": None}, {"unparsed_reason": "refusal"}]
    )
    assert block == {"n": 3, "unparsed": 2, "rate": 2 / 3, "reasons": {"refusal": 2}}


@pytest.mark.parametrize(
    ("kind", "reading"),
    [("country", ["UA", "RU"]), ("country", []), ("choice", "C"), ("choice", None)],
)
def test_a_model_reading_written_back_reads_as_itself(kind: str, reading) -> None:
    """The model reader's canonical answer is read by the rule reader exactly as the model
    read it, so a task scores a model's reading with its own code."""
    text = model_reader.canonical_answer(kind, reading)
    if kind == "country":
        assert (read_countries(text, "en").value or []) == reading
    else:
        assert read_choice(text).value == reading


def test_model_ratings_written_back_read_as_themselves() -> None:
    criteria = ("authenticity", "sensitivity", "harmony")
    reading = {"authenticity": 4, "sensitivity": None, "harmony": 2}
    assert parse_ratings(model_reader.canonical_answer("ratings", reading, criteria)) == reading


def test_a_reader_models_json_is_read_or_refused() -> None:
    assert model_reader.parse_reading("country", 'Sure: {"countries": ["ua", "RU"]}') == ["UA", "RU"]
    assert model_reader.parse_reading("choice", '{"choice": "b"}', labels="ABCD") == "B"
    assert model_reader.parse_reading("choice", '{"choice": "Z"}', labels="ABCD") is False
    assert model_reader.parse_reading("country", "Ukraine") is False
    schema = model_reader.schema("choice", labels="ABCD")
    assert schema["properties"]["choice"]["anyOf"][0]["enum"] == ["A", "B", "C", "D"]


def test_eval_score_with_a_model_reader_records_its_agreement(
    scripted_backend, rubin_release, tmp_path: Path
) -> None:
    """A reader (here our scripted Backend, answering as a model would) reads each answer; the
    run records its agreement with the rules and lists the disagreements; an answer it gives
    no reading for is scored by the rules and counted."""
    from culturebench.eval.score import prepare_scoring, write_scoring
    from datasets import load_dataset

    generations = tmp_path / "g.jsonl"
    rows = load_dataset(str(rubin_release.folder), "full", split="test").select(range(3))
    outputs = ["<answer>A</answer>", "B", "???"]
    generations.write_text(
        "".join(
            json.dumps({"id": f"{r['id']}:ru:0", "output": o}) + "\n"
            for r, o in zip(rows, outputs, strict=True)
        ),
        encoding="utf-8",
    )

    def answer(prompt: str) -> str:
        if "<answer>A</answer>" in prompt:
            return '{"choice": "A"}'  # agrees
        if "ANSWER TO READ:\nB" in prompt:
            return '{"choice": "C"}'  # disagrees
        return "no idea"  # no reading

    prepared = prepare_scoring("rubin", "mcqa", [generations], local=str(rubin_release.folder))
    out = tmp_path / "out"
    results = write_scoring(prepared, out, reader=scripted_backend(answer))
    summary = results["answer_reader"]
    assert (summary["n"], summary["read"], summary["disagreements"], summary["model_unreadable"]) == (
        3,
        2,
        1,
        1,
    )
    assert summary["agreement_with_rules"] == 0.5
    listed = [json.loads(line) for line in (out / model_reader.DISAGREEMENTS).read_text().splitlines()]
    assert [(d["rules"], d["model"]) for d in listed] == [("B", "C")]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["read_by"] for s in samples] == ["model", "model", "rules"]
    assert [s["pred"] for s in samples] == ["A", "C", None]
    assert "How answers were read" in (out / "report.md").read_text()
