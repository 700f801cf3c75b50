"""Row access for validation that stays linear in the number of rows.

``DataFrame.iterrows`` builds a Series per row and copies the frame's ``attrs`` into each;
with per-split id lists kept in ``attrs`` that made validation quadratic (130 s at 11k
BORSCH rows). Checks iterate plain dicts instead, and split membership travels beside the
frames in :class:`Frames`, never inside them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd


class Frames(dict[str, pd.DataFrame]):
    """config -> DataFrame (splits concatenated), plus ``split_ids``: config -> split -> ids."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.split_ids: dict[str, dict[str, list[str]]] = {}


def iter_rows(frame: pd.DataFrame) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(position, row as a dict)`` for every row, in order; linear time and memory."""
    yield from enumerate(frame.to_dict("records"))
