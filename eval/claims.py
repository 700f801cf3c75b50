"""When a paper's table counts as reproduced: the one rule every command and page applies.

A table is ``reproduced`` only when EVERY cell the paper prints for it has our number beside it
and every one of those is equal at the printed precision. A table compared in part is never
reproduced, however equal its compared cells are: its claim reads ``N of M cells equal, K
without a run`` (M the printed cells, K of them with no number of ours). ``eval paper``
(:func:`culturebench.eval.paper_report.judge_status`, and the Markdown report), ``eval compare
TABLE --paper`` (:func:`culturebench.eval.compare.tally`) and the results site's paper pages
all read their claim from :class:`Tally`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tally:
    """A printed table against ours: ``compared`` printed cells have our number beside them,
    ``equal`` of those equal the print at its precision, ``without_run`` printed cells have no
    number of ours (no run, or a run that does not give that cell)."""

    compared: int
    equal: int
    without_run: int = 0

    @property
    def printed(self) -> int:
        """M: every printed cell of the table (compared or not)."""
        return self.compared + self.without_run

    @property
    def reproduced(self) -> bool:
        """Every printed cell has our number and all are equal (nothing printed: never)."""
        return self.printed > 0 and self.without_run == 0 and self.equal == self.compared

    def text(self, how: str = "") -> str:
        """``"6 of 30 cells equal, 24 without a run"`` (``how`` goes after ``equal``, e.g.
        ``" at the printed precision"``); ``"30 of 30 cells equal"`` when every printed cell was
        compared; empty when nothing is printed."""
        if not self.printed:
            return ""
        text = f"{self.equal} of {self.printed} cells equal{how}"
        return text + (f", {self.without_run} without a run" if self.without_run else "")

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> Tally | None:
        """The tally an ``eval paper`` item recorded (``cells_compared``, ``cells_equal``,
        ``cells_without_run``), or None when it compared nothing."""
        compared, equal = item.get("cells_compared"), item.get("cells_equal")
        without = item.get("cells_without_run") or 0
        if not isinstance(compared, int) or not isinstance(equal, int) or not isinstance(without, int):
            return None
        return cls(compared, equal, without) if compared or without else None


def claim_text(item: Mapping[str, Any], how: str = "") -> str:
    """The claim of an ``eval paper`` item (a ``paper_report.json`` entry): :meth:`Tally.text`,
    or empty when it compared nothing."""
    tally = Tally.of(item)
    return tally.text(how) if tally else ""
