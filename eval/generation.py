"""One recorded output as ``eval score`` reads it, from any source (a generations file, an
Inspect log, an lm-eval samples file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Generation:
    """One recorded output: which request it answers, with which seed, and where it came from."""

    request_id: str
    seed: int | None
    output: Any  # text; anything else (a JSON list, number or null) is scored as a failure
    file: str
    row: int
    judgments: dict[str, str] | None = None  # recorded judge answers by name (--matcher recorded)
