"""The build log: every upstream quirk a builder handles on purpose, with its location.

Quirks are not errors: the builder decided what to do with them (and says what). They are
logged while building, summarised on the console and saved as ``build_report.json`` in the
release folder so users can see exactly what was changed or kept.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal

from culturebench.errors import Location

logger = logging.getLogger("culturebench.build")

Severity = Literal["info", "warning"]


@dataclass(frozen=True)
class Quirk:
    """One handled upstream irregularity."""

    code: str
    message: str
    action: str
    file: str | None = None
    row: int | None = None
    field: str | None = None
    severity: Severity = "warning"

    def where(self) -> str:
        parts = [p for p in (self.file, f"row {self.row}" if self.row else None) if p]
        if self.field:
            parts.append(f"field {self.field!r}")
        return ", ".join(parts)


class BuildLog:
    """Collects :class:`Quirk` records and free-form statistics during one build."""

    def __init__(self) -> None:
        self.quirks: list[Quirk] = []
        self.stats: dict[str, Any] = {}

    def quirk(
        self,
        code: str,
        message: str,
        *,
        action: str,
        where: Location | None = None,
        file: str | None = None,
        field: str | None = None,
        severity: Severity = "warning",
    ) -> None:
        """Record a quirk and log it (``info`` level for warnings, ``debug`` for info).

        ``where`` is a source location (file, row, field); ``file``/``field`` alone describe
        quirks that concern a whole file or column.
        """
        if where is not None:
            file, row, field = where.file, where.row, where.field
        else:
            row = None
        item = Quirk(code, message, action, file, row, field, severity)
        self.quirks.append(item)
        level = logging.INFO if severity == "warning" else logging.DEBUG
        logger.log(level, "%s: %s [%s] -> %s", item.where() or "-", message, code, action)

    def counts(self) -> dict[str, int]:
        """Number of quirks per code, sorted by code."""
        return dict(sorted(Counter(q.code for q in self.quirks).items()))

    def actions(self) -> dict[str, str]:
        """The action taken for each quirk code (first one recorded)."""
        out: dict[str, str] = {}
        for q in self.quirks:
            out.setdefault(q.code, q.action)
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "quirk_counts": self.counts(),
            "quirk_actions": self.actions(),
            "quirks": [asdict(q) for q in self.quirks],
            "stats": self.stats,
        }
