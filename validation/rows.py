"""Row access for validation that stays linear in the number of rows.

``DataFrame.iterrows`` builds a Series per row and copies the frame's ``attrs`` into each;
with per-split id lists kept in ``attrs`` that made validation quadratic (130 s at 11k
BORSCH rows). Checks iterate plain dicts instead, and split membership travels beside the
frames in :class:`Frames`, never inside them.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterator
from typing import Any, cast

import pandas as pd


class Frames(dict[str, pd.DataFrame]):
    """config -> DataFrame (splits concatenated), plus ``split_ids``: config -> split -> ids."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.split_ids: dict[str, dict[str, list[str]]] = {}


#: id(frame) -> (weak reference to it, its shape and columns, its rows); dropped with the frame.
_ROWS: dict[int, tuple[weakref.ref, tuple[Any, ...], list[dict[str, Any]]]] = {}


def _forget(key: int, _ref: weakref.ref[pd.DataFrame]) -> None:
    _ROWS.pop(key, None)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    key = id(frame)
    fingerprint = (frame.shape, tuple(frame.columns))
    cached = _ROWS.get(key)
    if cached is not None and cached[0]() is frame and cached[1] == fingerprint:
        return cached[2]
    rows = cast(list[dict[str, Any]], frame.to_dict("records"))  # the features' names label the columns
    try:
        ref = weakref.ref(frame, functools.partial(_forget, key))
    except TypeError:  # not weak-referenceable: no cache
        return rows
    _ROWS[key] = (ref, fingerprint, rows)
    return rows


def iter_rows(frame: pd.DataFrame) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(position, row as a dict)`` for every row, in order; linear time and memory. The dicts
    are the caller's to modify (the values, e.g. lists, are the frame's own, as with
    ``to_dict``)."""
    for position, row in enumerate(_records(frame)):
        yield position, dict(row)
