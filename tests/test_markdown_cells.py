"""Markdown tables keep their columns when a label or cell holds a pipe or a line break
(e.g. BORSCH VQA row labels built from prompt variants, ``origin-vqa | name``): run reports
(``report.md``) and ``eval paper`` reports escape cell text through ``md_cell``."""

from __future__ import annotations

import pytest

from culturebench.eval.paper_report import COMPUTED, Item, Row, Table, render, render_table
from culturebench.eval.run_report import result_sections
from culturebench.text import md_cell, md_row

pytestmark = pytest.mark.unit

LABEL = "origin-vqa | name"


def _unescaped_pipes(line: str) -> int:
    """Column separators of a GFM table line: pipes not escaped by an odd run of backslashes."""
    count, backslashes = 0, 0
    for ch in line:
        if ch == "|" and backslashes % 2 == 0:
            count += 1
        backslashes = backslashes + 1 if ch == "\\" else 0
    return count


def _tables(markdown: str) -> list[list[str]]:
    """Each block of consecutive table lines (lines starting with ``|``)."""
    tables: list[list[str]] = []
    block: list[str] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            tables.append(block)
            block = []
    return tables


def _assert_columns(markdown: str) -> None:
    tables = _tables(markdown)
    assert tables, markdown
    for table in tables:
        header = _unescaped_pipes(table[0])
        assert _unescaped_pipes(table[1]) == header, table  # the --- line
        for line in table[2:]:
            assert _unescaped_pipes(line) == header, f"{line!r} has not the header's columns:\n{table[0]}"


def test_md_cell_escapes_pipes_and_line_breaks() -> None:
    assert md_cell("a | b") == r"a \| b"
    assert md_cell("line one\nline two\r\nthree") == "line one line two three"
    assert md_cell(r"a\|b") == r"a\\\|b"  # the backslash stays text, the pipe stays escaped
    assert md_cell(3) == "3"
    row = md_row(["", "a | b", "x"])
    assert row == r"| | a \| b | x |"
    assert _unescaped_pipes(row) == 4
    assert _unescaped_pipes(md_row([r"a\|b", "c"])) == 3


def test_run_report_tables_keep_their_columns() -> None:
    results = {
        "provenance": {"dataset": {"dataset": "no-such-dataset"}, "task": "vqa"},
        "metrics": {
            "n": 4,
            "accuracy": {"mean": 0.5, "ci95": [0.25, 0.75]},
            LABEL: {"n": 2, "accuracy": 0.5},  # a group of headline metrics
            "per_variant": {
                LABEL: {"n": 2, "accuracy": 0.5},
                "two\nlines": {"n": 2, "accuracy": 0.25},
                "plain": {"n": 2, "accuracy": 1.0},
            },
        },
    }
    markdown = "\n".join(result_sections(results, folder=None, rel="."))  # type: ignore[arg-type]
    assert r"origin-vqa \| name" in markdown
    assert "| two lines |" in markdown
    assert len(_tables(markdown)) == 2  # headline table and per_variant
    _assert_columns(markdown)


def test_paper_report_tables_keep_their_columns() -> None:
    table = Table(unit="accuracy %")
    table.add("GPT | 4o", {LABEL: 50.0, "plain": 40.0}, source="paper", model="GPT | 4o")
    table.add("tiny", {LABEL: 45.0, "plain": [41.0, 2.0]})
    _assert_columns("\n".join(render_table(table)))  # a line per row
    wide = Table(rows=[LABEL])
    for name in ("a", "b | c", "d"):
        wide.add(name, {LABEL: 1.0})
    _assert_columns("\n".join(render_table(wide)))  # a line per model

    item = Item(
        "Table 9",
        "VQA by prompt | variant",
        COMPUTED,
        rows=[Row(LABEL, 0.5, 0.4, n=10, ci95=(0.3, 0.7), note="one | two\nthree"), Row("plain", 0.1)],
        table=table,
    )
    report = {"dataset": "borsch", "paper": "p", "runs": [], "status_counts": {COMPUTED: 1}}
    markdown = render(report, [item])
    assert len(_tables(markdown)) == 3  # status table, models side by side, rows
    assert r"| origin-vqa \| name | 0.50 | 0.40 | 0.10 | 10 | [0.30, 0.70] | one \| two three |" in markdown
    _assert_columns(markdown)
