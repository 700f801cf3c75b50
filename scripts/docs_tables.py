"""Regenerate the tables of the docs that list what the registry holds, so a new dataset or
task needs no hand edit outside its folder: the task table of ``docs/evaluating.md`` (between
``<!-- tasks:start -->`` and ``<!-- tasks:end -->``). ``--check`` changes nothing and exits 1
when a table is out of date (the suite runs it).

    .venv/bin/python scripts/docs_tables.py           # rewrite the tables
    .venv/bin/python scripts/docs_tables.py --check   # are they up to date?
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVALUATING = REPO / "docs" / "evaluating.md"
START, END = "<!-- tasks:start -->", "<!-- tasks:end -->"


def task_table() -> str:
    """The dataset -> tasks table, from the task registry (datasets sorted, tasks in the
    order their dataset declares them)."""
    from culturebench.eval.tasks import registry

    rows = ["| dataset | tasks |", "| --- | --- |"]
    for dataset, tasks in sorted(registry().items()):
        rows.append(f"| `{dataset}` | {', '.join(f'`{name}`' for name in tasks)} |")
    return "\n".join(rows)


def updated(text: str) -> str:
    """``text`` with the block between the markers replaced by :func:`task_table`."""
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{task_table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 when a table is out of date.")
    args = parser.parse_args(argv)
    text = EVALUATING.read_text(encoding="utf-8")
    new = updated(text)
    if new == text:
        print(f"docs tables: {EVALUATING.relative_to(REPO)} is up to date")
        return 0
    if args.check:
        print(f"docs tables: {EVALUATING.relative_to(REPO)} is out of date; run scripts/docs_tables.py")
        return 1
    EVALUATING.write_text(new, encoding="utf-8")
    print(f"docs tables: rewrote the task table of {EVALUATING.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
