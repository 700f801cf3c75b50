"""Values computed from files, kept while each file is unchanged: one read per process of a
file that several steps need (a generations file several tasks score from, a harness log, a
dataset's ``prompts.yaml``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


class FileMemo(Generic[T]):
    """``read(path)`` results keyed by the file's resolved path, size and modification time (a
    changed file is read again); the ``limit`` most recently added are kept. Callers must not
    modify what they get."""

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self._items: dict[tuple[str, int, int], T] = {}

    def get(self, path: Path, read: Callable[[Path], T]) -> T:
        """The value of ``path``, reading it with ``read`` when unknown or changed."""
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in self._items:
            value = read(path)
            while len(self._items) >= self.limit:
                del self._items[next(iter(self._items))]
            self._items[key] = value
        return self._items[key]
