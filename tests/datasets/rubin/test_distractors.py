"""RuBIN distractor stage: balanced random slots, deterministic option parsing, the paper's
filters on model output, an output folder the builder accepts, bad input, and a real run on
the tiny local model."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from culturebench.builders.base import get_builder
from culturebench.choice_labels import LETTERS
from culturebench.datasets.rubin.distractors import (
    assemble,
    balanced_slots,
    generate_distractors,
    parse_options,
    read_raw_questions,
)
from culturebench.errors import CultureBenchError, SourceError
from culturebench.spec import load_spec

pytestmark = pytest.mark.unit

SAMPLE = load_spec("rubin").folder / "sample" / "questions.jsonl"


def _sample() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]


def _raw_file(path: Path, rows: list[dict]) -> Path:
    """The sample's questions without distractors: id, question, answer, category, year."""
    raw = [
        {
            "id": r["id"],
            "question": r["question"],
            "answer": r["options"][LETTERS.index(r["label"])],
            "category": r["category"],
            "year": r["year"],
        }
        for r in rows
    ]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in raw), encoding="utf-8")
    return path


def _prompt_fields(prompt: str) -> tuple[str, str, str]:
    question = re.search(r"Вопрос: (.*)", prompt).group(1)
    answer = re.search(r"Правильный ответ: (.*)", prompt).group(1)
    letter = re.search(r"под буквой ([A-D])", prompt).group(1)
    return question, answer, letter


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("A) раз\nB) два\nC) три\nD) четыре", ["раз", "два", "три", "четыре"]),
        (
            "Вот варианты:\n**A)** раз\n**B)** два\n- C. три\n(D) четыре\nГотово.",
            ["раз", "два", "три", "четыре"],
        ),
        ("А) раз\nБ) два\nВ) три\nГ) четыре", ["раз", "два", "три", "четыре"]),  # Russian А Б В Г
        ("А) раз\nВ) два\nС) три\nD) четыре", ["раз", "два", "три", "четыре"]),  # look-alikes
        ("D) четыре\nC) три\nB) два\nA) раз", ["раз", "два", "три", "четыре"]),  # any order
    ],
)
def test_options_are_read_deterministically(output: str, expected: list[str]) -> None:
    parsed = parse_options(output)
    assert parsed is not None and [parsed[letter] for letter in LETTERS] == expected


@pytest.mark.parametrize(
    "output",
    [
        "A) раз\nB) два\nC) три",
        "A) раз\nB) два\nB) три\nD) четыре",
        "не знаю",
        "A) раз B) два C) три D) четыре",
    ],
)
def test_outputs_without_one_line_per_letter_are_unparseable(output: str) -> None:
    assert parse_options(output) is None


def test_slots_are_random_but_balanced() -> None:
    slots = balanced_slots(68, seed=0)
    assert Counter(slots) == {0: 17, 1: 17, 2: 17, 3: 17}
    assert slots == balanced_slots(68, seed=0) and slots != balanced_slots(68, seed=1)
    assert sorted(Counter(balanced_slots(10, seed=3)).values()) == [2, 2, 3, 3]


def test_filters_reject_bad_options_and_keep_the_answer_in_its_slot(tmp_path: Path) -> None:
    question = read_raw_questions(_raw_file(tmp_path / "raw.jsonl", _sample()[:1]), seed=0)[0]
    slot = LETTERS[question.slot]

    def lines(options: dict[str, str]) -> str:
        return "\n".join(f"{letter}) {options[letter]}" for letter in LETTERS)

    good = {letter: f"вариант номер {i}" for i, letter in enumerate(LETTERS)}
    outcome = assemble(question, lines({**good, slot: question.answer}))
    assert outcome["status"] == "accepted" and not outcome["rewritten"]
    assert outcome["options"][question.slot] == question.answer
    rewritten = assemble(question, lines(good))  # the model put something else in the slot
    assert rewritten["status"] == "accepted" and rewritten["rewritten"]
    assert rewritten["options"][question.slot] == question.answer
    other = LETTERS[(question.slot + 1) % 4]
    duplicate = assemble(question, lines({**good, other: question.answer.upper() + "."}))
    assert duplicate["status"] == "rejected" and duplicate["reasons"] == ["duplicate_option"]
    latin = assemble(question, lines({**good, other: "fish from the pond"}))
    assert latin["reasons"] == ["non_russian_option"]
    empty = assemble(
        question,
        "\n".join(f"{letter})" if letter == other else f"{letter}) {good[letter]}" for letter in LETTERS),
    )
    assert "empty_option" in empty["reasons"]


def test_stage_writes_builder_input_and_a_report(tmp_path: Path, scripted_backend) -> None:
    """A scripted generator that returns the sample's own distractors for most questions and
    a known fault for every tenth: the report counts exactly those faults, and the accepted
    file builds as RuBIN."""
    sample = {r["question"]: r for r in _sample()}
    faults = {}

    def generator(prompt: str) -> str:
        question, answer, letter = _prompt_fields(prompt)
        row = sample[question]
        distractors = [o for i, o in enumerate(row["options"]) if i != LETTERS.index(row["label"])]
        options = dict(zip([x for x in LETTERS if x != letter], distractors, strict=True))
        options[letter] = answer
        index = list(sample).index(question)
        if index % 10 == 3:
            faults[row["id"]] = "duplicate_option"
            options[next(x for x in LETTERS if x != letter)] = answer
        elif index % 10 == 7:
            faults[row["id"]] = "unparseable_output"
            return "Извините, не могу помочь."
        return "\n".join(f"{x}) {options[x]}" for x in LETTERS)

    raw = _raw_file(tmp_path / "raw.jsonl", _sample())
    out = tmp_path / "stage"
    ScriptedBackend = scripted_backend
    report = generate_distractors(raw, ScriptedBackend(generator), out, seed=5, batch_size=16)

    assert report["input"]["questions"] == 68
    assert report["rejected"] == len(faults) == 14 and report["accepted"] == 54
    assert report["rejection_reasons"] == dict(Counter(faults.values()))
    assert report["label_positions_drawn"] == dict.fromkeys(LETTERS, 17)
    assert sum(report["label_positions_accepted"].values()) == 54
    assert report["answer_rewritten_by_model"] == 0 and len(report["prompt_sha256"]) == 64
    rejected = [json.loads(line) for line in (out / "rejected.jsonl").read_text().splitlines()]
    assert {r["id"]: r["reasons"][0] for r in rejected} == faults
    assert len((out / "generations.jsonl").read_text().splitlines()) == 68

    accepted = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    for row in accepted:  # same option set as the sample, the answer where the label says
        original = next(r for r in sample.values() if r["id"] == row["id"])
        assert sorted(row["options"]) == sorted(original["options"])
        assert (
            row["options"][LETTERS.index(row["label"])]
            == original["options"][LETTERS.index(original["label"])]
        )

    answers = "question_id,annotator_id,answer\n" + "".join(f"{r['id']},a1,{r['label']}\n" for r in accepted)
    (out / "human_answers.csv").write_text(answers, encoding="utf-8")
    release = get_builder("rubin").build(source=str(out), out_root=tmp_path / "dist")
    assert release.manifest["configs"]["full"]["splits"]["test"]["num_rows"] == 54
    assert release.manifest["configs"]["easy"]["splits"]["test"]["num_rows"] == 54


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            lambda rows: rows.append(dict(rows[0])),
            "raw.jsonl, row 69, field 'id': id 'sample-001' repeats line 1",
        ),
        (lambda rows: rows[4].pop("answer"), "raw.jsonl, row 5, field 'answer'"),
        (lambda rows: rows[2].update(year="1980s"), "raw.jsonl, row 3, field 'year'"),
    ],
)
def test_bad_raw_questions_name_line_and_field(tmp_path: Path, edit, needle: str, scripted_backend) -> None:
    path = _raw_file(tmp_path / "raw.jsonl", _sample())
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(SourceError) as info:
        generate_distractors(path, scripted_backend("A) а"), tmp_path / "out")
    assert needle in str(info.value)
    assert not (tmp_path / "out").exists()


def test_existing_output_is_not_replaced_without_overwrite(tmp_path: Path, scripted_backend) -> None:
    raw = _raw_file(tmp_path / "raw.jsonl", _sample()[:4])
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    for overwrite in (False, True):  # a folder we did not write is never replaced
        with pytest.raises(CultureBenchError, match="culturebench did not write"):
            generate_distractors(raw, scripted_backend("нет"), out, overwrite=overwrite)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    ours = tmp_path / "ours"
    generate_distractors(raw, scripted_backend("нет"), ours)
    with pytest.raises(CultureBenchError, match="already exists"):
        generate_distractors(raw, scripted_backend("нет"), ours)
    report = generate_distractors(raw, scripted_backend("нет"), ours, overwrite=True)
    assert report["rejected"] == 4


@pytest.mark.e2e
def test_stage_runs_on_the_tiny_model(tiny_model: Path, tmp_path: Path) -> None:
    from culturebench.eval.backends import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    engine = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=24))
    raw = _raw_file(tmp_path / "raw.jsonl", _sample()[:6])
    report = generate_distractors(raw, engine, tmp_path / "out", seed=1, batch_size=3)
    assert report["accepted"] + report["rejected"] == 6
    assert report["model"]["backend"] == "transformers" and report["model"]["weights_sha256"]
    generations = [
        json.loads(line) for line in (tmp_path / "out" / "generations.jsonl").read_text().splitlines()
    ]
    assert [g["id"] for g in generations] == [f"sample-00{i}" for i in range(1, 7)]
    assert all(g["status"] in {"accepted", "rejected"} and isinstance(g["output"], str) for g in generations)
