"""What the command line prints, and how: the two consoles, values as people write them
(never a Python repr), and tables that fit the console (80 columns in a pipe) with nothing cut."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()


err_console = Console(stderr=True)


def natural_key(text: str) -> tuple:
    """Sort key reading digit runs as numbers: Q1, Q2, ..., Q10 (not Q1, Q10, Q2)."""
    import re

    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text))


def plain(value: Any) -> str:
    """A value as people write it: blank for None, integers without decimals, lists and
    mappings as ``a, b`` / ``k v`` (never a Python repr)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{int(value)}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return ", ".join(plain(v) for v in value)
    return str(value)


def fit_table(
    title: str | None,
    columns: list[tuple[str, str]],
    rows: list[list[str]],
    *,
    drop: tuple[str, ...] = (),
    width: int | None = None,
) -> tuple[Table, list[str]]:
    """A table that fits the console (80 columns in a pipe) with nothing cut: ``columns`` are
    ``(header, "text" | "num" | "word")``; numbers and words never wrap, text wraps between
    words only (each column at least its longest word wide), headers between words. While the
    table would be wider than the console, the columns named in ``drop`` are left out, in that
    order; the headers left out are returned (for a note)."""
    from rich import box

    width = width or console.width
    keep = list(range(len(columns)))

    def least(k: int) -> int:
        head, kind = columns[k]
        cells = [row[k] for row in rows]
        words = [w for text in cells for w in text.split()] if kind == "text" else cells
        return max((len(w) for w in (*head.split(), *words)), default=1)

    def natural(k: int) -> int:
        return max((len(row[k]) for row in rows), default=0) or least(k)

    def needed() -> int:
        return sum(least(k) for k in keep) + 2 * (len(keep) - 1)

    dropped = []
    for head in drop:
        if needed() <= width:
            break
        k = next(k for k in keep if columns[k][0] == head)
        keep.remove(k)
        dropped.append(head)
    widths = {k: max(least(k), natural(k)) for k in keep}
    spare = width - 2 * (len(keep) - 1)
    if sum(widths.values()) > spare:  # text columns share what the others leave, by their length
        widths = {k: least(k) for k in keep}
        texts = [k for k in keep if columns[k][1] == "text"]
        room = spare - sum(widths.values())
        while room > 0 and texts:
            grow = [k for k in texts if widths[k] < max(natural(k), len(columns[k][0]))]
            if not grow:
                break
            k = max(grow, key=lambda k: natural(k) - widths[k])
            widths[k] += 1
            room -= 1
    room = width - 2 * (len(keep) - 1) - sum(widths.values())
    for k in sorted(keep, key=lambda k: len(columns[k][0]) - widths[k]):  # whole headers, if room
        extra = len(columns[k][0]) - widths[k]
        if 0 < extra <= room:
            widths[k] += extra
            room -= extra
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    for k in keep:
        head, kind = columns[k]
        table.add_column(
            _wrap_words(head, widths[k]),
            justify="right" if kind == "num" else "left",
            no_wrap=kind != "text",
            overflow="fold",
            width=widths[k],
        )
    for row in rows:
        table.add_row(*(row[k] for k in keep))
    return table, dropped


def _wrap_words(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters between words."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def count_cell(value: Any) -> str:
    """A count as an integer with thousands separators (blank when there is none)."""
    from culturebench.eval.run_report import count_text

    return count_text(value) if value is not None and not isinstance(value, bool) else plain(value)


def print_fitted(table: Table, dropped: list[str], where: str = "") -> None:
    """Print a :func:`fit_table` table and name the columns it left out."""
    console.print(table)
    if dropped:
        console.print(f"(columns left out at this width: {', '.join(dropped)}{where})", highlight=False)


def print_limit(results: Mapping[str, Any]) -> None:
    """How --limit chose the rows, when it did (also in results.json and report.md)."""
    from culturebench.eval.coverage import limit_text

    text = limit_text(results.get("coverage") or {})
    if text:
        console.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)


def print_headlines(title: str, metrics: dict) -> None:
    """The run's headline metrics as a table: value with its 95% CI (or ± SEM) and n; a run
    whose results are all breakdowns (e.g. per continent x model) prints those instead."""
    from culturebench.eval.run_report import breakdowns, headlines

    items = headlines(metrics)
    if not items:
        for group, name, table in breakdowns(metrics):
            print_breakdown(f"{title}: {name if group == 'all' else group + ' ' + name}", table)
        return
    rows = [[plain(h.group), plain(h.metric), h.formatted(), count_cell(h.n)] for h in items]
    columns = [("group", "text"), ("metric", "text"), ("value (95% CI or ± SEM)", "text"), ("n", "num")]
    print_fitted(*fit_table(f"{title}: headline metrics", columns, rows))


def print_breakdown(title: str, rows: Mapping[str, Any], limit: int = 40) -> None:
    from culturebench.eval.run_report import cell_text, is_count_column

    columns = list(dict.fromkeys(k for row in rows.values() for k in row if cell_text(row[k])))

    def cell(column: str, value: Any) -> str:  # a count reads 8, not 8.000
        if is_count_column(column) and isinstance(value, (int, float)) and float(value).is_integer():
            return count_cell(value)
        return cell_text(value)

    labels = sorted(rows, key=lambda label: natural_key(str(label)))[:limit]
    table_rows = [[str(label), *(cell(c, rows[label].get(c)) for c in columns)] for label in labels]
    heads = [("", "word"), *((str(c), "num") for c in columns)]
    # too many columns for the width: the rightmost are left out (all are in results.json)
    print_fitted(*fit_table(title, heads, table_rows, drop=tuple(str(c) for c in reversed(columns[1:]))),
                  " (in results.json)")  # fmt: skip
    if len(rows) > limit:
        console.print(f"... {len(rows) - limit} more rows in results.json")
