"""Documents kept as the JSON string literals of their text field, as the file has them.

A JSON Lines block is decoded with the text field as raw bytes (``msgspec.Raw``): no ``str`` is
made for a document that holds no name. The matcher scans the literals themselves, quotes and
escapes included (``\\n`` is a boundary there as the newline is in the text), and decodes only
the few bytes around each candidate; a document's text is decoded when it holds a hit.

A block qualifies when its bytes are UTF-8 (checked by the reader) and every value is a string
or null with no ``\\u`` escape (a letter written as one would not meet the keys; a writer with
``ensure_ascii`` escapes every non-ASCII letter); any other block is decoded to ``str`` as
before.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

QUOTE, BACKSLASH = 0x22, 0x5C


class JsonTexts:
    """A batch of documents as JSON string literals (a sequence of ``str`` to the caller: an
    item is decoded when asked for). ``data`` is what the matcher scans: the literals joined by
    NUL; ``starts`` the byte where each document's text begins (after its opening quote);
    ``escapes`` the byte of every escape (its backslash), in order; ``chars`` the characters of
    all the texts."""

    __slots__ = ("chars", "data", "escapes", "starts", "values")

    def __init__(
        self, values: list[Any], data: bytes, starts: list[int], escapes: list[int], chars: int
    ) -> None:
        self.values = values
        self.data = data
        self.starts = starts
        self.escapes = escapes
        self.chars = chars

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> str:
        import msgspec

        return msgspec.json.decode(self.values[index])

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self.values)))

    def escapes_between(self, start: int, stop: int) -> int:
        """The escapes in ``data[start:stop]`` (each is two bytes for one character)."""
        return bisect_left(self.escapes, stop) - bisect_left(self.escapes, start)

    @classmethod
    def of(cls, values: list[Any]) -> JsonTexts | None:
        """The batch of these raw values (``msgspec.Raw`` or bytes; null read as an empty
        text), or None when one is not a string or null, or a text holds a ``\\u`` escape."""
        import numpy as np

        data = b"\x00".join(values)
        array = np.frombuffer(data, dtype=np.uint8)
        sizes = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        opening = np.concatenate(([0], np.cumsum(sizes + 1)[:-1])) if len(values) else sizes
        kinds = array[opening]
        if len(values) and not (kinds == QUOTE).all():
            nulls = np.flatnonzero(kinds != QUOTE)
            if any(bytes(values[i]) != b"null" for i in nulls.tolist()):
                return None  # a number, array, object or boolean: the text reader names the line
            values = list(values)
            for i in nulls.tolist():
                values[i] = b'""'
            return cls.of(values)
        escapes: list[int] = []
        if data.find(b"\\") >= 0:
            backslashes = np.flatnonzero(array == BACKSLASH)
            if (array[backslashes + 1] == ord("u")).any():
                return None  # a \u escape (or a backslash before a u): the text reader decodes it
            # in a run of backslashes, the first, third, ... start an escape (\\\\ is one)
            first = np.concatenate(([True], np.diff(backslashes) != 1))
            run_start = np.maximum.accumulate(np.where(first, backslashes, 0))
            escapes = backslashes[(backslashes - run_start) % 2 == 0].tolist()
        characters = len(array) - int(np.count_nonzero(array.view(np.int8) < -64))  # not 10xxxxxx
        chars = characters - 2 * len(values) - max(len(values) - 1, 0) - len(escapes)
        return cls(values, data, (opening + 1).tolist(), escapes, chars)


def escape_starts(data: bytes, at: int) -> bool:
    """Whether the backslash at ``at`` starts an escape (an odd run of backslashes ends
    there), rather than ending an escaped backslash."""
    run = 0
    while at - run >= 0 and data[at - run] == BACKSLASH:
        run += 1
    return run % 2 == 1


_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unescape(window: str) -> str:
    """A stretch of a JSON string literal (starting at a character) as text; an escape cut at
    the end is left out."""
    if "\\" not in window:
        return window
    out: list[str] = []
    i, size = 0, len(window)
    while True:
        j = window.find("\\", i)
        if j < 0 or j + 1 >= size:
            out.append(window[i:j] if j >= 0 else window[i:])
            return "".join(out)
        out.append(window[i:j])
        out.append(_ESCAPED.get(window[j + 1], window[j + 1]))
        i = j + 2
