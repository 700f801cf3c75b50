"""The items of a paper report (``eval paper``: :mod:`culturebench.eval.paper_report`) and how
an item is judged from its rows and table (:func:`judge_status`, by the one rule of
:mod:`culturebench.eval.claims`): plain data and pure functions, shared by the report that
computes the items and the results site that shows a ``paper_report.json`` (and judges it
again, :func:`rejudged`) without importing the report's machinery."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

REPRODUCED = "reproduced"  # every printed cell has our number, equal to the print at its precision
DIFFERS = "computed, differs"  # computed and compared; some cell differs (status: "... by X")
PARTIAL = "computed, printed cells without a run"  # the compared cells are equal; others have no run
# claimed a comparison, but no cell has a printed number beside it: no run is of a model the
# paper prints (NO_PRINTED), or the paper prints no number for this item's runs (NO_PRINTED_NUMBER)
NO_PRINTED = "computed, no printed model to compare"
NO_PRINTED_NUMBER = "computed, no printed number to compare"
COMPUTED = "computed"  # computed from the runs, with nothing in the paper to compare (other models)
MISSING = "missing inputs"  # the runs it needs were not given
NOT_A_RESULT = "not a result"  # an example, a prompt, a diagram, an interface
NOT_REPRODUCIBLE = "not reproducible"  # needs data that is not published
STATUSES = (
    REPRODUCED, DIFFERS, PARTIAL, NO_PRINTED, NO_PRINTED_NUMBER, COMPUTED, MISSING, NOT_A_RESULT,
    NOT_REPRODUCIBLE,
)  # fmt: skip


@dataclass
class Row:
    """One line of an item: our number beside the paper's, with n and a 95% interval."""

    label: str
    ours: float | None
    paper: float | None = None
    n: int | None = None
    ci95: tuple[float, float] | None = None
    note: str = ""
    digits: int | None = None  # the decimals the paper prints this number with (None: read from it)

    @property
    def difference(self) -> float | None:
        return None if self.ours is None or self.paper is None else self.ours - self.paper


@dataclass
class Item:
    """One table or figure of the paper."""

    ref: str
    title: str
    status: str = MISSING
    rows: list[Row] = field(default_factory=list)
    unit: str = ""  # what the numbers are (accuracy %, share %, count)
    missing: list[str] = field(default_factory=list)
    note: str = ""
    figures: list[str] = field(default_factory=list)
    table: Table | None = None  # the models side by side (printed and ours)
    # set by :func:`judge_status`: printed cells compared with ours, how many are equal, and how
    # many printed cells have no number of ours (:func:`printed_without_run`)
    cells_compared: int | None = None
    cells_equal: int | None = None
    largest_difference: float | None = None
    cells_without_run: int | None = None

    @property
    def equal_text(self) -> str:
        """``"27 of 30 cells equal"``, ``"6 of 36 cells equal, 30 without a run"``
        (:meth:`Tally.text <culturebench.eval.claims.Tally.text>`; empty when nothing was
        compared)."""
        from culturebench.eval.claims import claim_text

        counts = ("cells_compared", "cells_equal", "cells_without_run")
        return claim_text({k: getattr(self, k) for k in counts})


PAPER = "paper"  # a column of numbers the paper prints
OURS = "ours"  # a column computed from runs


@dataclass
class Column:
    """One model's column of a :class:`Table`: the numbers the paper prints for it
    (``source`` ``paper``) or ours from its runs (``ours``), by row label; ``pm`` holds the ±
    beside a cell where there is one (the paper's SEM, ours likewise)."""

    label: str
    source: str
    cells: dict[str, float | None] = field(default_factory=dict)
    pm: dict[str, float] = field(default_factory=dict)
    model: str | None = None  # the paper's name of the model (for ours: when the run's model is one)
    runs: list[str] = field(default_factory=list)  # ours: the run folders

    @property
    def heading(self) -> str:
        return f"{self.label} ({self.source})"


@dataclass
class Table:
    """Models side by side: one column per model the paper prints (from ``paper.yaml``) and
    one per model that has runs, one row per cell of the paper's table. A run's column sits
    beside the printed ones; it is compared with a printed column only in :class:`Row`\\s, and
    only when the run's model is that printed model."""

    rows: list[str] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    unit: str = ""
    digits: int = 2

    def add(
        self,
        label: str,
        cells: Mapping[str, Any],
        *,
        source: str = OURS,
        model: str | None = None,
        runs: Sequence[Any] = (),  # the runs of an ``ours`` column (each with its ``folder``)
    ) -> Column:
        """Add a column: ``cells`` maps row labels to a number, None (not computed, not
        printed) or ``[value, pm]``; new row labels are appended in the order given."""
        column = Column(label, source, model=model, runs=[str(r.folder) for r in runs])
        for row, cell in cells.items():
            if row not in self.rows:
                self.rows.append(row)
            value, pm = (cell[0], cell[1]) if isinstance(cell, (list, tuple)) else (cell, None)
            column.cells[row] = value
            if pm is not None:
                column.pm[row] = pm
        self.columns.append(column)
        return column

    def add_printed(self, printed: Mapping[str, Mapping[str, Any]]) -> Table:
        """A column for every model of a printed table (``{paper name: {row: cell}}``, in the
        paper's order); returns the table."""
        for name, cells in printed.items():
            self.add(str(name), cells, source=PAPER, model=str(name))
        return self


def printed_decimals(value: float) -> int:
    """The decimals a printed number has, read from the value ``paper.yaml`` holds: ``403`` 0,
    ``34.0`` 1, ``0.503`` 3. A trailing zero after the first decimal is not kept by YAML
    (``1.290`` reads as ``1.29``): :func:`item_precision` takes the most decimals among an
    item's printed values, and an item may say more (``Table.digits``, ``Row.digits``). A value
    computed from a printed one (``40.300000000000004``) reads as its shortest form of at most
    6 decimals."""
    import math

    if isinstance(value, int) or not math.isfinite(value):
        return 0
    text = repr(float(value))
    if "e" not in text and len(text.split(".")[1]) <= 6:
        return len(text.split(".")[1])
    return next((d for d in range(7) if abs(round(value, d) - value) < 1e-9 * max(1.0, abs(value))), 6)


def equal_at_printed(ours: float, paper: float, digits: int) -> bool:
    """Whether ``ours`` equals the printed ``paper`` at ``digits`` decimals (both rounded, as
    ``eval compare --paper`` and the WWD tally compare them)."""
    return round(float(ours), digits) == round(float(paper), digits)


def item_precision(item: Item, compared: Sequence[Row]) -> Callable[[Row], int]:
    """The printed precision of each compared row: ``Row.digits`` where the item gives it; 0 for
    a printed integer (a count); else the most decimals among the item's printed non-integer
    values (:func:`printed_decimals`; one printed table keeps one precision, and YAML drops the
    trailing zeros of ``0.00`` and ``40.50``), at least the item table's ``digits``."""
    floor = item.table.digits if item.table is not None else 0
    decimals = [printed_decimals(r.paper) for r in compared if isinstance(r.paper, float)]
    widest = max([floor, *decimals])

    def digits(row: Row) -> int:
        if row.digits is not None:
            return row.digits
        return 0 if isinstance(row.paper, int) else widest

    return digits


def printed_without_run(item: Item) -> int:
    """How many cells the paper prints for this item have no number of ours: in the item's
    :class:`Table`, every printed cell of a model that has a column of ours (runs of it) where
    none of its columns of ours has a number; an item without such a table counts its rows
    with the paper's number and none of ours. Models the paper prints and no run is of are not
    counted (a table of three printed models, run for one, is that one's cells)."""
    table = item.table
    if table is not None:
        ours = [c for c in table.columns if c.source == OURS and c.model]
        printed = [c for c in table.columns if c.source == PAPER and c.model in {o.model for o in ours}]
        if printed:
            return sum(
                1
                for column in printed
                for row, value in column.cells.items()
                if value is not None
                and not any(o.model == column.model and o.cells.get(row) is not None for o in ours)
            )
    return sum(1 for r in item.rows if r.paper is not None and r.ours is None)


def judge_status(item: Item, *, printed_model: bool = False) -> Item:
    """The item's status from its rows and table, by the rule of
    :class:`~culturebench.eval.claims.Tally`: a computed item (``reproduced`` or ``computed``)
    with cells compared (rows with our number and the paper's) is ``reproduced`` only when
    every printed cell has our number (:func:`printed_without_run` is 0) and every compared one
    equals the print at the printed precision (:func:`item_precision`); else ``computed, differs
    by X`` (X the largest absolute difference, one decimal finer than printed) or, every
    compared cell equal, :data:`PARTIAL`. A ``reproduced`` claim with no cell to compare is
    :data:`NO_PRINTED`, or :data:`NO_PRINTED_NUMBER` when some run is of a model the paper
    prints (``printed_model``: the paper prints no number to set beside ours; or printed cells of
    its model have no run, counted as ``0 of M cells equal, M without a run``). Other statuses
    are kept."""
    from culturebench.eval.claims import Tally

    if item.status not in (REPRODUCED, COMPUTED):
        return item
    compared = [r for r in item.rows if r.ours is not None and r.paper is not None]
    without = printed_without_run(item)
    if not compared:
        if item.status == REPRODUCED:
            if without:
                item.cells_compared, item.cells_equal, item.cells_without_run = 0, 0, without
            item.status = NO_PRINTED_NUMBER if printed_model or without else NO_PRINTED
        return item
    digits_of = item_precision(item, compared)
    equal, worst, worst_digits = 0, 0.0, 0
    for row in compared:
        digits = digits_of(row)
        ours, paper = cast(float, row.ours), cast(float, row.paper)  # compared: both are numbers
        same = equal_at_printed(ours, paper, digits)
        equal += same
        gap = abs(float(ours) - float(paper))
        if not same and gap >= worst:
            worst, worst_digits = gap, digits
    item.cells_compared, item.cells_equal, item.cells_without_run = len(compared), equal, without
    if Tally(len(compared), equal, without).reproduced:
        item.status = REPRODUCED
    elif equal < len(compared):
        item.largest_difference = worst
        item.status = f"{DIFFERS} by {_gap_text(worst, worst_digits)}"
    else:
        item.status = PARTIAL
    return item


def rejudged(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item of a ``paper_report.json`` judged again from its rows and table by
    :func:`judge_status` (what a page shows of a report file: a file written before printed
    cells without a run were counted, or edited, shows the status and claim its cells give,
    never the ``reproduced`` it says), with ``claim``: ``"N of M cells equal at the printed
    precision, K without a run"`` (empty when nothing was compared). Statuses that are not a
    comparison's (missing inputs, not a result, no printed model) are kept."""
    from culturebench.eval.claims import claim_text

    out = dict(item)
    if status_kind(str(item.get("status"))) in (REPRODUCED, DIFFERS, PARTIAL):

        def fields(cls: Any, raw: Any) -> dict[str, Any]:
            return {k: v for k, v in (raw or {}).items() if k in cls.__dataclass_fields__}

        rows = [Row(**fields(Row, r)) for r in item.get("rows") or []]
        shell = Item(str(item.get("ref")), str(item.get("title")), REPRODUCED, rows)
        table = item.get("table")
        if isinstance(table, Mapping):
            columns = [Column(**fields(Column, c)) for c in table.get("columns") or []]
            shell.table = Table(list(table.get("rows") or []), columns, digits=int(table.get("digits") or 0))
        judged = judge_status(shell)
        counts = ("status", "cells_compared", "cells_equal", "cells_without_run", "largest_difference")
        out.update({k: getattr(judged, k) for k in counts})
    out["claim"] = claim_text(out, " at the printed precision")
    return out


def _gap_text(gap: float, digits: int) -> str:
    """A difference at the printed precision, with more decimals only where that would show
    a difference as 0."""
    for extra in range(4):
        text = f"{gap:.{digits + extra}f}"
        if float(text) != 0:
            return text
    return f"{gap:.{digits + 3}f}"


def status_kind(status: str) -> str:
    """The kind of a status (:data:`STATUSES`): ``computed, differs by 0.8`` is :data:`DIFFERS`."""
    return DIFFERS if status.startswith(DIFFERS) else status
