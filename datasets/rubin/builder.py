"""RuBIN builder: a questions file (JSON Lines: id, question, options, label, category,
year) and a human-answers file (CSV: question_id, annotator_id, answer, optionally
annotator_age) -> configs ``full`` and ``easy`` (>= 50% of annotators correct, the paper's
RuBIN-EASY). With ages, the paper's age x year chi-squared check goes into the build stats
(:mod:`culturebench.datasets.rubin.annotators`).

Malformed records stop the build with their file, line and field: not exactly four options,
a label outside A-D, a missing question, id or category, a bad year, an answer to an unknown
question or outside A-D. The paper's content filters (empty, duplicated or non-Russian
options) *exclude* the question instead, as the paper removed such items; every exclusion is
in ``build_report.json`` and the card.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from culturebench.builders.base import DatasetBuilder, Rows
from culturebench.builders.sources import SourceSet
from culturebench.builders.tables import SourceRow, read_csv, read_jsonl_table
from culturebench.buildlog import BuildLog
from culturebench.choice_labels import LETTERS, label_index
from culturebench.datasets.rubin.annotators import age_year_check
from culturebench.datasets.rubin.filters import option_problems
from culturebench.errors import SourceError

EASY_THRESHOLD = 0.5
YEAR_RANGE = (1700, 2100)


def decade(year: int | None) -> str | None:
    """``1973`` -> ``"1970s"``."""
    return None if year is None else f"{year // 10 * 10}s"


def required_text(rec: SourceRow, field: str) -> str:
    """The stripped string in ``field``; SourceError when it is missing, empty or not text."""
    value = rec.values.get(field)
    if not isinstance(value, str) or not value.strip():
        raise SourceError(rec.loc(field), f"{field} is missing or empty")
    return value.strip()


def parse_year(rec: SourceRow) -> int | None:
    """The record's ``year``: an integer in :data:`YEAR_RANGE` or null (undated)."""
    year = rec.values.get("year")
    if year is not None and (
        isinstance(year, bool) or not isinstance(year, int) or not YEAR_RANGE[0] <= year <= YEAR_RANGE[1]
    ):
        raise SourceError(rec.loc("year"), f"year {year!r} is not an integer in {YEAR_RANGE} or null")
    return year


def parse_question(rec: SourceRow) -> dict[str, Any]:
    """One questions-file record -> row fields (raises SourceError on malformed input)."""
    options = rec.values.get("options")
    if not isinstance(options, list):
        raise SourceError(rec.loc("options"), "options must be a list of four strings")
    if len(options) != len(LETTERS):
        raise SourceError(rec.loc("options"), f"{len(options)} options; RuBIN questions have exactly four")
    if any(o is not None and not isinstance(o, str) for o in options):
        raise SourceError(rec.loc("options"), "options must be strings")
    label = label_index(rec.values.get("label"))
    if label is None:
        raise SourceError(rec.loc("label"), f"label {rec.values.get('label')!r} is not one of A, B, C, D")
    year = parse_year(rec)
    cleaned = [(o or "").strip() for o in options]
    return {
        "id": required_text(rec, "id"),
        "question": required_text(rec, "question"),
        "options": cleaned,
        "label": label,
        "answer": cleaned[label],
        "category": required_text(rec, "category"),
        "year": year,
        "decade": decade(year),
    }


def answer_correctness(answers: list[SourceRow], labels: dict[str, int]) -> dict[tuple[str, str], bool]:
    """(question id, annotator id) -> whether that answer is right; raises on unknown
    question ids, letters outside A-D and an annotator answering a question twice."""
    out: dict[tuple[str, str], bool] = {}
    for rec in answers:
        qid = (rec["question_id"] or "").strip()
        if qid not in labels:
            raise SourceError(rec.loc("question_id"), f"answer to unknown question {qid!r}")
        letter = label_index((rec["answer"] or "").strip())
        if letter is None:
            raise SourceError(rec.loc("answer"), f"answer {rec['answer']!r} is not one of A, B, C, D")
        who = (rec["annotator_id"] or "").strip()
        if (qid, who) in out:
            raise SourceError(rec.loc("annotator_id"), f"annotator {who!r} answered {qid} twice")
        out[(qid, who)] = letter == labels[qid]
    return out


def human_counts(correctness: dict[tuple[str, str], bool]) -> dict[str, tuple[int, int]]:
    """question id -> (annotators, correct)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (qid, _), right in correctness.items():
        out[qid][0] += 1
        out[qid][1] += int(right)
    return {k: (v[0], v[1]) for k, v in out.items()}


class RuBINBuilder(DatasetBuilder):
    """Builds RuBIN ``full`` and ``easy`` from the raw questions and human answers."""

    def generate(self, sources: SourceSet, log: BuildLog) -> Rows:
        questions_file = sources["questions"]
        records = read_jsonl_table(questions_file.path, name=questions_file.name)
        rows: list[dict[str, Any]] = []
        seen: dict[str, int] = {}  # question id -> its line
        for rec in records:
            row = parse_question(rec)
            if row["id"] in seen:
                raise SourceError(rec.loc("id"), f"id {row['id']!r} repeats line {seen[row['id']]}")
            seen[row["id"]] = rec.row
            problems = option_problems(row["options"])
            if problems:
                for code, message in problems:
                    log.quirk(
                        f"excluded_{code}", message, action="question excluded", where=rec.loc("options")
                    )
                continue
            rows.append(row)

        answers_file = sources["human_answers"]
        answers = read_csv(
            answers_file.path, ["question_id", "annotator_id", "answer"], name=answers_file.name
        )
        labels = {row["id"]: row["label"] for row in rows}
        excluded = set(seen) - set(labels)
        kept_answers = [a for a in answers if (a["question_id"] or "").strip() not in excluded]
        correctness = answer_correctness(kept_answers, labels)
        counts = human_counts(correctness)
        for row in rows:
            n, correct = counts.get(row["id"], (0, 0))
            row["human_annotators"] = n
            row["human_correct"] = correct
            row["human_accuracy"] = correct / n if n else None
            if not n:
                log.quirk(
                    "no_human_answers",
                    f"question {row['id']} has no human answers",
                    action="kept in full, left out of easy",
                    file=answers_file.name,
                )
        easy = [r for r in rows if r["human_accuracy"] is not None and r["human_accuracy"] >= EASY_THRESHOLD]
        log.stats.update(self.stats(rows, easy, len(records)))
        log.stats["human_age_year_check"] = age_year_check(
            kept_answers, correctness, {row["id"]: row["year"] for row in rows}
        )
        return {"full": {"test": rows}, "easy": {"test": easy}}

    @staticmethod
    def stats(rows: list[dict[str, Any]], easy: list[dict[str, Any]], read: int) -> dict[str, Any]:
        """Counts for the card: rows per config, label positions, categories, decades, humans."""
        positions = Counter(LETTERS[r["label"]] for r in rows)
        accs = [r["human_accuracy"] for r in easy]
        return {
            "questions_read": read,
            "questions_excluded": read - len(rows),
            "rows": {"full": len(rows), "easy": len(easy)},
            "label_positions_full": {k: positions.get(k, 0) for k in LETTERS},
            "categories_full": dict(Counter(r["category"] for r in rows).most_common()),
            "decades_full": dict(sorted(Counter(r["decade"] or "undated" for r in rows).items())),
            "mean_human_accuracy_easy": round(sum(accs) / len(accs), 4) if accs else None,
        }
